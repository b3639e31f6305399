"""What the control variates' value function learns from: states of played games, valued by rollouts.

A state is a row of :mod:`train.evaluation.value` (both hands, the deck's contents, the top card, the colour in
force, the seat to move and the cards it must still draw). Two compiled kernels make the training data of
:mod:`train.evaluation.fit_value`:

* :func:`self_play_states`: the state before every move of games played with the compiled players (``rule`` and
  ``random``, :data:`PAIRINGS`; for an agent's V, the agent's compiled actor against them, :data:`AGENT_PAIRINGS`),
  from deals of the kernel random stream;
* :func:`rollout_values`: seat 0's mean score over playouts from a state, the deck's order shuffled anew for each
  playout (nobody knows it), each seat played as V will be told it plays (``AS_*`` codes of
  :mod:`train.evaluation.value`: ``rule``, ``random`` or the agent's actor). That is the value of the state when the
  seats play so from there, with a noise that shrinks as the square root of the playouts: a far less noisy target
  than the one final outcome of the game the state came from.

Why ``rule`` for every player but ``random`` in the general V: it is one function for every matchup, and ``rule``
plays much as the networks do (they were made against it). An agent's V knows the agent's moves too, and takes more
of the luck out of that agent's games (docs/evaluation.md).

A row does not say which cards lie in the discard pile under the top card or in what order: they are every card
in neither hand nor the deck, and their order does not matter (a reshuffle shuffles them).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from agents.actor_kernels import actor_choice
from train.evaluation import value
from uno_env import core
from uno_env.cards import COPIES, NUM_ACTIONS, NUM_CARD_TYPES, card_rank

_N = NUM_CARD_TYPES
_COPIES = np.array(COPIES, dtype=np.int64)
_RANK_OF = np.array([card_rank(card) for card in range(_N)], dtype=np.int64)
#: The general V's self-play games: the players of (seat 0, seat 1) as V's ``AS_*`` codes, and the share of games of
#: each: the states V meets are those of players near ``rule`` and of ``random``. One game in two swaps the seats.
PAIRINGS: tuple[tuple[int, int, float], ...] = ((value.AS_RULE, value.AS_RULE, 0.5),
                                                (value.AS_RULE, value.AS_RANDOM, 0.3),
                                                (value.AS_RANDOM, value.AS_RANDOM, 0.2))
#: An agent's V's self-play games: the agent against ``rule`` (which stands for every player but ``random``) and
#: against ``random``.
AGENT_PAIRINGS: tuple[tuple[int, int, float], ...] = ((value.AS_AGENT, value.AS_RULE, 0.7),
                                                      (value.AS_AGENT, value.AS_RANDOM, 0.3))
#: The compiled player of each ``AS_*`` code (the agent's actor is the driver's external chooser).
_PLAYER_OF = np.array([core.RULE_POLICY, core.RANDOM_POLICY, core.EXTERNAL], dtype=np.int64)
#: Moves after which a self-play game stops giving states (UNO games end far sooner).
_MAX_MOVES = 400
#: Actions after which a playout that has not ended counts as a draw.
_MAX_PLAYOUT = 3000


@njit(cache=True)
def _row_of(state: np.ndarray, row: np.ndarray) -> None:
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
def _self_play(games: int, seed: int, players: np.ndarray, shares: np.ndarray, chooser, params: tuple
               ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`self_play_states`' kernel: ``players`` (pairings, 2) ``AS_*`` codes, ``shares`` their cumulative
    shares; the agent's moves are ``chooser(state, legal, n, params)``'s."""
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
            _row_of(state, rows[n])
            numbers[n] = game
            n += 1
            ctl = core.control(-1, False, _PLAYER_OF[seats[game, 0]], _PLAYER_OF[seats[game, 1]], 1)
            core.play_turn(state, ctl, stream, None, chooser, params, legal, None)  # one move, by the driver
    return rows[:n], numbers[:n], seats


def self_play_states(games: int, seed: int, actor: tuple | None = None
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The state before every move of ``games`` games from ``seed`` (int64 rows of :mod:`train.evaluation.value`),
    the number of the game each comes from and how each seat plays in it (``(n, 2)`` ``AS_*`` codes): games of
    :data:`PAIRINGS`, or with ``actor`` (:func:`agents.compiled_actor.actor_params` of the agent) of
    :data:`AGENT_PAIRINGS`. Same seed, same states."""
    pairings = PAIRINGS if actor is None else AGENT_PAIRINGS
    players = np.array([[a, b] for a, b, _ in pairings], dtype=np.int64)
    shares = np.cumsum([share for _, _, share in pairings])
    if actor is None:
        rows, numbers, seats = _self_play(games, seed, players, shares / shares[-1], None, ())
    else:
        rows, numbers, seats = _self_play(games, seed, players, shares / shares[-1], actor_choice, actor)
    return rows, numbers, seats[numbers]


@njit(cache=True)
def _rollouts(rows: np.ndarray, players: np.ndarray, playouts: int, seed: int, chooser, params: tuple) -> np.ndarray:
    """:func:`rollout_values`' kernel: ``players`` (n, 2) ``AS_*`` codes, the agent's moves ``chooser``'s."""
    stream = np.full(1, seed, dtype=np.uint64)
    state = np.zeros(core.STATE_SIZE, dtype=np.int64)
    legal = np.empty(NUM_ACTIONS, dtype=np.int64)
    out = np.empty(len(rows))
    for i in range(len(rows)):
        total = 0.0
        for _ in range(playouts):
            pack_row(rows[i], state, stream)
            ctl = core.control(-1, False, _PLAYER_OF[players[i, 0]], _PLAYER_OF[players[i, 1]], _MAX_PLAYOUT)
            core.play_turn(state, ctl, stream, None, chooser, params, legal, None)
            outcome = state[core.OUTCOME]
            total += 1.0 if outcome == 0 else 0.0 if outcome == 1 else 0.5  # a draw or a playout cut short: 1/2
        out[i] = total / playouts
    return out


def rollout_values(rows: np.ndarray, seats: np.ndarray, playouts: int, seed: int, actor: tuple | None = None
                   ) -> np.ndarray:
    """Seat 0's mean score (float64, ``(n,)``) over ``playouts`` playouts from each of the ``(n, STATE_SIZE)`` value
    ``rows`` of running games, each with the deck shuffled anew from ``seed``'s stream; each seat plays as ``seats``
    (``(n, 2)`` or ``(2,)`` ``AS_*`` codes) says, a seat of the agent with ``actor``
    (:func:`agents.compiled_actor.actor_params`).

    Raises:
        ValueError: a seat plays the agent and no ``actor`` is given.
    """
    players = np.ascontiguousarray(np.broadcast_to(np.asarray(seats, dtype=np.int64), (len(rows), 2)))
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    if actor is None:
        if (players == value.AS_AGENT).any():
            raise ValueError("a seat plays the agent: rollout_values needs its actor")
        return _rollouts(rows, players, playouts, seed, None, ())
    return _rollouts(rows, players, playouts, seed, actor_choice, actor)
