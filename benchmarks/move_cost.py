"""Microseconds a checkpoint's network takes to choose a move in torch (one position at a time), on one core.

    .venv/bin/python benchmarks/move_cost.py search-q-none search-q-afterstate

The positions are the agent's decisions with a choice in 60 games of uniformly random play against ``rule``
(env seeds 0-59); each checkpoint's :meth:`agents.ppo.PPOPolicy.logits` runs on them one at a time, three passes,
best of five rounds. A per-action network computes its 61 logits; an afterstate network (:mod:`agents.afterstate`)
scores each legal move through its scorer.
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np
import torch

from train.policies import resolve_policy
from uno_env.env import UnoEnv


def decisions(games: int) -> np.ndarray:
    """The observations of the agent's decisions with more than one legal move."""
    env = UnoEnv(opponent="rule")
    rng = np.random.default_rng(0)
    rows = []
    for seed in range(games):
        obs, info = env.reset(seed=seed)
        done = False
        while not done:
            legal = np.flatnonzero(info["action_mask"])
            if len(legal) > 1:
                rows.append(obs)
            obs, _, terminated, truncated, info = env.step(int(rng.choice(legal)))
            done = terminated or truncated
    return np.array(rows, dtype=np.float32)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("players", nargs="+", help="checkpoints (names of shipped agents or .zip paths), belief none")
    parser.add_argument("--games", type=int, default=60)
    args = parser.parse_args()
    torch.set_num_threads(1)
    rows = decisions(args.games)
    print(f"{len(rows)} decisions; {platform.processor() or platform.machine()}, torch {torch.__version__}")
    for spec in args.players:
        policy = resolve_policy(spec)
        best = np.inf
        for _ in range(5):
            started = time.perf_counter()
            for _ in range(3):
                for row in rows:
                    policy.logits(row[None])
            best = min(best, (time.perf_counter() - started) / (3 * len(rows)))
        print(f"{spec}: {best * 1e6:.0f} µs a decision")


if __name__ == "__main__":
    main()
