"""V at the next chance event: the control variates value a state after the moves the evaluator can replay.

A value function over the full state (:mod:`train.evaluation.value`) values every player as ``rule`` (or
``random``), so the terms of the control variates cancel the luck of a draw as a ``rule`` player would feel it.
But between two chance events a game is deterministic when both players are: the cards are all known and each
player's move follows from the state. The evaluator knows the players, so it can play those moves itself and value
the state where the next chance event happens (the next card off the deck, the next choice of a player whose move
probabilities are known) instead of the state right after the last one. The terms then value each draw by what the
real players make of it until the next draw, and V's guess of how they play starts only there.

:func:`seat_players` says which seats can be replayed: a policy whose own class names a deterministic compiled
player (``rule``, the deterministic styles: :data:`uno_env.core.DETERMINISTIC_PLAYERS`), and a network taking the
most likely action without belief features (its actor compiled, :mod:`agents.compiled_actor`). Any other seat (one
that draws random numbers, a search, a network with belief features or sampling its moves, a user's policy) stops
the replay at its choices, where V values the state as it does without the lookahead. :func:`next_chance_rows` is
the compiled replay.

Each replayed state is a function of the state it starts from alone, so every term keeps expectation zero and the
adjusted score stays unbiased whatever the players are (tests/test_lookahead.py checks the replay against played
games).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numba import njit

from agents.actor_kernels import BATCH, choose_rows
from agents.compiled_actor import actor_params
from agents.ppo import PPOPolicy
from agents.search_kernels import reward_of
from train.evaluation.value_targets import pack_row, row_of
from uno_env import core
from uno_env.cards import DRAW_ACTION, NUM_ACTIONS
from uno_env.policy import compiled_player

#: The code of a seat the replay stops at (its moves are not replayed).
STOP = -1
#: The code of a seat played by a network's compiled actor.
NETWORK = core.EXTERNAL
#: Moves after which a replay stops anyway (UNO's deterministic stretches are a few moves long).
MAX_MOVES = 400


@dataclass(frozen=True)
class SeatPlayers:
    """How the replay plays each seat: ``codes[seat]`` a deterministic compiled player's code, :data:`NETWORK`
    (the actor of ``params[seat]``) or :data:`STOP`."""

    codes: np.ndarray  # (2,) int64
    params: tuple[tuple | None, tuple | None]

    @property
    def replays(self) -> bool:
        """Whether any seat's moves are replayed."""
        return bool((self.codes != STOP).any())

    def swapped(self) -> SeatPlayers:
        """The same players with the seats exchanged (the other game of a deal pair)."""
        return SeatPlayers(self.codes[::-1].copy(), (self.params[1], self.params[0]))


def seat_players(policies: Sequence[object]) -> SeatPlayers:
    """The replay's players for ``policies`` (seat 0's, seat 1's): module docstring."""
    codes = np.full(2, STOP, dtype=np.int64)
    params: list[tuple | None] = [None, None]
    for seat, policy in enumerate(policies):
        name = compiled_player(policy)
        if name in core.DETERMINISTIC_PLAYERS:
            codes[seat] = core.COMPILED_PLAYERS.index(name)
        elif isinstance(policy, PPOPolicy) and policy.deterministic:
            try:
                params[seat] = actor_params(policy)
            except ValueError:  # belief features, or layers the compiled actor does not compute
                continue
            codes[seat] = NETWORK
    return SeatPlayers(codes, (params[0], params[1]))


def next_chance_rows(rows: np.ndarray, players: SeatPlayers) -> tuple[np.ndarray, np.ndarray]:
    """From each of the value ``rows`` (``(n, STATE_SIZE)`` int64, :mod:`train.evaluation.value`) of a running game,
    the moves of the seats ``players`` replays, up to the next chance event or a seat it stops at: the row reached
    there and seat 0's score where the replay ended the game (``nan`` elsewhere)."""
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    return _replay(rows, players.codes, *players.params)


