"""A trained network's deterministic move and its critic's value as compiled code: the kernels of
:mod:`agents.compiled_actor`.

:func:`forward` is a MaskablePPO network's forward pass inside numba code, for the actor or the critic alike: it
encodes the seat to move as the env does (:func:`uno_env.observation.encode_state_into`, the one definition of the
encoding) and runs the layers. :func:`actor_choice` plays the legal action with the highest logit, which is what
:class:`~agents.ppo.PPOPolicy` plays with ``deterministic=True``; :func:`value_of` is the critic's estimate of the
position for the seat to move. :func:`actor_play` continues a game with the actor on one seat and a built-in
policy on the other (the engine's one driver, :func:`uno_env.core.play_turn`, plays everything between two of the
actor's choices) for a number of the actor's choices, and :func:`actor_simulate` plays a game so to its end. The weights
come from :func:`agents.compiled_actor.actor_params` and :func:`agents.compiled_actor.value_params`.

They live apart from that reader because it needs torch and they do not: the search player
(:mod:`agents.search_kernels`) rolls out with them without loading torch.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from uno_env.cards import NUM_ACTIONS
from uno_env.core import ACTION, BUDGET, CHOICES, OUTCOME, apply_action, control, legal_actions_into, play_turn
from uno_env.observation import encode_state_into

#: Hidden-layer activations :func:`forward` computes, by code.
TANH, RELU = 0, 1


@njit(cache=True, fastmath=True)
def _dense(weight: np.ndarray, bias: np.ndarray, x: np.ndarray, out: np.ndarray, activation: int) -> None:
    """``out = activation(weight @ x + bias)``; activation -1 leaves it linear."""
    for i in range(weight.shape[0]):
        out[i] = _unit(weight, bias, i, x)
    _activate(out, activation)


@njit(inline="always", fastmath=True)
def _unit(weight: np.ndarray, bias: np.ndarray, i: int, x: np.ndarray) -> float:
    """Unit ``i``'s input: ``weight[i] @ x + bias[i]``."""
    total = bias[i]
    for j in range(x.shape[0]):
        total += weight[i, j] * x[j]
    return total


@njit(cache=True, fastmath=True)
def _sparse_input(weight_t: np.ndarray, bias: np.ndarray, x: np.ndarray, out: np.ndarray, activation: int,
                  nonzero: np.ndarray) -> None:
    """``out = activation(weight_t.T @ x + bias)`` from the non-zero inputs alone (``nonzero``: scratch indices).

    The observation is mostly zeros (about 80 of its 294 entries are set in a game), so the first layer adds the rows
    of its transposed weights (``weight_t``: inputs x outputs) for the set inputs only, four rows a pass so each
    output is loaded and stored a quarter as often: two to four times faster than the dense product for 64 to 512
    outputs (docs/BENCHMARKS.md, "The network's forward pass in the compiled kernels")."""
    m = 0
    for j in range(x.shape[0]):
        if x[j] != 0.0:
            nonzero[m] = j
            m += 1
    out[:] = bias
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
    _activate(out, activation)


@njit(inline="always", fastmath=True)
def _activate(out: np.ndarray, activation: int) -> None:
    """Apply the hidden activation to ``out`` in place (-1: none)."""
    if activation == TANH:
        # tanh from one exp, which compiles to a loop two to three times faster than np.tanh's (within 1e-7 of it,
        # the inputs clipped where float32's tanh is already +-1).
        for i in range(out.shape[0]):
            e = np.exp(2.0 * min(max(out[i], -9.0), 9.0))
            out[i] = (e - 1.0) / (e + 1.0)
    elif activation == RELU:
        for i in range(out.shape[0]):
            out[i] = max(out[i], 0.0)


@njit(cache=True)
def _features(state: np.ndarray, legal: np.ndarray, n: int, params: tuple) -> np.ndarray:
    """The input of the network's output layer (its last hidden layer, or the encoding if it has none) for the seat
    to move of a kernel state; a buffer of ``params``, overwritten by the next call."""
    weights, biases, activation, buffers, nonzero = params
    encode_state_into(state, legal, n, buffers[0])
    last = len(weights) - 1
    if last > 0:  # the first hidden layer's weights are stored transposed (agents.compiled_actor.actor_params)
        _sparse_input(weights[0], biases[0], buffers[0], buffers[1], activation, nonzero)
    for layer in range(1, last):
        _dense(weights[layer], biases[layer], buffers[layer], buffers[layer + 1], activation)
    return buffers[last]


