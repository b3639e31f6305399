"""What the control variates and the sequential test save: interval widths at equal pairs, pairs to a decision.

    python benchmarks/control_variates.py widths search-q-afterstate --opponents rule random --pairs 2000 \
        --seed 22001 --workers 2 --json widths.json
    python benchmarks/control_variates.py sprt search-q-none --opponents rule --sprt 0 30 --pairs 4000 \
        --seed 22100 --sprt-seeds 22101 22102 22103 22104 22105 --workers 2 --json sprt.json
    python benchmarks/control_variates.py ceiling search-q-afterstate --opponents rule --pairs 400 --shuffles 32 \
        --seed 22411 --workers 2
    python benchmarks/control_variates.py cost search-q-afterstate --opponents rule --pairs 200 --seed 5

``widths`` evaluates the agent with adjusted scores (:mod:`train.evaluation.control_variates`) and prints, per
opponent, the plain and the adjusted 95% half-widths on the same deal pairs, their ratio, whether the adjusted
estimate lies inside the plain interval, and the pairs the adjusted estimate needs for the half-width the plain one
has at 2,000 pairs (``2000 * ratio ** 2``). ``sprt`` plays the fixed-size test of ``--pairs`` pairs from ``--seed``
(it accepts H1 when the mean score is above the bounds' midpoint) and the sequential test from each of
``--sprt-seeds``, on adjusted and on plain pair scores, and prints the decisions and the pairs each took.

``ceiling`` measures the most any value function could take out. With an exact V, every term cancels the luck of
its draw exactly and the adjusted score of a game between players that choose deterministically is the game's
value at the deal (hands, top card and first mover; the deck's order is the luck). So the best half-width ratio
is the spread over deal pairs of that value, over the spread of the plain pair scores. It plays each deal
pair ``--shuffles`` times, the deck reshuffled each time (the same order for both games of a pair) and the hands
kept, and estimates the variance over deal pairs of the value as the variance of the pair means less the
within-deal variance over ``--shuffles``. Players that draw random numbers (``random``, the searches) reuse their
seeded streams on every shuffle of a deal, so for them it is only indicative.

``cost`` times, on one core, ``--pairs`` games (the agent on seat 0) of each opponent and the adjustment of each game
(:func:`~train.evaluation.control_variates.game_correction`), with outcomes valued where they happen and at the next
chance event (:mod:`train.evaluation.lookahead`).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from train.evaluation.control_variates import game_correction
from train.evaluation.lookahead import seat_players
from train.evaluation.matches import deal_seeds, evaluate, make_executor
from train.evaluation.sprt import SprtBounds, run_sprt
from train.evaluation.value import DEFAULT_PATH, ValueFunction
from train.policies import resolve_policy
from uno_env.game import Game
from uno_env.match import play_game


def widths(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Plain and adjusted half-widths per opponent."""
    rows = []
    print("| opponent | pairs | plain | adjusted | half-width plain | adjusted | ratio | adjusted in plain CI | "
          "pairs for the plain 2,000-pair width |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |")
    for r in evaluate(args.agent, args.opponents, args.pairs, args.seed, args.workers, control_variates=DEFAULT_PATH):
        low, high = r.ci
        mean, a_low, a_high = r.adjusted
        ratio = (a_high - a_low) / (high - low)
        row = {"agent": r.agent, "opponent": r.opponent, "pairs": r.pairs, "seed": args.seed, "plain": r.score,
               "plain_ci": [low, high], "adjusted": mean, "adjusted_ci": [a_low, a_high], "ratio": ratio,
               "inside": bool(low <= mean <= high), "pairs_needed": 2000 * ratio**2}
        rows.append(row)
        print(f"| {r.opponent} | {r.pairs} | {r.score:.1%} | {mean:.1%} | {(high - low) / 2:.2%} | "
              f"{(a_high - a_low) / 2:.2%} | {ratio:.2f} | {row['inside']} | {row['pairs_needed']:.0f} |")
    return rows


def sprt(args: argparse.Namespace) -> dict[str, Any]:
    """The fixed-size test's decision and the sequential tests' decisions and pairs."""
    elo = [float(value) for value in args.sprt]
    bounds = SprtBounds.from_elo(*elo)
    fixed, = evaluate(args.agent, args.opponents[:1], args.pairs, args.seed, args.workers,
                      control_variates=DEFAULT_PATH)
    midpoint = (bounds.score0 + bounds.score1) / 2
    out: dict[str, Any] = {"agent": args.agent, "opponent": args.opponents[0], "elo": elo, "pairs": args.pairs,
                           "fixed": {"seed": args.seed, "plain": fixed.score, "adjusted": fixed.adjusted[0],
                                     "decision": "H1" if fixed.score >= midpoint else "H0"}, "runs": []}
    print(f"fixed test, {args.pairs} pairs (seed {args.seed}): plain {fixed.score:.1%}, adjusted "
          f"{fixed.adjusted[0]:.1%}: {out['fixed']['decision']}")
    for seed in args.sprt_seeds:
        for adjusted in (True, False):
            outcome, _ = run_sprt(args.agent, args.opponents[0], bounds, args.pairs, seed, args.sprt_batch,
                                  args.workers, control_variates=DEFAULT_PATH if adjusted else None)
            out["runs"].append({"seed": seed, "adjusted": adjusted, "decision": outcome.decision,
                                "pairs": outcome.pairs, "llr": outcome.llr})
            print(f"SPRT seed {seed}, {'adjusted' if adjusted else 'plain'}: {outcome.decision} after "
                  f"{outcome.pairs} pairs (LLR {outcome.llr:.2f})", flush=True)
    for adjusted in (True, False):
        runs = [run for run in out["runs"] if run["adjusted"] == adjusted]
        mean = sum(run["pairs"] for run in runs) / len(runs)
        agree = sum(run["decision"] == out["fixed"]["decision"] for run in runs)
        out[f"mean_pairs_{'adjusted' if adjusted else 'plain'}"] = mean
        print(f"{'adjusted' if adjusted else 'plain'}: {mean:.0f} pairs on average ({mean / args.pairs:.0%} of the "
              f"fixed test), {agree}/{len(runs)} decisions as the fixed test's")
    return out


