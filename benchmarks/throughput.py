"""Throughput of the rules engine and of the environments, side by side with RLCard's UNO env, on one core.

    .venv/bin/python benchmarks/throughput.py            # about three and a half minutes
    .venv/bin/python benchmarks/throughput.py --seconds 1 --repeats 1   # a quick look
    .venv/bin/python benchmarks/throughput.py --compile   # also the one-off compile cost, cold and cached
    .venv/bin/python benchmarks/throughput.py --single-only   # RLCard and the single env only (about 45 s)

* engine: random self-play on :class:`uno_env.game.Game` (legal_actions + step), actions per second;
* env: ``UnoEnv`` steps per CPU-second, the agent choosing uniformly among ``info["action_mask"]``, for the
  random and the rule-based embedded opponents (an env step includes the opponent's moves and the encoding of
  the observation and ``info``);
* vector env: :class:`uno_env.vector.UnoVectorEnv` with N = ``--num-envs`` games, agent steps (summed over the
  games) per CPU-second, the agents choosing uniformly among the masks (one numpy draw per batch);
* RLCard (``pip install "uno-rl[bench]"``): ``rlcard.make("uno")``'s ``env.step`` calls per CPU-second, random
  legal actions for both players. Every RLCard step is a decision with an observation; the "per CPU-second"
  column of our envs counts only the agent's steps (the opponent's moves inside a step are not counted), which
  favours RLCard. The "decisions" columns count as RLCard does: for the single env, the agent's steps plus the
  opponent's decisions inside them (its plays and draws, read from ``info["events"]`` in the timed loop, so the
  counting is paid for inside the measurement); for the engine, every action. The vector env's opponents are
  not counted (blank).

All measurements run in turn, ``--repeats`` rounds of each, so drifting load on a shared machine hits them alike;
the best round of each is reported (slower rounds measure other load). The ratios to RLCard are paired: in every
round RLCard is timed again right before each of our rows, and a row's ratio is the median over the rounds of its
rate over that RLCard timing. (A ratio of two best rounds, RLCard's measured minutes apart from the row, moved by
more than 10% between runs on a shared machine: docs/benchmarks.md.)
Results go to stdout as a Markdown table (copied into docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

import numpy as np

from uno_env import UnoEnv
from uno_env.game import Game
from uno_env.vector import UnoVectorEnv

_COMPILE_PROBE = ("import time; t = time.perf_counter(); from uno_env.vector import UnoVectorEnv; "
                  "e = UnoVectorEnv(4, opponent='rule', belief='counting'); _, i = e.reset(seed=0); "
                  "e.step(i['action_mask'].argmax(1)); print(time.perf_counter() - t)")


#: What a measurement's ``run`` returns: (steps, decisions) it made; decisions ``None`` where not counted.
Counts = tuple[int, int | None]


def timed(run: Callable[[], Counts], seconds: float) -> tuple[float, float | None]:
    """Call ``run`` until ``seconds`` of CPU time; (steps, decisions) per CPU-second (decisions ``None`` if not
    counted)."""
    steps, decisions = 0, 0
    start = time.process_time()
    while time.process_time() - start < seconds:
        ran, decided = run()
        steps += ran
        decisions = None if decided is None else decisions + decided
    elapsed = time.process_time() - start
    return steps / elapsed, None if decisions is None else decisions / elapsed


def engine(seed: int) -> Callable[[], Counts]:
    """Random self-play on the engine, one game per call."""
    rng = np.random.default_rng(seed)
    uniforms = rng.random(1 << 20)  # a pre-drawn buffer keeps the driver's cost out of the figure
    state = {"k": 0, "games": 0}

    def run() -> int:
        game = Game.deal(rng, state["games"] & 1)
        state["games"] += 1
        actions = 0
        k = state["k"]
        while not game.done:
            legal = game.legal_actions()
            game.step(legal[int(uniforms[k] * len(legal))])
            k = (k + 1) & ((1 << 20) - 1)
            actions += 1
        state["k"] = k
        return actions, actions

    return run


def single_env(opponent: str, belief: str, seed: int) -> Callable[[], Counts]:
    """``UnoEnv`` with a uniformly random agent, one game per call: (agent steps, agent steps + the opponent's
    decisions inside them). Each opponent decision is one event of ``info["events"]`` (a play or a draw; a draw
    that cannot be supplied ends the game without an event, so those rare last decisions go uncounted)."""
    env = UnoEnv(opponent=opponent, belief=belief)
    rng = np.random.default_rng(seed)
    games = iter(range(seed, seed + 10**9))

    def run() -> int:
        _, info = env.reset(seed=next(games))
        steps = 0
        opponent = sum(event.get("player") == "opponent" for event in info["events"])  # the opponent moved first
        terminated = False
        while not terminated:
            legal = np.flatnonzero(info["action_mask"])
            _, _, terminated, _, info = env.step(legal[rng.integers(len(legal))])
            steps += 1
            opponent += sum(event.get("player") == "opponent" for event in info["events"])
        return steps, steps + opponent

    return run


def vector_env(opponent: str, belief: str, num_envs: int, seed: int) -> Callable[[], Counts]:
    """``UnoVectorEnv`` with uniformly random agents, 50 batched steps per call."""
    env = UnoVectorEnv(num_envs, opponent=opponent, belief=belief)
    rng = np.random.default_rng(seed)
    uniforms = rng.random((64, num_envs, 61), dtype=np.float32)  # pre-drawn; the pick is one multiply + argmax
    _, info = env.reset(seed=seed)
    state = {"info": info, "k": 0}

    def run() -> int:
        info, k = state["info"], state["k"]
        for _ in range(50):
            _, _, _, _, info = env.step((uniforms[k & 63] * info["action_mask"]).argmax(axis=1))
            k += 1
        state["info"], state["k"] = info, k
        return 50 * num_envs, None

    return run


def rlcard_env(seed: int) -> Callable[[], Counts]:
    """RLCard's UNO env, random legal actions for both players, one game per call."""
    import rlcard  # the bench extra: only this measurement needs it

    env = rlcard.make("uno", config={"seed": seed})
    rng = np.random.default_rng(seed)

    def run() -> int:
        state, _ = env.reset()
        steps = 0
        while not env.is_over():
            legal = list(state["legal_actions"])
            state, _ = env.step(legal[rng.integers(len(legal))])
            steps += 1
        return steps, steps

    return run


