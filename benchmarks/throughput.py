"""Throughput of the rules engine and of the environment, on one core.

    .venv/bin/python benchmarks/throughput.py            # about a minute
    .venv/bin/python benchmarks/throughput.py --games 500 --repeats 1   # a quick look

* engine: random self-play on :class:`uno_env.game.Game` (legal_actions + step), actions per second;
* env: ``UnoEnv`` steps per second, the agent choosing uniformly among ``info["action_mask"]``, for
  the random and the rule-based embedded opponents (an env step includes the opponent's moves and
  the encoding of the observation and ``info``).

The best of ``--repeats`` runs is reported, since slower runs measure other load on the machine.
Results go to stdout as a Markdown table (copied into docs/BENCHMARKS.md).
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np

from uno_env import UnoEnv
from uno_env.game import Game


def engine_actions_per_second(games: int, seed: int) -> tuple[float, float]:
    """Random self-play on the engine: (actions per second, mean actions per game)."""
    rng = np.random.default_rng(seed)
    uniforms = rng.random(1 << 20)  # a pre-drawn buffer keeps the driver's cost out of the figure
    k = 0
    actions = 0
    start = time.perf_counter()
    for g in range(games):
        game = Game.deal(rng, g & 1)
        while not game.done:
            legal = game.legal_actions()
            game.step(legal[int(uniforms[k] * len(legal))])
            k = (k + 1) & ((1 << 20) - 1)
            actions += 1
    return actions / (time.perf_counter() - start), actions / games


def env_steps_per_second(opponent: str, games: int, seed: int, belief: str = "none") -> float:
    """``UnoEnv`` steps per second with a uniformly random agent."""
    env = UnoEnv(opponent=opponent, belief=belief)
    rng = np.random.default_rng(seed)
    # One game first, not counted: a compiled opponent (the rule player) loads its kernel on its first move,
    # a one-off cost per process reported apart (docs/BENCHMARKS.md, "Compiled rules core").
    _, info = env.reset(seed=seed + games)  # a seed the timed games do not use
    terminated = False
    while not terminated:
        _, _, terminated, _, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))
    steps = 0
    start = time.perf_counter()
    for g in range(games):
        _, info = env.reset(seed=seed + g)
        terminated = False
        while not terminated:
            legal = np.flatnonzero(info["action_mask"])
            _, _, terminated, _, info = env.step(legal[rng.integers(len(legal))])
            steps += 1
    return steps / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=3000, help="games per measurement")
    parser.add_argument("--repeats", type=int, default=3, help="runs per measurement; the best is reported")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.games < 1 or args.repeats < 1:
        parser.error("--games and --repeats must be positive")

    print(f"machine: {platform.machine()}, {platform.processor() or 'cpu'}, Python {platform.python_version()}")
    print("| measurement | per second | |")
    print("| --- | ---: | --- |")
    best = max((engine_actions_per_second(args.games, args.seed + r) for r in range(args.repeats)),
               key=lambda pair: pair[0])
    print(f"| engine, random self-play | {best[0]:,.0f} actions | {best[1]:.1f} actions per game |")
    for opponent in ("random", "rule"):
        rate = max(env_steps_per_second(opponent, args.games, args.seed + r) for r in range(args.repeats))
        print(f"| env, random agent vs `{opponent}` opponent | {rate:,.0f} steps | |")


if __name__ == "__main__":
    main()
