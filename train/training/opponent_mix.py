"""The training opponent: each game, one player drawn from a weighted mix (league-style self-play).

:class:`OpponentMix` is a Policy that, at every ``reset(seed)``, draws which player sits in the
opponent seat for that game: a fixed player (``random``, ``rule``, a checkpoint, ``module:attribute``)
or, for the key ``"self"``, one of the most recent checkpoints of the agent being trained (the
self-play pool). The trainer changes the mix and the pool while the run goes on by calling
``set_opponent_mix`` on every env (:class:`OpponentMixWrapper` exposes it through
``VecEnv.env_method``, also across processes).

All players in the mix must declare the same belief setting, because the env builds the
opponent seat's observation encoder once, from the embedded policy's ``needs``.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from train.config import SELF, ConfigError, TrainConfig
from train.policies import resolve_policy, spec_belief
from train.specs import checkpoint_path
from uno_env.belief import BeliefKind
from uno_env.policy import Needs, Policy
from uno_env.view import PublicView


class OpponentMix:
    """A Policy that plays each game as one player drawn from ``mix`` (weights) and the self-play ``pool``."""

    def __init__(self, mix: dict[str, float], pool: list[str] | None = None, belief: BeliefKind = "none") -> None:
        self.needs = Needs(belief)
        self._players: dict[str, Policy] = {}
        self.mix: dict[str, float] = {}
        self.pool: list[str] = []
        self.current: Policy | None = None
        self.current_name = ""
        self.set_mix(mix, pool or [])

    def set_mix(self, mix: dict[str, float], pool: list[str]) -> None:
        """Use new weights and a new self-play pool from the next game on; drop players no longer needed."""
        if SELF in mix and mix[SELF] > 0 and not pool:
            raise ValueError("the mix draws from the self-play pool, but the pool is empty")
        self.mix = {name: weight for name, weight in mix.items() if weight > 0}
        self.pool = list(pool)
        wanted = set(self.mix) | set(self.pool)
        self._players = {spec: player for spec, player in self._players.items() if spec in wanted}

    def _player(self, spec: str) -> Policy:
        if spec not in self._players:
            self._players[spec] = resolve_policy(spec)
        return self._players[spec]

    def reset(self, seed: int | None = None) -> None:
        """Draw this game's opponent (and, for ``self``, which checkpoint) from ``seed``."""
        rng = np.random.default_rng(seed)
        names = list(self.mix)
        weights = np.array([self.mix[name] for name in names])
        name = names[int(rng.choice(len(names), p=weights / weights.sum()))]
        spec = self.pool[int(rng.integers(len(self.pool)))] if name == SELF else name
        self.current = self._player(spec)
        self.current_name = name
        self.current.reset(int(rng.integers(2**62)))

    def observe_start(self, view: PublicView) -> None:
        """Forward the optional start-of-game hook to this game's player."""
        if hasattr(self.current, "observe_start"):
            self.current.observe_start(view)

    def act(self, view: PublicView) -> int:
        """This game's player's action."""
        return self.current.act(view)


class OpponentMixWrapper(gym.Wrapper):
    """Exposes the embedded :class:`OpponentMix` to ``env_method`` and labels finished episodes.

    Once a game ends, ``info["opponent"]`` names the mix entry that played it (``"self"`` for the pool).
    """

    def __init__(self, env: gym.Env, mix: OpponentMix) -> None:
        super().__init__(env)
        self.mix = mix

    def set_opponent_mix(self, mix: dict[str, float], pool: list[str]) -> None:
        """See :meth:`OpponentMix.set_mix`."""
        self.mix.set_mix(mix, pool)

    def step(self, action: Any):
        obs, reward, terminated, truncated, info = self.env.step(action)
        if terminated or truncated:
            info["opponent"] = self.mix.current_name
        return obs, reward, terminated, truncated, info


def opponent_belief(config: TrainConfig) -> str:
    """The one belief setting shared by every checkpoint the schedule can seat (see ``train.training.opponent_mix``)."""
    beliefs = {spec: spec_belief(spec) for phase in config.opponents for spec in phase.mix
               if spec != SELF and checkpoint_path(spec) is not None}
    if config.uses_self_play():
        beliefs[SELF] = config.env.belief
    kinds = set(beliefs.values())
    if len(kinds) > 1:
        listing = ", ".join(f"{spec} (belief={belief!r})" for spec, belief in sorted(beliefs.items()))
        raise ConfigError(f"opponents: every checkpoint in the schedule must share one belief setting; got {listing}")
    return kinds.pop() if kinds else "none"