def compile_seconds() -> tuple[float, float]:
    """Wall seconds from import to the first vector step in a fresh process: cold cache, then cached."""
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        return tuple(float(subprocess.run([sys.executable, "-c", _COMPILE_PROBE], env=env, check=True,
                                          capture_output=True, text=True).stdout) for _ in range(2))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="CPU seconds per measurement and round")
    parser.add_argument("--repeats", type=int, default=3, help="rounds of every measurement; the best is reported")
    parser.add_argument("--num-envs", type=int, default=256, help="N of the vector env")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-rlcard", action="store_true", help="skip RLCard (not installed)")
    parser.add_argument("--no-vector", action="store_true", help="skip the vector env rows")
    parser.add_argument("--single-only", action="store_true",
                        help="only RLCard and the single env vs `random` and `rule` (belief none)")
    parser.add_argument("--compile", action="store_true", help="also time the kernels' compilation, cold and cached")
    args = parser.parse_args()
    if args.seconds <= 0 or args.repeats < 1 or args.num_envs < 1:
        parser.error("--seconds, --repeats and --num-envs must be positive")

    if args.single_only and args.no_rlcard:
        parser.error("--single-only compares with RLCard; drop --no-rlcard")
    rows: dict[str, Callable[[], Counts]] = {}
    if not args.single_only:
        rows["engine, random self-play (actions)"] = engine(args.seed)
    reference_name = "RLCard `uno`, random players (decisions)"
    if not args.no_rlcard:
        rows[reference_name] = rlcard_env(args.seed)
    for opponent in ("random", "rule"):
        rows[f"env vs `{opponent}`, belief none (agent steps)"] = single_env(opponent, "none", args.seed)
    if not args.single_only:
        rows["env vs `rule`, belief counting (agent steps)"] = single_env("rule", "counting", args.seed)
    if not (args.single_only or args.no_vector):
        for opponent in ("random", "rule"):
            for belief in ("none", "counting"):
                rows[f"vector env N={args.num_envs} vs `{opponent}`, belief {belief} (agent steps)"] = \
                    vector_env(opponent, belief, args.num_envs, args.seed)
    for run in rows.values():  # warm-up, not counted: kernels load (or compile) on their first call
        run()
    best = {name: (0.0, None) for name in rows}
    ratios: dict[str, list[tuple[float, float | None]]] = {name: [] for name in rows}  # (steps, decisions) / RLCard
    compared = [name for name in rows if reference_name in rows and name != reference_name
                and not name.startswith("engine")]
    for _ in range(args.repeats):
        for name, run in rows.items():  # a row's best round is its best by steps; its decisions are that round's
            reference = timed(rows[reference_name], args.seconds)[0] if name in compared else None
            rates = timed(run, args.seconds)
            best[name] = max(best[name], rates, key=lambda rates: rates[0])
            if reference is not None:
                best[reference_name] = max(best[reference_name], (reference, reference), key=lambda r: r[0])
                ratios[name].append((rates[0] / reference, None if rates[1] is None else rates[1] / reference))

    print(f"machine: {platform.machine()}, {platform.processor() or 'cpu'}, {os.cpu_count()} cpus, "
          f"Python {platform.python_version()}; best of {args.repeats} x {args.seconds:g} CPU-s, seed {args.seed}")
    print("| measurement | per CPU-second | x RLCard (paired median) | decisions per CPU-second "
          "| decisions x RLCard (paired median) |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, (rate, decisions) in best.items():
        paired = ratios[name]
        ratio = f"{statistics.median(r for r, _ in paired):.2f}" if paired else ""
        counted = f"{decisions:,.0f}" if decisions is not None else ""
        decision_ratio = f"{statistics.median(d for _, d in paired):.2f}" if paired and decisions is not None else ""
        print(f"| {name} | {rate:,.0f} | {ratio} | {counted} | {decision_ratio} |")
    if args.compile:
        cold, cached = compile_seconds()
        print(f"\nfirst vector step in a fresh process (import, compile or load, reset, step): "
              f"{cold:.1f} s with an empty cache, {cached:.1f} s with the cache the first process wrote")


if __name__ == "__main__":
    main()
