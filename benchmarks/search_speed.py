"""Simulations per second of the search player, on one core.

    .venv/bin/python benchmarks/search_speed.py --games 4 --simulations 200

The search player (``SearchPolicy``, card-counting belief unless ``--belief`` says otherwise, rule-based rollouts
unless ``--rollout`` does) plays ``--games`` games against the rule-based player, seats alternating, every searched
decision running exactly ``--simulations`` simulations. Reported: simulations per second of search time
(belief update included, forced moves excluded) and the mean time of a searched decision. A warm-up game
before the timed ones keeps one-off costs (loading compiled kernels) out of the figure.
"""

from __future__ import annotations

import argparse
import platform

from agents.search import SearchPolicy
from uno_env.match import play_game
from uno_env.opponents import RulePolicy


def simulations_per_second(games: int, simulations: int, rollout: str, seed: int,
                           belief: str = "counting") -> tuple[float, float]:
    """(simulations per second, milliseconds per searched decision) over ``games`` games against ``rule``."""
    rival = RulePolicy()
    # One short game first, not counted: it loads (or compiles) the rollout kernels, whose one-off cost is
    # reported in docs/benchmarks.md apart from the speed.
    warm_up = SearchPolicy(simulations=10, belief="counting", rollout=rollout)
    play_game((warm_up, rival), seed + games)  # a seed the timed games do not use
    searcher = SearchPolicy(simulations=simulations, belief=belief, rollout=rollout)
    for g in range(games):
        seats = (searcher, rival) if g % 2 == 0 else (rival, searcher)
        play_game(seats, seed + g, g % 2)
    return searcher.searches * simulations / searcher.search_seconds, 1000 * searcher.search_seconds / searcher.searches


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=4)
    parser.add_argument("--simulations", type=int, default=200, help="simulations per searched decision")
    parser.add_argument("--rollout", default="rule", choices=["rule", "random"])
    parser.add_argument("--belief", default="counting", choices=["counting", "particles"],
                        help="the belief the worlds are drawn from (particles: the search player's default)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rate, ms = simulations_per_second(args.games, args.simulations, args.rollout, args.seed, args.belief)
    print(f"machine: {platform.machine()}, Python {platform.python_version()}")
    print(f"{args.belief} belief, {args.rollout} rollouts, {args.simulations} simulations/move: "
          f"{rate:,.0f} simulations/s, "
          f"{ms:.1f} ms/move")


if __name__ == "__main__":
    main()
