"""Stable-Baselines3's ``VecEnv`` over the native vector env, so MaskablePPO trains on it (``vec_env: native``).

:class:`NativeVecEnv` runs :class:`~uno_env.vector.UnoVectorEnv` with same-step autoreset, which is what SB3
expects of a ``VecEnv``: the step that ends a game returns the next game's observation, and the ended game's is
``infos[i]["terminal_observation"]`` (with ``"TimeLimit.truncated"`` when the step limit cut it, so PPO
bootstraps the value there). MaskablePPO reads the masks through ``env_method("action_masks")``, as it does
for any ``VecEnv``. Finished games carry ``info["is_success"]`` and ``info["opponent"]`` (who played them), as
the trainer's per-env wrappers give; wrap it in ``VecMonitor`` for the episode statistics.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.vec_env import VecEnv
from stable_baselines3.common.vec_env.base_vec_env import VecEnvIndices, VecEnvObs, VecEnvStepReturn

from uno_env.core import reward
from uno_env.vector import AGENT, UnoVectorEnv
from uno_env.view import WINNER_NAMES

# An ended game's winner from the agent's reward (seat 0's outcome codes are the view's, from the agent's side).
_WINNER = {reward(outcome, AGENT): name for outcome, name in WINNER_NAMES.items()}


class NativeVecEnv(VecEnv):
    """An SB3 ``VecEnv`` of ``num_envs`` games stepped by one :class:`~uno_env.vector.UnoVectorEnv`.

    Args:
        num_envs: how many games run side by side.
        opponent: ``"random"``, ``"rule"`` or a mix of them (see :class:`~uno_env.vector.UnoVectorEnv`).
        first_player: ``"agent"``, ``"opponent"`` or ``"random"``.
        belief: ``"none"`` or ``"counting"``.
        max_episode_steps: agent steps before a game is truncated.

    Illegal actions raise (:class:`~uno_env.game.IllegalActionError`): MaskablePPO only samples legal ones, so
    one would be a bug to see, not a move to punish.
    """

    def __init__(self, num_envs: int, opponent: str | Mapping[str, float] = "random", first_player: str = "random",
                 belief: str = "none", max_episode_steps: int = 1000) -> None:
        self.env = UnoVectorEnv(num_envs, opponent=opponent, first_player=first_player, belief=belief,
                                illegal_action="raise", max_episode_steps=max_episode_steps,
                                autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
        self._actions: np.ndarray | None = None
        self._masks: np.ndarray | None = None
        self.render_mode = None  # read by VecEnv.__init__
        super().__init__(num_envs, self.env.single_observation_space, self.env.single_action_space)

    def reset(self) -> VecEnvObs:
        """New games in every env; seeded by the last :meth:`seed` call (env ``i`` from ``seed + i``), if any."""
        seeds = None if self._seeds[0] is None else self._seeds
        obs, info = self.env.reset(seed=seeds)
        self._masks = info["action_mask"]
        self._reset_seeds()
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        """Hold the actions for :meth:`step_wait`."""
        self._actions = actions

    def step_wait(self) -> VecEnvStepReturn:
        """Step every game once: observations, rewards (float32), dones and one info dict per env."""
        obs, rewards, terminated, truncated, info = self.env.step(self._actions)
        self._masks = info["action_mask"]
        dones = terminated | truncated
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        names = self.env.opponent_names
        for i in np.flatnonzero(dones):
            infos[i] = {"terminal_observation": info["final_obs"][i], "TimeLimit.truncated": bool(truncated[i]),
                        "is_success": bool(info["is_success"][i]), "opponent": names[info["opponent"][i]]}
            if terminated[i]:  # UnoEnv's info["winner"]; a truncated game has none
                infos[i]["winner"] = _WINNER[float(np.sign(rewards[i]))]
        return obs, rewards.astype(np.float32), dones, infos

    def action_masks(self) -> np.ndarray:
        """The legal actions of every env, ``(num_envs, 61)`` bool (sb3-contrib's convention)."""
        if self._masks is None:
            raise RuntimeError("call reset() before action_masks()")
        return self._masks.astype(bool)

    def set_opponent_mix(self, mix: Mapping[str, float], pool: Sequence[str]) -> None:
        """The trainer's opponent schedule (``OpponentMixWrapper.set_opponent_mix``): built-in opponents only."""
        if pool:
            raise ValueError(f"the native vector env plays no checkpoint pool; got {list(pool)}")
        self.env.set_opponent_mix({name: weight for name, weight in mix.items() if weight > 0})

    def close(self) -> None:
        """Nothing to release: the games live in this process's arrays."""
        self.env.close()

    # ------------------------------------------------------------------ VecEnv's per-env access
    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """The attribute of this env (each index sees the one shared object)."""
        value = getattr(self, attr_name)
        return [value for _ in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        """Refused: the games share one set of settings."""
        raise AttributeError(f"NativeVecEnv has no per-env attributes to set ({attr_name!r})")

    def env_method(self, method_name: str, *method_args, indices: VecEnvIndices = None, **method_kwargs) -> list[Any]:
        """``action_masks`` gives one mask per index; other methods run once, on all games."""
        if method_name == "action_masks":
            return list(self.action_masks()[list(self._get_indices(indices))])
        result = getattr(self, method_name)(*method_args, **method_kwargs)
        return [result for _ in self._get_indices(indices)]

    def env_is_wrapped(self, wrapper_class: type[gym.Wrapper], indices: VecEnvIndices = None) -> list[bool]:
        """No Gymnasium wrappers inside: the games are not gym.Env objects."""
        return [False for _ in self._get_indices(indices)]
