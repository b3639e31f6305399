"""The value function of the control variates: a seat's expected score from the full state of a game.

It is never a player: it reads both hands and the deck's contents, which is what makes it a good baseline for the
luck of the draw (:mod:`train.evaluation.control_variates`). A *state* here is one int64 row of :data:`STATE_SIZE`:

* ``[HANDS, HANDS + 108)``: both hands as card-type counts (seat 0's 54, then seat 1's);
* ``[DECK, DECK + 54)``: the deck's contents as card-type counts (its order is nobody's knowledge);
* ``TOP``, ``COLOUR``: the discard pile's top card type and the colour in force;
* ``CURRENT``: the seat to move (or to go on drawing); ``PENDING``: the cards it must still draw.

V also takes which seats play the uniformly random player (``random``, whose moves are chance events of the
control variates): the same state is worth less to a seat that plays at random. Every other player is valued as if
it played ``rule``.

The network is a small MLP with a compiled forward pass (batched; no torch at evaluation; :func:`dense`). It sees
the state from the side of the seat to move (:func:`features`) and predicts that seat's score (win 1, draw 1/2,
loss 0); :meth:`ValueFunction.seat0` turns that into seat 0's. The shipped weights are ``value_net.npz`` beside
this module, made by ``python -m train.evaluation.fit_value`` (docs/evaluation.md).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
from numba import njit

from agents.files import atomic_path
from uno_env.cards import COPIES, DECK_SIZE, NUM_CARD_TYPES, NUM_COLOURS, PLAYABLE, card_rank

_N = NUM_CARD_TYPES
HANDS, DECK = 0, 2 * _N
TOP, COLOUR, CURRENT, PENDING = 3 * _N, 3 * _N + 1, 3 * _N + 2, 3 * _N + 3
#: Ints in one state row (module docstring).
STATE_SIZE = 3 * _N + 4
#: Hand sizes above this share the last of the one-hot size features.
_SIZE_CAP = 15
#: The scale of the counts of playable cards.
HAND_SCALE = 7.0
#: Inputs of the network: the mover's hand, the other hand, the deck, the top card, the colour, the cards to draw,
#: both hand sizes one-hot, the deck's size, how many cards of each hand fit the top card, and whether the mover and
#: the other seat play at random.
FEATURES = 3 * _N + _N + NUM_COLOURS + 1 + 2 * (_SIZE_CAP + 1) + 1 + 2 + 2
#: The shipped weights.
DEFAULT_PATH = Path(__file__).with_name("value_net.npz")
_COPIES = np.array(COPIES, dtype=np.float32)
#: ``_FITS[colour, top card]``: which card types may be played on it (RULES.md; the engine's table).
_FITS = np.zeros((NUM_COLOURS, _N, _N), dtype=np.float32)
for _colour in range(NUM_COLOURS):
    for _top in range(_N):
        _FITS[_colour, _top, list(PLAYABLE[_colour][card_rank(_top)])] = 1.0


#: Neither seat plays at random.
NO_RANDOM = np.zeros(2, dtype=bool)


def features(states: np.ndarray, random_seats: np.ndarray = NO_RANDOM) -> np.ndarray:
    """The network's inputs (float32, ``(n, FEATURES)``) of ``(n, STATE_SIZE)`` states, seen by the seat to move;
    ``random_seats`` says which seat plays ``random``: ``(2,)`` booleans by seat, or ``(n, 2)`` one row per state."""
    n = len(states)
    mover = states[:, CURRENT]
    hands = states[:, HANDS:DECK].reshape(n, 2, _N)
    rows = np.arange(n)
    mine, theirs = hands[rows, mover], hands[rows, 1 - mover]
    out = np.zeros((n, FEATURES), dtype=np.float32)
    # Counts over a type's copies: 0..1 whatever the type (a wild has 4 copies, a zero 1).
    out[:, :_N] = mine / _COPIES
    out[:, _N:2 * _N] = theirs / _COPIES
    out[:, 2 * _N:3 * _N] = states[:, DECK:DECK + _N] / _COPIES
    at = 3 * _N
    out[rows, at + states[:, TOP]] = 1.0
    at += _N
    out[rows, at + states[:, COLOUR]] = 1.0
    at += NUM_COLOURS
    out[:, at] = states[:, PENDING] / 4.0
    at += 1
    out[rows, at + np.minimum(mine.sum(axis=1), _SIZE_CAP)] = 1.0
    at += _SIZE_CAP + 1
    out[rows, at + np.minimum(theirs.sum(axis=1), _SIZE_CAP)] = 1.0
    at += _SIZE_CAP + 1
    out[:, at] = states[:, DECK:DECK + _N].sum(axis=1) / DECK_SIZE
    fits = _FITS[states[:, COLOUR], states[:, TOP]]
    out[:, at + 1] = (mine * fits).sum(axis=1) / HAND_SCALE
    out[:, at + 2] = (theirs * fits).sum(axis=1) / HAND_SCALE
    by_seat = np.broadcast_to(np.asarray(random_seats, dtype=bool), (n, 2))
    out[:, at + 3] = by_seat[rows, mover]
    out[:, at + 4] = by_seat[rows, 1 - mover]
    return out


@njit(cache=True)
def dense(x: np.ndarray, w: np.ndarray, b: np.ndarray, relu: bool) -> np.ndarray:
    """``x @ w + b`` (then ReLU if ``relu``), float32, summed over the inputs in their order for every output.

    Why not numpy's ``@``: BLAS picks its kernel by the process's thread settings, and the last digits of its sums
    change with it (a Ray worker, started with one OpenMP thread, differed from a local worker in the 14th digit of
    an adjusted win rate). A fixed order gives the same digits everywhere; skipping the inputs that are 0 (most of
    :func:`features` are) keeps it as fast."""
    out = np.empty((x.shape[0], w.shape[1]), dtype=np.float32)
    for i in range(x.shape[0]):
        out[i] = b
        for k in range(x.shape[1]):
            a = x[i, k]
            if a != 0.0:
                for j in range(w.shape[1]):
                    out[i, j] += a * w[k, j]
        if relu:
            for j in range(w.shape[1]):
                out[i, j] = max(out[i, j], np.float32(0.0))
    return out


class ValueFunction:
    """An MLP (ReLU hidden layers, a sigmoid output) over :func:`features`: the mover's expected score.

    Args:
        weights: the layers' matrices, ``(inputs, outputs)`` each, the first taking :data:`FEATURES` inputs and the
            last giving one output.
        biases: the layers' bias vectors.

    Raises:
        ValueError: the shapes do not chain from :data:`FEATURES` inputs to one output.
    """

    def __init__(self, weights: list[np.ndarray], biases: list[np.ndarray]) -> None:
        if not weights or len(weights) != len(biases):
            raise ValueError(f"need as many weight matrices as bias vectors (at least one), got {len(weights)} and "
                             f"{len(biases)}")
        inputs = FEATURES
        for layer, (w, b) in enumerate(zip(weights, biases, strict=True)):
            if w.ndim != 2 or w.shape[0] != inputs or b.shape != (w.shape[1],):
                raise ValueError(f"layer {layer}: weights {w.shape} and bias {b.shape} do not take {inputs} inputs")
            inputs = w.shape[1]
        if inputs != 1:
            raise ValueError(f"the last layer must give one output, gives {inputs}")
        self.weights = [np.asarray(w, dtype=np.float32) for w in weights]
        self.biases = [np.asarray(b, dtype=np.float32) for b in biases]

    def mover(self, states: np.ndarray, random_seats: np.ndarray = NO_RANDOM) -> np.ndarray:
        """The expected score (float64, ``(n,)``) of the seat to move in each of ``states`` (``random_seats`` as
        :func:`features` takes it)."""
        x = features(states, random_seats)
        last = len(self.weights) - 1
        for layer, (w, b) in enumerate(zip(self.weights, self.biases, strict=True)):
            x = dense(x, w, b, layer < last)
        return 1.0 / (1.0 + np.exp(-x[:, 0].astype(np.float64)))

    def seat0(self, states: np.ndarray, random_seats: np.ndarray = NO_RANDOM) -> np.ndarray:
        """Seat 0's expected score (float64, ``(n,)``) in each of ``states`` (``random_seats`` as :func:`features`
        takes it)."""
        p = self.mover(states, random_seats)
        return np.where(states[:, CURRENT] == 0, p, 1.0 - p)

    def save(self, path: Path) -> None:
        """Write the weights as an ``.npz`` (``w0, b0, w1, b1, ...``), under a temporary name renamed at the end: a
        kill while writing leaves the file there before (the shipped one, by default) whole."""
        arrays = {}
        for layer, (w, b) in enumerate(zip(self.weights, self.biases, strict=True)):
            arrays[f"w{layer}"], arrays[f"b{layer}"] = w, b
        with atomic_path(path) as temporary, open(temporary, "wb") as stream:
            np.savez(stream, **arrays)

    @classmethod
    def load(cls, path: Path = DEFAULT_PATH) -> ValueFunction:
        """The network saved at ``path`` (default: the shipped one); ``ValueError`` for a file that is not one."""
        try:
            with np.load(path) as data:
                layers = len([key for key in data.files if key.startswith("w")])
                weights = [data[f"w{layer}"] for layer in range(layers)]
                biases = [data[f"b{layer}"] for layer in range(layers)]
        except FileNotFoundError:
            raise ValueError(f"value network {path}: no such file") from None
        except (OSError, KeyError, ValueError) as error:
            raise ValueError(f"value network {path}: not a value network file ({error})") from None
        try:
            return cls(weights, biases)
        except ValueError as error:
            raise ValueError(f"value network {path}: {error}") from None

    def digest(self) -> str:
        """A short digest of the weights: names the network in a checkpoint's description."""
        h = hashlib.sha256()
        for array in (*self.weights, *self.biases):
            h.update(array.tobytes())
        return h.hexdigest()[:16]

