"""Strength of the search player against random and rule-based play: belief kinds vs the oracle, by budget.

    .venv/bin/python benchmarks/search_strength.py --opponents rule --budgets 50 200 --pairs 100
    .venv/bin/python benchmarks/search_strength.py --opponents random rule --budgets 200 --players counting
    .venv/bin/python benchmarks/search_strength.py --opponents rule --time-ms 50 --players particles \
        --network CHECKPOINT --guides none net prior=1 leaf=0 leaf=4,prior=1 --reference particles/none

Every cell plays ``--pairs`` deal pairs (:func:`train.evaluation.matches.deal_seeds`): each deal is played twice with
the seats swapped. The same deals are used in every cell, so cells are comparable deal by deal. A
player is the search player with a belief (``counting``, ``particles``; ``aware``: the policy-aware filter told
the opponent's model; ``learned``: the filter that learns the opponent's model, :mod:`uno_env.belief.learned`), the
``oracle`` (:class:`agents.search.OracleSearchPolicy`, which sees the opponent's hand: the ceiling of a perfect
belief at the same budget), or ``uniform`` (:class:`UniformSearchPolicy`, which ignores every event: the
floor). Where a belief lands between floor and ceiling is how much of the information gap it closes.
Scores count a win as 1 and a draw as 1/2; the 95% CI is the evaluation harness's paired t-interval over
deal pairs (:func:`train.evaluation.statistics.paired_interval`).

``--time-ms`` gives every player the same wall time per move instead of a number of simulations (the budget
column then reads e.g. ``50 ms``). ``--network`` (a checkpoint trained with belief ``none``) and ``--guides`` run
each player under several guides of that network (:class:`agents.search.SearchPolicy`): ``none`` is the
search as ``--rollout`` sets it; every other guide rolls out the searching seat with the network's actor (the
opponent seat with ``--opponent-rollout``, default ``rule``) and adds comma-separated options: ``prior=C``
(PUCT with the actor's policy as the prior), ``leaf=K`` (the critic scores each simulation after K of the
searching seat's decisions), ``z=Z`` (the default-move guard's ``keep_default_z``; ``z=none``: always the search's
choice); ``net`` adds nothing. Players are then named ``belief/guide``.

``ms/move`` is the mean wall time of the search player's decisions that had a choice (two or more legal
actions): belief update plus search, on one core, while other work may share the machine. Forced moves
(one legal action) cost only the belief update and are not counted. ``sims/move`` is the mean count of simulations
of those decisions, and ``sims/s`` their count per second of that time.

Prints a Markdown table (the search players' tables of docs/results.md). With ``--reference PLAYER`` it then prints
each other player's score minus the reference player's on the same deal pairs and budget, with its paired 95%
t-interval (:func:`train.evaluation.statistics.difference_interval`): the luck of the deal cancels, so
differences of a few points separate with far fewer pairs than the cells' own intervals need. ``--save`` keeps
every cell's per-pair scores in a ``.npz`` file.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from typing import Any

import numpy as np
import torch

from agents.compiled_actor import actor_params, value_params
from agents.ppo import PPOPolicy
from agents.search import SearchPolicy, play_oracle_game
from train.evaluation.matches import deal_seeds
from train.evaluation.statistics import difference_interval, paired_interval
from uno_env.cards import COPIES, NUM_CARD_TYPES
from uno_env.match import play_game
from uno_env.policy import make_policy
from uno_env.view import PublicView

PLAYERS = ("uniform", "counting", "particles", "aware", "learned", "oracle")


class UniformSearchPolicy(SearchPolicy):
    """The floor of the information gap: the search with opponent hands drawn uniformly from the unseen cards.

    It ignores what the events say about the opponent's hand (for example that it drew for want of a
    playable card), so it measures the search with no belief beyond card counting of its own view.
    """

    def observe_start(self, view: PublicView) -> None:
        self._view = view

    def _observe(self, view: PublicView) -> None:
        self._view = view

    def _opponent_hands(self, count: int) -> np.ndarray:
        view = self._view
        unseen = np.array(COPIES) - np.asarray(view.hand) - np.asarray(view.discard)
        pool = np.repeat(np.arange(NUM_CARD_TYPES), unseen)
        # A uniform subset per row: the opponent_hand_size smallest of fresh random keys.
        picks = np.argsort(self._rng.random((count, len(pool))), axis=1)[:, :view.opponent_hand_size]
        hands = np.zeros((count, NUM_CARD_TYPES), dtype=np.int64)
        np.add.at(hands, (np.arange(count)[:, None], pool[picks]), 1)
        return hands


def guide_args(guide: str, network: PPOPolicy | None, opponent_rollout: str | None) -> dict[str, Any]:
    """The search arguments of a ``--guides`` entry: ``none``, ``net``, or comma-separated ``prior=C``, ``leaf=K`` and
    ``z=Z``."""
    if guide == "none":
        return {}
    if network is None:
        raise ValueError(f"guide {guide!r} needs --network")
    args: dict[str, Any] = {"rollout": actor_params(network), "opponent_rollout": opponent_rollout or "rule"}
    for option in guide.split(","):
        name, _, value = option.partition("=")
        if name == "prior":
            args["prior"] = float(value)
        elif name == "leaf":
            args["leaf_moves"] = int(value)
        elif name == "z":
            args["keep_default_z"] = None if value == "none" else float(value)
        elif option != "net":
            raise ValueError(f"unknown guide option {option!r}: expected net, prior=C, leaf=K or z=Z")
    if "leaf_moves" in args:
        args["value"] = value_params(network)
    return args


def play_cell(player: str, opponent: str, budget: dict[str, Any], seeds: np.ndarray, firsts: np.ndarray,
              search_args: dict[str, Any]) -> tuple[np.ndarray, int, float, int]:
    """Play deal pairs; returns the search player's scores (pairs, 2), its searched moves, their seconds and their
    simulations (``budget``: the ``simulations`` and ``time_ms`` arguments of the search)."""
    torch.set_num_threads(1)
    rival = make_policy(opponent)
    args = dict(search_args, **budget)
    if player == "oracle":
        searcher = None
    elif player == "uniform":
        searcher = UniformSearchPolicy(**args)
    elif player == "aware":  # told the opponent's policy: its worlds come from the policy-aware belief
        searcher = SearchPolicy(belief="particles", opponent_policy=make_policy(opponent), **args)
    elif player == "learned":  # not told: its worlds come from the filter with the learned opponent model
        searcher = SearchPolicy(belief="particles", opponent_model="learned", **args)
    else:
        searcher = SearchPolicy(belief=player, **args)
    scores = np.empty((len(seeds), 2))
    searches, seconds, simulations = 0, 0.0, 0
    for i, (seed, first) in enumerate(zip(seeds.tolist(), firsts.tolist(), strict=True)):
        for seat in (0, 1):
            if searcher is None:
                result, oracle = play_oracle_game(rival, seed, oracle_seat=seat, first_player=first, **args)
                searches += oracle.searches
                seconds += oracle.search_seconds
                simulations += oracle.search_simulations
            else:
                result = play_game((searcher, rival) if seat == 0 else (rival, searcher), seed, first)
            scores[i, seat] = 0.5 if result.winner == -1 else float(result.winner == seat)
    if searcher is not None:
        searches, seconds, simulations = searcher.searches, searcher.search_seconds, searcher.search_simulations
    return scores, searches, seconds, simulations


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--opponents", nargs="+", default=["random", "rule"])
    parser.add_argument("--budgets", nargs="+", type=int, default=[50, 200], help="simulations per move")
    parser.add_argument("--time-ms", nargs="+", type=float, help="milliseconds per move instead of --budgets")
    parser.add_argument("--players", nargs="+", choices=PLAYERS, default=list(PLAYERS))
    parser.add_argument("--pairs", type=int, default=100, help="deal pairs per cell (2 games each)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rollout", default="rule", choices=["rule", "random"])
    parser.add_argument("--opponent-rollout", choices=["rule", "random"],
                        help="the opponent seat's rollout policy (default: --rollout's)")
    parser.add_argument("--n-particles", type=int, default=500)
    parser.add_argument("--network", help="a checkpoint (belief none) for --guides")
    parser.add_argument("--guides", nargs="+", default=["none"],
                        help="none, net, or comma-separated prior=C, leaf=K and z=Z: see the docstring")
    parser.add_argument("--reference", help="print every player's paired difference from this one (with --guides: "
                                            "belief/guide)")
    parser.add_argument("--save", help="write every cell's per-pair scores to this .npz file")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    network = None if args.network is None else PPOPolicy.load(args.network)
    base_args = {"rollout": args.rollout, "opponent_rollout": args.opponent_rollout,
                 "n_particles": args.n_particles}
    guides = {guide: {**base_args, **guide_args(guide, network, args.opponent_rollout)} for guide in args.guides}
    named = len(args.guides) > 1 or args.guides != ["none"]
    names = {(player, guide): f"{player}/{guide}" if named else player for player in args.players
             for guide in args.guides}
    if args.reference is not None and args.reference not in names.values():
        parser.error(f"--reference {args.reference} is not one of the players {' '.join(names.values())}")
    budgets = {f"{ms:g} ms": {"simulations": None, "time_ms": ms} for ms in args.time_ms} if args.time_ms else \
        {str(n): {"simulations": n} for n in args.budgets}
    seeds, firsts = deal_seeds(args.seed, args.pairs)
    cells = [(player, guide, opponent, budget) for opponent in args.opponents for budget in budgets
             for player in args.players for guide in args.guides]
    # Chunks of about 25 pairs, submitted chunk by chunk across the cells: with a time budget, every cell then
    # shares the machine's load alike while others' work comes and goes.
    chunks = [chunk for chunk in np.array_split(np.arange(args.pairs), max(1, 2 * args.workers, args.pairs // 25))
              if len(chunk)]
    print(f"machine: {platform.machine()}, Python {platform.python_version()}; "
          f"command: {' '.join(sys.argv)}", flush=True)
    print("| opponent | budget/move | player | games | win rate | 95% CI | ms/move | sims/move | sims/s |")
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |", flush=True)
    start = time.perf_counter()
    results: dict[tuple[str, str, str], np.ndarray] = {}
    with ProcessPoolExecutor(args.workers, mp_context=get_context("fork")) as pool:
        submitted = {(cell, c): pool.submit(play_cell, cell[0], cell[2], budgets[cell[3]], seeds[chunk],
                                            firsts[chunk], guides[cell[1]])
                     for c, chunk in enumerate(chunks) for cell in cells}
        futures = [[submitted[cell, c] for c in range(len(chunks))] for cell in cells]
        for (player, guide, opponent, budget), parts in zip(cells, futures, strict=True):
            outputs = [future.result() for future in parts]
            scores = np.concatenate([out[0] for out in outputs])
            searches, seconds, simulations = (sum(out[j] for out in outputs) for j in (1, 2, 3))
            name = names[player, guide]
            results[name, opponent, budget] = scores
            low, high = paired_interval(scores)
            print(f"| {opponent} | {budget} | {name} | {scores.size} | {scores.mean():.1%} | "
                  f"{low:.1%} - {high:.1%} | {1000 * seconds / max(searches, 1):.1f} | "
                  f"{simulations / max(searches, 1):.0f} | {simulations / max(seconds, 1e-9):.0f} |", flush=True)
    print(f"total wall time: {time.perf_counter() - start:.0f} s")
    if args.save:
        np.savez(args.save, **{f"{name}_{opponent}_{budget}": scores
                               for (name, opponent, budget), scores in results.items()})
    if args.reference is not None:
        print(f"\n| opponent | budget/move | player | minus {args.reference} | 95% CI (paired over deals) |")
        print("| --- | ---: | --- | ---: | ---: |")
        for (name, opponent, budget), scores in results.items():
            if name != args.reference:
                difference, low, high = difference_interval(scores, results[args.reference, opponent, budget])
                print(f"| {opponent} | {budget} | {name} | {difference:+.1%} | {low:+.1%} .. {high:+.1%} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
