"""Fit the value function of the control variates: ``python -m train.evaluation.fit_value``.

The states are those before every move of self-play games between ``rule`` and ``random``
(:func:`~train.evaluation.value_targets.self_play_states`, deals from ``--seed``); each is labelled with seat 0's
mean score over ``--rollouts`` playouts from it, each seat played by ``random`` if it played ``random`` in the game
and by ``rule`` otherwise (:func:`~train.evaluation.value_targets.rollout_values`), turned into the score of the
seat to move. An MLP
(:class:`~train.evaluation.value.ValueFunction`) is fitted to those labels by cross-entropy (AdamW, with the colours
renamed at random: the rules do not tell them apart), for as many passes as do best on held-out games, then saved as
numpy weights (by default over the shipped ``train/evaluation/value_net.npz``). The same command gives the same file
(one torch thread, seeded). Its report says how long playing, labelling and fitting took.

With ``--states FILE`` the labelled states are written as soon as they are made (under a temporary name, renamed when
whole), and a later run with the same option reads them instead of playing again: a run killed or stopped with
Ctrl-C while fitting loses only the fit. The weights are written the same way, so a kill never leaves half a file.

The deals used here must never be those of a reported measurement: the published ones use other seeds (docs).
"""

from __future__ import annotations

import argparse
import sys
import time
import zipfile
from collections.abc import Sequence
from itertools import permutations
from pathlib import Path

import numpy as np
import torch

from agents.files import atomic_path
from train.evaluation.value import (
    COLOUR,
    CURRENT,
    DECK,
    DEFAULT_PATH,
    FEATURES,
    HANDS,
    STATE_SIZE,
    TOP,
    ValueFunction,
    features,
)
from train.evaluation.value_targets import rollout_values, self_play_states
from uno_env.cards import NUM_CARD_TYPES, NUM_COLOURED_RANKS, NUM_COLOURS, WILD


def labelled_states(games: int, playouts: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The states of ``games`` self-play games from ``seed``, which seats play ``random`` there, the score of the
    seat to move in each by ``playouts`` rollouts, and the number of the game each comes from."""
    states, numbers, random_seats = self_play_states(games, seed)
    seat0 = rollout_values(states, random_seats, playouts, seed + 1)
    return states, random_seats, np.where(states[:, CURRENT] == 0, seat0, 1.0 - seat0), numbers


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


def fit(states: np.ndarray, random_seats: np.ndarray, scores: np.ndarray,
        held_out: tuple[np.ndarray, np.ndarray, np.ndarray], hidden: Sequence[int] = (128, 128), epochs: int = 12,
        seed: int = 0, batch: int = 512) -> tuple[ValueFunction, list[float]]:
    """An MLP fitted to the mover's ``scores`` in ``states`` where ``random_seats`` play ``random`` (cross-entropy,
    AdamW, up to ``epochs`` passes, each over the states with their colours renamed at random), as it was after the
    pass with the lowest cross-entropy on ``held_out`` (states, random seats, scores), and that cross-entropy after
    each pass."""
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
    x_held = torch.from_numpy(features(held_out[0], held_out[1]))
    y_held = torch.from_numpy(held_out[2].astype(np.float32))
    optimiser = torch.optim.AdamW(net.parameters(), lr=1e-3, weight_decay=0.01)
    generator = torch.Generator().manual_seed(seed)
    perms = list(permutations(range(NUM_COLOURS)))
    losses: list[float] = []
    best = None
    for _ in range(epochs):
        renamed = np.empty_like(states)
        which = rng.integers(len(perms), size=len(states))
        for k, perm in enumerate(perms):
            renamed[which == k] = permute_colours(states[which == k], perm)
        x = torch.from_numpy(features(renamed, random_seats))
        for index in torch.randperm(len(x), generator=generator).split(batch):
            loss = torch.nn.functional.binary_cross_entropy_with_logits(net(x[index])[:, 0], y[index])
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
        with torch.no_grad():
            losses.append(float(torch.nn.functional.binary_cross_entropy_with_logits(net(x_held)[:, 0], y_held)))
        if losses[-1] == min(losses):
            linear = [layer for layer in net if isinstance(layer, torch.nn.Linear)]
            best = ValueFunction([layer.weight.detach().numpy().T.copy() for layer in linear],
                                 [layer.bias.detach().numpy().copy() for layer in linear])
    assert best is not None  # epochs >= 1 (main checks it)
    return best, losses


def entropy(p: np.ndarray) -> float:
    """The mean binary entropy (nats) of the probabilities ``p``: a cross-entropy's floor on those labels."""
    q = np.clip(p, 1e-12, 1 - 1e-12)
    return float(-(q * np.log(q) + (1 - q) * np.log(1 - q)).mean())


