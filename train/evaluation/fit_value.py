"""Fit a value function of the control variates: ``python -m train.evaluation.fit_value [--agent NETWORK]``.

The states are those before every move of self-play games between ``rule`` and ``random``, or with ``--agent``
between that network's compiled actor and each of them (:func:`~train.evaluation.value_targets.self_play_states`,
deals from ``--seed``); each is labelled with seat 0's mean score over ``--rollouts`` playouts from it, each seat
played as in its game (:func:`~train.evaluation.value_targets.rollout_values`), turned into the score of the seat to
move. An MLP (:class:`~train.evaluation.value.ValueFunction`) is fitted to those labels by cross-entropy (AdamW, with
the colours renamed at random: the rules do not tell them apart), for as many passes as do best on held-out games,
then saved as numpy weights. The same command gives the same file (one torch thread, seeded). Its report says how
long playing, labelling and fitting took.

* Without ``--agent`` it writes the general V (by default over the shipped ``train/evaluation/value_net.npz``).
* With ``--agent`` (a shipped agent's name or a checkpoint of belief ``none``) it writes that agent's V, by default
  beside the checkpoint as ``<checkpoint>.value.npz``, where ``uno-evaluate`` finds it. The fit starts from the
  general V's weights (the agent's two inputs at zero): the agent's playouts cost several times ``rule``'s, and a V
  that starts from what holds for ``rule`` needs fewer of them.

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

from agents.compiled_actor import actor_params, network_digest
from agents.files import atomic_path
from agents.ppo import PPOPolicy
from agents.shipped import checkpoint_path
from train.evaluation.value import (
    AGENT_FEATURES,
    COLOUR,
    CURRENT,
    DECK,
    DEFAULT_PATH,
    FEATURES,
    HANDS,
    STATE_SIZE,
    TOP,
    ValueFunction,
    agent_value_path,
    features,
)
from train.evaluation.value_targets import rollout_values, self_play_states
from uno_env.cards import NUM_CARD_TYPES, NUM_COLOURED_RANKS, NUM_COLOURS, WILD

#: Default self-play games and playouts per state: for the general V, and for an agent's V (whose playouts cost the
#: network's forward passes, several times ``rule``'s moves).
GAMES, ROLLOUTS = (40000, 8000), (32, 8)


def labelled_states(games: int, playouts: int, seed: int, actor: tuple | None = None
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The states of ``games`` self-play games from ``seed`` (with the agent whose ``actor`` params are given, if
    any), how each seat plays there (``AS_*`` codes), the score of the seat to move in each by ``playouts``
    rollouts, and the number of the game each comes from."""
    states, numbers, seats = self_play_states(games, seed, actor)
    seat0 = rollout_values(states, seats, playouts, seed + 1, actor)
    return states, seats, np.where(states[:, CURRENT] == 0, seat0, 1.0 - seat0), numbers


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


def fit(states: np.ndarray, seats: np.ndarray, scores: np.ndarray,
        held_out: tuple[np.ndarray, np.ndarray, np.ndarray], hidden: Sequence[int] = (128, 128), epochs: int = 12,
        seed: int = 0, batch: int = 512, agent: str = "", start: ValueFunction | None = None
        ) -> tuple[ValueFunction, list[float]]:
    """An MLP fitted to the mover's ``scores`` in ``states`` where the seats play as ``seats`` says (cross-entropy,
    AdamW, up to ``epochs`` passes, each over the states with their colours renamed at random), as it was after the
    pass with the lowest cross-entropy on ``held_out`` (states, seats, scores), and that cross-entropy after each
    pass. ``agent``: the network digest of an agent's V (which takes the agent's inputs); ``start``: a general V of
    the same hidden sizes to start from (the agent's inputs' weights start at zero)."""
    torch.manual_seed(seed)
    torch.set_num_threads(1)
    rng = np.random.default_rng(seed)
    sizes = [AGENT_FEATURES if agent else FEATURES, *hidden, 1]
    layers: list[torch.nn.Module] = []
    for i in range(len(sizes) - 1):
        layers.append(torch.nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2:
            layers.append(torch.nn.ReLU())
    net = torch.nn.Sequential(*layers)
    if start is not None:
        _start_from(net, start)
    y = torch.from_numpy(scores.astype(np.float32))
    x_held = torch.from_numpy(features(held_out[0], held_out[1], bool(agent)))
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
        x = torch.from_numpy(features(renamed, seats, bool(agent)))
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
                                 [layer.bias.detach().numpy().copy() for layer in linear], agent)
    assert best is not None  # epochs >= 1 (main checks it)
    return best, losses


def _start_from(net: torch.nn.Sequential, start: ValueFunction) -> None:
    """Copy ``start``'s weights into ``net``; inputs ``net`` has beyond ``start``'s get zero weights.

    Raises:
        ValueError: the hidden layers' sizes differ.
    """
    linear = [layer for layer in net if isinstance(layer, torch.nn.Linear)]
    shapes = [w.shape[1] for w in start.weights]
    if shapes != [layer.out_features for layer in linear]:
        raise ValueError(f"the general V's layers {shapes[:-1]} are not --hidden "
                         f"{[layer.out_features for layer in linear[:-1]]}")
    with torch.no_grad():
        for layer, w, b in zip(linear, start.weights, start.biases, strict=True):
            layer.weight.zero_()
            layer.weight[:, :w.shape[0]] = torch.from_numpy(w.T)
            layer.bias[:] = torch.from_numpy(b)


