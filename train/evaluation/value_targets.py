"""What the control variates' value function learns from: states of played games, valued by rollouts.

A state is a row of :mod:`train.evaluation.value` (both hands, the deck's contents, the top card, the colour in
force, the seat to move and the cards it must still draw). Two compiled kernels make the training data of
:mod:`train.evaluation.fit_value`:

* :func:`self_play_states`: the state before every move of games played with the compiled players (``rule`` and
  ``random``, :data:`PAIRINGS`), from deals of the kernel random stream;
* :func:`rollout_values`: seat 0's mean score over playouts from a state, the deck's order shuffled anew for each
  playout (nobody knows it), a seat that played ``random`` in the game playing ``random`` and any other ``rule``.
  That is the value of the state when the seats play so from there, with a noise that shrinks as the square root of
  the playouts: a far less noisy target than the one final outcome of the game the state came from.

Why ``rule`` for every player but ``random``: V is one function for every matchup and is told only which seat plays
``random`` (whose moves are chance events), and ``rule`` plays much as the networks do (they were made against it).
A V that knew every player could take more of the luck out; see docs/evaluation.md for what this one takes.

A row does not say which cards lie in the discard pile under the top card or in what order: they are every card
in neither hand nor the deck, and their order does not matter (a reshuffle shuffles them).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from agents.search_kernels import reward_of
from train.evaluation import value
from uno_env import core
from uno_env.cards import COPIES, NUM_ACTIONS, NUM_CARD_TYPES, card_rank

_N = NUM_CARD_TYPES
_COPIES = np.array(COPIES, dtype=np.int64)
_RANK_OF = np.array([card_rank(card) for card in range(_N)], dtype=np.int64)
#: The self-play games' players, (seat 0, seat 1) as compiled player codes, and the share of games of each: the
#: states V meets are those of players near ``rule`` and of ``random``. One game in two swaps the seats.
PAIRINGS: tuple[tuple[str, str, float], ...] = (("rule", "rule", 0.5), ("rule", "random", 0.3),
                                                ("random", "random", 0.2))
#: Moves after which a self-play game stops giving states (UNO games end far sooner).
_MAX_MOVES = 400
#: Actions after which a playout that has not ended counts as a draw.
_MAX_PLAYOUT = 3000


@njit(cache=True)
def row_of(state: np.ndarray, row: np.ndarray) -> None:
    """Write the value row (:mod:`train.evaluation.value`) of core's packed ``state`` into ``row``."""
    row[value.HANDS:value.DECK] = state[core.HANDS:core.HANDS + 2 * _N]
    row[value.DECK:value.DECK + _N] = 0
    for i in range(state[core.DECK_LEN]):
        row[value.DECK + state[core.DECK + i]] += 1
    row[value.TOP] = state[core.DISCARD + state[core.DISCARD_LEN] - 1]
    row[value.COLOUR] = state[core.COLOUR]
    row[value.CURRENT] = state[core.CURRENT]
    row[value.PENDING] = state[core.PENDING]


@njit(cache=True)
def pack_row(row: np.ndarray, state: np.ndarray, stream: np.ndarray) -> None:
    """Write into ``state`` (core's packed layout) the game of value row ``row``, its deck shuffled from ``stream``
    and its discard pile every other card with the top card last (module docstring)."""
    state[:] = 0
    state[core.HANDS:core.HANDS + 2 * _N] = row[value.HANDS:value.DECK]
    state[core.HAND_SIZES] = row[value.HANDS:value.HANDS + _N].sum()
    state[core.HAND_SIZES + 1] = row[value.HANDS + _N:value.DECK].sum()
    n = 0
    for card in range(_N):
        for _ in range(row[value.DECK + card]):
            state[core.DECK + n] = card
            n += 1
    core.shuffle(state[core.DECK:core.DECK + n], stream)
    state[core.DECK_LEN] = n
    top = row[value.TOP]
    n = 0
    for card in range(_N):
        rest = _COPIES[card] - row[value.HANDS + card] - row[value.HANDS + _N + card] - row[value.DECK + card]
        for _ in range(rest - (1 if card == top else 0)):
            state[core.DISCARD + n] = card
            n += 1
        state[core.COUNTS + card] = rest
    state[core.DISCARD + n] = top
    state[core.DISCARD_LEN] = n + 1
    state[core.COLOUR] = row[value.COLOUR]
    state[core.TOP_RANK] = _RANK_OF[top]
    state[core.CURRENT] = row[value.CURRENT]
    state[core.PENDING] = row[value.PENDING]
    state[core.OUTCOME] = core.RUNNING


