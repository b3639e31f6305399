"""Train a UNO agent from a YAML config (uno-train, or python -m train).

examples:
  uno-train                                  # the default config -> runs/default-<date-time>/
  uno-train expert-iteration                 # a shipped config, by name, from any folder
  uno-train my-config.yaml --run-dir runs/mine
  uno-train default --set seed=3 --set expert_iteration.games=8000
  uno-train --resume runs/mine               # continue a stopped run from its last checkpoint
  uno-train expert-iteration --address HEAD_IP:6379   # label on a Ray cluster (ray start --head)

A run writes everything to its folder: the resolved config (config.yaml), checkpoints, TensorBoard logs (tb/),
expert iteration's generations, the run's model (best_model.zip) and its final evaluation. Ctrl-C or SIGTERM
saves a checkpoint and prints the command that continues the run. Every config key, with its default, is in
the shipped default config.
"""

from __future__ import annotations

import argparse
import importlib.util
import shlex
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from train.config import ConfigError, load_config
from train.interrupts import keeping_interrupts, terminate_as_interrupt
from train.output import DISK_FULL, file_error, printable
from train.shipped import config_listing, find_config
from train.training.trainer import TrainingInterrupted, train

DEFAULT_CONFIG = "configs/default.yaml"


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the command line, validate the config, train; exit status 2 on a config error.

    Ctrl-C or SIGTERM saves a checkpoint, stops the workers and prints the ``--resume`` command (status 130).
    """
    description, epilog = __doc__.split("\n\n", 1)
    epilog += "\n" + config_listing()
    parser = argparse.ArgumentParser(prog="uno-train", description=description, epilog=epilog,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("config", nargs="?",
                        help=f"a YAML config file, or the name of a shipped config (default: {DEFAULT_CONFIG} "
                             "if the current folder has one, else the shipped default)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override a config key, e.g. --set ppo.learning_rate=1e-4 (repeatable)")
    parser.add_argument("--run-dir", type=Path, help="the run folder (default: RUNS_ROOT/<name>-<date-time>)")
    parser.add_argument("--runs-root", type=Path, default=Path("runs"),
                        help="where new run folders go (default: runs)")
    parser.add_argument("--resume", type=Path, metavar="RUN_DIR", help="continue this run from its last checkpoint")
    parser.add_argument("--quiet", action="store_true", help="no progress bar and no final table")
    parser.add_argument("--address", metavar="HOST:PORT",
                        help="label expert iteration's shards as tasks of the Ray cluster at HOST:PORT ('local': "
                             "start Ray on this machine); default: eval.workers local processes")
    args = parser.parse_args(argv)
    if args.address and importlib.util.find_spec("ray") is None:
        parser.error("--address needs Ray, which is not installed; install the tune extra: pip install 'uno-rl[tune]'")
    command = shlex.join(["uno-train", *(sys.argv[1:] if argv is None else argv)])
    run_dir: Path | None = None
    previous = signal.signal(signal.SIGTERM, terminate_as_interrupt)  # from here on: a SIGTERM is a Ctrl-C (status 130)
    try:
        if args.resume:
            if args.config or args.run_dir:
                parser.error("--resume takes the config and folder of the run; give neither a config nor --run-dir")
            if not args.resume.is_dir():
                problem = "it is a file, not a run folder" if args.resume.exists() else "no such run folder"
                raise ConfigError(f"cannot resume {args.resume}: {problem}")
            if not (args.resume / "config.yaml").exists():
                raise ConfigError(f"cannot resume {args.resume}: it has no config.yaml (the run was stopped before it "
                                  f"began); start it again with its first command")
            config = load_config(args.resume / "config.yaml", args.overrides)
            run_dir = args.resume
        else:
            config = load_config(find_config(args.config or DEFAULT_CONFIG), args.overrides)
            run_dir = args.run_dir or args.runs_root / f"{config.name}-{time.strftime('%Y%m%d-%H%M%S')}"
        print(f"run folder: {run_dir}", flush=True)
        with keeping_interrupts():  # one that lands in a finalizer (tqdm's) is not lost
            train(config, run_dir, resume=bool(args.resume), command=command, quiet=args.quiet, address=args.address)
    except ConfigError as error:
        print(f"uno-train: config error: {error}", file=sys.stderr)
        return 2
    except TrainingInterrupted as interrupted:
        print(f"uno-train: {interrupted}", file=sys.stderr)
        return 130
    except KeyboardInterrupt:  # before the run had a model to save
        print("uno-train: interrupted before training started; nothing was saved", file=sys.stderr)
        return 130
    except OSError as error:
        if error.errno in DISK_FULL:
            # Every file of a run is written atomically, so a full disk leaves the run as it was at its last save.
            resume = args.resume or run_dir
            print(f"uno-train: disk full writing {printable(str(error.filename or 'the run folder'))}; free some "
                  f"space, then continue with: uno-train --resume {shlex.quote(str(resume))}", file=sys.stderr)
            return 2
        problem = file_error(error)  # a run folder, --resume or a config file it may not read or write
        if problem is None:
            raise
        print(f"uno-train: error: {problem}", file=sys.stderr)
        return 2
    finally:
        if signal.getsignal(signal.SIGTERM) is terminate_as_interrupt:  # after a SIGTERM: ignored until the exit
            signal.signal(signal.SIGTERM, previous)
    return 0


if __name__ == "__main__":
    sys.exit(main())
