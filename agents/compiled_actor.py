"""A trained network's deterministic move inside compiled playouts: the actor of a checkpoint as a numba chooser.

:func:`actor_choice` is the move of a MaskablePPO actor inside numba code: it encodes the seat to move as the
env does (:func:`uno_env.observation.encode_state_into`, the one definition of the encoding), runs the actor's
layers and plays the legal action with the highest logit, which is what :class:`~agents.ppo.PPOPolicy` plays
with ``deterministic=True``. :func:`actor_params` reads the weights out of the torch network once.
:func:`actor_simulate` plays a game to its end with the actor on one seat and a built-in policy on the other
(the engine's :func:`uno_env.core.advance` plays everything between two of the actor's choices).

Why a second forward pass besides torch's: rollout labels (:mod:`train.training.rollout_values`) continue
millions of simulated games with the improved player; a torch call per move costs tens of microseconds of
dispatch for a few hundred thousand multiply-adds, so the playouts would spend their time in Python. The test
(tests/test_compiled_actor.py) holds the two forward passes to the same moves.

Only networks trained with ``belief="none"`` compile: the belief trackers are not compiled code.
"""

from __future__ import annotations

import numpy as np
import torch
from numba import njit
from stable_baselines3.common.torch_layers import FlattenExtractor

from agents.ppo import PPOPolicy
from uno_env.cards import NUM_ACTIONS
from uno_env.core import OUTCOME, advance, apply_action
from uno_env.observation import BASE_SIZE, encode_state_into
from uno_env.vector import CompiledOpponent

#: Hidden-layer activations :func:`actor_choice` computes, by code.
TANH, RELU = 0, 1
_ACTIVATION_CODES = {torch.nn.Tanh: TANH, torch.nn.ReLU: RELU}


def actor_params(policy: PPOPolicy) -> tuple:
    """The ``params`` of :func:`actor_choice` for ``policy``'s network: weights, biases, activation, buffers.

    Raises:
        ValueError: if the network was trained with belief features, or its feature extractor or activations
            are not the plain MLP (flatten, then linear layers with tanh or ReLU) that the kernel computes.
    """
    network = policy.network
    if policy.belief != "none" or policy.observation_size != BASE_SIZE:
        raise ValueError(f"{policy.name}: only networks trained with belief='none' compile (this one has "
                         f"belief={policy.belief!r}); belief trackers are not compiled code")
    if not isinstance(network.pi_features_extractor, FlattenExtractor):
        raise ValueError(f"{policy.name}: the actor's feature extractor is "
                         f"{type(network.pi_features_extractor).__name__}; only a flatten compiles")
    linear = [m for m in network.mlp_extractor.policy_net if isinstance(m, torch.nn.Linear)]
    activations = {type(m) for m in network.mlp_extractor.policy_net if not isinstance(m, torch.nn.Linear)}
    if len(activations) > 1 or not activations <= set(_ACTIVATION_CODES):
        raise ValueError(f"{policy.name}: activations {sorted(a.__name__ for a in activations)} do not compile; "
                         f"expected one of {sorted(a.__name__ for a in _ACTIVATION_CODES)}")
    layers = [*linear, network.action_net]
    weights = tuple(np.ascontiguousarray(layer.weight.detach().numpy(), dtype=np.float32) for layer in layers)
    biases = tuple(np.ascontiguousarray(layer.bias.detach().numpy(), dtype=np.float32) for layer in layers)
    activation = _ACTIVATION_CODES[activations.pop()] if activations else TANH
    buffers = tuple(np.zeros(size, dtype=np.float32) for size in (BASE_SIZE, *(w.shape[0] for w in weights)))
    return weights, biases, activation, buffers


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


def compiled_opponent(policy: PPOPolicy) -> CompiledOpponent:
    """``policy``'s actor as the opponent of the native vector env: ``UnoVectorEnv(n, opponent=...)``.

    Its games are the ones :class:`~uno_env.env.UnoEnv` with ``opponent=policy`` plays from the same positions:
    the same deterministic moves (tests/test_vector_env.py). Raises ``ValueError`` as :func:`actor_params` does.
    """
    return CompiledOpponent(policy.name, actor_choice, actor_params(policy))
