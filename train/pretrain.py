"""Warm start: imitate a teacher policy before PPO (behaviour cloning, with a value fit on the outcomes).

PPO from scratch learns UNO slowly: the reward is one +-1 at the end of a game that luck decides
as much as play, so on a small CPU budget the policy barely moves away from random play
(docs/RESULTS.md). Cloning a teacher (the rule-based player by default) first gives the actor a
sensible starting policy and the critic a matching value function, so PPO starts improving on
the teacher instead of rediscovering it.

Data comes from :func:`uno_env.match.play_game`: the student's seat is played by a recorder that
asks the teacher for each action and stores the student's observation (encoded with the run's
belief setting), the legal-action mask and the teacher's action; the other seat draws its player
from the first phase of the opponent schedule (without ``self``). Both seats take turns, so the
teacher is seen moving first and second. The value target of every decision is the game's outcome
for the student seat (+1, 0, -1) discounted by ``gamma`` per remaining decision of that seat.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from train.config import SELF, TrainConfig
from train.opponent_mix import OpponentMix, opponent_belief
from train.policies import resolve_policy
from uno_env.match import play_game
from uno_env.opponents import Policy
from uno_env.view import PublicView


class _Recorder:
    """Plays the teacher's moves and records (observation, mask, action) for the student."""

    def __init__(self, teacher: Policy, belief: str) -> None:
        self.teacher = teacher
        self.belief = belief
        self.records: list[tuple[np.ndarray, np.ndarray, int]] = []

    def reset(self, seed: int | None = None) -> None:
        self.teacher.reset(seed)
        self.records = []

    def observe_start(self, view: PublicView) -> None:
        if hasattr(self.teacher, "observe_start"):
            self.teacher.observe_start(view)

    def act(self, view: PublicView) -> int:
        action = self.teacher.act(view)
        self.records.append((np.asarray(view.observation, dtype=np.float32), view.action_mask.astype(bool), action))
        return action


@dataclass
class Demonstrations:
    """The teacher's decisions: observations, legal masks, actions and discounted outcomes."""

    observations: np.ndarray
    masks: np.ndarray
    actions: np.ndarray
    returns: np.ndarray

    def __len__(self) -> int:
        return len(self.actions)


def collect(config: TrainConfig, seed: int) -> Demonstrations:
    """Play ``config.pretrain.games`` games of the teacher against the first phase's opponents."""
    mix = {name: weight for name, weight in config.opponents[0].mix.items() if name != SELF} or {"random": 1.0}
    recorder = _Recorder(resolve_policy(config.pretrain.teacher), config.env.belief)
    # The mix's checkpoints get observations encoded with the belief they were trained with; named players
    # ignore the encoding.
    opponent = OpponentMix(mix, belief=opponent_belief(config))
    gamma = config.ppo.gamma
    rng = np.random.default_rng(seed)
    observations, masks, actions, returns = [], [], [], []
    for game in range(config.pretrain.games):
        seat = game % 2
        seats = (recorder, opponent) if seat == 0 else (opponent, recorder)
        result = play_game(seats, int(rng.integers(2**62)), first_player=int(rng.integers(2)),
                           n_particles=config.env.n_particles)
        outcome = 0.0 if result.winner == -1 else (1.0 if result.winner == seat else -1.0)
        n = len(recorder.records)
        for k, (obs, mask, action) in enumerate(recorder.records):
            observations.append(obs)
            masks.append(mask)
            actions.append(action)
            returns.append(outcome * gamma ** (n - 1 - k))
    return Demonstrations(np.array(observations), np.array(masks), np.array(actions), np.array(returns, np.float32))


def clone(model: Any, data: Demonstrations, config: TrainConfig, seed: int) -> dict[str, float]:
    """Fit the model's actor to the teacher's actions and its critic to the outcomes; returns final metrics.

    The actor's loss is the cross-entropy of the masked logits on decisions with a real choice
    (a forced move teaches nothing); the critic's is the squared error on every decision.
    """
    settings = config.pretrain
    policy = model.policy
    optimizer = torch.optim.Adam(policy.parameters(), lr=settings.learning_rate)
    generator = torch.Generator().manual_seed(seed)
    obs = torch.from_numpy(data.observations)
    masks = torch.from_numpy(data.masks)
    actions = torch.from_numpy(data.actions)
    returns = torch.from_numpy(data.returns)
    choice = masks.sum(dim=1) > 1
    metrics: dict[str, float] = {}
    policy.train()
    for _ in range(settings.epochs):
        order = torch.randperm(len(data), generator=generator)
        totals = np.zeros(3)
        for start in range(0, len(data), settings.batch_size):
            batch = order[start:start + settings.batch_size]
            features = policy.extract_features(obs[batch])
            pi_features, vf_features = features if isinstance(features, tuple) else (features, features)
            logits = policy.action_net(policy.mlp_extractor.forward_actor(pi_features))
            values = policy.value_net(policy.mlp_extractor.forward_critic(vf_features)).squeeze(-1)
            logits = logits.masked_fill(~masks[batch], -1e9)
            chosen = choice[batch]
            actor_loss = torch.nn.functional.cross_entropy(logits[chosen], actions[batch][chosen]) \
                if chosen.any() else logits.sum() * 0
            critic_loss = torch.nn.functional.mse_loss(values, returns[batch])
            optimizer.zero_grad()
            (actor_loss + config.ppo.vf_coef * critic_loss).backward()
            optimizer.step()
            agree = (logits[chosen].argmax(dim=1) == actions[batch][chosen]).sum().item()
            totals += (actor_loss.item() * len(batch), critic_loss.item() * len(batch), agree)
        metrics = {"actor_loss": totals[0] / len(data), "critic_loss": totals[1] / len(data),
                   "agreement": totals[2] / max(1, int(choice.sum()))}
    policy.set_training_mode(False)
    return metrics