# The actors are called as globals, their parameters passed: a kernel taking an actor itself as an argument could not
# be loaded from numba's cache, and every worker process would compile it and rewrite the cache at once. A seat
# without a network passes None, which removes its branch when the kernel is compiled.
@njit(cache=True)
def _replay(rows: np.ndarray, codes: np.ndarray, params0: tuple | None, params1: tuple | None
            ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`next_chance_rows`' kernel: ``params0``/``params1`` the seats' actors' parameters, or ``None``.

    All rows move in rounds: each plays on until it stops or a network must choose, then the networks choose for
    every row waiting on them in batched passes (:func:`~agents.actor_kernels.choose_rows`), which cost a fraction
    of one pass per decision."""
    m = len(rows)
    states = np.zeros((m, core.STATE_SIZE), dtype=np.int64)
    legal = np.empty((m, NUM_ACTIONS), dtype=np.int64)
    ctls = np.zeros((m, core.CTL_SIZE), dtype=np.int64)  # ctls[i, CHOICES]: the legal actions of a waiting row
    stream = np.empty(1, dtype=np.uint64)
    for i in range(m):
        # pack_row shuffles the deck from the stream; the replay stops before any card is drawn, so the order never
        # matters, and the same stream for every row keeps the result a function of the row alone
        stream[0] = 1
        pack_row(rows[i], states[i], stream)
    driver = core.control(-1, False, 0, 0, 0)  # plays the one move it is given: no budget for more
    fixed = np.full(m, np.nan)
    going = np.ones(m, dtype=np.bool_)
    moves = np.zeros(m, dtype=np.int64)
    waiting = np.empty((2, m), dtype=np.int64)
    chosen = np.empty(BATCH, dtype=np.int64)
    count = np.zeros(2, dtype=np.int64)  # rows waiting on each seat's network this round
    while True:
        count[:] = 0
        for i in range(m):
            while going[i]:
                state = states[i]
                if state[core.OUTCOME] != core.RUNNING:
                    fixed[i] = reward_of(state[core.OUTCOME])  # seat 0's score, from core's outcome table
                    going[i] = False
                    break
                n = core.legal_actions_into(state, legal[i])
                seat = state[core.CURRENT]
                if n > 1 and codes[seat] == NETWORK:
                    ctls[i, core.CHOICES] = n
                    waiting[seat, count[seat]] = i
                    count[seat] += 1
                    break
                action = DRAW_ACTION  # a stop, as a draw is
                if n == 1:  # forced (a draw, mostly): every player makes it
                    action = legal[i, 0]
                elif codes[seat] != STOP:
                    action = core.choose(state, legal[i], n, codes[seat], stream)
                going[i] = _play(state, action, moves[i], driver, stream, legal[i])
                moves[i] += 1
        if count[0] + count[1] == 0:
            break
        for seat in range(2):
            for first in range(0, count[seat], BATCH):
                batch = waiting[seat, first:min(first + BATCH, count[seat])]
                if seat == 0:
                    if params0 is not None:
                        choose_rows(states, legal, ctls, batch, len(batch), params0, chosen)
                elif params1 is not None:
                    choose_rows(states, legal, ctls, batch, len(batch), params1, chosen)
                for r in range(len(batch)):
                    i = batch[r]
                    going[i] = _play(states[i], chosen[r], moves[i], driver, stream, legal[i])
                    moves[i] += 1
    out = rows.copy()
    for i in range(m):
        row_of(states[i], out[i])
    return out, fixed


@njit(cache=True)
def _play(state: np.ndarray, action: int, moves: int, driver: np.ndarray, stream: np.ndarray, legal: np.ndarray
          ) -> bool:
    """Play ``action`` through the driver unless it is a draw (the next chance event) or the row has made
    :data:`MAX_MOVES` moves; whether the row goes on."""
    if action == DRAW_ACTION or moves >= MAX_MOVES:
        return False
    driver[core.ACTION], driver[core.BUDGET] = action, 0
    core.play_turn(state, driver, stream, None, None, (), legal, None)
    return True
