"""Hyperparameter sweeps and multi-seed comparisons of uno-train configs on Ray Tune (uno-tune).

examples:
  uno-tune SWEEP                                 # a shipped sweep by name (or a sweep file), local Ray
  uno-tune my-sweep.yaml --samples 24 --json trials.json
  ray start --head --num-cpus 8                  # then, from any machine of the cluster:
  uno-tune my-sweep.yaml --address HEAD_IP:6379 --out /shared/sweeps/mine
  uno-tune --resume runs/sweeps/my-sweep-20261123-101500   # continue a stopped sweep

A sweep file names a base training config, the keys to search and how (Optuna or a grid, with or without early
stopping), the metric (the mean win rate of the evaluations during training) and the CPUs per trial; the
shipped sweeps are examples. The sweep folder holds each trial's run folder, trials.json and the best config
(best.yaml). On a cluster of several machines --out must be on storage every machine sees (NFS), and so must
the checkpoints a config names. Exit status 2 on a bad sweep file or an unreachable --address; Ctrl-C or SIGTERM
stops the trials (each saves a checkpoint) and prints the command that continues the sweep (status 130).
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agents.files import write_text
from train.cli.destinations import file_problem, folder_problem
from train.config import ConfigError
from train.shipped import config_listing, find_config
from train.sweeps.config import load_sweep, save_sweep
from train.sweeps.report import comparison_table, print_trials
from train.sweeps.tune import run_sweep

_NO_SIGINT_HANDLER = "TUNE_DISABLE_SIGINT_HANDLER"


class _GracefulStop:
    """Ctrl-C or SIGTERM during the sweep: Tune stops the trials (each trainer saves a checkpoint and stops its worker
    processes), saves the experiment, and ``uno-tune`` exits with status 130 (later signals are ignored meanwhile).

    Tune stops gracefully on SIGUSR1 (its own SIGINT handler is turned off, so both signals take this one path);
    without this, SIGTERM aborted the driver and the trials' worker processes could outlive it.
    """

    def __init__(self) -> None:
        self.signal: str | None = None
        self.previous: dict[int, Any] = {}
        self.variable: str | None = None

    def __enter__(self) -> _GracefulStop:
        self.variable = os.environ.get(_NO_SIGINT_HANDLER)
        os.environ[_NO_SIGINT_HANDLER] = "1"
        for number in (signal.SIGINT, signal.SIGTERM):
            self.previous[number] = signal.signal(number, self._stop)
        return self

    def _stop(self, number: int, frame: object) -> None:
        if self.signal is not None:
            return
        self.signal = signal.Signals(number).name
        if signal.getsignal(signal.SIGUSR1) in (signal.SIG_DFL, signal.SIG_IGN, None):
            raise KeyboardInterrupt  # Tune is not running yet (or any more): nothing to stop gracefully
        os.kill(os.getpid(), signal.SIGUSR1)  # Tune's graceful stop

    def __exit__(self, *exception: object) -> None:
        for number, handler in self.previous.items():
            signal.signal(number, handler)
        if self.variable is None:
            os.environ.pop(_NO_SIGINT_HANDLER, None)
        else:
            os.environ[_NO_SIGINT_HANDLER] = self.variable


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the command line, check the sweep, run it on Ray, print and write the results."""
    description, epilog = __doc__.split("\n\n", 1)
    epilog += "\n" + config_listing("sweeps")
    parser = argparse.ArgumentParser(prog="uno-tune", description=description, epilog=epilog,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("config", nargs="?", metavar="SWEEP", help="a sweep file (YAML), or a shipped sweep's name")
    parser.add_argument("--address", metavar="HOST:PORT",
                        help="join the Ray cluster at HOST:PORT (default: start Ray on this machine)")
    parser.add_argument("--samples", type=int, help="trials (Optuna) or repetitions of the grid; replaces `trials`")
    parser.add_argument("--out", type=Path, help="the sweep folder (default: runs/sweeps/<name>-<date-time>)")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the trials (trials.json) to this file")
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
    problem = args.out and folder_problem(args.out)
    if problem:
        parser.error(f"--out {args.out}: {problem}")
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
            sweep = load_sweep(find_config(args.config, "sweeps"), args.samples)
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
        with _GracefulStop() as stop:
            try:
                trials = run_sweep(sweep, sweep_dir, resume=bool(args.resume))
            except KeyboardInterrupt:
                trials = []
    finally:
        if started:
            ray.shutdown()  # the local Ray's processes end with it
    if stop.signal is not None:
        print(f"uno-tune: stopped by {stop.signal}; the trials saved their checkpoints. Continue with: uno-tune "
              f"--resume {shlex.quote(str(sweep_dir))}", file=sys.stderr)
        return 130
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
