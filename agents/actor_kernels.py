"""A trained network's deterministic move and its critic's value as compiled code: the kernels of
:mod:`agents.compiled_actor`.

The forward pass works on *rows*: up to :data:`BATCH` positions encoded into the rows of the params' input buffer
(:func:`uno_env.observation.encode_state_into`, the one definition of the encoding) go through the layers together,
each hidden layer one matrix product (numba's ``np.dot``, BLAS), so the weights are read once for all the rows
rather than once per position. A single position is the case of one row. :func:`actor_choice` plays the legal
action with the highest logit, which is what :class:`~agents.ppo.PPOPolicy` plays with ``deterministic=True``;
:func:`value_of` is the critic's estimate of the position for the seat to move; :func:`forward` gives the whole
output layer. :func:`play_rows` continues several games at once with the actor on one seat and a built-in policy
on the other (the engine's one driver, :func:`uno_env.core.play_turn`, plays everything between two of the actor's
choices), one batched forward pass per round of the actor's choices; :func:`choose_rows` and :func:`values_into`
are its pass and the critic's over the rows; :func:`actor_simulate` plays one game to its end. The weights come
from :func:`agents.compiled_actor.actor_params` and :func:`agents.compiled_actor.value_params`.

They live apart from that reader because it needs torch and they do not: the search player
(:mod:`agents.search_kernels`) rolls out with them without loading torch.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from scipy.linalg import cython_blas  # noqa: F401 (loads the BLAS numba's np.dot calls, so its threads can be set)
from threadpoolctl import threadpool_limits

from uno_env.cards import ACTIONS_PER_COLOUR, NUM_ACTIONS, NUM_CARD_TYPES, NUM_COLOURED_RANKS, WILD
from uno_env.core import (
    ACTION,
    ACTION_CARD,
    BUDGET,
    CHOICES,
    CTL_SIZE,
    OUTCOME,
    apply_action,
    control,
    legal_actions_into,
    play_turn,
)
from uno_env.observation import BASE_SIZE, encode_state_into

# Offsets of the afterstate features (agents.afterstate's table): card 54, colour 4, draw, hand left 54, its colours
# 4, its wilds 2, follow, size.
_DRAW = NUM_CARD_TYPES + 4
_AFTER = _DRAW + 1
_COLOURS_AFTER = _AFTER + NUM_CARD_TYPES
_WILDS_AFTER = _COLOURS_AFTER + 4
_FOLLOW = _WILDS_AFTER + 2
assert _FOLLOW + 2 == 121

#: Hidden-layer activations the forward pass computes, by code.
TANH, RELU = 0, 1
#: The most positions one forward pass takes (the rows of the params' buffers). A pass over 64 rows costs about
#: 5 times less per position than 64 passes of one for the 512x512x256 networks (docs/benchmarks.md, "Network
#: speed").
BATCH = 64
#: Below this many rows the first layer adds the weight rows of each position's non-zero inputs; from it on, one
#: dense matrix product over the rows is faster (the observation is about 80 set entries of 294).
_SPARSE_BELOW = 8


def mlp_params(weights: list[np.ndarray], biases: list[np.ndarray], activation: int, inputs: int,
               afterstate: bool = False) -> tuple:
    """The kernels' ``params`` of an MLP: its layers' ``weights`` (outputs x inputs) and ``biases``, the hidden
    ``activation`` (:data:`TANH` or :data:`RELU`), the width of its ``inputs`` and whether it is an afterstate scorer.

    The tuple holds the weights (the first hidden layer's transposed), biases, activation, buffers (a row per position
    of a batched pass), the scratch indices of the input's non-zeros and ``afterstate``: what every kernel here reads.
    """
    weights = [np.ascontiguousarray(w, dtype=np.float32) for w in weights]
    if len(weights) > 1:  # the first hidden layer transposed (inputs x outputs): the kernels add its rows for the
        # input's non-zero entries only (_sparse_input), whose indices go to the last item, a scratch
        weights[0] = np.ascontiguousarray(weights[0].T)
    # The batched forward pass multiplies with numba's np.dot, that is scipy's OpenBLAS, which would start a thread
    # per core for a product of 64 rows: measured, a sixth less wall time for twice the CPU, and the project's
    # workers already take one core each. So BLAS runs on the calling thread, as torch does (set_num_threads(1)).
    threadpool_limits(limits=1, user_api="blas")
    sizes = (inputs, *(len(b) for b in biases))
    buffers = tuple(np.zeros((BATCH, size), dtype=np.float32) for size in sizes)
    return (tuple(weights), tuple(np.ascontiguousarray(b, dtype=np.float32) for b in biases), activation, buffers,
            np.zeros(inputs, dtype=np.int64), afterstate)


@njit(inline="always", fastmath=True)
def _unit(weight: np.ndarray, bias: np.ndarray, i: int, x: np.ndarray) -> float:
    """Unit ``i``'s input: ``weight[i] @ x + bias[i]``."""
    total = bias[i]
    for j in range(x.shape[0]):
        total += weight[i, j] * x[j]
    return total


