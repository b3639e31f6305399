"""Two players' per-pair scores saved by separate runs on the same deals, compared pair by pair.

    python benchmarks/paired_saved.py --reference runs/base-12385.npz runs/base-12386.npz \
        --player runs/other-12385.npz runs/other-12386.npz

Each file is a ``search_strength.py --save`` file holding one cell, or ``FILE#CELL`` names one cell of a file that
holds several (the names ``np.load(FILE).files`` lists); the files of one side are taken in order and
their pairs joined, so the i-th file of ``--player`` must have been played on the deals of the i-th of
``--reference`` (the same ``--seed`` and ``--pairs``; checked by shape only). Separate runs are how two players with
different simulation budgets meet the same deals, since one run gives every player the same budget. Prints each
side's win rate with its 95% paired interval and the difference (player minus reference) with its paired interval.
"""

from __future__ import annotations

import argparse

import numpy as np

from train.evaluation.statistics import difference_interval, paired_interval


def scores(paths: list[str]) -> np.ndarray:
    """The ``(pairs, 2)`` scores of one cell per file (``FILE`` or ``FILE#CELL``), joined in order."""
    joined = []
    for path in paths:
        name, _, cell = path.partition("#")
        with np.load(name) as saved:
            if cell and cell not in saved.files:
                raise SystemExit(f"paired_saved: {name} has no cell {cell!r}; it holds {', '.join(saved.files)}")
            if not cell and len(saved.files) != 1:
                raise SystemExit(f"paired_saved: {name} holds {len(saved.files)} cells ({', '.join(saved.files)}); "
                                 "name one as FILE#CELL")
            joined.append(saved[cell or saved.files[0]])
    return np.concatenate(joined)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reference", nargs="+", required=True)
    parser.add_argument("--player", nargs="+", required=True)
    args = parser.parse_args()
    if len(args.reference) != len(args.player):
        parser.error("give as many --player files as --reference files, one per set of deals")
    reference, player = scores(args.reference), scores(args.player)
    for name, table in (("reference", reference), ("player", player)):
        low, high = paired_interval(table)
        print(f"{name}: {table.mean():.1%} ({low:.1%} - {high:.1%}) over {len(table)} pairs")
    difference, low, high = difference_interval(player, reference)
    print(f"player minus reference: {100 * difference:+.1f} ({100 * low:+.1f} .. {100 * high:+.1f}) points, paired")


if __name__ == "__main__":
    main()