@njit(cache=True)
def forward(state: np.ndarray, legal: np.ndarray, n: int, params: tuple) -> np.ndarray:
    """The output layer of the network in ``params`` for the seat to move of a kernel state, ``legal[:n]`` its legal
    actions: the actor's 61 logits or the critic's one value.

    The result is the last of the params' buffers, overwritten by the next call with the same params.
    """
    weights, biases, _, buffers, _ = params
    last = len(weights) - 1
    _dense(weights[last], biases[last], _features(state, legal, n, params), buffers[last + 1], -1)
    return buffers[last + 1]


@njit(cache=True)
def actor_choice(state: np.ndarray, legal: np.ndarray, n: int, params: tuple) -> int:
    """The legal action (of ``legal[:n]``) with the highest logit of the actor in ``params``, for the seat to move.

    Ties keep the lowest action id, as ``numpy.argmax`` does for :class:`~agents.ppo.PPOPolicy`. Only the legal
    actions' logits are computed (a few of the 61 rows of the output layer).
    """
    weights, biases, _, _, _ = params
    head, bias = weights[-1], biases[-1]
    hidden = _features(state, legal, n, params)
    best = legal[0]
    best_logit = _unit(head, bias, best, hidden)
    for i in range(1, n):  # legal actions come in increasing order: a tie keeps the earlier, lower one
        logit = _unit(head, bias, legal[i], hidden)
        if logit > best_logit:
            best, best_logit = legal[i], logit
    return best


@njit(cache=True)
def value_of(state: np.ndarray, params: tuple) -> float:
    """The critic's estimate (``params`` from :func:`agents.compiled_actor.value_params`) of a running game for the
    seat to move: its observation, legal actions included, encoded as the actor's; clipped to [-1, 1], the range of
    the outcomes the project's critics are trained on (+1 a win, -1 a loss, for the seat to move)."""
    # A small allocation per call, like actor_simulate's per playout: the forward pass costs far more.
    legal = np.empty(NUM_ACTIONS, dtype=np.int64)
    value = forward(state, legal, legal_actions_into(state, legal), params)[0]
    return min(max(float(value), -1.0), 1.0)


@njit(cache=True)
def actor_play(game: np.ndarray, seat: int, other_policy: int, params: tuple, stream: np.ndarray, legal: np.ndarray,
               moves: int, max_actions: int) -> int:
    """Play ``game`` on in place: ``moves`` of the actor's choices on ``seat``, the other seat (and every forced move)
    by the built-in ``other_policy``, up to ``seat``'s next choice after them.

    Returns how many legal actions ``seat`` then has (written to ``legal``), or 0 once the game is over or
    ``max_actions`` other moves ran between two of the actor's choices. The engine's one driver,
    :func:`uno_env.core.play_turn`, plays each choice and everything up to the next.
    """
    ctl = control(seat, False, other_policy, other_policy, max_actions)
    play_turn(game, ctl, stream, None, None, (), legal, None)
    for _ in range(moves):
        if ctl[CHOICES] == 0:
            break
        ctl[ACTION] = actor_choice(game, legal, ctl[CHOICES], params)
        ctl[BUDGET] = max_actions
        play_turn(game, ctl, stream, None, None, (), legal, None)
    return ctl[CHOICES]


@njit(cache=True)
def actor_simulate(state: np.ndarray, action: int, seat: int, other_policy: int, params: tuple, seed: np.uint64,
                   max_actions: int) -> int:
    """:func:`uno_env.core.simulate` with the actor playing ``seat`` and a built-in policy the other seat.

    Applies ``action`` to a copy of ``state``, then plays on to the end (:func:`actor_play`); returns the outcome
    (:data:`RUNNING` after ``max_actions`` of the actor's choices or of the other moves between two of them).
    """
    game = state.copy()
    stream = np.empty(1, dtype=np.uint64)
    stream[0] = seed
    apply_action(game, action, stream)
    legal = np.empty(NUM_ACTIONS, dtype=np.int64)
    actor_play(game, seat, other_policy, params, stream, legal, max_actions, max_actions)
    return game[OUTCOME]
