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
        total = bias[i]
        for j in range(weight.shape[1]):
            total += weight[i, j] * x[j]
        if activation == TANH:
            total = np.tanh(total)
        elif activation == RELU:
            total = max(total, 0.0)
        out[i] = total


@njit(cache=True)
def forward(state: np.ndarray, legal: np.ndarray, n: int, params: tuple) -> np.ndarray:
    """The output layer of the network in ``params`` for the seat to move of a kernel state, ``legal[:n]`` its legal
    actions: the actor's 61 logits or the critic's one value.

    The result is the last of the params' buffers, overwritten by the next call with the same params.
    """
    weights, biases, activation, buffers = params
    encode_state_into(state, legal, n, buffers[0])
    last = len(weights) - 1
    for layer in range(last + 1):
        _dense(weights[layer], biases[layer], buffers[layer], buffers[layer + 1], activation if layer < last else -1)
    return buffers[last + 1]


@njit(cache=True)
def actor_choice(state: np.ndarray, legal: np.ndarray, n: int, params: tuple) -> int:
    """The legal action (of ``legal[:n]``) with the highest logit of the actor in ``params``, for the seat to move.

    Ties keep the lowest action id, as ``numpy.argmax`` does for :class:`~agents.ppo.PPOPolicy`.
    """
    logits = forward(state, legal, n, params)
    best = legal[0]
    for i in range(1, n):
        if logits[legal[i]] > logits[best]:
            best = legal[i]
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
