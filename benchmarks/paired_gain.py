"""Two players on the same fresh deals: each one's win rates and the paired difference, after minus before.

    python benchmarks/paired_gain.py runs/ppo-phase/start.zip runs/ppo-phase/kl01/latest.zip \
        --opponents rule random --pairs 2000 --seed 12346 --workers 2 --json runs/ppo-phase/gain.json

Both players meet each opponent on the same ``--pairs`` deal pairs of ``--seed``; the difference of each deal pair's
mean score is one observation, so the luck of the deal, shared by both, cancels
(:func:`train.evaluation.statistics.difference_interval`). This is how docs/results.md says whether a phase of
training (a PPO phase, a generation) added anything: a 95% interval of the difference that excludes 0.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from train.evaluation.matches import evaluate
from train.evaluation.statistics import difference_interval, score_interval


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", help="the reference player (a spec: checkpoint, name, module:attribute)")
    parser.add_argument("after", help="the player compared with it")
    parser.add_argument("--opponents", nargs="+", default=["rule", "random"])
    parser.add_argument("--pairs", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=12346, help="the deals' seed (fresh: none used to choose)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args(argv)
    if args.pairs < 1 or args.workers < 1:
        parser.error("--pairs and --workers must be at least 1")

    before, after = (evaluate(player, args.opponents, args.pairs, args.seed, args.workers)
                     for player in (args.before, args.after))
    rows = []
    print("| opponent | before | after | after - before (95% CI) |\n| --- | ---: | ---: | ---: |")
    for old, new in zip(before, after, strict=True):
        difference, low, high = difference_interval(new.pair_scores, old.pair_scores)
        old_low, old_high, _ = score_interval(old.pair_scores)
        new_low, new_high, _ = score_interval(new.pair_scores)
        rows.append({"opponent": new.opponent, "before": old.score, "before_ci": [old_low, old_high],
                     "after": new.score, "after_ci": [new_low, new_high], "difference": difference,
                     "difference_ci": [low, high], "pairs": args.pairs, "seed": args.seed})
        print(f"| {new.opponent} | {old.score:.1%} ({old_low:.1%}-{old_high:.1%}) | {new.score:.1%} "
              f"({new_low:.1%}-{new_high:.1%}) | {difference:+.1%} ({low:+.1%} .. {high:+.1%}) |")
    if args.json is not None:
        args.json.write_text(json.dumps({"before": args.before, "after": args.after, "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