@njit(cache=True, fastmath=True)
def _sparse_input(weight_t: np.ndarray, x: np.ndarray, out: np.ndarray, nonzero: np.ndarray) -> None:
    """``out = weight_t.T @ x`` from the non-zero inputs alone (``nonzero``: scratch indices).

    The first layer's weights are stored transposed (``weight_t``: inputs x outputs), so this adds the rows of the
    set inputs, four rows a pass so each output is loaded and stored a quarter as often: two to four times faster
    than the dense product of one position (docs/benchmarks.md, "Network speed")."""
    m = 0
    for j in range(x.shape[0]):
        if x[j] != 0.0:
            nonzero[m] = j
            m += 1
    out[:] = 0.0
    k = 0
    while k + 4 <= m:
        j0, j1, j2, j3 = nonzero[k], nonzero[k + 1], nonzero[k + 2], nonzero[k + 3]
        r0, r1, r2, r3 = weight_t[j0], weight_t[j1], weight_t[j2], weight_t[j3]
        v0, v1, v2, v3 = x[j0], x[j1], x[j2], x[j3]
        for i in range(out.shape[0]):
            out[i] += r0[i] * v0 + r1[i] * v1 + r2[i] * v2 + r3[i] * v3
        k += 4
    for rest in range(k, m):
        row, value = weight_t[nonzero[rest]], x[nonzero[rest]]
        for i in range(out.shape[0]):
            out[i] += row[i] * value


# tanh(x) as x * P(x^2) / Q(x^2) on [-9, 9] (float32's tanh is +-1 beyond): a rational fit of this project's
# (benchmarks/tanh_fit.py prints these numbers), within 5e-7 of tanh in float32. numba's exp is a scalar call (PyPI's
# llvmlite has no vector maths library); this is multiplications and one division, which the compiler vectorizes
# when a division by zero may give inf instead of raising (error_model="numpy" below): the activation of a batched
# pass takes a seventh of the time of tanh by exp (docs/design.md, "The guided search: batches and a rational tanh").
_TANH_CLIP = np.float32(9.0)
_P0, _P1, _P2, _P3, _P4, _P5, _P6 = (np.float32(c) for c in (
    0.9999999323951679, -0.15887455476151935, 0.031426227028180424, 0.007945172283570287, 0.00022509891374829458,
    1.3282761457557554e-06, 8.351692729246874e-10))
_Q1, _Q2, _Q3, _Q4, _Q5, _Q6 = (np.float32(c) for c in (
    0.17445837748024198, -0.04375359994196703, 0.024067144751247306, 0.001627383566209179, 2.128401056771844e-05,
    4.949660192847736e-08))


@njit(inline="always", fastmath=True)
def _tanh(x: np.float32) -> np.float32:
    """tanh of a float32 by the rational fit above."""
    x = min(max(x, -_TANH_CLIP), _TANH_CLIP)
    u = x * x
    p = ((((((_P6 * u + _P5) * u + _P4) * u + _P3) * u + _P2) * u + _P1) * u + _P0)
    q = ((((((_Q6 * u + _Q5) * u + _Q4) * u + _Q3) * u + _Q2) * u + _Q1) * u + np.float32(1.0))
    return x * p / q


