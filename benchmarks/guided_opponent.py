"""What modelling the opponent is worth to ``search-guided``: the named player against two that model the opponent.

    python benchmarks/guided_opponent.py --opponents hold-wilds highest-number rule-fixed-colour --pairs 300 \
        --seeds 33434 33435 --out runs/guided-opponent

On the same deal pairs of each opponent, three guided searches (:func:`agents.guided.guided_search`, the shipped
network, 1,800 simulations):

* ``base``: ``search-guided`` as it is: worlds from the learned model of the rule-like candidates, ``rule`` playing
  the opponent's seat in the simulations;
* ``told``: told the opponent, the ceiling of any model of it: the filter's candidates are the opponent's exact model
  and the uniform one (prior 99 to 1), and that candidate plays the opponent's seat (``opponent_rollout="modelled"``);
* ``styles``: learning the opponent among ``rule``, the training styles and ``random`` (the default candidates of
  :class:`~uno_env.belief.LearnedOpponent`, weighed by their prior, the uniform one answering for itself), each
  world's opponent a candidate drawn by the learned weights.

Each cell (a variant against an opponent on ``--pairs`` deal pairs of one seed) is saved in ``--out`` as soon as it
is played (``base-highest-number-seed33434-pairs300.npz``) and a cell already there is not played again, so a killed
run resumes where it stopped. The table pools the seeds' pairs: the paired difference of each variant from ``base``
per opponent, and their mean over the opponents (the opponents' intervals combined as independent).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from agents.guided import guided_search
from agents.search import SearchPolicy
from train.evaluation.matches import evaluate
from train.evaluation.statistics import difference_interval
from uno_env.belief import LearnedOpponent, RandomModel
from uno_env.belief.models import opponent_model
from uno_env.policy import make_policy
from uno_env.styles import HELD_OUT_STYLES

VARIANTS = ("base", "told", "styles")


def styles() -> SearchPolicy:
    """The guided search learning its opponent among the default candidates, which roll out the opponent's seat."""
    return guided_search(opponent_model=LearnedOpponent(catch_all="random", proposal="prior"),
                         opponent_rollout="modelled")


def told(opponent: str) -> SearchPolicy:
    """The guided search told ``opponent``: its exact model (and the uniform one) learned and rolled out."""
    model = opponent_model(make_policy(opponent))
    if model is None:
        raise ValueError(f"{opponent} carries no model of its play to tell the search")
    return guided_search(opponent_model=LearnedOpponent((model, RandomModel()), prior=(99, 1), catch_all="random"),
                         opponent_rollout="modelled")


def told_hold_wilds() -> SearchPolicy:
    """:func:`told` ``hold-wilds``."""
    return told("hold-wilds")


def told_highest_number() -> SearchPolicy:
    """:func:`told` ``highest-number``."""
    return told("highest-number")


def told_rule_fixed_colour() -> SearchPolicy:
    """:func:`told` ``rule-fixed-colour``."""
    return told("rule-fixed-colour")


def spec(variant: str, opponent: str) -> str:
    """The player spec of ``variant`` against ``opponent``: a factory of this module, so that each evaluation worker
    builds the search once and keeps it (handed a search object instead, the workers played several times slower).

    Raises:
        ValueError: a told variant for an opponent this module has no factory for.
    """
    if variant == "base":
        return "search-guided"  # the registered player as it is
    attribute = variant if variant != "told" else "told_" + opponent.replace("-", "_")
    if attribute not in globals():
        raise ValueError(f"no told search for {opponent!r}: the told variant knows {', '.join(HELD_OUT_STYLES)}")
    return f"guided_opponent:{attribute}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--opponents", nargs="+", default=list(HELD_OUT_STYLES))
    parser.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS))
    parser.add_argument("--pairs", type=int, default=300, help="deal pairs per opponent and seed")
    parser.add_argument("--seeds", type=int, nargs="+", default=[33434],
                        help="the deals' seeds (fresh: none used to choose)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, required=True, help="folder of the cells' pair scores")
    args = parser.parse_args(argv)
    if args.pairs < 1 or args.workers < 1:
        parser.error("--pairs and --workers must be at least 1")
    variants = ["base", *(name for name in args.variants if name != "base")]
    try:
        specs = {(name, opponent): spec(name, opponent) for name in variants for opponent in args.opponents}
    except ValueError as error:
        parser.error(str(error))
    args.out.mkdir(parents=True, exist_ok=True)
    cells: dict[tuple[str, str], list[np.ndarray]] = {}
    for seed in args.seeds:
        for opponent in args.opponents:
            for name in variants:
                path = args.out / f"{name}-{opponent}-seed{seed}-pairs{args.pairs}.npz"
                if not path.exists():
                    (result,) = evaluate(specs[name, opponent], [opponent], args.pairs, seed, args.workers)
                    partial = path.with_suffix(".partial.npz")
                    np.savez(partial, pair_scores=result.pair_scores)
                    partial.replace(path)  # a kill leaves the cell whole or absent
                    print(f"played {name} against {opponent} (seed {seed}): {result.score:.1%}", flush=True)
                cells.setdefault((name, opponent), []).append(np.load(path)["pair_scores"])
    scores = {cell: np.concatenate(parts) for cell, parts in cells.items()}

    seeds = ", ".join(map(str, args.seeds))
    print(f"\n{args.pairs * len(args.seeds)} deal pairs per opponent (seeds {seeds}); differences from base, "
          "paired (95%)\n")
    print("| variant | " + " | ".join(args.opponents) + " | mean |\n| --- |" + " ---: |" * (len(args.opponents) + 1))
    for name in variants:
        rates = [scores[name, opponent].mean() for opponent in args.opponents]
        print(f"| {name} | " + " | ".join(f"{rate:.1%}" for rate in rates) + f" | {np.mean(rates):.1%} |")
    for name in variants[1:]:
        row, means, halves = [], [], []
        for opponent in args.opponents:
            difference, low, high = difference_interval(scores[name, opponent], scores["base", opponent])
            row.append(f"{difference:+.1%} ({low:+.1%} .. {high:+.1%})")
            means.append(difference)
            halves.append((high - low) / 2)
        # the opponents' deals are independent, so their intervals' half-widths add in quadrature
        mean, half = np.mean(means), np.sqrt(np.sum(np.square(halves))) / len(means)
        total = f"{mean:+.1%} ({mean - half:+.1%} .. {mean + half:+.1%})"
        print(f"| {name} minus base | " + " | ".join(row) + f" | {total} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
