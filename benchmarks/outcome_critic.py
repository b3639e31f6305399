"""A checkpoint's critic refitted on game outcomes, and how well critics predict the outcomes of fresh games.

    python benchmarks/outcome_critic.py refit runs/ei-aware/pretrain/round_10.zip runs/critic/round_10-outcomes.zip \
        --games 300000 --seed 77 --learning-rate 1e-4
    python benchmarks/outcome_critic.py error runs/ei-aware/pretrain/round_10.zip runs/critic/round_10-outcomes.zip \
        --games 30000 --seed 5000

``refit`` runs :func:`train.training.outcome_critic.fit_critic_on_outcomes` (what ``pretrain.critic_games`` does in
a generation) on a belief-``none`` checkpoint and writes a copy with the new critic; the actor is unchanged.
``error`` plays ``--games`` fresh games of the *first* checkpoint's actor against ``rule`` (greedy, on the native
vector env) and prints each checkpoint's mean squared error against every decision's outcome, with the difference
from the first and its 95% interval over games (a game's decisions share one outcome, so games are the unit).
docs/RESULTS.md, "The critic on game outcomes".
"""

from __future__ import annotations

import argparse
import json

import numpy as np
import torch

from agents.ppo import load_model, load_network, read_settings, save_model
from train.training.outcome_critic import critic_values, fit_critic_on_outcomes, play_games, stack_games


def refit(source: str, out: str, games: int, seed: int, learning_rate: float) -> None:
    model = load_model(source)
    metrics = fit_critic_on_outcomes(model.policy, "none", games, seed, learning_rate)
    save_model(model, out, read_settings(source))
    print(json.dumps(metrics, indent=1))


def error(checkpoints: list[str], games: int, seed: int) -> None:
    networks = [load_network(path) for path in checkpoints]
    played = play_games(networks[0], "none", games, seed)
    inputs, targets = stack_games(played)
    numbers = np.repeat(np.arange(len(played)), [len(positions) for positions, _ in played])
    errors = []
    for path, network in zip(checkpoints, networks, strict=True):
        with torch.no_grad():
            errors.append((critic_values(network, inputs) - targets).numpy() ** 2)
        print(f"{path}: squared error {errors[-1].mean():.4f} ({games:,} games, {len(targets):,} decisions)")
    sizes = np.bincount(numbers)
    for path, squared in zip(checkpoints[1:], errors[1:], strict=True):
        per_game = np.bincount(numbers, weights=squared - errors[0])
        mean = per_game.sum() / sizes.sum()  # a ratio estimate, whose standard error takes games as the units
        spread = np.sqrt(len(sizes) * np.sum((per_game - mean * sizes) ** 2) / (len(sizes) - 1)) / sizes.sum()
        low, high = mean - 1.96 * spread, mean + 1.96 * spread
        print(f"{path} minus {checkpoints[0]}: {mean:+.4f} ({low:+.4f} .. {high:+.4f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    one = commands.add_parser("refit", help="a copy of a checkpoint with its critic refitted on outcomes")
    one.add_argument("source")
    one.add_argument("out")
    one.add_argument("--games", type=int, default=300_000)
    one.add_argument("--seed", type=int, default=77)
    one.add_argument("--learning-rate", type=float, default=1e-4)
    many = commands.add_parser("error", help="critics' squared error against the outcomes of fresh games")
    many.add_argument("checkpoints", nargs="+")
    many.add_argument("--games", type=int, default=30_000)
    many.add_argument("--seed", type=int, default=5000)
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.command == "refit":
        refit(args.source, args.out, args.games, args.seed, args.learning_rate)
    else:
        error(args.checkpoints, args.games, args.seed)


if __name__ == "__main__":
    main()
