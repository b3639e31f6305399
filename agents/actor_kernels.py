"""A trained network's deterministic move as compiled code: the kernels of :mod:`agents.compiled_actor`.

:func:`actor_choice` is the move of a MaskablePPO actor inside numba code: it encodes the seat to move as the
env does (:func:`uno_env.observation.encode_state_into`, the one definition of the encoding), runs the actor's
layers and plays the legal action with the highest logit, which is what :class:`~agents.ppo.PPOPolicy` plays
with ``deterministic=True``. :func:`actor_simulate` plays a game to its end with the actor on one seat and a
built-in policy on the other (the engine's :func:`uno_env.core.advance` plays everything between two of the
actor's choices). The weights come from :func:`agents.compiled_actor.actor_params`.

They live apart from that reader because it needs torch and they do not: the search player
(:mod:`agents.search_kernels`) rolls out with them without loading torch.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from uno_env.cards import NUM_ACTIONS
from uno_env.core import OUTCOME, advance, apply_action
from uno_env.observation import encode_state_into

#: Hidden-layer activations :func:`actor_choice` computes, by code.
TANH, RELU = 0, 1


@njit(cache=True, fastmath=True)
def _dense(weight: np.ndarray, bias: np.ndarray, x: np.ndarray, out: np.ndarray, activation: int) -> None:
    """``out = activation(weight @ x + bias)``; activation -1 leaves it linear."""
    for i in range(weight.shape[0]):
        total = bias[i]
        for j in range(weight.shape[1]):
            total += weight[i, j] * x[j]
        if activation == TANH:
            total = np.tanh(total)
        elif activation == RELU:
            total = max(total, 0.0)
        out[i] = total


@njit(cache=True)
def actor_choice(state: np.ndarray, legal: np.ndarray, n: int, params: tuple) -> int:
    """The legal action (of ``legal[:n]``) with the highest logit of the actor in ``params``, for the seat to move.

    Ties keep the lowest action id, as ``numpy.argmax`` does for :class:`~agents.ppo.PPOPolicy`.
    """
    weights, biases, activation, buffers = params
    encode_state_into(state, legal, n, buffers[0])
    last = len(weights) - 1
    for layer in range(last + 1):
        _dense(weights[layer], biases[layer], buffers[layer], buffers[layer + 1], activation if layer < last else -1)
    logits = buffers[last + 1]
    best = legal[0]
    for i in range(1, n):
        if logits[legal[i]] > logits[best]:
            best = legal[i]
    return best


@njit(cache=True)
def actor_simulate(state: np.ndarray, action: int, seat: int, other_policy: int, params: tuple, seed: np.uint64,
                   max_actions: int) -> int:
    """:func:`uno_env.core.simulate` with the actor playing ``seat`` and a built-in policy the other seat.

    Applies ``action`` to a copy of ``state``, then plays on to the end; returns the outcome (:data:`RUNNING`
    after ``max_actions`` of the actor's choices or of the other moves between two of them).
    """
    game = state.copy()
    stream = np.empty(1, dtype=np.uint64)
    stream[0] = seed
    apply_action(game, action, stream)
    legal = np.empty(NUM_ACTIONS, dtype=np.int64)
    for _ in range(max_actions):
        n = advance(game, seat, other_policy, other_policy, stream, legal, max_actions)
        if n == 0:
            break
        apply_action(game, actor_choice(game, legal, n, params), stream)
    return game[OUTCOME]
