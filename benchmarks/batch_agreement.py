"""Does choosing a guided search's simulations in batches change its moves more than its own seed does?

The guided search (:class:`agents.search.SearchPolicy` with a network rolling out and scoring leaves) chooses its
simulations ``batch`` at a time (:func:`agents.search_kernels.pick_batch`): each simulation scores what it would
alone, but which simulations run depends on the batch. This plays games of ``rule`` against ``rule`` and, at each
decision of seat 0 with a choice, runs three searches on the same position: one simulation at a time, in batches
(same seed), and one at a time with another seed. It prints how often the batched search plays the sequential
one's move, and how often two sequential searches with different seeds agree, with 95% Wilson intervals
(:func:`train.evaluation.statistics.wilson_interval`). If batching moved the search, the first rate would fall below
the second.

    python benchmarks/batch_agreement.py models/search-q-none/model.zip --games 30 --simulations 1800 --seed 0
"""

from __future__ import annotations

import argparse
import platform
import sys
import time

import numpy as np
import torch
from search_strength import guide_args

from agents.actor_kernels import BATCH
from agents.ppo import PPOPolicy
from agents.search import SearchPolicy
from train.evaluation.statistics import wilson_interval
from uno_env.game import Game
from uno_env.opponents import RulePolicy


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("network", help="a checkpoint (belief none) guiding the search (leaf=4)")
    parser.add_argument("--games", type=int, default=30)
    parser.add_argument("--simulations", type=int, default=1800)
    parser.add_argument("--batch", type=int, default=BATCH)
    parser.add_argument("--guide", default="leaf=4", help="a --guides entry of search_strength.py")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    guide = guide_args(args.guide, PPOPolicy.load(args.network), "rule")

    def searcher(batch: int) -> SearchPolicy:
        return SearchPolicy(simulations=args.simulations, belief="counting", batch=batch, **guide)

    players = {"one": searcher(1), "batched": searcher(args.batch), "reseeded": searcher(1)}
    rule = RulePolicy()
    same_seed = other_seed = positions = 0
    seconds = dict.fromkeys(players, 0.0)
    for game_index in range(args.games):
        seed = args.seed * 100_000 + game_index
        game = Game.deal(np.random.default_rng(seed), game_index % 2)
        for name, player in players.items():
            player.reset(seed + (1 if name == "reseeded" else 0) * 10**9)
            player.observe_start(game.observe(0, consume_events=False))
        while not game.done:
            if game.current == 0:
                view = game.observe(0)
                moves = {}
                for name, player in players.items():
                    start = time.process_time()
                    moves[name] = player.act(view)
                    seconds[name] += time.process_time() - start
                if len(view.legal_actions) > 1:
                    positions += 1
                    same_seed += moves["batched"] == moves["one"]
                    other_seed += moves["reseeded"] == moves["one"]
            game.step(rule.act(game.observe(game.current)))
    print(f"machine: {platform.machine()}, Python {platform.python_version()}; command: {' '.join(sys.argv)}")
    print("| comparison | positions | same move | 95% CI |\n| --- | ---: | ---: | ---: |")
    for label, agree in ((f"batch {args.batch} vs batch 1, same seed", same_seed),
                         ("batch 1 vs batch 1, another seed", other_seed)):
        low, high = wilson_interval(agree, positions)
        print(f"| {label} | {positions} | {agree / positions:.1%} | {low:.1%} - {high:.1%} |")
    print("CPU seconds a searched move: " + ", ".join(f"{name} {seconds[name] / positions * 1000:.0f} ms"
                                                     for name in players))
    return 0


if __name__ == "__main__":
    sys.exit(main())
