"""A step of rollout policy improvement over a base player (``rule``, or a checkpoint), distilled into a network.

    python benchmarks/rollout_q.py --games 20000 --deck-orders 4 --workers 2 --epochs 10 --base-bonus 0.1 \
        --margins 0.1 --pairs 1000 --seed 21 --out runs/rollout-q  # the first step, over rule
    python benchmarks/rollout_q.py --base runs/rollout-q/q-network.zip ...  # a second step, over it

The method is :mod:`train.training.rollout_values` (labels by rollouts from the true position, a network fitted
to them). This program labels ``--games`` games in each of ``--workers`` processes (saved as OUT/labels.npz and
reused by a rerun, or read from ``--labels``), fits the network (OUT/q-network.zip), and evaluates it on
``--pairs`` deal pairs (seed 12346) against ``rule`` and ``random``: greedy (the checkpoint alone) and, for each
``--margins`` value, as a *conservative* player, ``rule``'s move unless the network values another more than the
margin above it. With ``--base``, the labels continue each move with that checkpoint instead of ``rule``
(and the positions are its games against ``rule``): the next step of approximate policy iteration.
OUT/report.json holds the data sizes, the held-out metrics and the evaluations. Labels recorded with belief
features (``--belief counting``) can be refit without them (``--labels FILE --belief none``): the same labels,
the base channels only, so the two networks differ by the features alone. ``--relabel-with`` replaces the labels
by fitted networks' mean values (an ensemble's members), distilling them into one network.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
import torch

from agents.ppo import PPOPolicy, save_model
from train.evaluation.matches import evaluate, format_table
from train.training.rollout_values import (
    ACTIVATIONS,
    SCALE,
    SEARCH_BELIEFS,
    SearchLabels,
    collect_in_processes,
    fit,
)
from uno_env.observation import BASE_SIZE
from uno_env.opponents import RulePolicy
from uno_env.view import PublicView

_RULE = RulePolicy()
_ARRAYS = ("observations", "values", "base_moves")


class ConservativePlayer:
    """``rule``'s move unless the network values another legal move more than ``margin`` above it."""

    def __init__(self, network: PPOPolicy, margin: float) -> None:
        self.network = network
        self.needs = network.needs
        self.margin = margin

    def reset(self, seed: int | None = None) -> None:
        self.network.reset(seed)

    def act(self, view: PublicView) -> int:
        move = _RULE.act(view)
        if len(view.legal_actions) == 1:
            return move
        values = self.network.action_logits(view) / SCALE
        best = int(np.argmax(values))
        return best if values[best] - values[move] > self.margin else move


def network_values(checkpoints: list[Path], observations: np.ndarray, legal: np.ndarray) -> np.ndarray:
    """The checkpoints' mean move values (logits / ``SCALE``) on the legal moves, NaN elsewhere: labels that
    distil them into one network."""
    total = np.zeros(legal.shape)
    for checkpoint in checkpoints:
        network = PPOPolicy.load(checkpoint)
        for start in range(0, len(observations), 8192):  # in blocks: the hidden layers of all rows at once are GBs
            total[start:start + 8192] += network.logits(observations[start:start + 8192, :network.observation_size])
    return np.where(legal, total / (len(checkpoints) * SCALE), np.nan)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=6000, help="labelled games per worker")
    parser.add_argument("--deck-orders", type=int, default=4)
    parser.add_argument("--belief", choices=("none", "counting", "particles"), default="none",
                        help="the network's belief features")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--net-arch", type=int, nargs="+", default=[256, 256], help="the network's hidden layers")
    parser.add_argument("--activation", choices=ACTIVATIONS, default="tanh",
                        help="the hidden layers' (relu: cheaper as the base of the next round's playouts)")
    parser.add_argument("--margins", type=float, nargs="*", default=[0.1, 0.2])
    parser.add_argument("--base", default="rule", help="player to improve on: rule, random or a checkpoint path "
                                                          "(belief none)")
    parser.add_argument("--search-simulations", type=int, default=0,
                        help="label by the search player's root values with this budget (0: playouts from the true "
                             "position, --deck-orders of them)")
    parser.add_argument("--search-belief", choices=SEARCH_BELIEFS, default="counting",
                        help="the labelling search's belief (aware: the particle filter told the opponent is rule)")
    parser.add_argument("--base-bonus", type=float, default=0.0, help="added to the base player's move in the targets")
    parser.add_argument("--pairs", type=int, default=500, help="deal pairs per evaluation (seed 12346)")
    parser.add_argument("--seed", type=int, default=11,
                        help="the labelling processes play the games of seeds SEED, SEED+1, ... (one each): label "
                             "files meant to be fitted together need seeds at least --workers apart")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--relabel-with", type=Path, nargs="+", default=[],
                        help="replace the labels by these networks' mean values on the same moves (logits / 10): "
                             "distils an ensemble into one network")
    parser.add_argument("--labels", type=Path, nargs="+",
                        help="the labels file to use or write (default: OUT/labels.npz); several existing files are "
                             "fitted together")
    args = parser.parse_args()
    torch.set_num_threads(1)
    args.out.mkdir(parents=True, exist_ok=True)
    files = args.labels or [args.out / "labels.npz"]
    search = SearchLabels(args.search_simulations, args.search_belief) if args.search_simulations else None
    started = time.perf_counter()
    labelled_here = len(files) == 1 and not files[0].exists()
    if labelled_here:  # labelling is the slow part: a rerun reuses it
        arrays = collect_in_processes([args.games] * args.workers, [args.seed + w for w in range(args.workers)],
                                      args.deck_orders, args.belief, args.base, search)
        np.savez_compressed(files[0], **dict(zip(_ARRAYS, arrays, strict=True)))
    parts = [np.load(file) for file in files]
    data = {name: np.concatenate([part[name] for part in parts]) for name in _ARRAYS}
    if args.relabel_with:
        data["values"] = network_values(args.relabel_with, data["observations"], np.isfinite(data["values"]))
    label_seconds = time.perf_counter() - started
    observations = data["observations"]
    if args.belief == "none":  # labels recorded with belief features fit a network without them too: a paired ablation
        observations = observations[:, :BASE_SIZE]
    model, metrics = fit(observations, data["values"], data["base_moves"], args.epochs,
                         args.seed, args.base_bonus, args.belief, args.net_arch, args.activation)
    checkpoint = save_model(model, args.out / "q-network.zip", {"belief": args.belief, "config": "rollout-q",
                                                                        "steps": 0})
    network = PPOPolicy.load(checkpoint)
    # The labels' settings are this run's only when it labelled; fitted from files, their own runs recorded them.
    labelling = {"base": args.base, "search": None if search is None else vars(search)} if labelled_here else {}
    report = {**labelling, "label_files": [str(file) for file in files],
              "relabelled_with": [str(path) for path in args.relabel_with], "net_arch": args.net_arch,
              "activation": args.activation,
              "base_bonus": args.base_bonus, "epochs": args.epochs, "positions": len(data["values"]),
              "labels": int(np.isfinite(data["values"]).sum()),
              "label_seconds": round(label_seconds, 1),
              **metrics, "evaluations": {}}
    players = {"greedy": network, **{f"conservative {m}": ConservativePlayer(network, m) for m in args.margins}}
    for name, player in players.items():
        results = evaluate(player, ["rule", "random"], args.pairs, 12346, workers=args.workers)
        report["evaluations"][name] = [r.to_dict() for r in results]
        print(f"{name}:\n{format_table(results)}\n", flush=True)
    (args.out / "report.json").write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps({k: v for k, v in report.items() if k != "evaluations"}, indent=1))


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
