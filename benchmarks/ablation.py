"""The belief ablation: the same training config with each belief setting and several seeds, at equal budgets.

    .venv/bin/python benchmarks/ablation.py --config configs/default.yaml --beliefs none counting particles \\
        --seeds 0 1 2 --out runs/ablation

Each (belief, seed) is one training run in ``OUT/<belief>-s<seed>`` (a run that already finished is read,
not retrained, so an interrupted ablation resumes where it stopped; a run interrupted midway is resumed
from its last checkpoint). Every run ends with its own final evaluation (``eval.final_pairs`` deal pairs
per opponent, on deals not used to pick its checkpoint). The script prints a Markdown table per opponent:
each seed's win rate, and per belief the mean over seeds with a 95% t-interval over seeds (the spread
between training runs, which is what decides whether a belief setting trains better agents), next to the
mean of the per-run evaluation CIs' half widths (the evaluation noise alone). Under each table, every
belief's difference from the first one (the lift), with a 95% Welch t-interval over the seeds' win rates
(scipy), which carries both the training spread and the evaluation noise.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from scipy import stats

from train.config import ConfigError
from train.evaluation.statistics import t_quantile_975
from train.training.trainer import train_once


def run_all(config: str, beliefs: list[str], seeds: list[int], out: Path, overrides: list[str]) -> dict:
    """Train every (belief, seed) that has no final evaluation yet; return {(belief, seed): final_eval}."""
    finals = {}
    for belief in beliefs:
        for seed in seeds:
            run_dir = out / f"{belief}-s{seed}"
            settings = [f"env.belief={belief}", f"seed={seed}", f"name={belief}-s{seed}", "progress_bar=false",
                        *overrides]
            train_once(config, settings, run_dir, f"benchmarks/ablation.py {belief} seed {seed}")
            finals[belief, seed] = json.loads((run_dir / "final_eval.json").read_text())
    return finals


def table(finals: dict, beliefs: list[str], seeds: list[int]) -> str:
    """Markdown tables, one per opponent: win rate per seed, mean over seeds with its 95% CI."""
    opponents = [r["opponent"] for r in next(iter(finals.values()))["results"]]
    out = []
    for opponent in opponents:
        out += [f"Against `{opponent}`:", "",
                "| belief | " + " | ".join(f"seed {s}" for s in seeds) + " | mean | 95% CI over seeds "
                "| mean eval. CI half width |",
                "| --- |" + " ---: |" * (len(seeds) + 3)]
        for belief in beliefs:
            rows = [next(r for r in finals[belief, s]["results"] if r["opponent"] == opponent) for s in seeds]
            rates = np.array([r["win_rate"] for r in rows])
            half = t_quantile_975(len(rates) - 1) * rates.std(ddof=1) / np.sqrt(len(rates)) if len(rates) > 1 \
                else float("nan")
            eval_half = np.mean([(r["ci_high"] - r["ci_low"]) / 2 for r in rows])
            out.append(f"| {belief} | " + " | ".join(f"{x:.1%}" for x in rates)
                       + f" | {rates.mean():.1%} | {rates.mean() - half:.1%} - {rates.mean() + half:.1%}"
                       + f" | {eval_half:.1%} |")
        if len(seeds) > 1:
            out += ["", f"| lift over `{beliefs[0]}` | difference of means | 95% CI (Welch, over seeds) |",
                    "| --- | ---: | ---: |"]
            base = _rates(finals, beliefs[0], seeds, opponent)
            for belief in beliefs[1:]:
                rates = _rates(finals, belief, seeds, opponent)
                interval = stats.ttest_ind(rates, base, equal_var=False).confidence_interval(0.95)
                out.append(f"| {belief} | {rates.mean() - base.mean():+.1%} | "
                           f"{interval.low:+.1%} .. {interval.high:+.1%} |")
        out.append("")
    return "\n".join(out)


def _rates(finals: dict, belief: str, seeds: list[int], opponent: str) -> np.ndarray:
    """The final win rates of one belief setting's runs against one opponent, in seed order."""
    return np.array([next(r["win_rate"] for r in finals[belief, s]["results"] if r["opponent"] == opponent)
                     for s in seeds])


def main(argv: list[str] | None = None) -> int:
    """Command line (module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="configs/default.yaml", help="the training config every run starts from")
    parser.add_argument("--beliefs", nargs="+", default=["none", "counting", "particles"],
                        choices=["none", "counting", "particles"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--out", type=Path, default=Path("runs/ablation"))
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="a config override applied to every run (repeatable)")
    args = parser.parse_args(argv)
    try:
        finals = run_all(args.config, args.beliefs, args.seeds, args.out, args.overrides)
    except ConfigError as error:
        print(f"ablation: config error: {error}", file=sys.stderr)
        return 2
    print(table(finals, args.beliefs, args.seeds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
