"""``uno-tune`` / ``python -m train.cli.tune``: hyperparameter sweeps and multi-seed ablations on Ray Tune.

    uno-tune configs/sweeps/smoke.yaml                       # local Ray on this machine
    uno-tune configs/sweeps/default-lr-epochs.yaml --samples 24 --json lr.json
    ray start --head --num-cpus 8                            # then, from any machine of the cluster:
    uno-tune configs/sweeps/default-lr-epochs.yaml --address HEAD_IP:6379 --out /shared/sweeps/lr
    uno-tune --resume runs/sweeps/default-lr-epochs-20261123-101500  # continue a killed sweep

The sweep file is described in :mod:`train.sweeps.config`; the trials, the sweep folder and the best config in
:mod:`train.sweeps.tune`. On a cluster of several machines, ``--out`` must be on storage every machine sees
(NFS), as Ray Tune requires for its experiment folder, and so must the checkpoints a config names. Exit status 2
on a bad sweep file or an unreachable ``--address``.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from agents.files import write_text
from train.cli.destinations import file_problem
from train.config import ConfigError
from train.sweeps.config import load_sweep, save_sweep
from train.sweeps.report import comparison_table, print_trials
from train.sweeps.tune import run_sweep


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the command line, check the sweep, run it on Ray, print and write the results."""
    parser = argparse.ArgumentParser(prog="uno-tune", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("config", nargs="?", type=Path, help="the sweep file (YAML; see train/sweeps/config.py)")
    parser.add_argument("--address", help="join the Ray cluster at HOST:PORT (default: start Ray on this machine)")
    parser.add_argument("--samples", type=int, help="trials (Optuna) or repetitions of the grid; replaces `trials`")
    parser.add_argument("--out", type=Path, help="the sweep folder (default: runs/sweeps/<name>-<date-time>)")
    parser.add_argument("--json", type=Path, help="also write the trials (trials.json) to this file")
    parser.add_argument("--resume", type=Path, metavar="SWEEP_DIR", help="continue this sweep where it stopped")
    args = parser.parse_args(argv)
    if args.resume and (args.config or args.out or args.samples):
        parser.error("--resume takes the sweep and folder it ran with; give no config, --out or --samples")
    if not args.resume and not args.config:
        parser.error("give a sweep file, or --resume SWEEP_DIR")
    if args.samples is not None and args.samples < 1:
        parser.error(f"--samples must be at least 1, got {args.samples}")
    problem = args.json and file_problem(args.json)
    if problem:
        parser.error(f"--json {args.json}: {problem}")
    try:
        # Checked before anything long: an installation without the tune extra gets told what to install.
        import optuna  # noqa: F401
        import ray
    except ImportError as error:
        print(f"uno-tune: {error.name} is not installed; install the tune extra: pip install 'uno-rl[tune]'",
              file=sys.stderr)
        return 2
    try:
        if args.resume:
            if not (args.resume / "sweep.yaml").is_file():
                raise ConfigError(f"--resume {args.resume}: not a sweep folder (it has no sweep.yaml)")
            sweep, sweep_dir = load_sweep(args.resume / "sweep.yaml"), args.resume
        else:
            sweep = load_sweep(args.config, args.samples)
            sweep_dir = args.out or Path("runs/sweeps") / f"{sweep.name}-{time.strftime('%Y%m%d-%H%M%S')}"
            if sweep_dir.exists() and any(sweep_dir.iterdir()):
                raise ConfigError(f"sweep folder {sweep_dir} already exists and is not empty; use --resume "
                                  f"{shlex.quote(str(sweep_dir))} to continue it")
        from train.evaluation.distributed import connect

        started = connect(args.address)
    except ConfigError as error:
        print(f"uno-tune: config error: {error}", file=sys.stderr)
        return 2
    try:
        cpus = ray.cluster_resources().get("CPU", 0)
        if sweep.cpus_per_trial > cpus:  # Tune would keep such trials PENDING forever
            print(f"uno-tune: config error: cpus_per_trial {sweep.cpus_per_trial:g} is more than the {cpus:g} CPUs "
                  f"of the Ray cluster; no trial could start", file=sys.stderr)
            return 2
        if not args.resume:
            sweep_dir.mkdir(parents=True, exist_ok=True)
            save_sweep(sweep, sweep_dir / "sweep.yaml")
        print(f"sweep folder: {sweep_dir}", flush=True)
        trials = run_sweep(sweep, sweep_dir, resume=bool(args.resume))
    finally:
        if started:
            ray.shutdown()
    print_trials(sweep, trials)
    if sweep.compare:
        print(comparison_table(sweep, trials))
    if args.json:
        write_text(args.json, (sweep_dir / "trials.json").read_text())
    if (sweep_dir / "best.yaml").exists():
        print(f"best config: {sweep_dir / 'best.yaml'}  (uno-train {shlex.quote(str(sweep_dir / 'best.yaml'))})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
