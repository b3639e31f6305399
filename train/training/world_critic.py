"""Fit a world critic (:mod:`agents.world_critic`) on the outcomes of a network's games against ``rule``.

    python -m train.training.world_critic search-q-none --games 200000 --seed 0 --out runs/world/critic.npz

The network (a shipped agent's name or a ``belief: none`` checkpoint) plays ``--games`` games against ``rule`` on the
compiled kernels, 64 at a time (:func:`agents.actor_kernels.play_rows`), seat 0 its, the first player drawn; at each of
its decisions the packed state is kept (int8: 387 bytes a position), and at the end each position is given its game's
result for the network (+1, 0, -1). The games are the ones the guided search's rollouts play from its leaves on, so
the critic learns the value of playing on as the rollouts would. Every ``HELD_OUT``-th game is held out; the held-out
squared error is printed after each epoch, next to a constant's (the mean outcome) for scale.

A position's inputs (the encoding and the hidden channels, :data:`~agents.actor_kernels.WORLD_INPUTS` floats) are
made from the packed states a minibatch at a time by the kernels' own encoders, so millions of positions fit in memory
and the inputs are the very ones the search computes at its leaves. Every draw comes from ``--seed``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import signal
import sys
import time
from pathlib import Path

import numpy as np
import torch
from numba import njit

from agents.actor_kernels import BATCH, WORLD_INPUTS, play_rows
from agents.compiled_actor import actor_params
from agents.ppo import PPOPolicy
from agents.shipped import checkpoint_path
from agents.world_critic import WorldCritic
from train.interrupts import terminate_as_interrupt
from uno_env.cards import NUM_ACTIONS
from uno_env.core import (
    CHOICES,
    CTL_SIZE,
    CURRENT,
    OUTCOME,
    RULE_POLICY,
    STATE_SIZE,
    deal_into,
    legal_actions_into,
    reward,
)
from uno_env.observation import BASE_SIZE, encode_state_into, privileged_state_into

#: Every HELD_OUT-th game is held out of the fit.
HELD_OUT = 20
#: The most decisions of one game kept (longer games are rare; their later decisions are dropped).
MAX_DECISIONS = 256
#: Moves between two of the network's decisions before a game is cut (scored as a draw), as the search's playouts.
_MAX_ACTIONS = 400
_SEAT = 0


@njit(cache=True)
def _play_batch(seeds: np.ndarray, params: tuple, states: np.ndarray, game_of: np.ndarray, results: np.ndarray,
                first: int) -> int:
    """Play one game per seed (at most ``BATCH``), the network on seat 0 and ``rule`` on seat 1, keeping the packed
    state at each of the network's decisions: rows of ``states`` from 0 on, ``game_of`` their game (``first`` the
    first game's number); ``results[g]`` the result of game ``g`` for seat 0. Returns the rows written."""
    n = len(seeds)
    games = np.empty((n, STATE_SIZE), dtype=np.int64)
    streams = np.empty((n, 1), dtype=np.uint64)
    for g in range(n):
        streams[g, 0] = seeds[g]
        deal_into(games[g], streams[g], -1)
    ctls = np.empty((n, CTL_SIZE), dtype=np.int64)
    legal = np.empty((n, NUM_ACTIONS), dtype=np.int64)
    kept = np.zeros(n, dtype=np.int64)
    done = np.zeros(n, dtype=np.bool_)
    rows = 0
    play_rows(games, n, _SEAT, RULE_POLICY, params, streams, ctls, legal, 0, _MAX_ACTIONS)
    while True:
        running = 0
        for g in range(n):
            if done[g]:
                continue
            if ctls[g, CHOICES] == 0:  # over, or cut after _MAX_ACTIONS moves (a draw): its result is final
                done[g] = True
                results[first + g] = reward(games[g, OUTCOME], _SEAT)
                continue
            running += 1
            if kept[g] < MAX_DECISIONS:
                states[rows] = games[g]
                game_of[rows] = first + g
                rows += 1
                kept[g] += 1
        if running == 0:
            break
        # a game over stays over (play_turn plays nothing); a cut one may go on, but is done here
        play_rows(games, n, _SEAT, RULE_POLICY, params, streams, ctls, legal, 1, _MAX_ACTIONS)
    return rows