@njit(cache=True, fastmath=True, error_model="numpy")
def _bias_activate(rows: np.ndarray, bias: np.ndarray, activation: int) -> None:
    """Add ``bias`` to every row of ``rows`` and apply the hidden activation in place (-1: none)."""
    for r in range(rows.shape[0]):
        out = rows[r]
        for i in range(out.shape[0]):
            out[i] += bias[i]
        if activation == TANH:
            for i in range(out.shape[0]):
                out[i] = _tanh(out[i])
        elif activation == RELU:
            for i in range(out.shape[0]):
                out[i] = max(out[i], 0.0)


@njit(cache=True)
def _hidden(m: int, params: tuple) -> np.ndarray:
    """The input of the network's output layer (its last hidden layer, or the encoding if it has none) for the
    positions encoded in rows ``0..m-1`` of the params' input buffer; rows of a buffer of ``params``, overwritten
    by the next pass."""
    weights, biases, activation, buffers, nonzero, _ = params
    last = len(weights) - 1
    if last == 0:
        return buffers[0][:m]
    # the first hidden layer's weights are stored transposed (agents.compiled_actor.actor_params)
    if m < _SPARSE_BELOW:
        for r in range(m):
            _sparse_input(weights[0], buffers[0][r], buffers[1][r], nonzero)
    else:
        np.dot(buffers[0][:m], weights[0], buffers[1][:m])
    _bias_activate(buffers[1][:m], biases[0], activation)
    for layer in range(1, last):
        np.dot(buffers[layer][:m], weights[layer].T, buffers[layer + 1][:m])
        _bias_activate(buffers[layer + 1][:m], biases[layer], activation)
    return buffers[last][:m]


@njit(cache=True)
def forward(state: np.ndarray, legal: np.ndarray, n: int, params: tuple) -> np.ndarray:
    """The output layer of the network in ``params`` for the seat to move of a kernel state, ``legal[:n]`` its legal
    actions: the actor's 61 logits or the critic's one value.

    The result is a row of the last of the params' buffers, overwritten by the next call with the same params (an
    afterstate actor's: a new array, its legal moves' scores and 0 elsewhere, as its torch head gives).
    """
    weights, biases, _, buffers, _, afterstate = params
    if afterstate:
        logits = np.zeros(NUM_ACTIONS, dtype=np.float32)
        _afterstate_rows_into(state, legal, n, buffers[0])
        scores = _scores(n, params)
        for i in range(n):
            logits[legal[i]] = scores[i]
        return logits
    last = len(weights) - 1
    encode_state_into(state, legal, n, buffers[0][0])
    hidden = _hidden(1, params)
    out = buffers[last + 1][:1]
    np.dot(hidden, weights[last].T, out)
    _bias_activate(out, biases[last], -1)
    return out[0]


@njit(inline="always")
def _best_legal(head: np.ndarray, bias: np.ndarray, hidden: np.ndarray, legal: np.ndarray, n: int) -> int:
    """The action of ``legal[:n]`` with the highest logit over the last hidden layer's ``hidden``; ties keep the
    lowest action id, as ``numpy.argmax`` does for :class:`~agents.ppo.PPOPolicy`. Only those logits are computed
    (a few of the 61 rows of the output layer)."""
    best = legal[0]
    best_logit = _unit(head, bias, best, hidden)
    for i in range(1, n):  # legal actions come in increasing order: a tie keeps the earlier, lower one
        logit = _unit(head, bias, legal[i], hidden)
        if logit > best_logit:
            best, best_logit = legal[i], logit
    return best


