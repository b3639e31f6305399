"""Cost of the belief trackers: microseconds per belief update (per view) and per env step, on one core.

    .venv/bin/python benchmarks/belief_cost.py                        # several minutes (N = 10000 is slow)
    .venv/bin/python benchmarks/belief_cost.py --games 10 --particles 100 1000 --repeats 1   # a quick look

* **per view**: the views of seat 0 recorded from ``--games`` games (uniformly random agent against the
  opponent) are fed to a fresh tracker as the env feeds it: ``update(view)``, then ``features()``. Reported:
  microseconds per view for each, and per game. The views are recorded once, so every tracker sees the same ones.
* **per env step**: ``UnoEnv(belief=..., n_particles=N)`` stepped by a uniformly random agent (among
  ``info["action_mask"]``) on the same seeds; the belief's share of a step is the step time minus the step
  time with ``belief="none"``. The 100-microsecond budget of the issue is for this share at N = 1000.

The env's particle filter uses the plain likelihood (it does not model its opponent). ``--aware`` adds per-view
rows for the policy-aware filter (:mod:`uno_env.belief.models`), built as ``make_belief(..., opponent_policy=...)``
with the opponent's policy, and a table of what that filter did per game (resamplings, moves proposed and
accepted, rescues, recoveries, fallbacks). ``--learned`` adds per-view rows for the filter that learns its opponent's
model instead (``make_belief(..., opponent_model="learned")``, :mod:`uno_env.belief.learned`), which the env cannot
use: its cost per view is the whole of what it would add to a step. Each figure is the best of ``--repeats`` runs
(slower runs measure other load on the machine). Results go to stdout as Markdown tables (docs/benchmarks.md).

``--clock cpu`` times with the CPU time of the benchmark's thread (``time.thread_time``) instead of the wall
clock: on a machine shared with other busy processes the wall times of these short measurements swing by a
factor of two from run to run, the CPU times much less (cache effects of the other processes remain).

``--pairs K`` adds the steadier figure of a shared machine: ``counting`` and ``particles`` (the first ``--particles``)
stepped in turn in this one process, K pairs of ``--games`` games each; reported: the median of the K ratios
particles / counting of µs per env step, their range, and the smallest step times (docs/benchmarks.md).

``--cache`` also counts how often a public position of the tracked seat repeats (the particle cache of the
design note keys particles by position; a cache only pays if positions recur).
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from collections.abc import Callable

import numpy as np

from uno_env import UnoEnv
from uno_env.belief import make_belief
from uno_env.policy import make_policy
from uno_env.seat import Seat, start_game
from uno_env.view import PublicView


def record_views(rival: str, games: int, seed: int) -> list[list[PublicView]]:
    """Per game, seat 0's view after the deal and at each of its decisions and the end (random seat 0)."""
    out = []
    for g in range(games):
        seats = [Seat(0, make_policy("random")), Seat(1, make_policy(rival))]
        game = start_game(seats, seed + g, g % 2)
        views = [game.observe(0)]
        while not game.done:
            seat = seats[game.current]
            view = seat.observe(game)
            if game.current == 0:
                views.append(view)
            game.step(seat.act(game, view))
        views.append(game.observe(0))
        out.append(views)
    return out


#: The clocks of ``--clock``: the wall clock, or the CPU time of this thread.
CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.thread_time}


def per_view(make: Callable[[], object], games: list[list[PublicView]],
             clock: Callable[[], float] = time.perf_counter) -> tuple[float, float]:
    """Microseconds per view of ``update`` and of ``features`` for fresh trackers fed the recorded games."""
    update = features = 0.0
    views = 0
    for game in games:
        tracker = make()
        tracker.reset(game[0])
        for view in game[1:]:
            start = clock()
            tracker.update(view)
            middle = clock()
            tracker.features()
            update += middle - start
            features += clock() - middle
            views += 1
    return 1e6 * update / views, 1e6 * features / views