def entropy(p: np.ndarray) -> float:
    """The mean binary entropy (nats) of the probabilities ``p``: a cross-entropy's floor on those labels."""
    q = np.clip(p, 1e-12, 1 - 1e-12)
    return float(-(q * np.log(q) + (1 - q) * np.log(1 - q)).mean())


def _read_states(path: Path, agent: str) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], int]:
    """The labelled states a ``--states`` file keeps and the playouts that labelled them; ``ValueError`` naming the
    file for one that is not such or whose games were not played by the ``agent`` (a digest, ``""``: none)."""
    try:
        with np.load(path) as kept:
            arrays = tuple(kept[key] for key in ("states", "seats", "scores", "numbers"))
            playouts = int(kept["playouts"])
            kept_agent = str(kept["agent"])
    except (OSError, KeyError, ValueError, zipfile.BadZipFile) as error:
        raise ValueError(f"--states {path}: not a file of labelled states ({error}); remove it to label "
                         f"again") from None
    states, seats, scores, numbers = arrays
    n = len(states)
    if states.shape != (n, STATE_SIZE) or seats.shape != (n, 2) or scores.shape != (n,) or numbers.shape != (n,):
        raise ValueError(f"--states {path}: arrays of the wrong shapes; remove it to label again")
    if kept_agent != agent:
        played = f"the agent {kept_agent}" if kept_agent else "rule and random alone"
        wanted = f"the agent {agent}" if agent else "rule and random alone"
        raise ValueError(f"--states {path}: its games were played by {played}, this fit is for {wanted}; remove "
                         f"it or name another file")
    return arrays, playouts


def main(argv: Sequence[str] | None = None) -> int:
    """Play, label, fit and save; prints the sizes, the held-out loss and the times."""
    parser = argparse.ArgumentParser(prog="python -m train.evaluation.fit_value", description=__doc__.split("\n")[0])
    parser.add_argument("--agent", metavar="NETWORK", help="fit the V of this network (a shipped agent's name or "
                        "a checkpoint of belief none) in place of the general V")
    parser.add_argument("--games", type=int, help="self-play games to take states from (default: "
                        f"{GAMES[0]}, or {GAMES[1]} with --agent)")
    parser.add_argument("--rollouts", type=int, help="playouts valuing each state (default: "
                        f"{ROLLOUTS[0]}, or {ROLLOUTS[1]} with --agent)")
    parser.add_argument("--seed", type=int, default=7001, help="the seed of the deals, the playouts and the fit "
                        "(default: %(default)s; never a measurement's)")
    parser.add_argument("--hidden", type=int, nargs="+", default=[128, 128], help="hidden layer sizes "
                        "(default: 128 128)")
    parser.add_argument("--epochs", type=int, default=12, help="passes over the states at most (default: "
                        "%(default)s)")
    parser.add_argument("--out", type=Path, help="where to write the weights (default: the shipped file, or with "
                        "--agent <checkpoint>.value.npz beside the agent's checkpoint)")
    parser.add_argument("--states", type=Path, help="keep the labelled states in this .npz, or read them from it if "
                        "it exists (to refit without playing again)")
    args = parser.parse_args(argv)
    with_agent = int(args.agent is not None)
    args.games = GAMES[with_agent] if args.games is None else args.games
    args.rollouts = ROLLOUTS[with_agent] if args.rollouts is None else args.rollouts
    for name, low in (("games", 10), ("rollouts", 1), ("epochs", 1)):
        if getattr(args, name) < low:
            parser.error(f"--{name} must be at least {low}, got {getattr(args, name)}")
    actor, digest = None, ""
    if args.agent is not None:
        try:
            checkpoint = checkpoint_path(args.agent, "--agent")
            network = PPOPolicy.load(checkpoint)
            actor = actor_params(network)
        except ValueError as error:
            parser.error(str(error))
        digest = network_digest(network) or ""
        args.out = agent_value_path(checkpoint) if args.out is None else args.out
    args.out = DEFAULT_PATH if args.out is None else args.out
    try:
        return _run(args, actor, digest)
    except KeyboardInterrupt:
        kept = f"; the labelled states are kept in {args.states}" if args.states and args.states.is_file() else ""
        print(f"fit_value: interrupted, {args.out} unchanged{kept}", file=sys.stderr)
        return 130
    except ValueError as error:  # a --states file that is not one
        print(f"fit_value: {error}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace, actor: tuple | None, agent: str) -> int:
    """:func:`main` once its options are checked: ``actor`` and ``agent`` are the agent's compiled actor and network
    digest (``None`` and ``""`` for the general V)."""
    start = time.perf_counter()
    if args.states is not None and args.states.is_file():
        (states, seats, scores, numbers), playouts = _read_states(args.states, agent)
    else:
        playouts = args.rollouts
        states, seats, scores, numbers = labelled_states(args.games, args.rollouts, args.seed, actor)
        if args.states is not None:
            with atomic_path(args.states) as temporary, open(temporary, "wb") as stream:
                np.savez(stream, states=states, seats=seats, scores=scores, numbers=numbers, playouts=playouts,
                         agent=np.array(agent))
    labelled = time.perf_counter()
    # Every tenth game is held out: it chooses the pass whose network is kept.
    out = numbers % 10 == 9
    value, losses = fit(states[~out], seats[~out], scores[~out], (states[out], seats[out], scores[out]),
                        args.hidden, args.epochs, args.seed, agent=agent,
                        start=ValueFunction.load(DEFAULT_PATH) if agent else None)
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
