"""Fit one network on the label shards of finished labelling rounds (expert-iteration generations, for instance).

    python benchmarks/distil.py runs/ei-aware/pretrain/round_8 runs/ei-aware/pretrain/round_9 \
        runs/ei-aware/pretrain/round_10 --actor afterstate --centred --cosine --epochs 30 --seed 1 \
        --out runs/distil/afterstate.zip
    uno-evaluate runs/distil/afterstate.zip --opponents rule random --pairs 4000 --seed 12378

Each folder is a round of :mod:`train.training.labelling` (``labels.json`` and ``shard_NNNNN.npz``; any base
player, no belief features): the shards' observations, move values and base moves are concatenated in the order
given and fitted by :func:`train.training.rollout_values.fit` (``--actor afterstate``: :mod:`agents.afterstate`).
The checkpoint records the folders and the fit's settings; its held-out metrics go to ``OUT`` with ``.json``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from agents.files import write_text
from agents.ppo import save_model
from train.training import labelling
from train.training.rollout_values import ACTIVATIONS, fit
from uno_env.observation import BASE_SIZE


def read_rounds(folders: list[Path]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Observations, move values and base moves of every finished shard of ``folders``, in order."""
    parts = []
    for folder in folders:
        try:
            labels = labelling.read_round(folder)
        except ValueError as error:
            raise SystemExit(str(error)) from None
        if labels[0].shape[1] != BASE_SIZE:
            raise SystemExit(f"{folder}: observations of {labels[0].shape[1]} channels; only labels without belief "
                             f"features ({BASE_SIZE}) are fitted here")
        parts.append(labels)
    return tuple(np.concatenate(arrays) for arrays in zip(*parts, strict=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rounds", type=Path, nargs="+", help="round folders of labels (a window of generations)")
    parser.add_argument("--actor", choices=("mlp", "afterstate"), default="afterstate")
    parser.add_argument("--net-arch", type=int, nargs="+", default=[512, 512, 256])
    parser.add_argument("--activation", choices=sorted(ACTIVATIONS), default="tanh")
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--batch-size", type=int, default=512)
    parser.add_argument("--centred", action="store_true", help="fit the differences between moves (fit_values)")
    parser.add_argument("--cosine", action="store_true", help="anneal the learning rate to 0 along a half cosine")
    parser.add_argument("--seed", type=int, required=True, help="the fit's seed (initial weights, held-out rows)")
    parser.add_argument("--out", type=Path, required=True, help="the checkpoint to write (.zip)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    started = time.perf_counter()
    observations, values, moves = read_rounds(args.rounds)
    print(f"{len(values):,} positions from {len(args.rounds)} rounds", flush=True)
    model, metrics = fit(observations, values, moves, args.epochs, args.seed, 0.0, "none", args.net_arch,
                         args.activation, args.learning_rate, args.batch_size, args.actor, args.centred, args.cosine)
    settings = {"rounds": [str(folder) for folder in args.rounds], "positions": len(values),
                **{key: getattr(args, key) for key in ("actor", "net_arch", "activation", "epochs", "learning_rate",
                                                       "batch_size", "centred", "cosine", "seed")}}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    path = save_model(model, args.out, {"belief": "none", "config": "distil", "steps": 0, "distil": settings})
    report = {**settings, **metrics, "seconds": round(time.perf_counter() - started)}
    write_text(path.with_suffix(".json"), json.dumps(report, indent=1) + "\n")
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