@njit(cache=True)
def _self_play(games: int, seed: int, players: np.ndarray, shares: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`self_play_states`' kernel: ``players`` (pairings, 2) compiled player codes, ``shares`` their
    cumulative shares."""
    stream = np.full(1, seed, dtype=np.uint64)
    state = np.zeros(core.STATE_SIZE, dtype=np.int64)
    legal = np.empty(NUM_ACTIONS, dtype=np.int64)
    rows = np.zeros((games * 64, value.STATE_SIZE), dtype=np.int64)
    numbers = np.zeros(games * 64, dtype=np.int64)
    seats = np.zeros((games, 2), dtype=np.int64)
    n = 0
    for game in range(games):
        core.deal_into(state, stream, -1)
        pairing = np.searchsorted(shares, core.uniform(stream), side="right")
        seats[game, game % 2] = players[pairing, 0]
        seats[game, 1 - game % 2] = players[pairing, 1]
        for _ in range(_MAX_MOVES):
            if state[core.OUTCOME] != core.RUNNING:
                break
            if n == len(rows):  # rare long games: grow by half
                rows = np.concatenate((rows, np.zeros((len(rows) // 2, value.STATE_SIZE), dtype=np.int64)))
                numbers = np.concatenate((numbers, np.zeros(len(numbers) // 2, dtype=np.int64)))
            row_of(state, rows[n])
            numbers[n] = game
            n += 1
            core.advance(state, -1, seats[game, 0], seats[game, 1], stream, legal, 1)  # one move, by the driver
    return rows[:n], numbers[:n], seats[numbers[:n]] == core.RANDOM_POLICY


def self_play_states(games: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The state before every move of ``games`` games of :data:`PAIRINGS` from ``seed`` (int64 rows of
    :mod:`train.evaluation.value`), the number of the game each comes from and which seats play ``random`` in it
    (``(n, 2)`` booleans). Same seed, same states."""
    players = np.array([[core.COMPILED_PLAYERS.index(a), core.COMPILED_PLAYERS.index(b)] for a, b, _ in PAIRINGS])
    shares = np.cumsum([share for _, _, share in PAIRINGS])
    return _self_play(games, seed, players, shares / shares[-1])


@njit(cache=True)
def _rollouts(rows: np.ndarray, players: np.ndarray, playouts: int, seed: int) -> np.ndarray:
    """:func:`rollout_values`' kernel: ``players`` (n, 2) compiled player codes."""
    stream = np.full(1, seed, dtype=np.uint64)
    state = np.zeros(core.STATE_SIZE, dtype=np.int64)
    legal = np.empty(NUM_ACTIONS, dtype=np.int64)
    out = np.empty(len(rows))
    for i in range(len(rows)):
        total = 0.0
        for _ in range(playouts):
            pack_row(rows[i], state, stream)
            core.advance(state, -1, players[i, 0], players[i, 1], stream, legal, _MAX_PLAYOUT)
            outcome = state[core.OUTCOME]
            total += reward_of(outcome)  # seat 0's score: a draw or a playout cut short counts 1/2
        out[i] = total / playouts
    return out


def rollout_values(rows: np.ndarray, random_seats: np.ndarray, playouts: int, seed: int) -> np.ndarray:
    """Seat 0's mean score (float64, ``(n,)``) over ``playouts`` playouts from each of the ``(n, STATE_SIZE)`` value
    ``rows`` of running games, each with the deck shuffled anew from ``seed``'s stream; a seat that
    ``random_seats`` (``(n, 2)`` or ``(2,)`` booleans) marks plays ``random``, the other ``rule``."""
    random_seats = np.broadcast_to(np.asarray(random_seats, dtype=bool), (len(rows), 2))
    players = np.where(random_seats, core.RANDOM_POLICY, core.RULE_POLICY).astype(np.int64)
    return _rollouts(np.ascontiguousarray(rows, dtype=np.int64), players, playouts, seed)