def _read_states(path: Path) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], int]:
    """The labelled states a ``--states`` file keeps and the playouts that labelled them; ``ValueError`` naming the
    file for one that is not such."""
    try:
        with np.load(path) as kept:
            arrays = tuple(kept[key] for key in ("states", "random_seats", "scores", "numbers"))
            playouts = int(kept["playouts"])
    except (OSError, KeyError, ValueError, zipfile.BadZipFile) as error:
        raise ValueError(f"--states {path}: not a file of labelled states ({error}); remove it to label "
                         f"again") from None
    states, random_seats, scores, numbers = arrays
    n = len(states)
    if states.shape != (n, STATE_SIZE) or random_seats.shape != (n, 2) or scores.shape != (n,) or \
            numbers.shape != (n,):
        raise ValueError(f"--states {path}: arrays of the wrong shapes; remove it to label again")
    return arrays, playouts


def main(argv: Sequence[str] | None = None) -> int:
    """Play, label, fit and save; prints the sizes, the held-out loss and the times."""
    parser = argparse.ArgumentParser(prog="python -m train.evaluation.fit_value", description=__doc__.split("\n")[0])
    parser.add_argument("--games", type=int, default=40000, help="self-play games to take states from "
                        "(default: %(default)s)")
    parser.add_argument("--rollouts", type=int, default=32, help="playouts valuing each state "
                        "(default: %(default)s)")
    parser.add_argument("--seed", type=int, default=7001, help="the seed of the deals, the playouts and the fit "
                        "(default: %(default)s; never a measurement's)")
    parser.add_argument("--hidden", type=int, nargs="+", default=[128, 128], help="hidden layer sizes "
                        "(default: 128 128)")
    parser.add_argument("--epochs", type=int, default=12, help="passes over the states at most (default: "
                        "%(default)s)")
    parser.add_argument("--out", type=Path, default=DEFAULT_PATH, help="where to write the weights (default: the "
                        "shipped file)")
    parser.add_argument("--states", type=Path, help="keep the labelled states in this .npz, or read them from it if "
                        "it exists (to refit without playing again)")
    args = parser.parse_args(argv)
    for name, low in (("games", 10), ("rollouts", 1), ("epochs", 1)):
        if getattr(args, name) < low:
            parser.error(f"--{name} must be at least {low}, got {getattr(args, name)}")
    try:
        return _run(args)
    except KeyboardInterrupt:
        kept = f"; the labelled states are kept in {args.states}" if args.states and args.states.is_file() else ""
        print(f"fit_value: interrupted, {args.out} unchanged{kept}", file=sys.stderr)
        return 130
    except ValueError as error:  # a --states file that is not one
        print(f"fit_value: {error}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace) -> int:
    """:func:`main` once its options are checked."""
    start = time.perf_counter()
    if args.states is not None and args.states.is_file():
        (states, random_seats, scores, numbers), playouts = _read_states(args.states)
    else:
        playouts = args.rollouts
        states, random_seats, scores, numbers = labelled_states(args.games, args.rollouts, args.seed)
        if args.states is not None:
            with atomic_path(args.states) as temporary, open(temporary, "wb") as stream:
                np.savez(stream, states=states, random_seats=random_seats, scores=scores, numbers=numbers,
                         playouts=playouts)
    labelled = time.perf_counter()
    # Every tenth game is held out: it chooses the pass whose network is kept.
    out = numbers % 10 == 9
    value, losses = fit(states[~out], random_seats[~out], scores[~out], (states[out], random_seats[out], scores[out]),
                        args.hidden, args.epochs, args.seed)
    done = time.perf_counter()
    value.save(args.out)
    print(f"{len(np.unique(numbers))} games, {len(states)} states, {playouts} playouts each; held-out "
          f"cross-entropy by pass {' '.join(f'{loss:.4f}' for loss in losses)} (the labels' own entropy "
          f"{entropy(scores[out]):.4f}, a constant 0.5 gives {np.log(2):.4f}); kept pass "
          f"{int(np.argmin(losses)) + 1}; playing and labelling {labelled - start:.0f} s, fitting "
          f"{done - labelled:.0f} s; wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
