"""Two source trees' env loops timed in turn: a steadier before/after than separate runs of throughput.py.

    .venv/bin/python benchmarks/throughput_pair.py /path/to/before /path/to/after      # about two minutes
    .venv/bin/python benchmarks/throughput_pair.py BEFORE AFTER --seconds 0.5 --rounds 4   # a quick look

Each tree gets one long-lived worker process (``PYTHONPATH`` set to the tree, so its ``uno_env`` is the one
imported); both build the loops of :mod:`throughput` (this folder's, the same code for both) and warm them up. Then,
round after round, every row is timed for ``--seconds`` CPU-seconds in one worker and right after in the other (the
order alternating between rounds), so a change of load on a shared machine hits both sides of a pair alike. Per row
it prints each tree's median rate and the median and range over the rounds of the paired ratio after / before.
RLCard's row is measured in both workers too: the same code on both sides, so its ratio shows how much a ratio of
this setup can move by itself.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: The rows both workers time: name -> (loop builder of throughput.py, its arguments after the seed).
ROWS: dict[str, tuple[str, tuple]] = {
    "RLCard `uno` (decisions)": ("rlcard_env", ()),
    "env vs `random` (agent steps)": ("single_env", ("random", "none")),
    "env vs `rule` (agent steps)": ("single_env", ("rule", "none")),
    "vector N=256 vs `random` (agent steps)": ("vector_env", ("random", "none", 256)),
    "vector N=256 vs `rule` (agent steps)": ("vector_env", ("rule", "none", 256)),
}


def worker(seed: int) -> None:
    """Build every row's loop from throughput.py, warm them up, then time the row named on each stdin line."""
    spec = importlib.util.spec_from_file_location("throughput", HERE / "throughput.py")
    throughput = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(throughput)
    runs = {}
    for name, (builder, args) in ROWS.items():
        runs[name] = getattr(throughput, builder)(*args, seed)
        runs[name]()  # kernels load (or compile) on their first call
    print("ready", flush=True)
    for line in sys.stdin:
        name, seconds = line.rstrip("\n").rsplit(" ", 1)
        rate, _ = throughput.timed(runs[name], float(seconds))
        print(json.dumps(rate), flush=True)


def start(tree: str, seed: int) -> subprocess.Popen:
    """A worker importing ``tree``'s packages."""
    env = {**os.environ, "PYTHONPATH": tree}
    process = subprocess.Popen([sys.executable, __file__, "--worker", "--seed", str(seed)], env=env, text=True,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    if process.stdout.readline().strip() != "ready":
        raise SystemExit(f"the worker of {tree} did not start")
    return process


def ask(process: subprocess.Popen, name: str, seconds: float) -> float:
    """One timing of row ``name`` by a worker: its rate per CPU-second."""
    process.stdin.write(f"{name} {seconds}\n")
    process.stdin.flush()
    return json.loads(process.stdout.readline())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", nargs="?", help="the source tree before the change (a checkout's root)")
    parser.add_argument("after", nargs="?", help="the source tree after it")
    parser.add_argument("--seconds", type=float, default=1.0, help="CPU seconds of one timing")
    parser.add_argument("--rounds", type=int, default=8, help="timings of every row in each tree")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.seed)
        return
    if not (args.before and args.after):
        parser.error("give the two source trees, before and after")
    for tree in (args.before, args.after):
        if not (Path(tree) / "uno_env" / "__init__.py").is_file():
            parser.error(f"{tree} is not a source tree of uno-rl (no uno_env/__init__.py in it)")
    if args.seconds <= 0 or args.rounds < 1:
        parser.error("--seconds and --rounds must be positive")

    workers = [start(args.before, args.seed), start(args.after, args.seed)]
    rates = {name: ([], []) for name in ROWS}
    try:
        for round_ in range(args.rounds):
            order = (0, 1) if round_ % 2 == 0 else (1, 0)
            for name in ROWS:
                for side in order:
                    rates[name][side].append(ask(workers[side], name, args.seconds))
    finally:
        for process in workers:
            process.stdin.close()
            process.wait()

    print(f"{args.rounds} rounds x {args.seconds:g} CPU-s per tree and row, seed {args.seed}; before {args.before}, "
          f"after {args.after}")
    print("| row | before (median per CPU-s) | after (median per CPU-s) | after / before: median | range |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, (before, after) in rates.items():
        ratios = [b / a for a, b in zip(before, after, strict=True)]
        print(f"| {name} | {statistics.median(before):,.0f} | {statistics.median(after):,.0f} | "
              f"{statistics.median(ratios):.3f} | {min(ratios):.3f}-{max(ratios):.3f} |")


if __name__ == "__main__":
    main()