@njit(cache=True)
def _move_features_into(row: np.ndarray, action: int) -> None:
    """:func:`agents.afterstate.move_features` of ``action`` into ``row[BASE_SIZE:]``, the hand read from the
    encoding in ``row[:BASE_SIZE]`` (the same numbers in float32)."""
    out = row[BASE_SIZE:]
    out[:] = 0.0
    card = ACTION_CARD[action]
    colour = action // ACTIONS_PER_COLOUR if card >= 0 else -1  # the colour the move leaves in force
    if card >= 0:
        out[card] = 1.0
        out[NUM_CARD_TYPES + colour] = 1.0
    else:
        out[_DRAW] = 1.0
    size = np.float32(0.0)
    for t in range(NUM_CARD_TYPES):
        left = row[t] - (np.float32(1.0) if t == card else np.float32(0.0))
        out[_AFTER + t] = left
        size += left
        if t < WILD:
            out[_COLOURS_AFTER + t // NUM_COLOURED_RANKS] += left
    out[_WILDS_AFTER] = out[_AFTER + WILD]
    out[_WILDS_AFTER + 1] = out[_AFTER + WILD + 1]
    follow = out[_WILDS_AFTER] + out[_WILDS_AFTER + 1]
    if colour >= 0:
        follow += out[_COLOURS_AFTER + colour]
    if 0 <= card < WILD:  # a coloured card can be followed by its rank in another colour
        for other in range(4):
            follow += out[_AFTER + other * NUM_COLOURED_RANKS + card % NUM_COLOURED_RANKS]
    out[_FOLLOW] = follow / np.float32(7.0)
    out[_FOLLOW + 1] = size / np.float32(20.0)


@njit(cache=True)
def _afterstate_rows_into(state: np.ndarray, legal: np.ndarray, n: int, rows: np.ndarray) -> None:
    """An afterstate actor's input for the moves ``legal[:n]`` into ``rows[:n]``: the position encoded once, each
    move's features beside it in a row of its own."""
    encode_state_into(state, legal, n, rows[0][:BASE_SIZE])
    for i in range(n):
        if i > 0:
            rows[i][:BASE_SIZE] = rows[0][:BASE_SIZE]
        _move_features_into(rows[i], legal[i])


@njit(cache=True)
def _scores(m: int, params: tuple) -> np.ndarray:
    """An afterstate actor's scores of the ``m`` rows of the params' input buffer, through the scorer together (a
    column of a buffer, overwritten by the next pass)."""
    weights, biases, _, buffers, _, _ = params
    out = buffers[-1][:m]
    np.dot(_hidden(m, params), weights[-1].T, out)
    _bias_activate(out, biases[-1], -1)
    return out[:, 0]


@njit(inline="always")
def _best_row(scores: np.ndarray, first: int, n: int) -> int:
    """The index ``i < n`` of the highest of ``scores[first:first + n]``; a tie keeps the earlier (lower) move."""
    best = 0
    for i in range(1, n):
        if scores[first + i] > scores[first + best]:
            best = i
    return best


@njit(cache=True)
def actor_choice(state: np.ndarray, legal: np.ndarray, n: int, params: tuple) -> int:
    """The legal action (of ``legal[:n]``) with the highest logit of the actor in ``params``, for the seat to move."""
    weights, biases, _, buffers, _, afterstate = params
    if afterstate:  # legal actions come in increasing order: a tie keeps the lower one
        _afterstate_rows_into(state, legal, n, buffers[0])
        return legal[_best_row(_scores(n, params), 0, n)]
    encode_state_into(state, legal, n, buffers[0][0])
    return _best_legal(weights[-1], biases[-1], _hidden(1, params)[0], legal, n)


@njit(cache=True)
def choose_rows(games: np.ndarray, legal: np.ndarray, ctls: np.ndarray, rows: np.ndarray, m: int, params: tuple,
                out: np.ndarray) -> None:
    """:func:`actor_choice` for the games ``games[rows[r]]``, ``r < m`` (at most :data:`BATCH`), in one forward pass:
    ``out[r]`` is the choice among ``legal[rows[r], :ctls[rows[r], CHOICES]]``. An afterstate actor takes a row per
    legal move, so its games fill passes of at most :data:`BATCH` rows, each game's moves in one pass."""
    weights, biases, _, buffers, _, afterstate = params
    if afterstate:
        first = 0  # the first game of the pass being filled, and the rows it holds so far
        used = 0
        for r in range(m + 1):
            n = ctls[rows[r], CHOICES] if r < m else 0
            if used and (r == m or used + n > BATCH):  # score the pass; each of its games picks its best move
                scores = _scores(used, params)
                row = 0
                for q in range(first, r):
                    g = rows[q]
                    out[q] = legal[g][_best_row(scores, row, ctls[g, CHOICES])]
                    row += ctls[g, CHOICES]
                first, used = r, 0
            if r < m:
                _afterstate_rows_into(games[rows[r]], legal[rows[r]], n, buffers[0][used:])
                used += n
        return
    for r in range(m):
        g = rows[r]
        encode_state_into(games[g], legal[g], ctls[g, CHOICES], buffers[0][r])
    hidden = _hidden(m, params)
    for r in range(m):
        g = rows[r]
        out[r] = _best_legal(weights[-1], biases[-1], hidden[r], legal[g], ctls[g, CHOICES])


@njit(cache=True)
def values_into(games: np.ndarray, rows: np.ndarray, m: int, params: tuple, legal: np.ndarray, out: np.ndarray) -> None:
    """:func:`value_of` for the games ``games[rows[r]]``, ``r < m`` (at most :data:`BATCH`), in one forward pass,
    into ``out[r]``; ``legal`` is scratch (a row of :data:`~uno_env.cards.NUM_ACTIONS` per game)."""
    weights, biases, _, buffers, _, _ = params
    for r in range(m):
        g = rows[r]
        encode_state_into(games[g], legal[g], legal_actions_into(games[g], legal[g]), buffers[0][r])
    hidden = _hidden(m, params)
    for r in range(m):
        out[r] = min(max(_unit(weights[-1], biases[-1], 0, hidden[r]), -1.0), 1.0)


@njit(cache=True)
def value_of(state: np.ndarray, params: tuple) -> float:
    """The critic's estimate (``params`` from :func:`agents.compiled_actor.value_params`) of a running game for the
    seat to move: its observation, legal actions included, encoded as the actor's; clipped to [-1, 1], the range of
    the outcomes the project's critics are trained on (+1 a win, -1 a loss, for the seat to move)."""
    # Small allocations per call, like actor_simulate's per playout: the forward pass costs far more.
    out = np.empty(1, dtype=np.float32)
    values_into(state.reshape(1, -1), np.zeros(1, dtype=np.int64), 1, params, np.empty((1, NUM_ACTIONS), np.int64), out)
    return float(out[0])


@njit(cache=True)
def play_rows(games: np.ndarray, n: int, seat: int, other_policies: np.ndarray, params: tuple, streams: np.ndarray,
              ctls: np.ndarray, legal: np.ndarray, moves: int, max_actions: int) -> None:
    """Play ``games[:n]`` on in place (at most :data:`BATCH`): ``moves`` of the actor's choices on ``seat``, the other
    seat of game ``g`` (and every forced move) by the built-in ``other_policies[g]``, up to ``seat``'s next choice
    after them.

    Game ``g`` draws from ``streams[g]`` (a one-word random stream) and is driven by ``ctls[g]``, which this fills:
    afterwards ``ctls[g, CHOICES]`` is how many legal actions ``seat`` then has (written to ``legal[g]``), or 0 once
    the game is over or ``max_actions`` other moves ran between two of the actor's choices. The engine's one driver,
    :func:`uno_env.core.play_turn`, plays each choice and everything up to the next; each round of choices is one
    forward pass over the games still running.
    """
    for g in range(n):
        ctls[g] = control(seat, False, other_policies[g], other_policies[g], max_actions)
        play_turn(games[g], ctls[g], streams[g], None, None, (), legal[g], None)
    rows, choices = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    for _ in range(moves):
        m = 0
        for g in range(n):
            if ctls[g, CHOICES] > 0:
                rows[m] = g
                m += 1
        if m == 0:
            return
        choose_rows(games, legal, ctls, rows, m, params, choices)
        for r in range(m):
            g = rows[r]
            ctls[g, ACTION] = choices[r]
            ctls[g, BUDGET] = max_actions
            play_turn(games[g], ctls[g], streams[g], None, None, (), legal[g], None)


@njit(cache=True)
def actor_simulate(state: np.ndarray, action: int, seat: int, other_policy: int, params: tuple, seed: np.uint64,
                   max_actions: int) -> int:
    """:func:`uno_env.core.simulate` with the actor playing ``seat`` and a built-in policy the other seat.

    Applies ``action`` to a copy of ``state``, then plays on to the end (:func:`play_rows`, one game); returns the
    outcome (:data:`RUNNING` after ``max_actions`` of the actor's choices or of the other moves between two of them).
    """
    games = state.copy().reshape(1, -1)
    streams = np.empty((1, 1), dtype=np.uint64)
    streams[0, 0] = seed
    apply_action(games[0], action, streams[0])
    play_rows(games, 1, seat, np.full(1, other_policy, dtype=np.int64), params, streams,
              np.empty((1, CTL_SIZE), dtype=np.int64),
              np.empty((1, NUM_ACTIONS), dtype=np.int64), max_actions, max_actions)
    return games[0, OUTCOME]
