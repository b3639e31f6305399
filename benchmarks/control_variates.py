"""What the control variates and the sequential test save: interval widths at equal pairs, pairs to a decision.

    python benchmarks/control_variates.py widths search-q-afterstate --opponents rule random --pairs 2000 \
        --seed 22001 --workers 2 --json widths.json
    python benchmarks/control_variates.py sprt search-q-none --opponents rule --sprt 0 30 --pairs 4000 \
        --seed 22100 --sprt-seeds 22101 22102 22103 22104 22105 --workers 2 --json sprt.json

``widths`` evaluates the agent with adjusted scores (:mod:`train.evaluation.control_variates`) and prints, per
opponent, the plain and the adjusted 95% half-widths on the same deal pairs, their ratio, whether the adjusted
estimate lies inside the plain interval, and the pairs the adjusted estimate needs for the half-width the plain one
has at 2,000 pairs (``2000 * ratio ** 2``). ``sprt`` plays the fixed-size test of ``--pairs`` pairs from ``--seed``
(it accepts H1 when the mean score is above the bounds' midpoint) and the sequential test from each of
``--sprt-seeds``, on adjusted and on plain pair scores, and prints the decisions and the pairs each took.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from train.evaluation.matches import evaluate
from train.evaluation.sprt import SprtBounds, run_sprt
from train.evaluation.value import DEFAULT_PATH


def widths(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Plain and adjusted half-widths per opponent."""
    rows = []
    print("| opponent | pairs | plain | adjusted | half-width plain | adjusted | ratio | adjusted in plain CI | "
          "pairs for the plain 2,000-pair width |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |")
    for r in evaluate(args.agent, args.opponents, args.pairs, args.seed, args.workers, control_variates=DEFAULT_PATH):
        low, high = r.ci
        mean, a_low, a_high = r.adjusted
        ratio = (a_high - a_low) / (high - low)
        row = {"agent": r.agent, "opponent": r.opponent, "pairs": r.pairs, "seed": args.seed, "plain": r.score,
               "plain_ci": [low, high], "adjusted": mean, "adjusted_ci": [a_low, a_high], "ratio": ratio,
               "inside": bool(low <= mean <= high), "pairs_needed": 2000 * ratio**2}
        rows.append(row)
        print(f"| {r.opponent} | {r.pairs} | {r.score:.1%} | {mean:.1%} | {(high - low) / 2:.2%} | "
              f"{(a_high - a_low) / 2:.2%} | {ratio:.2f} | {row['inside']} | {row['pairs_needed']:.0f} |")
    return rows


def sprt(args: argparse.Namespace) -> dict[str, Any]:
    """The fixed-size test's decision and the sequential tests' decisions and pairs."""
    elo = [float(value) for value in args.sprt]
    bounds = SprtBounds.from_elo(*elo)
    fixed, = evaluate(args.agent, args.opponents[:1], args.pairs, args.seed, args.workers,
                      control_variates=DEFAULT_PATH)
    midpoint = (bounds.score0 + bounds.score1) / 2
    out: dict[str, Any] = {"agent": args.agent, "opponent": args.opponents[0], "elo": elo, "pairs": args.pairs,
                           "fixed": {"seed": args.seed, "plain": fixed.score, "adjusted": fixed.adjusted[0],
                                     "decision": "H1" if fixed.score >= midpoint else "H0"}, "runs": []}
    print(f"fixed test, {args.pairs} pairs (seed {args.seed}): plain {fixed.score:.1%}, adjusted "
          f"{fixed.adjusted[0]:.1%}: {out['fixed']['decision']}")
    for seed in args.sprt_seeds:
        for adjusted in (True, False):
            outcome, _ = run_sprt(args.agent, args.opponents[0], bounds, args.pairs, seed, args.sprt_batch,
                                  args.workers, control_variates=DEFAULT_PATH if adjusted else None)
            out["runs"].append({"seed": seed, "adjusted": adjusted, "decision": outcome.decision,
                                "pairs": outcome.pairs, "llr": outcome.llr})
            print(f"SPRT seed {seed}, {'adjusted' if adjusted else 'plain'}: {outcome.decision} after "
                  f"{outcome.pairs} pairs (LLR {outcome.llr:.2f})", flush=True)
    for adjusted in (True, False):
        runs = [run for run in out["runs"] if run["adjusted"] == adjusted]
        mean = sum(run["pairs"] for run in runs) / len(runs)
        agree = sum(run["decision"] == out["fixed"]["decision"] for run in runs)
        out[f"mean_pairs_{'adjusted' if adjusted else 'plain'}"] = mean
        print(f"{'adjusted' if adjusted else 'plain'}: {mean:.0f} pairs on average ({mean / args.pairs:.0%} of the "
              f"fixed test), {agree}/{len(runs)} decisions as the fixed test's")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=["widths", "sprt"])
    parser.add_argument("agent")
    parser.add_argument("--opponents", nargs="+", default=["rule", "random"])
    parser.add_argument("--pairs", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=22001, help="fresh deals: never the value network's (7001)")
    parser.add_argument("--sprt", nargs=2, default=["0", "30"], metavar=("ELO0", "ELO1"))
    parser.add_argument("--sprt-seeds", type=int, nargs="+", default=[22101, 22102, 22103])
    parser.add_argument("--sprt-batch", type=int, default=50)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    result = widths(args) if args.what == "widths" else sprt(args)
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
