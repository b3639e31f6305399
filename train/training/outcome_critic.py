"""A network's critic refitted on the outcomes of its own games: the value head learns from results, not only labels.

The search-values recipe fits the critic to the search's value of the base player's move (``rollout_values``): an
estimate from the labeller's belief whose simulations end on the previous generation's critic, so each critic
inherits its predecessor's bias, on the few tens of thousands of positions a generation labels. Games are far
cheaper than labels: the network plays ``games`` games against ``rule`` on the native vector env (its actor greedy,
as it plays alone), and its critic regresses every decision's final result (+1 a win, -1 a loss, 0 a draw), one
pass over them. The actor is not touched, so the games and the network's moves are those of the fit before.

All the games are played first and their decisions shuffled together: a game's decisions share one outcome, and
trained on a few thousand games at a time (a streaming buffer) the critic learned those games' luck and ended worse
than it began, where one shuffled pass over all of them improves it (docs/RESULTS.md, "The critic on game
outcomes"). The memory is therefore that of every decision's observation, about 22 kB a game (300,000 games: 6.6
GB). One game in twenty is held out, and the held-out squared error against the outcome is reported before and
after.
"""

from __future__ import annotations

import copy
import time
from typing import Any

import numpy as np
import torch
from gymnasium.vector import AutoresetMode

from agents.ppo import PPOPolicy
from uno_env.vector import UnoVectorEnv

#: Every HELD_OUT-th game is kept for the held-out error instead of trained on.
HELD_OUT = 20


def _values(policy: Any, critic: torch.nn.Module, head: torch.nn.Module, observations: torch.Tensor) -> torch.Tensor:
    return head(critic(policy.extract_features(observations))).squeeze(-1)


def stack_games(games: list[tuple[np.ndarray, float]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Games' decisions (their observations, stacked) and, for each decision, its game's outcome."""
    inputs = np.concatenate([positions for positions, _ in games])
    targets = np.concatenate([np.full(len(positions), outcome, np.float32) for positions, outcome in games])
    return torch.from_numpy(inputs), torch.from_numpy(targets)


def play_games(policy: Any, belief: str, games: int, seed: int, num_envs: int = 256) -> list[tuple[np.ndarray, float]]:
    """``games`` games of ``policy``'s actor (greedy) against ``rule`` on the native vector env, in the order they end:
    each game's decisions (the observations, one row each) and its outcome for the network (+1, 0 or -1)."""
    if games < 1:
        raise ValueError(f"games must be at least 1, got {games}")
    env = UnoVectorEnv(num_envs, opponent="rule", belief=belief, autoreset_mode=AutoresetMode.SAME_STEP)
    observations, info = env.reset(seed=seed)
    actor = PPOPolicy(policy, belief=belief, observation_size=observations.shape[1])
    playing: list[list[np.ndarray]] = [[] for _ in range(num_envs)]
    ended: list[tuple[np.ndarray, float]] = []
    while len(ended) < games:
        actions = np.where(info["action_mask"].astype(bool), actor.logits(observations), -np.inf).argmax(axis=1)
        for i in range(num_envs):
            playing[i].append(observations[i].copy())
        observations, rewards, terminated, truncated, info = env.step(actions)
        for i in np.flatnonzero(terminated | truncated):
            if len(ended) < games:
                ended.append((np.stack(playing[i]), float(rewards[i])))
            playing[i] = []
    return ended


def critic_values(policy: Any, observations: torch.Tensor) -> torch.Tensor:
    """The critic's value of each observation (a row each)."""
    return _values(policy, policy.mlp_extractor.value_net, policy.value_net, observations)


def fit_critic_on_outcomes(policy: Any, belief: str, games: int, seed: int, learning_rate: float,
                           batch_size: int = 1024, num_envs: int = 256) -> dict[str, float]:
    """Refit ``policy``'s critic (an SB3 actor-critic policy) on the outcomes of ``games`` games against ``rule``.

    Args:
        policy: the network's policy (``MaskablePPO.policy``); its critic layers change, nothing else.
        belief: the network's observation setting, ``"none"`` or ``"counting"`` (the native vector env's).
        games: games played (:func:`play_games`); every ``HELD_OUT``-th one is held out.
        seed: the games and the minibatches' order: the same seed gives the same critic.
        learning_rate: Adam's step size.
        batch_size: positions a minibatch.
        num_envs: games played side by side.

    Returns:
        ``critic_outcome_error_before`` and ``_after`` (held-out mean squared error against the outcome, over every
        decision of the held-out games), ``critic_outcome_positions`` (trained on) and ``critic_outcome_seconds``.

    Raises:
        ValueError: for a belief the native vector env does not compute, or ``games`` below 1.
    """
    started = time.perf_counter()
    played = play_games(policy, belief, games, seed, num_envs)
    held_out = played[::HELD_OUT]
    inputs, targets = stack_games([game for number, game in enumerate(played) if number % HELD_OUT])
    critic, head = policy.mlp_extractor.value_net, policy.value_net
    before = (copy.deepcopy(critic), copy.deepcopy(head))
    optimizer = torch.optim.Adam([*critic.parameters(), *head.parameters()], lr=learning_rate)
    shuffled = torch.randperm(len(inputs), generator=torch.Generator().manual_seed(seed))
    policy.train()
    for start in range(0, len(shuffled), batch_size):
        batch = shuffled[start:start + batch_size]
        loss = ((critic_values(policy, inputs[batch]) - targets[batch]) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    policy.set_training_mode(False)
    held_inputs, held_targets = stack_games(held_out)
    with torch.no_grad():
        errors = [float(((_values(policy, *layers, held_inputs) - held_targets) ** 2).mean())
                  for layers in (before, (critic, head))]
    return {"critic_outcome_error_before": errors[0], "critic_outcome_error_after": errors[1],
            "critic_outcome_positions": float(len(inputs)), "critic_outcome_seconds": time.perf_counter() - started}
