"""Microseconds per compiled forward pass of a network (the search's rollout move and leaf value), on one core.

    .venv/bin/python benchmarks/network_speed.py models/search-q-none/model.zip [MORE.zip ...]

The positions are every decision of 60 random-play games (seeds 0-59); each checkpoint's actor
(:func:`agents.actor_kernels.actor_choice`) and critic (:func:`agents.actor_kernels.value_of`) run over all of them
inside one compiled loop (no Python call per position), three passes, best of five rounds; then the actor over the
same positions :data:`~agents.actor_kernels.BATCH` at a time (:func:`agents.actor_kernels.choose_rows`, the guided
search's batched pass), in µs a position.
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np
from numba import njit

from agents.actor_kernels import BATCH, actor_choice, choose_rows, value_of
from agents.compiled_actor import actor_params, value_params
from agents.ppo import PPOPolicy
from uno_env import core
from uno_env.cards import NUM_ACTIONS
from uno_env.game import Game


@njit
def _choices(states: np.ndarray, legals: np.ndarray, counts: np.ndarray, params: tuple, passes: int) -> int:
    total = 0
    for _ in range(passes):
        for k in range(states.shape[0]):
            total += actor_choice(states[k], legals[k], counts[k], params)
    return total


@njit
def _values(states: np.ndarray, params: tuple, passes: int) -> float:
    total = 0.0
    for _ in range(passes):
        for k in range(states.shape[0]):
            total += value_of(states[k], params)
    return total


@njit
def _batched(states: np.ndarray, legals: np.ndarray, counts: np.ndarray, params: tuple, passes: int) -> int:
    ctls = np.zeros((BATCH, core.CTL_SIZE), dtype=np.int64)
    rows, out = np.arange(BATCH), np.empty(BATCH, dtype=np.int64)
    total = 0
    for _ in range(passes):
        for start in range(0, states.shape[0] - BATCH + 1, BATCH):
            ctls[:, core.CHOICES] = counts[start:start + BATCH]
            choose_rows(states[start:start + BATCH], legals[start:start + BATCH], ctls, rows, BATCH, params, out)
            total += out.sum()
    return total


def positions(games: int = 60) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Kernel states, legal actions and their counts at every decision of ``games`` random-play games."""
    states, legals, counts = [], [], []
    rng = np.random.default_rng(0)
    legal = np.empty(NUM_ACTIONS, dtype=np.int64)
    for seed in range(games):
        game = Game.deal(np.random.default_rng(seed), seed % 2)
        while not game.done:
            state = core.pack_state(game.hands, game.deck, game.discard, game.active_colour, game.current,
                                    game.pending_draw)
            counts.append(core.legal_actions_into(state, legal))
            states.append(state)
            legals.append(legal.copy())
            actions = game.legal_actions()
            game.step(actions[rng.integers(len(actions))])
    return np.array(states), np.array(legals), np.array(counts)


def best_time(run, rounds: int = 5) -> float:
    """The fastest of ``rounds`` wall-clock timings of ``run()``, seconds."""
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoints", nargs="+", help="MaskablePPO checkpoints trained with belief='none'")
    args = parser.parse_args(argv)
    states, legals, counts = positions()
    passes = 3
    print(f"machine: {platform.machine()}, Python {platform.python_version()}; {len(states)} positions")
    print(f"| checkpoint | actor_choice µs | value_of µs | choose_rows µs a position ({BATCH} rows) |\n"
          "| --- | ---: | ---: | ---: |")
    for path in args.checkpoints:
        policy = PPOPolicy.load(path)
        actor, critic = actor_params(policy), value_params(policy)
        _choices(states[:1], legals[:1], counts[:1], actor, 1)  # compile before timing
        _values(states[:1], critic, 1)
        _batched(states[:BATCH], legals[:BATCH], counts[:BATCH], actor, 1)
        per = 1e6 / (passes * len(states))
        choose = best_time(lambda: _choices(states, legals, counts, actor, passes)) * per  # noqa: B023
        value = best_time(lambda: _values(states, critic, passes)) * per  # noqa: B023
        rows = len(states) // BATCH * BATCH
        batched = best_time(lambda: _batched(states, legals, counts, actor, passes)) * 1e6 / (passes * rows)  # noqa: B023
        print(f"| {path} | {choose:.2f} | {value:.2f} | {batched:.2f} |")


if __name__ == "__main__":
    main()
