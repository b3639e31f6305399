"""The spread of a recipe over fit seeds, and the difference between two settings of it (e.g. a belief lift).

    python benchmarks/fit_seeds.py --a runs/sq-none-s8? --b runs/sq-particles-s8?

Each folder is a ``benchmarks/rollout_q.py`` run whose ``report.json`` holds its greedy evaluations (the same deal
pairs for every run). Per opponent, this prints each setting's win rates by seed with their mean and a 95%
t-interval over seeds, and B minus A with Welch's 95% interval (scipy): the seeds, not the deals, are the
observations, since between fit seeds the networks differ more than one evaluation's noise.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table
from scipy import stats


def win_rates(runs: list[Path]) -> dict[str, np.ndarray]:
    """Opponent -> the runs' greedy win rates, in the order given."""
    by_opponent: dict[str, list[float]] = {}
    for run in runs:
        report = run / "report.json"
        if not report.is_file():
            raise SystemExit(f"{report}: no such file (is {run} a finished rollout_q.py run?)")
        for result in json.loads(report.read_text())["evaluations"]["greedy"]:
            by_opponent.setdefault(result["opponent"], []).append(result["win_rate"])
    return {opponent: np.array(rates) for opponent, rates in by_opponent.items()}


def mean_interval(rates: np.ndarray) -> str:
    """Mean and 95% t-interval over seeds, in percent."""
    low, high = stats.t.interval(0.95, len(rates) - 1, loc=rates.mean(), scale=stats.sem(rates))
    return f"{100 * rates.mean():.1f}% ({100 * low:.1f}% - {100 * high:.1f}%)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--a", type=Path, nargs="+", required=True, help="the runs of setting A (at least 2)")
    parser.add_argument("--b", type=Path, nargs="+", required=True, help="the runs of setting B (at least 2)")
    args = parser.parse_args()
    if min(len(args.a), len(args.b)) < 2:
        parser.error("each setting needs at least 2 runs for an interval over seeds")
    a, b = win_rates(args.a), win_rates(args.b)
    table = Table("opponent", "A by seed", "A mean (95% CI)", "B by seed", "B mean (95% CI)", "B - A (Welch 95% CI)")
    for opponent in a:
        welch = stats.ttest_ind(b[opponent], a[opponent], equal_var=False).confidence_interval(0.95)
        lift = b[opponent].mean() - a[opponent].mean()
        table.add_row(opponent, " / ".join(f"{100 * r:.1f}" for r in a[opponent]), mean_interval(a[opponent]),
                      " / ".join(f"{100 * r:.1f}" for r in b[opponent]), mean_interval(b[opponent]),
                      f"{100 * lift:+.1f} ({100 * welch.low:+.1f} .. {100 * welch.high:+.1f})")
    Console().print(table)


if __name__ == "__main__":
    main()
