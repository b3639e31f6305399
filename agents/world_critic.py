"""A world critic: the search's leaf values read from the world a simulation is played in, not only its public part.

The guided search (:mod:`agents.search`) plays each simulation in a *determinization*, a world drawn from the belief
(the opponent's hand and the deck's order filled in), and scores it after a few of the searching seat's moves with a
critic. A network's own critic reads the public observation only, so at the leaf it values the position as if the
opponent held an average hand: what the belief knows about this world's hand reaches the value only through the few
moves played before the leaf. A world critic reads the public encoding *and* the world's hidden channels
(:func:`uno_env.observation.privileged_state_into`: the opponent's hand, the next deck cards) and estimates the game's
outcome from the whole state, the way Suphx's and PerfectDou's oracle critics learn from hidden state in training.

Why this is not cheating: at play time the hidden channels it reads are those of the *drawn* world, which the belief
made from public information alone; the true hand never enters the search (tests/test_world_critic.py plays the same
public position with different hidden hands and gets the same move). And it is no strategy fusion: the critic is
fitted on the outcomes of games in which both seats choose as the rollouts do (the network on the searching seat
from its own observation, ``rule`` on the other from its own hand), so its value is the expected result of playing the
simulation on to its end, which the rollout estimates with one noisy sample.

The file is a ``.npz`` of the MLP's layers (``w0, b0, w1, b1, ...``; weights outputs x inputs) and ``meta``, a JSON
text with the format's name, the activation and how it was fitted (:mod:`train.training.world_critic` writes it).
:func:`load` reads it with numpy alone, so the search needs no torch to use one.
"""

from __future__ import annotations

import json
import os
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from agents.actor_kernels import RELU, TANH, WORLD_INPUTS, mlp_params

#: The ``format`` a world critic's ``meta`` names; another is refused.
FORMAT = "uno-world-critic/1"
ACTIVATIONS = {"tanh": TANH, "relu": RELU}


@dataclass(frozen=True)
class WorldCritic:
    """An MLP from the encoding and a world's hidden channels (:data:`~agents.actor_kernels.WORLD_INPUTS` inputs) to
    the outcome for the seat to move (+1 a win, -1 a loss).

    Attributes:
        weights: each layer's weights, outputs x inputs, the last layer's one output row.
        biases: each layer's biases.
        activation: the hidden layers' activation, ``"tanh"`` or ``"relu"``.
        meta: how it was fitted (the guide network, games, seed, held-out errors): written with it, never read by play.
    """

    weights: tuple[np.ndarray, ...]
    biases: tuple[np.ndarray, ...]
    activation: str
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"world critic: activation must be one of {sorted(ACTIVATIONS)}, got {self.activation!r}")
        if not self.weights or len(self.weights) != len(self.biases):
            raise ValueError("world critic: it needs as many bias vectors as weight matrices, at least one of each")
        inputs = WORLD_INPUTS
        for number, (weight, bias) in enumerate(zip(self.weights, self.biases, strict=True)):
            if weight.ndim != 2 or weight.shape[1] != inputs or bias.shape != (weight.shape[0],):
                raise ValueError(f"world critic: layer {number} has weights {weight.shape} and biases {bias.shape}, "
                                 f"but takes {inputs} inputs (weights are outputs x inputs, a bias an output)")
            inputs = weight.shape[0]
        if inputs != 1:
            raise ValueError(f"world critic: the last layer must have one output, it has {inputs}")

    def params(self) -> tuple:
        """The kernels' params (:func:`~agents.actor_kernels.mlp_params`), for the search's ``value=``: the critic's
        input buffer is :data:`~agents.actor_kernels.WORLD_INPUTS` wide, which tells
        :func:`~agents.actor_kernels.values_into` to write the hidden channels."""
        return mlp_params(list(self.weights), list(self.biases), ACTIVATIONS[self.activation], WORLD_INPUTS)

    def save(self, path: str | Path) -> None:
        """Write the critic to ``path`` (``.npz``; the folder must exist): whole or not at all, since it is written
        beside and renamed, so a run killed while saving leaves no half file."""
        layers = {f"w{i}": w for i, w in enumerate(self.weights)} | {f"b{i}": b for i, b in enumerate(self.biases)}
        meta = {**self.meta, "format": FORMAT, "activation": self.activation, "inputs": WORLD_INPUTS}
        part = Path(f"{path}.part")
        with open(part, "wb") as file:  # a file object: np.savez would add ".npz" to a name without it
            np.savez(file, meta=np.array(json.dumps(meta)), **layers)
        os.replace(part, path)


def load(path: str | Path) -> WorldCritic:
    """The world critic saved at ``path``.

    Raises:
        ValueError: naming the problem, if ``path`` is not a file, not an ``.npz`` archive, not a world critic of this
            format, or its layers do not fit together.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"world critic: {str(path)!r} is not a file")
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
    except (OSError, ValueError, zipfile.BadZipFile) as error:
        raise ValueError(f"world critic: {str(path)!r} is not a .npz archive ({error})") from None
    try:
        meta = json.loads(str(arrays.pop("meta")))
    except (KeyError, json.JSONDecodeError):
        raise ValueError(f"world critic: {str(path)!r} has no readable 'meta' entry; is it a world critic?") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        found = meta.get("format") if isinstance(meta, dict) else None
        raise ValueError(f"world critic: {str(path)!r} is of format {found!r}, expected {FORMAT!r}")
    if meta.get("inputs") != WORLD_INPUTS:
        raise ValueError(f"world critic: {str(path)!r} reads {meta.get('inputs')} inputs; this version encodes "
                         f"{WORLD_INPUTS}")
    count = len(arrays) // 2
    if sorted(arrays) != sorted([f"w{i}" for i in range(count)] + [f"b{i}" for i in range(count)]):
        raise ValueError(f"world critic: {str(path)!r} holds {sorted(arrays)}; expected w0, b0, w1, b1, ...")
    return WorldCritic(tuple(arrays[f"w{i}"].astype(np.float32) for i in range(count)),
                       tuple(arrays[f"b{i}"].astype(np.float32) for i in range(count)),
                       str(meta.get("activation")), meta)
