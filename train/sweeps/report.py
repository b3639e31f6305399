"""The results of a sweep (``uno-tune``): the trials table, its JSON, and the comparison of one key's values.

The comparison (a sweep's ``compare`` key, e.g. ``env.belief`` over a grid of seeds) is the multi-seed
ablation: per opponent, each value's final win rates over its trials (one per seed), their mean with a 95%
t-interval over the trials (the spread between training runs, which decides whether a setting trains better
agents), next to the mean half width of the trials' own evaluation CIs (the evaluation noise alone); then each
value's difference from the first one (the lift) with a 95% Welch t-interval over the trials (scipy), which
carries both the training spread and the evaluation noise. This module does not import Ray.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table
from scipy import stats

from train.evaluation.statistics import t_quantile_975
from train.sweeps.config import SweepConfig


@dataclass
class TrialSummary:
    """One trial of a sweep: its drawn config values and where it ended.

    ``status`` is ``finished`` (trained to the end, ``final`` holds the final evaluation of its best model per
    opponent), ``stopped`` (stopped early by the scheduler, or not yet finished when the sweep was
    interrupted), or ``error`` (``error`` holds the last line of the exception). ``metric``, ``step`` and
    ``win_rates`` come from the trial's last evaluation; ``seconds`` is its wall time in Tune.
    """

    trial: str
    status: str
    config: dict[str, Any]
    metric: float | None = None
    step: int | None = None
    seconds: float | None = None
    win_rates: dict[str, float] = field(default_factory=dict)
    final: dict[str, dict[str, float]] = field(default_factory=dict)
    run_dir: str | None = None
    error: str | None = None

    def sort_key(self) -> tuple[float, str]:
        """Best metric first; trials without one last."""
        return (-self.metric if self.metric is not None else math.inf, self.trial)


def trials_json(sweep: SweepConfig, trials: list[TrialSummary], best_config: Path) -> dict[str, Any]:
    """The JSON of ``trials.json`` / ``uno-tune --json``: the sweep's metric and the trials, best first."""
    best = next((t for t in trials if t.metric is not None), None)
    return {"sweep": sweep.name, "metric": sweep.metric, "mode": "max",
            "best_trial": best.trial if best else None, "best_config": str(best_config) if best else None,
            "trials": [asdict(t) for t in trials]}


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    return json.dumps(value) if not isinstance(value, str) else value


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def print_trials(sweep: SweepConfig, trials: list[TrialSummary], console: Console | None = None) -> None:
    """Print the trials as a table (rich): config values, metric, steps, wall time, status, final win rates."""
    opponents = list(dict.fromkeys(name for t in trials for name in t.final))
    table = Table(title=f"sweep {sweep.name}: {len(trials)} trials, best {sweep.metric} first")
    for column in ("trial", *(d.key for d in sweep.space), sweep.metric, "steps", "wall time", "status",
                   *(f"final vs {o}" for o in opponents)):
        table.add_column(column, justify="left" if column in ("trial", "status") else "right")
    for t in trials:
        finals = [f"{t.final[o]['win_rate']:.1%}" if o in t.final else "-" for o in opponents]
        table.add_row(t.trial, *(_cell(t.config[d.key]) for d in sweep.space),
                      f"{t.metric:.3f}" if t.metric is not None else "-",
                      f"{t.step:,}" if t.step is not None else "-",
                      _duration(t.seconds),
                      t.status if t.error is None else f"error: {t.error}", *finals)
    if console is None:
        console = Console()
        if not console.is_terminal:  # a log or a pipe: rich would squeeze the table into 80 columns
            console = Console(width=200)
    console.print(table)


def comparison_table(sweep: SweepConfig, trials: list[TrialSummary]) -> str:
    """Markdown tables, one per opponent, comparing the values of ``sweep.compare`` (module docstring).

    Only finished trials count; trials are listed in the order of the other grid keys' values.
    """
    key = sweep.compare
    if key is None:
        raise ValueError("the sweep has no compare key")
    values = next(d.values for d in sweep.space if d.key == key)
    others = [d.key for d in sweep.space if d.key != key]
    done = [t for t in trials if t.status == "finished"]
    groups = {_cell(v): sorted((t for t in done if t.config[key] == v),
                                    key=lambda t: json.dumps([t.config[k] for k in others])) for v in values}
    groups = {name: members for name, members in groups.items() if members}
    if not groups:
        return f"No finished trials to compare {key} over."
    opponents = list(dict.fromkeys(o for members in groups.values() for t in members for o in t.final))
    out = []
    for opponent in opponents:
        out += [f"{key}, final win rate against `{opponent}`:", "",
                f"| {key} | trials ({', '.join(others) or 'repeats'}) | mean | 95% CI over trials | "
                "mean eval. CI half width |", "| --- | --- | ---: | ---: | ---: |"]
        for name, members in groups.items():
            rows = [t.final[opponent] for t in members]
            rates = np.array([r["win_rate"] for r in rows])
            half = t_quantile_975(len(rates) - 1) * rates.std(ddof=1) / np.sqrt(len(rates)) if len(rates) > 1 \
                else float("nan")
            eval_half = np.mean([(r["ci_high"] - r["ci_low"]) / 2 for r in rows])
            out.append(f"| {name} | " + " ".join(f"{x:.1%}" for x in rates)
                       + f" | {rates.mean():.1%} | {rates.mean() - half:.1%} - {rates.mean() + half:.1%}"
                       + f" | {eval_half:.1%} |")
        names = list(groups)
        if len(names) > 1 and all(len(members) > 1 for members in groups.values()):
            out += ["", f"| lift over {names[0]} | difference of means | 95% CI (Welch, over trials) |",
                    "| --- | ---: | ---: |"]
            base = np.array([t.final[opponent]["win_rate"] for t in groups[names[0]]])
            for name in names[1:]:
                rates = np.array([t.final[opponent]["win_rate"] for t in groups[name]])
                interval = stats.ttest_ind(rates, base, equal_var=False).confidence_interval(0.95)
                out.append(f"| {name} | {rates.mean() - base.mean():+.1%} | "
                           f"{interval.low:+.1%} .. {interval.high:+.1%} |")
        out.append("")
    return "\n".join(out)
