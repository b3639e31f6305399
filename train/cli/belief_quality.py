"""``python -m train.cli.belief_quality``: how well each belief tracker predicts the opponent's hidden hand.

What is measured, and how: :mod:`train.evaluation.belief_quality`.
"""

from __future__ import annotations

import argparse
import platform
import sys
from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure

from train.evaluation.belief_quality import QualityResult, measure_exact, measure_quality, opponents_table
from uno_env.belief import MAX_PARTICLES
from uno_env.belief.filters import check_particles
from uno_env.belief.models import opponent_model
from uno_env.policy import make_policy, policy_names
from uno_env.styles import HELD_OUT_STYLES


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def _particles(text: str) -> int:
    """A filter's particle count, refused here by name rather than as a traceback from the filter."""
    value = _positive(text)
    try:
        return check_particles(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"at most {MAX_PARTICLES:,} particles, got {value:,}") from None


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m train.cli.belief_quality``: print the quality tables (Markdown) for the given settings."""
    parser = argparse.ArgumentParser(prog="python -m train.cli.belief_quality", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=_positive, default=200, help="games to play (default 200)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tracked", default="random", help="policy of the tracked seat (default random)")
    parser.add_argument("--opponent", nargs="+", default=["random"],
                        help="policy of the opponent (default random); with several, one row of log-losses each and "
                             "the differences with the plain filter")
    parser.add_argument("--particles", type=_particles, nargs="*", default=[100, 1000],
                        help="particle counts of the plain-likelihood filters (default 100 1000)")
    parser.add_argument("--aware", type=_particles, nargs="*", default=[1000],
                        help="particle counts of the policy-aware filters, if the opponent has a model")
    parser.add_argument("--plain", type=_particles, nargs="*", default=[],
                        help="particle counts of non-lazy filters (lazy=False); none by default")
    parser.add_argument("--trajectory", type=_particles, nargs="*", default=[],
                        help="particle counts of trajectory filters with the plain likelihood; none by default")
    parser.add_argument("--learned", type=_particles, nargs="*", default=[],
                        help="particle counts of filters with the learned opponent model; none by default")
    parser.add_argument("--exact", action="store_true", help="compare with exact enumeration on small positions")
    parser.add_argument("--hands", type=_positive, default=5, help="--exact: cards per hand at the start")
    parser.add_argument("--deck", type=_positive, default=12, help="--exact: cards in the deck at the start")
    parser.add_argument("--max-support", type=_positive, default=50_000,
                        help="--exact: the most possible hands enumerated (memory grows with it)")
    parser.add_argument("--figure", default=None, help="played games: save the log-loss by phase as this PNG")
    parser.add_argument("--workers", type=_positive, default=1, help="processes (results do not depend on it)")
    parser.add_argument("--match", type=_positive, default=1,
                        help="played games: games in a row against the same opponent, the learned opponent model "
                             "carrying what it learned from one to the next (default 1: each game alone)")
    args = parser.parse_args(argv)
    policies = {}
    for role, name in [("tracked", args.tracked)] + [("opponent", name) for name in args.opponent]:
        try:
            policies[name] = make_policy(name)
        except ValueError:
            parser.error(f"--{role} {name!r}: unknown policy; known: {', '.join(policy_names())}")
    several = len(args.opponent) > 1
    if several and (args.exact or args.figure):
        parser.error("several --opponent values make one table of played games: not with --exact or --figure")
    if several and not args.particles:
        parser.error("several --opponent values compare every belief with the plain filter: give --particles")
    unmodelled = [name for name in args.opponent if opponent_model(policies[name]) is None]
    if several and args.aware and unmodelled:
        parser.error(f"--opponent {unmodelled[0]!r} has no model to tell a policy-aware filter, so its row would lack "
                     "that column: leave it out, or drop --aware")
    if args.exact and args.match > 1:
        parser.error("--match is for played games, not --exact's positions")
    if args.exact and 2 * args.hands + args.deck > 99:  # 9 discarded cards always include a coloured top card
        parser.error(f"--hands {args.hands} and --deck {args.deck} leave fewer than 9 cards for the discard pile")

    print(f"command: python -m train.cli.belief_quality {' '.join(sys.argv[1:] if argv is None else argv)}")
    print(f"machine: {platform.machine()}, Python {platform.python_version()}, numpy {np.__version__}")
    common = {"games": args.games, "seed": args.seed, "tracked": args.tracked, "opponent": args.opponent[0],
              "particles": args.particles, "aware": args.aware, "plain": args.plain,
              "trajectory": args.trajectory, "learned": args.learned,
              "workers": args.workers}
    if several:
        results = []
        for opponent in args.opponent:
            results.append(measure_quality(match=args.match, **{**common, "opponent": opponent}))
            print(f"{opponent}: {results[-1].counts.sum()} decisions scored; {results[-1].seconds:.0f} s", flush=True)
        print("\nLog-loss (nats per card type):\n")
        print(opponents_table(results, dict.fromkeys(HELD_OUT_STYLES, "held out")))
        return 0
    if args.exact:
        result = measure_exact(hand_size=args.hands, deck_size=args.deck, max_support=args.max_support, **common)
        used = result.counts > 0
        if not used.any():
            print(f"no position had at most --max-support {args.max_support} possible hands: nothing to compare",
                  file=sys.stderr)
            return 1
        print(f"{used.sum()} of {args.games} positions enumerable, {result.counts.sum()} decisions scored "
              f"(mean {result.counts[used].mean():.1f} per game); {result.seconds:.0f} s")
    else:
        result = measure_quality(match=args.match, **common)
        print(f"{args.games} games, {result.counts.sum()} decisions of the tracked seat scored "
              f"(mean {result.counts.mean():.1f} per game); {result.seconds:.0f} s")
    print(result.table())
    if not args.exact:
        print("\nLog-loss (nats per card type) by game phase:\n")
        print(result.phase_table())
        if args.figure:
            plot_phases(result, args.figure)
            print(f"\nfigure: {args.figure}")
    return 0


def plot_phases(result: QualityResult, path: str) -> None:
    """A bar chart of each belief's log-loss by the opponent's hand size, saved to ``path`` (PNG)."""
    phases = {k: v for k, v in result.phase_log_loss().items() if k.startswith("opponent")}
    labels = [k.removeprefix("opponent holds ") for k in phases]
    width = 0.8 / len(result.names)
    fig = Figure(figsize=(7, 3.5))
    ax = fig.subplots()
    for b, name in enumerate(result.names):
        ax.bar(np.arange(len(labels)) + b * width, [v[b] for v in phases.values()], width, label=name)
    ax.set_xticks(np.arange(len(labels)) + 0.4 - width / 2, labels)
    ax.set_xlabel("cards in the opponent's hand")
    ax.set_ylabel("log-loss (nats per card type)")
    meta = result.meta
    ax.set_title(f"{meta['tracked']} vs {meta['opponent']}, {meta['games']} games, seed {meta['seed']}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


if __name__ == "__main__":
    raise SystemExit(main())
