"""A hand-run hyperparameter sweep: one training run per trial, then a table of how PPO updated and what it won.

    python benchmarks/sweep.py configs/sweeps/ppo-updates.yaml --out runs/sweep

The sweep file names a base training config and its trials, each a name and ``key.path=value`` overrides
(the ``--set`` syntax of ``uno-train``)::

    base: configs/belief-lift.yaml
    set: [total_timesteps=200000]           # applied to every trial
    trials:
      - {name: lr3e-4, set: [ppo.learning_rate=3e-4]}

Each trial trains in ``OUT/<name>`` (a finished trial is read, not retrained; an interrupted one resumes from
its last checkpoint), and the table gives, per trial, the mean of SB3's ``train/approx_kl`` and
``train/clip_fraction`` over the run (PPO's step size: healthy is roughly 0.005-0.03 and 0.02-0.2), the final
``train/explained_variance``, the final evaluation's win rates with their 95% CIs, and the training time.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import yaml
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from train.config import ConfigError
from train.training.trainer import train_once

_UPDATE_TAGS = ("train/approx_kl", "train/clip_fraction", "train/explained_variance")


def read_sweep(path: Path) -> tuple[str, list[str], list[dict]]:
    """The base config, the shared overrides and the trials of a sweep file; SystemExit naming what is wrong."""
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as error:
        raise SystemExit(f"sweep: cannot read {path}: {error}") from None
    if not isinstance(data, dict) or "base" not in data or not isinstance(data.get("trials"), list):
        raise SystemExit(f"sweep: {path} must be a mapping with 'base' and a list of 'trials'")
    names = [trial.get("name") for trial in data["trials"] if isinstance(trial, dict)]
    if len(names) != len(data["trials"]) or not all(isinstance(n, str) and n for n in names):
        raise SystemExit(f"sweep: every trial in {path} needs a name")
    if len(set(names)) != len(names):
        raise SystemExit(f"sweep: trial names in {path} must be unique, got {names}")
    return data["base"], list(data.get("set", [])), data["trials"]


def summarize(run_dir: Path) -> dict:
    """Update statistics from TensorBoard and the final evaluation of one finished trial."""
    events = EventAccumulator(str(run_dir / "tb"), size_guidance={"scalars": 0})
    events.Reload()
    tags = events.Tags()["scalars"]
    values = {tag: [e.value for e in events.Scalars(tag)] for tag in _UPDATE_TAGS if tag in tags}
    final = json.loads((run_dir / "final_eval.json").read_text())
    info = json.loads((run_dir / "run_info.json").read_text())
    return {"approx_kl": float(np.mean(values.get("train/approx_kl", [np.nan]))),
            "clip_fraction": float(np.mean(values.get("train/clip_fraction", [np.nan]))),
            "explained_variance": values.get("train/explained_variance", [np.nan])[-1],
            "results": {r["opponent"]: r for r in final["results"]}, "pairs": final["pairs"],
            "minutes": (info["total_train_seconds"] + info.get("pretrain", {}).get("seconds", 0)) / 60}


def table(trials: list[dict], summaries: dict[str, dict]) -> str:
    """The sweep as a Markdown table."""
    opponents = list(next(iter(summaries.values()))["results"])
    lines = ["| trial | overrides | approx_kl | clip fraction | expl. variance | "
             + " | ".join(f"vs {o} (95% CI)" for o in opponents) + " | minutes |",
             "| --- | --- | ---: | ---: | ---: | " + " | ".join("---:" for _ in opponents) + " | ---: |"]
    for trial in trials:
        s = summaries[trial["name"]]
        cells = [f"{100 * s['results'][o]['win_rate']:.1f}% ({100 * s['results'][o]['ci_low']:.1f}-"
                 f"{100 * s['results'][o]['ci_high']:.1f})" for o in opponents]
        lines.append(f"| {trial['name']} | {' '.join(trial.get('set', [])) or '-'} | {s['approx_kl']:.4f} | "
                     f"{s['clip_fraction']:.3f} | {s['explained_variance']:.2f} | " + " | ".join(cells)
                     + f" | {s['minutes']:.1f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sweep", type=Path, help="the sweep file (YAML)")
    parser.add_argument("--out", type=Path, default=Path("runs/sweep"), help="where the trials' run folders go")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="train only these trials (the table shows "
                        "every finished one)")
    args = parser.parse_args(argv)
    base, shared, trials = read_sweep(args.sweep)
    unknown = set(args.only or []) - {t["name"] for t in trials}
    if unknown:
        parser.error(f"--only names unknown trials: {', '.join(sorted(unknown))}")
    try:
        for trial in trials:
            if args.only is None or trial["name"] in args.only:
                train_once(base, [*shared, *trial.get("set", []), f"name={trial['name']}", "progress_bar=false"],
                           args.out / trial["name"], f"benchmarks/sweep.py trial {trial['name']}")
    except ConfigError as error:
        print(f"sweep: config error: {error}", file=sys.stderr)
        return 2
    done = [t for t in trials if (args.out / t["name"] / "final_eval.json").exists()]
    if done:
        print(table(done, {t["name"]: summarize(args.out / t["name"]) for t in done}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
