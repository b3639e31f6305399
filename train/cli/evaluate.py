"""Win rates of a player against opponents, or a round-robin tournament (uno-evaluate).

examples:
  uno-evaluate runs/default-20261128-101500 --opponents random rule --pairs 500
  uno-evaluate search-q-none --opponents random rule search-q-particles --json out.json
  uno-evaluate --tournament random rule search-q-none search-q-particles --pairs 200
  uno-evaluate search-q-ensemble --opponents rule --pairs 20 --save-games games/   # then: uno-play --replay FILE
  uno-evaluate search-q-none --pairs 20000 --address HEAD_IP:6379   # deal pairs spread over a Ray cluster
  uno-evaluate search-guided --opponents rule --pairs 2000 --checkpoint eval-guided/   # an hour: resumable
  uno-evaluate search-q-afterstate --opponents search-q-none --sprt 0 20 --pairs 4000   # stop once decided

A player is a policy name (random, rule, search, a shipped agent such as search-q-ensemble), a checkpoint .zip,
a run or model folder, or module:attribute naming a Policy. Each deal pair is one deal played twice with the
seats swapped; every opponent meets the same deals, all derived from --seed, so a result is reproducible and
does not depend on --workers. The 95% intervals are paired t-intervals over deal pairs (Wilson's over games
where t is not trustworthy). Each row also gives the adjusted win rate: every game's score minus the luck of its
draws (and of random's choices) as a value network that sees every card measures it, which has the same
expectation and a tighter interval (--no-control-variates: without). A tournament rates the players by
Bradley-Terry on the Elo scale, relative to random.

With --address the games run as Ray tasks on the cluster's cores, with the same results as on this machine;
--checkpoint and --save-games must then be on storage every machine sees. With --checkpoint DIR every chunk of
deal pairs is kept in DIR as it finishes: after a Ctrl-C, a SIGTERM, a kill or a reboot the same command plays
only the missing pairs and prints what an uninterrupted run would have. Ctrl-C and SIGTERM end the command with
status 130.

--sprt ELO0 ELO1 (or win rates: --sprt 55% 60%) plays deal pairs in batches until a sequential probability ratio
test accepts H0 (the agent's score is the lower bound) or H1 (the upper), on the adjusted pair scores; --pairs is
then the most it plays.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import signal
import sys
from collections.abc import Sequence
from concurrent.futures import Executor
from pathlib import Path
from typing import Any

from train.cli.destinations import file_problem, folder_problem
from train.evaluation import sprt
from train.evaluation.matches import MAX_PAIRS, evaluate, format_table
from train.evaluation.tournament import format_tournament, round_robin
from train.evaluation.value import DEFAULT_PATH, ValueFunction
from train.interrupts import keeping_interrupts, terminate_as_interrupt
from train.output import file_error, printable
from train.specs import checkpoint_path, validate_spec

#: The seed of the deals behind the published win rates (the model cards and the results page).
PUBLISHED_SEED = 12346


def _agent_spec(spec: str) -> str:
    """Accept a training run folder for its best model even before it has one (its final checkpoint)."""
    folder = Path(spec)
    try:
        if folder.is_dir() and checkpoint_path(spec) is None and (folder / "checkpoints").is_dir():
            checkpoints = sorted((folder / "checkpoints").glob("step_*.zip"))
            if checkpoints:
                return str(checkpoints[-1])
    except OSError:  # a folder this user may not enter: validate_spec says so
        pass
    return spec


def _sprt_bounds(values: list[str], alpha: float, beta: float) -> sprt.SprtBounds:
    """The bounds of ``--sprt``: two Elo differences, or two win rates written with ``%``; ``ValueError`` says what
    is wrong."""
    rates = [value.endswith("%") for value in values]
    if any(rates) and not all(rates):
        raise ValueError(f"give both bounds as Elo (--sprt 0 20) or both as win rates (--sprt 55% 60%), got "
                         f"{' '.join(values)}")
    try:
        numbers = [float(value.rstrip("%")) for value in values]
    except ValueError:
        raise ValueError(f"the bounds must be numbers, got {' '.join(values)}") from None
    if all(rates):
        if not numbers[0] < numbers[1]:
            raise ValueError(f"the bounds must be in increasing order, got {' '.join(values)}")
        return sprt.SprtBounds(numbers[0] / 100, numbers[1] / 100, alpha, beta)
    return sprt.SprtBounds.from_elo(numbers[0], numbers[1], alpha, beta)


def main(argv: Sequence[str] | None = None) -> int:
    """``uno-evaluate``: print win rates of a player against opponents, or a round-robin tournament."""
    description, epilog = __doc__.split("\n\n", 1)
    parser = argparse.ArgumentParser(prog="uno-evaluate", description=description, epilog=epilog,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("players", nargs="+", metavar="PLAYER",
                        help="the agent to evaluate (or, with --tournament, every player): a policy name, "
                             "a checkpoint .zip, a model or run folder, or module:attribute")
    parser.add_argument("--opponents", nargs="+", default=["random", "rule"], metavar="PLAYER",
                        help="the agent's opponents (default: random rule)")
    parser.add_argument("--tournament", action="store_true",
                        help="play a round robin between all players and rate them (Bradley-Terry, Elo scale)")
    parser.add_argument("--pairs", type=int, default=500,
                        help="deal pairs per matchup, 2 games each (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0,
                        help=f"the seed every deal derives from (default: %(default)s; the published results use "
                             f"--seed {PUBLISHED_SEED} with --pairs 2000)")
    parser.add_argument("--workers", type=int, default=None, help="worker processes (default: all cores)")
    parser.add_argument("--address", metavar="HOST:PORT",
                        help="play the games as tasks of the Ray cluster at HOST:PORT ('local': start Ray on this "
                             "machine); --workers then defaults to the cluster's CPUs")
    parser.add_argument("--n-particles", type=int, default=200,
                        help="particles for belief='particles' players (default: %(default)s)")
    parser.add_argument("--stochastic", action="store_true", help="checkpoints sample actions instead of argmax")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the results to this JSON file")
    parser.add_argument("--save-games", type=Path, metavar="DIR",
                        help="save every game's record (JSON, replay with uno-play --replay) in DIR; a record never "
                             "replaces a file there")
    parser.add_argument("--no-progress", action="store_true",
                        help="no progress bar (it is drawn on standard error, and only on a terminal)")
    parser.add_argument("--checkpoint", type=Path, metavar="DIR",
                        help="keep the finished deal pairs in DIR; the same command again goes on from them")
    parser.add_argument("--no-control-variates", action="store_true",
                        help="no adjusted win rates (they replay every game through a value network)")
    parser.add_argument("--value-net", type=Path, metavar="FILE", default=DEFAULT_PATH,
                        help="the value network of the control variates (default: the shipped one)")
    parser.add_argument("--sprt", nargs=2, metavar=("ELO0", "ELO1"),
                        help="stop once a sequential test decides between the agent's score at ELO0 and at ELO1 "
                             "(Elo, or win rates such as 55%% 60%%); one opponent; --pairs is the most it plays")
    parser.add_argument("--sprt-alpha", type=float, default=0.05, help="the SPRT's false H1 rate (default: 0.05)")
    parser.add_argument("--sprt-beta", type=float, default=0.05, help="the SPRT's false H0 rate (default: 0.05)")
    parser.add_argument("--sprt-batch", type=int, default=50,
                        help="deal pairs between two looks of the SPRT (default: %(default)s)")
    args = parser.parse_args(argv)
    if args.pairs < 1:
        parser.error(f"--pairs must be at least 1, got {args.pairs}")
    if args.pairs > MAX_PAIRS:
        parser.error(f"--pairs must be at most {MAX_PAIRS}, got {args.pairs}")
    if not 0 <= args.seed < 2**31:
        parser.error(f"--seed must be in 0..{2**31 - 1}, got {args.seed}")
    if args.workers is not None and args.workers < 1:
        parser.error(f"--workers must be at least 1 (leave it out for one per core), got {args.workers}")
    if not 1 <= args.n_particles <= 100_000:  # the bound of a training config's env.n_particles
        parser.error(f"--n-particles must be in 1..100000, got {args.n_particles}")
    # The destinations are checked before the evaluation, which may take hours: its results must not be lost.
    problem = args.json and file_problem(args.json)
    if problem:
        parser.error(f"--json {args.json}: {problem}")
    if args.save_games and args.tournament:
        parser.error(f"--save-games {args.save_games}: saves the games of one agent's evaluation, not of a "
                     "--tournament")
    for option, folder in (("--save-games", args.save_games), ("--checkpoint", args.checkpoint)):
        problem = folder and folder_problem(folder)
        if problem:
            parser.error(f"{option} {folder}: {problem}")
    if not args.tournament and len(args.players) != 1:
        parser.error("give one agent (or --tournament for several players)")
    bounds = None
    if args.sprt:
        if args.tournament or len(args.opponents) != 1:
            parser.error("--sprt tests one agent against one opponent (one --opponents PLAYER, no --tournament)")
        if args.sprt_batch < 1:
            parser.error(f"--sprt-batch must be at least 1, got {args.sprt_batch}")
        if args.save_games:
            parser.error("--save-games saves the games of a fixed-size evaluation, not of an --sprt test")
        try:
            bounds = _sprt_bounds(args.sprt, args.sprt_alpha, args.sprt_beta)
        except ValueError as error:
            parser.error(f"--sprt: {error}")
    value_net = None
    if not args.no_control_variates and not args.tournament:
        try:
            ValueFunction.load(args.value_net)  # checked now, not in the first worker after the games began
        except ValueError as error:
            parser.error(f"--value-net: {error}")
        value_net = args.value_net
    if args.address and importlib.util.find_spec("ray") is None:
        parser.error("--address needs Ray, which is not installed; install the tune extra: pip install 'uno-rl[tune]'")
    named = [("", spec) for spec in args.players]
    if not args.tournament:
        named = [("", _agent_spec(args.players[0]))] + [("--opponents ", spec) for spec in args.opponents]
    for option, spec in named:  # every player checked before any game: a typo is not found after an hour
        problem = validate_spec(spec)
        if problem:
            print(f"uno-evaluate: error: {option}{spec}: {problem}", file=sys.stderr)
            return 2
    executor: Executor | None = None
    previous = signal.signal(signal.SIGTERM, terminate_as_interrupt)  # from here on: a SIGTERM is a Ctrl-C (130)
    try:
        workers = args.workers
        if args.address:
            from train.evaluation.distributed import RayExecutor  # Ray only when asked for (the tune extra)

            executor = RayExecutor(None if args.address == "local" else args.address)
            workers = workers or executor.cpus
        with keeping_interrupts():  # one that lands in a finalizer (tqdm's) is not lost
            if args.tournament:
                result = round_robin(args.players, args.pairs, args.seed, workers, args.n_particles,
                                     not args.stochastic, progress=not args.no_progress, executor=executor,
                                     checkpoint=args.checkpoint)
                print(format_tournament(result))
                payload: Any = result.to_dict()
            elif bounds is not None:
                outcome, played = sprt.run_sprt(_agent_spec(args.players[0]), args.opponents[0], bounds, args.pairs,
                                                args.seed, args.sprt_batch, workers, args.n_particles,
                                                not args.stochastic, executor, not args.no_progress, args.checkpoint,
                                                value_net)
                print(sprt.describe(outcome, bounds, value_net is not None))
                print()
                print(format_table([played]))
                payload = [{**played.to_dict(), "sprt": sprt.to_dict(outcome, bounds, value_net is not None)}]
            else:
                results = evaluate(_agent_spec(args.players[0]), args.opponents, args.pairs, args.seed, workers,
                                   args.n_particles, not args.stochastic, executor, progress=not args.no_progress,
                                   save_games=args.save_games, checkpoint=args.checkpoint, control_variates=value_net)
                print(format_table(results))
                payload = [r.to_dict() for r in results]
    except (ValueError, FileNotFoundError) as error:
        print(f"uno-evaluate: error: {printable(str(error))}", file=sys.stderr)  # it may quote a file: one safe line
        return 2
    except OSError as error:  # a full disk, a folder it may not write: --checkpoint, --save-games, a player's file
        problem = file_error(error)
        if problem is None:
            raise
        print(f"uno-evaluate: error: {problem}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        kept = (f"the finished deal pairs are kept in {args.checkpoint}: the same command goes on from them"
                if args.checkpoint else "nothing was kept (--checkpoint DIR keeps the finished deal pairs)")
        print(f"uno-evaluate: interrupted; {kept}", file=sys.stderr)
        return 130
    finally:
        if executor is not None:
            executor.shutdown(cancel_futures=True)
        if signal.getsignal(signal.SIGTERM) is terminate_as_interrupt:  # after a SIGTERM: ignored until the exit
            signal.signal(signal.SIGTERM, previous)
    if args.json:
        try:  # written in place, not renamed into place: --json may name a device such as /dev/stdout
            args.json.write_text(json.dumps(payload, indent=1) + "\n")
        except OSError as error:
            print(f"uno-evaluate: error: --json {printable(str(args.json))}: cannot write it: "
                  f"{error.strerror or error} (the results are printed above)", file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
