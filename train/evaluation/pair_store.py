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

Nothing in the folder is trusted: only files named as this evaluation names its chunks are read, two files that
hold the same deal pair are refused (a file added to a finished folder would otherwise replace games), and a chunk
whose arrays are not the scores and lengths of its pairs is refused naming the file and what is wrong with it.
"""

from __future__ import annotations

import json
import re
import zipfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from agents.files import atomic_path, read_json, write_text
from train.output import printable
from train.table.records import DECISION_LIMIT
from uno_env.cards import short_repr

#: The file naming what the folder's games are.
MANIFEST = "evaluation.json"
#: A finished chunk: its matchup's index and its first and one-past-last deal pair (:func:`chunk_name`).
_CHUNK = re.compile(r"matchup(\d+)-pairs(\d+)-(\d+)\.npz")


def chunk_name(matchup: int, first_pair: int, end_pair: int) -> str:
    """The file name of the chunk of deal pairs ``first_pair`` to ``end_pair - 1`` of ``matchup``."""
    return f"matchup{matchup}-pairs{first_pair:06d}-{end_pair:06d}.npz"


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
        if manifest.exists():
            recorded = _read_manifest(manifest, folder)
            for key in description.keys() | recorded.keys():
                if recorded.get(key) != description.get(key):
                    raise ValueError(f"checkpoint {folder} holds another evaluation: its {printable(key)} is "
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
        scores stay NaN in a chunk kept without them) and mark them in ``done`` (matchups, pairs).

        Raises:
            ValueError: a chunk lies outside this evaluation's pairs, holds pairs another chunk holds, or is not a
                chunk this class wrote (the message names the file).
        """
        loaded: list[tuple[int, int, int, str]] = []  # each chunk read: matchup, pairs lo to hi, file name
        for path in sorted(self.folder.iterdir()):
            match = _CHUNK.fullmatch(path.name)
            if match is None or path.name != chunk_name(*map(int, match.groups())):
                continue  # the manifest, a temporary file a kill left behind, or no name this class gives
            m, lo, hi = map(int, match.groups())
            if m >= len(done) or not 0 <= lo < hi <= done.shape[1]:
                raise ValueError(f"checkpoint {self.folder}: {printable(path.name)} lies outside this evaluation's "
                                 "pairs")
            if done[m, lo:hi].any():
                other = next(name for m2, lo2, hi2, name in loaded if m2 == m and lo2 < hi and lo < hi2)
                pair = lo + int(np.argmax(done[m, lo:hi]))
                raise ValueError(f"checkpoint {self.folder}: {other} and {printable(path.name)} both hold deal pair "
                                 f"{pair} of matchup {m}: one of them was not written by this evaluation (delete it)")
            scores[m, lo:hi], lengths[m, lo:hi], adjusted[m, lo:hi] = self._read_chunk(path, hi - lo)
            done[m, lo:hi] = True
            loaded.append((m, lo, hi, printable(path.name)))

    def _read_chunk(self, path: Path, pairs: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The scores, lengths and adjusted scores (NaN if it kept none) a chunk file of ``pairs`` deal pairs holds,
        checked (``ValueError`` naming it)."""
        try:
            with np.load(path, allow_pickle=False) as chunk:
                arrays = {key: chunk[key] for key in ("scores", "lengths", "adjusted") if key in chunk.files}
        except (OSError, EOFError, ValueError, zipfile.BadZipFile, zlib.error) as error:  # truncated, a folder, ...
            reason = error.strerror if isinstance(error, OSError) and error.strerror else error
            raise self._damaged(path, f"it does not load ({reason})") from None
        problem = _chunk_problem(arrays, pairs)
        if problem is not None:
            raise self._damaged(path, problem)
        return arrays["scores"], arrays["lengths"], arrays.get("adjusted", np.full((pairs, 2), np.nan))

    def _damaged(self, path: Path, problem: str) -> ValueError:
        return ValueError(f"checkpoint {self.folder}: {printable(path.name)} is not a chunk of this evaluation: "
                          f"{printable(problem)} (delete it, and the same command plays its pairs again)")

    def save(self, matchup: int, first_pair: int, scores: np.ndarray, lengths: np.ndarray,
             adjusted: np.ndarray) -> None:
        """Keep one played chunk: pairs ``first_pair`` onwards of ``matchup`` (``adjusted``: NaN without control
        variates)."""
        path = self.folder / chunk_name(matchup, first_pair, first_pair + len(scores))
        with atomic_path(path) as temporary, temporary.open("wb") as stream:
            np.savez(stream, scores=scores, lengths=lengths, adjusted=adjusted)


def _read_manifest(manifest: Path, folder: Path) -> dict[str, Any]:
    """The description a folder's manifest records (``ValueError`` naming it when it is not one)."""
    try:
        recorded = read_json(manifest)
    except OSError as error:
        raise ValueError(f"checkpoint {folder}: {MANIFEST} cannot be read ({error.strerror or error})") from None
    except ValueError as error:
        raise ValueError(f"checkpoint {folder}: {error}") from None
    if not isinstance(recorded, dict):
        raise ValueError(f"checkpoint {folder}: {MANIFEST} is not an evaluation's description (a JSON object), but "
                         f"{type(recorded).__name__} {printable(short_repr(recorded))}")
    return recorded


def _chunk_problem(arrays: dict[str, np.ndarray], pairs: int) -> str | None:
    """What is wrong with a chunk's arrays for ``pairs`` deal pairs, or None: scores of a win, a draw or a loss
    (1, 1/2, 0) and game lengths of 1 to :data:`DECISION_LIMIT` moves, each ``(pairs, 2)``."""
    for key in ("scores", "lengths"):
        if key not in arrays:
            return f"it holds no {key}"
        if arrays[key].shape != (pairs, 2):
            return f"its {key} are {arrays[key].shape}, not ({pairs}, 2) for its {pairs} deal pairs"
        if not (np.issubdtype(arrays[key].dtype, np.floating) or np.issubdtype(arrays[key].dtype, np.integer)):
            return f"its {key} are {arrays[key].dtype}, not numbers"
    if not np.isin(arrays["scores"], (0.0, 0.5, 1.0)).all():
        return "its scores are not all 0, 0.5 or 1 (a loss, a draw or a win)"
    if not np.issubdtype(arrays["lengths"].dtype, np.integer) or not (
            (arrays["lengths"] >= 1) & (arrays["lengths"] <= DECISION_LIMIT)).all():
        return f"its lengths are not all whole numbers of moves from 1 to {DECISION_LIMIT}"
    if "adjusted" in arrays and (arrays["adjusted"].shape != (pairs, 2)
                                 or not np.issubdtype(arrays["adjusted"].dtype, np.floating)):
        return f"its adjusted scores are not ({pairs}, 2) numbers"
    return None