def _shuffled_pairs(agent: str, opponent: str, seed: int, pairs: int, lo: int, hi: int, shuffles: int) -> np.ndarray:
    """The agent's scores, ``(hi - lo, shuffles, 2)``, of deal pairs ``lo`` to ``hi`` of ``seed``'s evaluation,
    each played ``shuffles`` times: the first as dealt, the others with the deck shuffled by ``(seed, pair, k)``."""
    seeds, firsts = deal_seeds(seed, pairs)
    players = resolve_policy(agent), resolve_policy(opponent)
    out = np.empty((hi - lo, shuffles, 2))
    for i in range(lo, hi):
        for k in range(shuffles):
            def shuffle(game: Game, i: int = i, k: int = k) -> None:
                if k:
                    np.random.default_rng([seed, i, k]).shuffle(game.deck)
            for g, seats in enumerate((players, players[::-1])):
                result = play_game(seats, int(seeds[i]), first_player=int(firsts[i]), on_deal=shuffle)
                out[i - lo, k, g] = 0.5 if result.winner == -1 else float(result.winner == g)
    return out


def ceiling(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The half-width ratio of an exact V, per opponent, with a bootstrap interval over deal pairs."""
    rows = []
    print("| opponent | pairs | shuffles | plain pair sd | value-at-deal sd | best ratio (95% bootstrap) |\n"
          "| --- | ---: | ---: | ---: | ---: | ---: |")
    chunks = [(lo, min(lo + 10, args.pairs)) for lo in range(0, args.pairs, 10)]
    for opponent in args.opponents:
        with make_executor(args.workers) as pool:
            jobs = [pool.submit(_shuffled_pairs, args.agent, opponent, args.seed, args.pairs, lo, hi, args.shuffles)
                    for lo, hi in chunks]
            scores = np.concatenate([job.result() for job in jobs])
        pair = scores.mean(axis=2)  # (pairs, shuffles) pair scores

        def ratio(p: np.ndarray) -> float:
            value_var = p.mean(axis=1).var(ddof=1) - p.var(axis=1, ddof=1).mean() / p.shape[1]
            return float(np.sqrt(max(value_var, 0.0) / p.var(ddof=1)))

        rng = np.random.default_rng(args.seed)
        boot = [ratio(pair[rng.integers(0, len(pair), len(pair))]) for _ in range(1000)]
        low, high = np.percentile(boot, [2.5, 97.5])
        row = {"agent": args.agent, "opponent": opponent, "pairs": args.pairs, "shuffles": args.shuffles,
               "seed": args.seed, "plain_sd": float(pair.std(ddof=1)), "ratio": ratio(pair),
               "ratio_ci": [float(low), float(high)]}
        rows.append(row)
        print(f"| {opponent} | {args.pairs} | {args.shuffles} | {row['plain_sd']:.3f} | "
              f"{row['ratio'] * row['plain_sd']:.3f} | {row['ratio']:.2f} ({low:.2f} - {high:.2f}) |", flush=True)
    return rows


def cost(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Milliseconds a game: the game, the adjustment without and with the lookahead."""
    rows = []
    print("| matchup | the game | adjustment | of which the lookahead |\n| --- | ---: | ---: | ---: |")
    value = ValueFunction.load()
    for opponent in args.opponents:
        policies = resolve_policy(args.agent), resolve_policy(opponent)
        players = seat_players(policies)
        play_game(policies, args.seed, 0)  # the first game loads and compiles what the players need
        games = []
        start = time.perf_counter()
        for seed, first in zip(*deal_seeds(args.seed, args.pairs), strict=True):
            dealt: list[Game] = []
            play_game(policies, int(seed), int(first), on_deal=dealt.append)
            games.append((int(seed), int(first), dealt[0].events))
        row = {"agent": args.agent, "opponent": opponent, "games": args.pairs,
               "game_ms": (time.perf_counter() - start) / args.pairs * 1e3}
        game_correction(*games[0], policies, value, players)  # compiles, or loads from numba's cache
        for key, replayed in (("where_ms", None), ("next_chance_ms", players)):
            start = time.perf_counter()
            for game in games:
                game_correction(*game, policies, value, replayed)
            row[key] = (time.perf_counter() - start) / args.pairs * 1e3
        rows.append(row)
        print(f"| `{args.agent}` vs `{opponent}` | {row['game_ms']:.1f} ms | {row['next_chance_ms']:.1f} ms | "
              f"{row['next_chance_ms'] - row['where_ms']:.1f} ms |", flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=["widths", "sprt", "ceiling", "cost"])
    parser.add_argument("agent")
    parser.add_argument("--opponents", nargs="+", default=["rule", "random"])
    parser.add_argument("--pairs", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=22001, help="fresh deals: never the value network's (7001)")
    parser.add_argument("--sprt", nargs=2, default=["0", "30"], metavar=("ELO0", "ELO1"))
    parser.add_argument("--sprt-seeds", type=int, nargs="+", default=[22101, 22102, 22103])
    parser.add_argument("--sprt-batch", type=int, default=50)
    parser.add_argument("--shuffles", type=int, default=32, help="ceiling: games per deal pair")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    result = {"widths": widths, "sprt": sprt, "ceiling": ceiling, "cost": cost}[args.what](args)
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
