"""Checks that an output file or folder named on a command line can be written, made before any long work.

A program that evaluates for an hour and only then finds it cannot write its ``--json`` loses the hour; these
probe the destination first (a temporary file in the nearest existing folder, removed at once), so the command
fails in a second with a one-line message instead.
"""

from __future__ import annotations

import tempfile
from pathlib import Path


def file_problem(path: Path) -> str | None:
    """Why the file ``path`` cannot be written (its folder missing, not writable, a folder in the way), or None."""
    try:
        if path.is_dir():
            return "is a folder"
        if not path.parent.is_dir():
            return f"its folder {path.parent} does not exist"
    except OSError as error:  # a folder on the way this user may not enter
        return _unreachable(error)
    return _probe(path.parent)


def folder_problem(path: Path) -> str | None:
    """Why files cannot be written in the folder ``path`` (created later if missing), or None."""
    try:
        if path.exists() and not path.is_dir():
            return "exists and is not a folder"
        existing = next((p for p in (path, *path.parents) if p.exists()), Path("."))
        if not existing.is_dir():
            return f"{existing} is a file, not a folder"
    except OSError as error:  # a folder on the way this user may not enter
        return _unreachable(error)
    return _probe(existing)


def _unreachable(error: OSError) -> str:
    return f"cannot reach it: {error.strerror or error}" + (f" ({error.filename})" if error.filename else "")


def _probe(folder: Path) -> str | None:
    try:
        with tempfile.TemporaryFile(dir=folder):
            return None
    except OSError as error:
        return f"cannot write in {folder}: {error.strerror or error}"
