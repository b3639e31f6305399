"""Search labels: every legal move of a position valued by the search player, the teacher of expert iteration.

A generation of expert iteration (:mod:`train.training.expert_iteration`) plays a base player against an opponent
and, at each decision with a choice of the base player's seat, lets the search player (:mod:`agents.search`) value
every legal move: its root values over hundreds of hidden hands drawn from its belief, its rollouts continuing each
move with the base player on that seat and ``rule`` on the other (or, with ``opponent_rollout="modelled"``, the
opponent its learned model says it is facing). A network then regresses those values
(:mod:`train.training.fit`) and becomes the next generation's base player.

* :class:`BasePlayer`: the player a generation starts from, as compiled code: ``rule``, ``random`` or a checkpoint
  without belief features (:mod:`agents.compiled_actor`), so that the search's rollouts run it inside numba.
* :class:`SearchLabels`: the search's settings (simulations, belief, guided leaves, the opponent's rollouts).
* :func:`collect`: the base player's games, recording the observation, the move values and the base player's move
  at every decision with a choice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

import numpy as np

from agents.actor_kernels import actor_choice
from agents.compiled_actor import actor_params, value_params
from agents.ppo import PPOPolicy
from agents.search import SearchPolicy
from train.training.opponent_mix import OpponentMix
from uno_env.belief import BeliefKind
from uno_env.cards import NUM_ACTIONS
from uno_env.core import COMPILED_PLAYERS, choose, legal_actions_into, pack_state, seed_stream
from uno_env.game import Game
from uno_env.match import play_game
from uno_env.opponents import RulePolicy
from uno_env.policy import Needs
from uno_env.view import PublicView

#: The labelling search's beliefs: a tracker of :mod:`uno_env.belief`, the particle filter told the opponent, or the
#: particle filter learning the opponent's model from its plays.
SearchBelief = Literal["counting", "particles", "aware", "learned"]
SEARCH_BELIEFS: tuple[str, ...] = get_args(SearchBelief)
#: The labelling search's rollouts on the opponent's seat: ``rule``, or the opponent the learned model describes.
OpponentRollout = Literal["rule", "modelled"]
OPPONENT_ROLLOUTS: tuple[str, ...] = get_args(OpponentRollout)
#: The base players built into the kernels (uno_env.core's compiled players), by name: their policy codes; any other
#: base is a checkpoint's path.
BUILT_IN_BASES = {name: code for code, name in enumerate(COMPILED_PLAYERS)}


class BasePlayer:
    """The player a generation starts from, as compiled code: a built-in policy or an actor.

    ``base`` is ``"rule"``, ``"random"`` or the path of a checkpoint trained with belief ``none``
    (:mod:`agents.compiled_actor`). The same code chooses its moves in real play and in the search's rollouts.
    """

    def __init__(self, base: str | Path = "rule") -> None:
        self.name = str(base)
        self.policy = BUILT_IN_BASES.get(self.name)
        network = None if self.policy is not None else PPOPolicy.load(base)
        self.params = None if network is None else actor_params(network)
        #: The network's critic, compiled: what a guided search's leaves are scored by (None for a built-in player).
        self.value = None if network is None else value_params(network)

    def move(self, state: np.ndarray, legal: np.ndarray, n: int, stream: np.ndarray) -> int:
        """Its choice among ``legal[:n]`` for the seat to move of a kernel state."""
        if self.params is None:
            return int(choose(state, legal, n, self.policy, stream))
        return int(actor_choice(state, legal, n, self.params))


@dataclass(frozen=True)
class SearchLabels:
    """How the search values the moves: ``simulations`` per decision over worlds from ``belief``.

    At each decision the search (:class:`~agents.search.SearchPolicy`, one tree level) runs ``simulations``
    simulations over worlds drawn from its own ``belief`` about the hidden hand, which has followed every view of
    the seat; a move's label is its mean simulated outcome on the +-1 scale. Its rollouts continue each move with the
    base player on the seat (the compiled network of a checkpoint, when the base is one) and, by
    ``opponent_rollout``, ``rule`` on the other or the opponent the belief has learned (below).

    ``belief`` is ``counting``, ``particles``, ``aware``: the particle filter told that the opponent plays
    ``rule`` (the policy-aware likelihood, docs/beliefs.md), which is true of the labelled games when the opponent
    is ``rule``, or ``learned``: the particle filter with the learned opponent model
    (:class:`~uno_env.belief.LearnedOpponent` with its default candidates), told nothing about the opponent.
    ``opponent_rollout`` ``modelled`` (which needs ``learned``) plays on the opponent's seat, in each world, a
    candidate drawn by the weights the filter has learned from this game's plays
    (:class:`~agents.search.SearchPolicy`'s ``opponent_rollout="modelled"``), so games against a mix of opponents are
    labelled by a search that does not assume ``rule``.

    ``exploration`` is the search's UCB constant. The default is so large that UCB always picks a least-tried move:
    every move is played on the same worlds (common random numbers throughout), which is what labels want. A
    player's UCB (0.7) spends its simulations on the best moves, and the rest get noisy values: relabelling the
    same positions with other random streams, the centred labels correlate 0.61 with it and 0.83 with the uniform
    allocation (800 simulations, 1,056 moves).
    """

    simulations: int = 800
    belief: SearchBelief = "counting"
    exploration: float = 1e6
    leaf_moves: int | None = None
    opponent_rollout: OpponentRollout = "rule"

    def __post_init__(self) -> None:
        if self.belief not in SEARCH_BELIEFS:
            raise ValueError(f"search belief must be one of {', '.join(SEARCH_BELIEFS)}, got {self.belief!r}")
        if self.opponent_rollout not in OPPONENT_ROLLOUTS:
            raise ValueError(f"search opponent_rollout must be one of {', '.join(OPPONENT_ROLLOUTS)}, got "
                             f"{self.opponent_rollout!r}")
        if self.opponent_rollout == "modelled" and self.belief != "learned":
            raise ValueError(f"search opponent_rollout 'modelled' plays the opponent the belief learns: it needs "
                             f"belief 'learned', got {self.belief!r}")

    def player(self, base: BasePlayer) -> SearchPolicy:
        """A fresh search player with these settings, whose rollouts continue with ``base`` on its own seat.

        With ``leaf_moves`` and a network as the base, each simulation stops after that many of the seat's decisions
        and the network's critic scores it (:class:`~agents.search.SearchPolicy`'s ``value``): the guided search of
        expert iteration. A built-in base has no critic, and its simulations play to the end.
        """
        aware, learned = self.belief == "aware", self.belief == "learned"
        guided = self.leaf_moves is not None and base.value is not None
        return SearchPolicy(simulations=self.simulations, belief="particles" if aware or learned else self.belief,
                            rollout=base.name if base.params is None else base.params,
                            opponent_rollout=self.opponent_rollout, exploration=self.exploration,
                            opponent_policy=RulePolicy() if aware else None,
                            opponent_model="learned" if learned else "told",
                            value=base.value if guided else None, leaf_moves=self.leaf_moves if guided else None)


class _Labeller:
    """Plays the base player on its seat and records (observation, the search's move values, base move) at each
    decision with a choice."""

    def __init__(self, belief: BeliefKind, base: str | Path, search: SearchLabels) -> None:
        self.needs = Needs(belief)  # the observations recorded carry these belief features
        self.base = BasePlayer(base)
        self.search = search.player(self.base)
        self.game: Game | None = None
        self.rng = np.random.default_rng()
        self.stream = seed_stream(0)  # the random base player's draws in real play
        self.legal = np.empty(NUM_ACTIONS, dtype=np.int64)
        self.records: list[tuple[np.ndarray, np.ndarray, int]] = []

    def deal(self, game: Game) -> None:
        self.game = game

    def reset(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)
        self.stream = seed_stream(int(self.rng.integers(2**63)))
        self.search.reset(int(self.rng.integers(2**62)))

    def observe_start(self, view: PublicView) -> None:
        self.search.observe_start(view)

    def act(self, view: PublicView) -> int:
        self.search.act(view)  # every view, forced moves too: its belief follows the game
        game = self.game
        state = pack_state(game.hands, game.deck, game.discard, game.active_colour, game.current, game.pending_draw)
        n = legal_actions_into(state, self.legal)
        if n == 1:
            return int(self.legal[0])
        move = self.base.move(state, self.legal, n, self.stream)
        self.records.append((np.asarray(view.observation, np.float32), root_values(self.search).astype(np.float32),
                             move))
        return move


def root_values(search: SearchPolicy) -> np.ndarray:
    """A search's last decision as labels: each root move's mean outcome on the +-1 scale (NaN: illegal, or never
    simulated, which a budget below the number of legal moves leaves some moves)."""
    values = np.full(NUM_ACTIONS, np.nan)
    for action, (visits, total) in search.last_root.items():
        if visits:
            values[action] = 2.0 * total / visits - 1.0
    return values


def collect(games: int, seed: int, belief: BeliefKind, base: str | Path, search: SearchLabels,
            opponent: dict[str, float] | None = None,
            pool: Sequence[str] = ()) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Observations, the search's move values and the base player's moves from ``games`` games, seats alternating.

    The base player is ``"rule"``, ``"random"`` or the path of a checkpoint (belief ``none``); each game's opponent is
    drawn from the ``opponent`` mix (default: ``rule`` alone; ``self``: one of ``pool``, :class:`OpponentMix`). The
    observations carry ``belief``'s features.
    """
    labeller = _Labeller(belief, base, search)
    rival = OpponentMix(opponent or {"rule": 1.0}, list(pool))
    rng = np.random.default_rng(seed)
    for game in range(games):
        seats = (labeller, rival) if game % 2 == 0 else (rival, labeller)
        play_game(seats, int(rng.integers(2**62)), first_player=int(rng.integers(2)), on_deal=labeller.deal)
    observations, values, moves = zip(*labeller.records, strict=True)
    return np.array(observations), np.array(values), np.array(moves)
