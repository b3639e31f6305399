"""Fit the value function of the control variates on game outcomes: ``python -m train.evaluation.fit_value``.

Games between a mix of players (the shipped networks, ``rule`` and ``random``: :data:`MATCHUPS`) are played from
deals derived from ``--seed``, each replayed with every card in view
(:func:`~train.evaluation.control_variates.replay`), and every state of each game is labelled with the final score
of the seat to move there. An MLP (:class:`~train.evaluation.value.ValueFunction`) is fitted to those labels by
cross-entropy (AdamW, with the colours renamed at random: the rules do not tell them apart), for as many passes
as do best on held-out games, then saved as numpy weights (by default over the shipped
``train/evaluation/value_net.npz``). The same command gives the same file (one torch thread, seeded). Its report
says how long playing and fitting took.

The deals used here must never be those of a reported measurement: the published ones use other seeds (docs).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from itertools import permutations
from pathlib import Path

import numpy as np
import torch

from train.evaluation.control_variates import known_probabilities, replay
from train.evaluation.matches import deal_seeds
from train.evaluation.value import (
    COLOUR,
    CURRENT,
    DECK,
    DEFAULT_PATH,
    FEATURES,
    HANDS,
    TOP,
    ValueFunction,
    features,
)
from train.policies import resolve_policy
from uno_env.cards import NUM_CARD_TYPES, NUM_COLOURED_RANKS, NUM_COLOURS, WILD
from uno_env.match import play_game
from uno_env.seat import deal_game

#: The games V learns from: (seat 0, seat 1) players and the share of the games each matchup gets (seats are swapped
#: on every other game).
MATCHUPS: tuple[tuple[str, str, float], ...] = (
    ("search-q-afterstate", "rule", 0.25), ("search-q-afterstate", "random", 0.15), ("search-q-none", "rule", 0.15),
    ("search-q-none", "random", 0.1), ("rule", "random", 0.15), ("rule", "rule", 0.1), ("random", "random", 0.1))


def play_states(games: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """States of ``games`` games (:data:`MATCHUPS`), the final score of the seat to move in each and the number of
    the game each comes from."""
    seeds, firsts = deal_seeds(seed, games)
    shares = np.array([share for _, _, share in MATCHUPS])
    counts = np.floor(shares / shares.sum() * games).astype(int)
    counts[0] += games - counts.sum()
    policies = {name: resolve_policy(name) for a, b, _ in MATCHUPS for name in (a, b)}
    states, scores, numbers = [], [], []
    game = 0
    for (a, b, _), count in zip(MATCHUPS, counts, strict=True):
        for i in range(count):
            # Two distinct objects when a player meets itself: a policy keeps per-game state.
            pair = (policies[a], policies[b] if a != b else resolve_policy(b))
            pair = pair if i % 2 == 0 else pair[::-1]
            dealt = []
            result = play_game(pair, int(seeds[game]), int(firsts[game]), on_deal=dealt.append)
            events = replay(deal_game(int(seeds[game]), int(firsts[game])), dealt[0].events,
                            (known_probabilities(pair[0]), known_probabilities(pair[1])))
            running = events.actual[np.isnan(events.fixed[events.actual])]
            trajectory = events.states[running]
            seat0 = 0.5 if result.winner == -1 else float(result.winner == 0)
            states.append(trajectory)
            scores.append(np.where(trajectory[:, CURRENT] == 0, seat0, 1.0 - seat0))
            numbers.append(np.full(len(trajectory), game))
            game += 1
    return np.concatenate(states), np.concatenate(scores), np.concatenate(numbers)


def permute_colours(states: np.ndarray, perm: Sequence[int]) -> np.ndarray:
    """``states`` with colour ``c`` renamed ``perm[c]`` everywhere (hands, deck, top card, colour in force): the
    rules do not tell colours apart, so these are states of the same value, which keeps the network from learning
    one game's cards by heart."""
    out = states.copy()
    perm = np.asarray(perm)
    for block in (HANDS, HANDS + NUM_CARD_TYPES, DECK):
        for colour in range(NUM_COLOURS):
            new = block + perm[colour] * NUM_COLOURED_RANKS
            old = block + colour * NUM_COLOURED_RANKS
            out[:, new:new + NUM_COLOURED_RANKS] = states[:, old:old + NUM_COLOURED_RANKS]
    top = states[:, TOP]
    coloured = top < WILD
    out[coloured, TOP] = perm[top[coloured] // NUM_COLOURED_RANKS] * NUM_COLOURED_RANKS + \
        top[coloured] % NUM_COLOURED_RANKS
    out[:, COLOUR] = perm[states[:, COLOUR]]
    return out


def fit(states: np.ndarray, scores: np.ndarray, hidden: Sequence[int] = (64, 64), epochs: int = 8,
        seed: int = 0, batch: int = 512, held_out: tuple[np.ndarray, np.ndarray] | None = None,
        ) -> tuple[ValueFunction, list[float]]:
    """An MLP fitted to the mover's ``scores`` in ``states`` (cross-entropy, AdamW, ``epochs`` passes, each over
    the states with their colours renamed at random), and its cross-entropy on ``held_out`` after each pass."""
    torch.manual_seed(seed)
    torch.set_num_threads(1)
    rng = np.random.default_rng(seed)
    sizes = [FEATURES, *hidden, 1]
    layers: list[torch.nn.Module] = []
    for i in range(len(sizes) - 1):
        layers.append(torch.nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2:
            layers.append(torch.nn.ReLU())
    net = torch.nn.Sequential(*layers)
    y = torch.from_numpy(scores.astype(np.float32))
    optimiser = torch.optim.AdamW(net.parameters(), lr=1e-3, weight_decay=0.01)
    generator = torch.Generator().manual_seed(seed)
    perms = list(permutations(range(NUM_COLOURS)))
    losses = []
    for _ in range(epochs):
        renamed = np.empty_like(states)
        which = rng.integers(len(perms), size=len(states))
        for k, perm in enumerate(perms):
            renamed[which == k] = permute_colours(states[which == k], perm)
        x = torch.from_numpy(features(renamed))
        for index in torch.randperm(len(x), generator=generator).split(batch):
            loss = torch.nn.functional.binary_cross_entropy_with_logits(net(x[index])[:, 0], y[index])
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
        if held_out is not None:
            with torch.no_grad():
                logits = net(torch.from_numpy(features(held_out[0])))[:, 0]
                target = torch.from_numpy(held_out[1].astype(np.float32))
                losses.append(float(torch.nn.functional.binary_cross_entropy_with_logits(logits, target)))
    linear = [layer for layer in net if isinstance(layer, torch.nn.Linear)]
    value = ValueFunction([layer.weight.detach().numpy().T.copy() for layer in linear],
                          [layer.bias.detach().numpy().copy() for layer in linear])
    return value, losses


def main(argv: Sequence[str] | None = None) -> int:
    """Play, fit and save; prints the sizes, the held-out loss and the times."""
    parser = argparse.ArgumentParser(prog="python -m train.evaluation.fit_value", description=__doc__.split("\n")[0])
    parser.add_argument("--games", type=int, default=6000, help="games to learn from (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=7001, help="the seed of the deals and of the fit "
                        "(default: %(default)s; never a measurement's)")
    parser.add_argument("--hidden", type=int, nargs="+", default=[64, 64], help="hidden layer sizes (default: 64 64)")
    parser.add_argument("--epochs", type=int, default=8, help="passes over the states (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=DEFAULT_PATH, help="where to write the weights (default: the "
                        "shipped file)")
    parser.add_argument("--states", type=Path, help="keep the played states in this .npz, or read them from it if "
                        "it exists (to refit without playing again)")
    args = parser.parse_args(argv)
    if args.games < 10:
        parser.error(f"--games must be at least 10, got {args.games}")
    start = time.perf_counter()
    if args.states is not None and args.states.is_file():
        with np.load(args.states) as kept:
            states, scores, numbers = kept["states"], kept["scores"], kept["numbers"]
    else:
        states, scores, numbers = play_states(args.games, args.seed)
        if args.states is not None:
            np.savez(args.states, states=states, scores=scores, numbers=numbers)
    played = time.perf_counter()
    # Every tenth game is held out to choose the number of passes; the saved network then learns from all games
    # for that many.
    out = numbers % 10 == 9
    _, losses = fit(states[~out], scores[~out], args.hidden, args.epochs, args.seed,
                    held_out=(states[out], scores[out]))
    best = int(np.argmin(losses)) + 1
    fitted = time.perf_counter()
    value, _ = fit(states, scores, args.hidden, best, args.seed)
    done = time.perf_counter()
    value.save(args.out)
    print(f"{len(np.unique(numbers))} games, {len(states)} states; held-out cross-entropy by pass "
          f"{' '.join(f'{loss:.4f}' for loss in losses)} (a constant 0.5 gives {np.log(2):.4f}); {best} passes; "
          f"playing {played - start:.0f} s, fitting {fitted - played:.0f} s + {done - fitted:.0f} s; wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