def record(params: tuple, games: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``games`` games of the network in ``params`` (seat 0) against ``rule``: the packed state at each of its decisions
    (int8 rows), each row's game, and each game's result for the network. Game ``g`` is dealt from the stream seeded
    by ``seed``'s ``g``-th draw, so the same seed gives the same games."""
    if games < 1:
        raise ValueError(f"world critic: games must be at least 1, got {games}")
    seeds = np.random.default_rng(seed).integers(0, 2**63, size=games, dtype=np.uint64)
    states, game_of = [], []
    results = np.zeros(games, dtype=np.float32)
    scratch = np.empty((BATCH * MAX_DECISIONS, STATE_SIZE), dtype=np.int64)
    rows_game = np.empty(BATCH * MAX_DECISIONS, dtype=np.int64)
    for first in range(0, games, BATCH):
        rows = _play_batch(seeds[first:first + BATCH], params, scratch, rows_game, results, first)
        states.append(scratch[:rows].astype(np.int8))  # every field of the state is below 128 in magnitude
        game_of.append(rows_game[:rows].copy())
    return np.concatenate(states), np.concatenate(game_of), results


@njit(cache=True)
def inputs_into(states: np.ndarray, rows: np.ndarray, out: np.ndarray) -> None:
    """The world critic's inputs of the packed ``states[rows]`` (int8) into ``out`` (float32, a row each): the encoding
    and the hidden channels for the seat to move, as :func:`agents.actor_kernels.values_into` makes them."""
    state = np.empty(STATE_SIZE, dtype=np.int64)
    legal = np.empty(NUM_ACTIONS, dtype=np.int64)
    for r in range(len(rows)):
        state[:] = states[rows[r]]
        encode_state_into(state, legal, legal_actions_into(state, legal), out[r])
        privileged_state_into(state, state[CURRENT], out[r, BASE_SIZE:])


def _network(layers: list[int], activation: str) -> torch.nn.Sequential:
    modules: list[torch.nn.Module] = []
    width = WORLD_INPUTS
    for size in layers:
        modules += [torch.nn.Linear(width, size), torch.nn.Tanh() if activation == "tanh" else torch.nn.ReLU()]
        width = size
    return torch.nn.Sequential(*modules, torch.nn.Linear(width, 1))


def fit(states: np.ndarray, targets: np.ndarray, held: np.ndarray, layers: list[int], activation: str, epochs: int,
        learning_rate: float, seed: int, batch_size: int = 1024, log=print) -> tuple[torch.nn.Sequential, list[float]]:
    """An MLP fitted to ``targets`` (each row's game result) from the rows' inputs, ``held`` the held-out rows' mask;
    Adam, the rate annealed along a half cosine over all steps. Returns it and the held-out squared error per epoch."""
    torch.manual_seed(seed)
    network = _network(layers, activation)
    train_rows, held_rows = np.flatnonzero(~held), np.flatnonzero(held)
    held_inputs = np.empty((len(held_rows), WORLD_INPUTS), dtype=np.float32)
    inputs_into(states, held_rows, held_inputs)
    held_x, held_y = torch.from_numpy(held_inputs), torch.from_numpy(targets[held_rows])
    optimizer = torch.optim.Adam(network.parameters(), lr=learning_rate)
    steps = epochs * -(-len(train_rows) // batch_size)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, steps)
    rng = np.random.default_rng(seed)
    batch = np.empty((batch_size, WORLD_INPUTS), dtype=np.float32)
    errors = []
    for epoch in range(epochs):
        order = rng.permutation(train_rows)
        for start in range(0, len(order), batch_size):
            rows = order[start:start + batch_size]
            inputs_into(states, rows, batch)
            x, y = torch.from_numpy(batch[:len(rows)]), torch.from_numpy(targets[rows])
            loss = ((network(x).squeeze(-1) - y) ** 2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
        with torch.no_grad():
            errors.append(float(((network(held_x).squeeze(-1).clamp(-1, 1) - held_y) ** 2).mean()))
        log(f"epoch {epoch + 1}/{epochs}: held-out squared error {errors[-1]:.4f}")
    return network, errors


def main(argv: list[str] | None = None) -> None:
    """Record the games, fit, write the critic (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("network", help="the network whose games it learns: a shipped agent or a checkpoint")
    parser.add_argument("--games", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--layers", type=int, nargs="+", default=[256, 256])
    parser.add_argument("--activation", choices=["tanh", "relu"], default="tanh")
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.games < HELD_OUT or args.epochs < 1 or min(args.layers) < 1 or args.learning_rate <= 0:
        parser.error(f"--games must be at least {HELD_OUT}, --epochs and every layer at least 1, "
                     "--learning-rate positive")
    if not args.out.parent.is_dir():
        parser.error(f"--out: folder {str(args.out.parent)!r} does not exist")
    torch.set_num_threads(1)
    try:  # an unknown name, or a network whose actor does not compile (belief features): refused by name
        path = checkpoint_path(args.network, "world critic")
        params = actor_params(PPOPolicy.load(path, name=str(args.network)))
    except ValueError as error:
        raise SystemExit(str(error)) from None
    # Ctrl-C or SIGTERM: nothing is written (the file appears whole at the end or not at all). The command is not
    # resumable: it takes 2 to 5 minutes, and the same arguments make the same critic again.
    previous = signal.signal(signal.SIGTERM, terminate_as_interrupt)
    try:
        started = time.perf_counter()
        states, game_of, results = record(params, args.games, args.seed)
        print(f"{args.games} games, {len(states)} positions in {time.perf_counter() - started:.0f} s; "
              f"the network's mean result {results.mean():+.3f}")
        held = game_of % HELD_OUT == 0
        targets = results[game_of]
        baseline = float(((targets[held] - targets[~held].mean()) ** 2).mean())
        print(f"held-out squared error of the mean result: {baseline:.4f}")
        network, errors = fit(states, targets, held, args.layers, args.activation, args.epochs, args.learning_rate,
                              args.seed)
        linear = [m for m in network if isinstance(m, torch.nn.Linear)]
        meta = {"network": str(path), "network_sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
                "games": args.games, "positions": len(states), "seed": args.seed, "epochs": args.epochs,
                "layers": args.layers, "learning_rate": args.learning_rate, "held_out_error": errors,
                "held_out_error_of_the_mean": baseline, "seconds": round(time.perf_counter() - started, 1)}
        WorldCritic(tuple(m.weight.detach().numpy() for m in linear), tuple(m.bias.detach().numpy() for m in linear),
                    args.activation, meta).save(args.out)
        print(json.dumps({k: meta[k] for k in ("positions", "held_out_error", "seconds")}))
    except KeyboardInterrupt:
        print(f"world critic: interrupted; nothing written to {args.out} (the same command makes the same critic)",
              file=sys.stderr)
        raise SystemExit(130) from None
    finally:
        signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    main()
