"""The finished deal pairs of an evaluation, kept in a folder so that a stopped evaluation goes on where it stopped.

``uno-evaluate ... --checkpoint DIR`` (:func:`train.evaluation.matches.run_matches`' ``checkpoint``): each chunk of
deal pairs is written to ``DIR`` as soon as it is played, and the same command run again plays only the pairs that no
file holds. Evaluations of the guided search take an hour or more, so a kill, a reboot or a Ctrl-C must cost at most
the chunks being played.

The folder holds ``evaluation.json``, what the evaluation is (its matchups, pairs, seed and settings, and a digest of
every checkpoint file a player names, so a retrained network is not scored with its predecessor's games), and one
``.npz`` per finished chunk, named by its matchup and pair range. A chunk file is written whole under a temporary
name and then renamed, so a file either holds its chunk or does not exist. A folder that holds another evaluation
is refused with the field that differs.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np

from agents.files import atomic_path, write_text

#: The file naming what the folder's games are.
MANIFEST = "evaluation.json"
#: A finished chunk: its matchup's index and its first and one-past-last deal pair.
_CHUNK = re.compile(r"matchup(\d+)-pairs(\d+)-(\d+)\.npz")


class PairStore:
    """The folder of one evaluation's finished chunks (module docstring).

    Args:
        folder: created if missing.
        description: what the evaluation is (JSON-serialisable). A new folder records it; a folder that already
            records another is refused.

    Raises:
        ValueError: the folder records another evaluation (the message names the first field that differs), or is
            not a folder this class wrote.
    """

    def __init__(self, folder: Path, description: dict[str, Any]) -> None:
        self.folder = folder
        manifest = folder / MANIFEST
        if folder.exists() and not folder.is_dir():
            raise ValueError(f"checkpoint {folder}: not a folder")
        if manifest.is_file():
            try:
                recorded = json.loads(manifest.read_text())
            except json.JSONDecodeError as error:
                raise ValueError(f"checkpoint {folder}: {MANIFEST} is not JSON ({error})") from error
            for key in description.keys() | recorded.keys():
                if recorded.get(key) != description.get(key):
                    raise ValueError(f"checkpoint {folder} holds another evaluation: its {key} is "
                                     f"{recorded.get(key)!r}, this one's {description.get(key)!r} (give another "
                                     "folder, or delete this one to start again)")
        elif folder.is_dir() and any(folder.iterdir()):
            raise ValueError(f"checkpoint {folder}: the folder is not empty and holds no {MANIFEST}: not an "
                             "evaluation's checkpoint")
        else:
            folder.mkdir(parents=True, exist_ok=True)
            write_text(manifest, json.dumps(description, indent=1) + "\n")

    def load_into(self, scores: np.ndarray, lengths: np.ndarray, adjusted: np.ndarray, done: np.ndarray) -> None:
        """Fill the finished chunks' rows of ``scores``, ``lengths`` and ``adjusted`` (matchups, pairs, 2; adjusted
        scores stay NaN in a chunk kept without them) and mark them in ``done`` (matchups, pairs)."""
        for path in self.folder.iterdir():
            match = _CHUNK.fullmatch(path.name)
            if match is None:
                continue  # the manifest, or a temporary file a kill left behind
            m, lo, hi = map(int, match.groups())
            if m >= len(done) or not 0 <= lo < hi <= done.shape[1]:
                raise ValueError(f"checkpoint {self.folder}: {path.name} lies outside this evaluation's pairs")
            with np.load(path) as chunk:
                scores[m, lo:hi], lengths[m, lo:hi] = chunk["scores"], chunk["lengths"]
                if "adjusted" in chunk.files:
                    adjusted[m, lo:hi] = chunk["adjusted"]
            done[m, lo:hi] = True

    def save(self, matchup: int, first_pair: int, scores: np.ndarray, lengths: np.ndarray,
             adjusted: np.ndarray) -> None:
        """Keep one played chunk: pairs ``first_pair`` onwards of ``matchup`` (``adjusted``: NaN without control
        variates)."""
        name = f"matchup{matchup}-pairs{first_pair:06d}-{first_pair + len(scores):06d}.npz"
        with atomic_path(self.folder / name) as temporary, temporary.open("wb") as stream:
            np.savez(stream, scores=scores, lengths=lengths, adjusted=adjusted)
