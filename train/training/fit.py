"""The fit of expert iteration and distillation: a network's logits regress the search's move values.

:func:`fit_values` fits an existing MaskablePPO policy (the run's network), :func:`fit` a new one (a generation's
small network, or a distilled one). Each reports its per-epoch losses to an optional :data:`EpochLog`, which a run
writes to TensorBoard (``tb/fit``), and returns the held-out metrics of its last epoch.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from sb3_contrib import MaskablePPO

from agents.afterstate import AfterstatePolicy
from uno_env.belief import BeliefKind
from uno_env.env import UnoEnv

#: Label scale in the logits: a move worth 0.1 more than another gets a logit 1 higher.
SCALE = 10.0
#: The networks' hidden activations, by name (relu is the cheaper one inside compiled playouts).
ACTIVATIONS = {"tanh": torch.nn.Tanh, "relu": torch.nn.ReLU}

#: Receives each epoch's losses: ``log({"actor_loss": ..., "value_loss": ..., "held_out_loss": ..., ...})``.
EpochLog = Callable[[dict[str, float]], None]


def fit_values(policy: Any, observations: np.ndarray, values: np.ndarray, base_moves: np.ndarray, epochs: int,
               seed: int, learning_rate: float = 1e-3, batch_size: int = 512,
               centred: bool = False, cosine: bool = False, log: EpochLog | None = None) -> dict[str, float]:
    """Fit a MaskablePPO policy's logits to ``SCALE`` x the move values, its critic to the base move's value.

    The critic learns the value of the position under the base player (the label of its move).
    ``centred`` fits the logits to each position's values less their mean over its legal moves: the differences
    between moves, all a player acts on, without the position's level (the critic's target keeps it). ``cosine``
    anneals the learning rate from ``learning_rate`` to 0 along a half cosine over the epochs. A tenth of the
    positions is held out. After each epoch ``log`` receives the mean training losses of the actor and the critic
    (``actor_loss``, ``value_loss``) and their held-out values. Returns metrics on the held-out positions: the
    squared error of the logits and of the critic, how often the network's move is the labels' best move
    (``held_out_agreement``), and the mean label of the network's move and of the base player's move (the one-step
    gain the network finds, if the first is larger).
    """
    legal = torch.from_numpy(np.isfinite(values))
    targets = torch.from_numpy(np.nan_to_num(values).astype(np.float32) * SCALE)
    level = torch.from_numpy(np.nanmean(values, axis=1).astype(np.float32) * SCALE * centred)[:, None]
    moves = torch.from_numpy(np.asarray(base_moves, dtype=np.int64))
    inputs = torch.from_numpy(observations)
    order = np.random.default_rng(seed).permutation(len(inputs))
    held, train = torch.from_numpy(order[:len(order) // 10]), torch.from_numpy(order[len(order) // 10:])
    optimizer = torch.optim.Adam(policy.parameters(), lr=learning_rate)
    generator = torch.Generator().manual_seed(seed)

    def logits(rows: torch.Tensor) -> torch.Tensor:
        return policy.action_net(policy.mlp_extractor.forward_actor(policy.extract_features(inputs[rows])))

    def loss(rows: torch.Tensor) -> torch.Tensor:
        return ((logits(rows) - targets[rows] + level[rows]) ** 2)[legal[rows]].mean() / SCALE**2

    def critic_loss(rows: torch.Tensor) -> torch.Tensor:
        value = policy.value_net(policy.mlp_extractor.forward_critic(policy.extract_features(inputs[rows])))
        return ((value.squeeze(-1) - targets[rows, moves[rows]] / SCALE) ** 2).mean()

    for epoch in range(epochs):
        policy.train()
        if cosine:
            for group in optimizer.param_groups:
                group["lr"] = learning_rate * 0.5 * (1 + math.cos(math.pi * epoch / epochs))
        shuffled = train[torch.randperm(len(train), generator=generator)]
        totals = np.zeros(2)
        for start in range(0, len(shuffled), batch_size):
            rows = shuffled[start:start + batch_size]
            actor, critic = loss(rows), critic_loss(rows)
            optimizer.zero_grad()
            (actor + critic).backward()  # separate actor and critic networks: two fits in one
            optimizer.step()
            totals += (actor.item() * len(rows), critic.item() * len(rows))
        if log is not None:
            policy.set_training_mode(False)
            with torch.no_grad():
                held_out = {"held_out_loss": float(loss(held)), "held_out_critic_loss": float(critic_loss(held))} \
                    if len(held) else {}
            log({"actor_loss": totals[0] / max(1, len(train)), "value_loss": totals[1] / max(1, len(train)),
                 **held_out})
    policy.set_training_mode(False)
    with torch.no_grad():
        chosen = logits(held).masked_fill(~legal[held], -torch.inf).argmax(dim=1)
        best = targets[held].masked_fill(~legal[held], -torch.inf).argmax(dim=1)
        return {"held_out_loss": float(loss(held)), "held_out_critic_loss": float(critic_loss(held)),
                "held_out_agreement": float((chosen == best).float().mean()),
                "held_out_value_of_network_move": float(targets[held, chosen].mean() / SCALE),
                "held_out_value_of_base_move": float(targets[held, moves[held]].mean() / SCALE)}


def new_network(belief: BeliefKind, net_arch: Sequence[int], activation: str, actor: str, seed: int) -> MaskablePPO:
    """A MaskablePPO network of fresh weights: ``net_arch`` layers of ``activation`` (tanh or relu), ``belief``
    features, an output row per action (``actor="mlp"``) or one scorer of the moves (``"afterstate"``,
    :mod:`agents.afterstate`)."""
    if actor not in ("mlp", "afterstate"):
        raise ValueError(f"actor must be 'mlp' or 'afterstate', got {actor!r}")
    kwargs: dict[str, Any] = {"net_arch": list(net_arch), "activation_fn": ACTIVATIONS[activation]}
    if actor == "afterstate":
        kwargs["head_arch"] = list(net_arch)
    return MaskablePPO("MlpPolicy" if actor == "mlp" else AfterstatePolicy, UnoEnv(belief=belief), seed=seed,
                       device="cpu", policy_kwargs=kwargs)


def fit(observations: np.ndarray, values: np.ndarray, base_moves: np.ndarray, epochs: int, seed: int,
        belief: BeliefKind = "none",
        net_arch: Sequence[int] = (256, 256), activation: str = "tanh", learning_rate: float = 1e-3,
        batch_size: int = 512, actor: str = "mlp", centred: bool = False,
        cosine: bool = False, log: EpochLog | None = None) -> tuple[MaskablePPO, dict[str, float]]:
    """A new network (:func:`new_network`) fitted by :func:`fit_values`; it and its metrics."""
    model = new_network(belief, net_arch, activation, actor, seed)
    return model, fit_values(model.policy, observations, values, base_moves, epochs, seed, learning_rate,
                             batch_size, centred, cosine, log)
