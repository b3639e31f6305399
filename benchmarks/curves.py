"""Learning curves of training runs: win rate against each evaluation opponent, by steps and by training time.

    python benchmarks/curves.py runs/a runs/b --labels A B --out docs/figures/curves.png

Reads each run folder's ``evaluations.jsonl`` (written by ``train.training.trainer``: one line per periodic
evaluation, paired and seat-balanced games, with the training time so far) and draws one row per
opponent, steps on the left and wall-clock training time on the right, with each point's 95% CI as a band.
Also prints the curves as a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: no display on a CI machine
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)


def read_curve(run: Path) -> list[dict]:
    """The evaluation records of one run, oldest first."""
    path = run / "evaluations.jsonl"
    if not path.is_file():
        raise SystemExit(f"curves: {run} has no evaluations.jsonl (is it a training run folder?)")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="training run folders")
    parser.add_argument("--labels", nargs="+", help="one label per run (default: the folder names)")
    parser.add_argument("--out", type=Path, required=True, help="the figure to write (.png or .svg)")
    args = parser.parse_args(argv)
    labels = args.labels or [run.name for run in args.runs]
    if len(labels) != len(args.runs):
        parser.error(f"--labels needs one label per run: {len(args.runs)} runs, {len(labels)} labels")
    curves = {label: read_curve(run) for label, run in zip(labels, args.runs, strict=True)}
    opponents = sorted({r["opponent"] for records in curves.values() for e in records for r in e["results"]})
    figure, axes = plt.subplots(len(opponents), 2, figsize=(11, 3.6 * len(opponents)), squeeze=False)
    for row, opponent in enumerate(opponents):
        for label, records in curves.items():
            points = [(e["step"], e.get("train_seconds"), r) for e in records for r in e["results"]
                      if r["opponent"] == opponent]
            steps = [p[0] / 1e6 for p in points]
            minutes = [p[1] / 60 if p[1] is not None else float("nan") for p in points]
            rate = [100 * p[2]["win_rate"] for p in points]
            low = [100 * p[2]["ci_low"] for p in points]
            high = [100 * p[2]["ci_high"] for p in points]
            for axis, x in ((axes[row][0], steps), (axes[row][1], minutes)):
                line, = axis.plot(x, rate, marker="o", markersize=3, label=label)
                axis.fill_between(x, low, high, color=line.get_color(), alpha=0.15)
        for column, xlabel in enumerate(("PPO steps (millions)", "training time (minutes)")):
            axis = axes[row][column]
            axis.axhline(50 if opponent == "rule" else 65.2, color="grey", linewidth=0.8, linestyle="--")
            axis.set_xlabel(xlabel)
            axis.set_ylabel(f"win rate vs {opponent} (%)")
            axis.grid(alpha=0.3)
        axes[row][0].legend(fontsize=8)
    figure.suptitle("Evaluation win rate (paired, seat-balanced; band: 95% CI). Dashed: the rule player's level")
    figure.tight_layout()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")
    for label, records in curves.items():
        print(f"\n{label}\n\n| step | minutes | " + " | ".join(opponents) + " |")
        print("| ---: | ---: | " + " | ".join("---:" for _ in opponents) + " |")
        for e in records:
            scores = {r["opponent"]: f"{100 * r['win_rate']:.1f}%" for r in e["results"]}
            minutes = f"{e['train_seconds'] / 60:.1f}" if "train_seconds" in e else "-"
            print(f"| {e['step']:,} | {minutes} | " + " | ".join(scores.get(o, "-") for o in opponents) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
