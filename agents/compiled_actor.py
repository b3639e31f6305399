"""A trained network's deterministic move inside compiled playouts: a checkpoint's actor (and critic) for numba.

:func:`actor_params` reads the weights of a MaskablePPO actor out of the torch network once, for the kernels of
:mod:`agents.actor_kernels`: :func:`~agents.actor_kernels.actor_choice` (the actor's deterministic move, encoded
and computed in numba) and :func:`~agents.actor_kernels.actor_simulate` (a playout with the actor on one seat).
:func:`value_params` reads the critic the same way, for :func:`~agents.actor_kernels.value_of` (the search's leaf
values, :mod:`agents.search`). :func:`compiled_opponent` seats the actor as the opponent of the native vector env.

Why a second forward pass besides torch's: the search that labels expert iteration's generations
(:mod:`agents.search`) continues millions of simulated games with the improved player; a torch call per move costs
tens of microseconds of dispatch for a few hundred thousand multiply-adds, so the playouts would spend their time in
Python. The tests (tests/test_compiled_actor.py, tests/test_guided_search.py) hold the two forward passes to the same
moves and values.

Only networks trained with ``belief="none"`` compile: the belief trackers are not compiled code.
"""

from __future__ import annotations

import torch
from stable_baselines3.common.torch_layers import FlattenExtractor

from agents.actor_kernels import RELU, TANH, actor_choice, mlp_params
from agents.afterstate import MOVE_FEATURES, AfterstateHead
from agents.ppo import PPOPolicy
from uno_env.observation import BASE_SIZE
from uno_env.vector import CompiledOpponent

_ACTIVATION_CODES = {torch.nn.Tanh: TANH, torch.nn.ReLU: RELU}


def actor_params(policy: PPOPolicy) -> tuple:
    """The ``params`` of :func:`~agents.actor_kernels.actor_choice` for ``policy``'s network: weights (the first
    hidden layer's transposed), biases, activation, buffers (a row per position of a batched pass), and the scratch
    indices of the input's non-zeros.

    Raises:
        ValueError: if the network was trained with belief features, or its feature extractor or activations
            are not the plain MLP (flatten, then linear layers with tanh or ReLU) that the kernel computes (an
            afterstate actor's scorer is such an MLP).
    """
    net = policy.network
    if isinstance(net.action_net, AfterstateHead):  # the scorer's hidden layers, then its one output
        scorer = net.action_net.scorer
        return _mlp_params(policy, "actor", net.pi_features_extractor, scorer[:-1], scorer[-1], afterstate=True)
    return _mlp_params(policy, "actor", net.pi_features_extractor, net.mlp_extractor.policy_net, net.action_net)


def value_params(policy: PPOPolicy) -> tuple:
    """The ``params`` of :func:`~agents.actor_kernels.value_of` for ``policy``'s critic (``mlp_extractor.value_net``,
    then ``value_net``), in the shape of :func:`actor_params`'s.

    Raises:
        ValueError: as :func:`actor_params` does, for the critic's layers.
    """
    net = policy.network
    return _mlp_params(policy, "critic", net.vf_features_extractor, net.mlp_extractor.value_net, net.value_net)


def _mlp_params(policy: PPOPolicy, role: str, extractor: torch.nn.Module, hidden: torch.nn.Sequential,
                head: torch.nn.Linear, afterstate: bool = False) -> tuple:
    """Weights, biases, activation, buffers, scratch and kind of the network's ``role`` (actor or critic):
    ``extractor``, then the ``hidden`` layers, then ``head``; ``afterstate``: an afterstate scorer, whose input rows
    are the encoding and a move's features (:mod:`agents.afterstate`)."""
    if policy.belief != "none" or policy.observation_size != BASE_SIZE:
        raise ValueError(f"{policy.name}: only networks trained with belief='none' compile (this one has "
                         f"belief={policy.belief!r}); belief trackers are not compiled code")
    if not isinstance(extractor, FlattenExtractor):
        raise ValueError(f"{policy.name}: the {role}'s feature extractor is {type(extractor).__name__}; only a "
                         "flatten compiles")
    linear = [m for m in hidden if isinstance(m, torch.nn.Linear)]
    activations = {type(m) for m in hidden if not isinstance(m, torch.nn.Linear)}
    if len(activations) > 1 or not activations <= set(_ACTIVATION_CODES):
        raise ValueError(f"{policy.name}: the {role}'s activations {sorted(a.__name__ for a in activations)} do "
                         f"not compile; expected one of {sorted(a.__name__ for a in _ACTIVATION_CODES)}")
    layers = [*linear, head]
    activation = _ACTIVATION_CODES[activations.pop()] if activations else TANH
    return mlp_params([layer.weight.detach().numpy() for layer in layers],
                      [layer.bias.detach().numpy() for layer in layers], activation,
                      BASE_SIZE + (MOVE_FEATURES if afterstate else 0), afterstate)


def compiled_opponent(policy: PPOPolicy) -> CompiledOpponent:
    """``policy``'s actor as the opponent of the native vector env: ``UnoVectorEnv(n, opponent=...)``.

    Its games are the ones :class:`~uno_env.env.UnoEnv` with ``opponent=policy`` plays from the same positions:
    the same deterministic moves (tests/test_vector_env.py). Raises ``ValueError`` as :func:`actor_params` does.
    """
    return CompiledOpponent(policy.name, actor_choice, actor_params(policy))