def per_step(rival: str, belief: str, n_particles: int, games: int, seed: int,
             clock: Callable[[], float] = time.perf_counter) -> float:
    """Microseconds per ``UnoEnv`` step with a uniformly random agent."""
    env = UnoEnv(opponent=rival, belief=belief, n_particles=n_particles)
    rng = np.random.default_rng(seed)
    steps, elapsed = 0, 0.0
    for g in range(games):
        _, info = env.reset(seed=seed + g)
        terminated = False
        start = clock()
        while not terminated:
            legal = np.flatnonzero(info["action_mask"])
            _, _, terminated, _, info = env.step(legal[rng.integers(len(legal))])
            steps += 1
        elapsed += clock() - start
    return 1e6 * elapsed / steps


def paired_ratios(rival: str, n_particles: int, games: int, seed: int, pairs: int,
                  clock: Callable[[], float]) -> tuple[list[float], list[float], list[float]]:
    """(ratios, counting, particles): µs per env step of ``counting`` and ``particles``, measured in turn ``pairs``
    times in this process (so both see the same load), and the ratio of each pair."""
    counting, particles = [], []
    for _ in range(pairs):
        counting.append(per_step(rival, "counting", 1, games, seed, clock))
        particles.append(per_step(rival, "particles", n_particles, games, seed, clock))
    return [p / c for p, c in zip(particles, counting, strict=True)], counting, particles


def aware_stats(rival: str, games: list[list[PublicView]], n_particles: int, seed: int) -> dict[str, float]:
    """What the policy-aware filter did over the recorded games: its counters summed, per game."""
    totals: dict[str, float] = {}
    for game in games:
        tracker = make_belief("particles", n_particles=n_particles, rng=np.random.default_rng(seed),
                              opponent_policy=make_policy(rival))
        tracker.reset(game[0])
        for view in game[1:]:
            tracker.update(view)
        counts = {**tracker.stats(), "recoveries": tracker.recoveries, "fallbacks": tracker.fallbacks}
        for key, value in counts.items():
            totals[key] = totals.get(key, 0) + value
    return {key: value / len(games) for key, value in totals.items()}


def position_repeats(games: int, seed: int) -> tuple[int, int]:
    """(decisions whose public position of seat 0 occurred before, in any game; decisions), random vs random."""
    seen: set[tuple] = set()
    repeats = decisions = 0
    for views in record_views("random", games, seed):
        for view in views[1:-1]:
            key = (tuple(view.hand), tuple(view.discard), view.top, view.active_colour, view.opponent_hand_size,
                   view.deck_size, view.pending_draw)
            repeats += key in seen
            seen.add(key)
            decisions += 1
    return repeats, decisions


#: The policy-aware filter's counters reported with ``--aware`` (TrajectoryBelief.stats, recoveries, fallbacks).
COUNTERS = ("resamples", "proposed", "rescues", "recoveries", "fallbacks")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=20, help="games per measurement (default 20)")
    parser.add_argument("--repeats", type=int, default=2, help="runs per measurement; the best is reported")
    parser.add_argument("--particles", type=int, nargs="+", default=[100, 1000, 10000])
    parser.add_argument("--opponents", nargs="+", default=["random", "rule"], choices=["random", "rule"])
    parser.add_argument("--aware", action="store_true", help="also time the policy-aware filter per view")
    parser.add_argument("--learned", action="store_true", help="also time the learned-model filter per view")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                        help="wall clock (default) or the CPU time of the thread (steadier on a shared machine)")
    parser.add_argument("--pairs", type=int, default=0, metavar="K",
                        help="also step counting and particles in turn K times in one process: median ratio (0: skip)")
    parser.add_argument("--cache", type=int, default=0, metavar="GAMES",
                        help="also count repeated positions over this many games (0: skip)")
    args = parser.parse_args(argv)
    clock = CLOCKS[args.clock]
    if args.games < 1 or args.repeats < 1 or min(args.particles) < 1 or args.cache < 0 or args.pairs < 0:
        parser.error("--games, --repeats and --particles must be positive, --cache and --pairs not negative")

    print(f"command: python benchmarks/belief_cost.py {' '.join(sys.argv[1:] if argv is None else argv)}")
    print(f"machine: {platform.machine()}, Python {platform.python_version()}, numpy {np.__version__}")
    kinds = [("none", 1), ("counting", 1)] + [("particles", n) for n in args.particles]

    counters: list[str] = []
    print("\n| opponent | belief | update µs/view | features µs/view | views/game |")
    print("| --- | --- | ---: | ---: | ---: |")
    for rival in args.opponents:
        games = record_views(rival, args.games, args.seed)
        views = sum(len(game) - 1 for game in games) / len(games)
        trackers = [(kind, n, "") for kind, n in kinds[1:]]
        trackers += [("particles", n, "policy-aware") for n in args.particles] if args.aware else []
        trackers += [("particles", n, "learned") for n in args.particles] if args.learned else []
        for kind, n, model in trackers:
            def make(kind: str = kind, n: int = n, model: str = model, rival: str = rival) -> object:
                return make_belief(kind, n_particles=n, rng=np.random.default_rng(args.seed),
                                   opponent_policy=make_policy(rival) if model == "policy-aware" else None,
                                   opponent_model="learned" if model == "learned" else "told")
            update, features = min((per_view(make, games, clock) for _ in range(args.repeats)), key=sum)
            label = kind if kind == "counting" else f"particles N={n}" + (f", {model}" if model else "")
            print(f"| {rival} | {label} | {update:,.0f} | {features:,.0f} | {views:.1f} |", flush=True)
        if args.aware:
            for n in args.particles:
                stats = aware_stats(rival, games, n, args.seed)
                counters.append(f"| {rival} | {n} | " + " | ".join(f"{stats[k]:,.1f}" for k in COUNTERS)
                                + f" | {stats['accepted'] / max(stats['proposed'], 1):.3f} |")
    if counters:
        print("\nPolicy-aware filter, per game: " + ", ".join(COUNTERS) + ", share of moves accepted\n")
        print("| opponent | N | " + " | ".join(COUNTERS) + " | accepted |")
        print("| --- | ---: |" + " ---: |" * (len(COUNTERS) + 1))
        print("\n".join(counters))

    print("\n| opponent | belief | µs per env step | belief µs per step | within 100 µs |")
    print("| --- | --- | ---: | ---: | --- |")
    for rival in args.opponents:
        base = None
        for kind, n in kinds:
            cost = min(per_step(rival, kind, n, args.games, args.seed, clock) for _ in range(args.repeats))
            base = cost if base is None else base
            label = kind if kind != "particles" else f"particles N={n}"
            share = f"{cost - base:,.0f}" if kind != "none" else ""
            verdict = "" if kind == "none" else ("yes" if cost - base < 100 else "no")
            print(f"| {rival} | {label} | {cost:,.0f} | {share} | {verdict} |", flush=True)

    if args.pairs:
        n = args.particles[0]
        print(f"\nIn turn in one process, {args.pairs} pairs of {args.games} games: particles N={n} / counting, "
              "µs per env step\n")
        print("| opponent | median ratio | range | counting min | particles min |")
        print("| --- | ---: | --- | ---: | ---: |")
        for rival in args.opponents:
            per_step(rival, "particles", n, 1, args.seed + args.games, clock)  # the kernels loaded before timing
            ratios, counting, particles = paired_ratios(rival, n, args.games, args.seed, args.pairs, clock)
            print(f"| {rival} | {statistics.median(ratios):.2f}x | {min(ratios):.2f}-{max(ratios):.2f} | "
                  f"{min(counting):,.1f} | {min(particles):,.1f} |", flush=True)

    if args.cache:
        repeats, decisions = position_repeats(args.cache, args.seed)
        print(f"\npositions seen before: {repeats} of {decisions} decisions ({repeats / decisions:.2%}), "
              f"{args.cache} random games")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
