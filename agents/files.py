"""Atomic file writes (a file appears whole under its name or not at all), files named by their content, and JSON
read from files that may have been crafted.

Checkpoints, the best model and a run's records are written through :func:`atomic_path`: the content goes
to a temporary name in the same folder (so the final ``os.replace`` is a rename within one file system,
atomic on POSIX and Windows), is flushed to disk, and only then takes the final name. A process killed
mid-write, or a full disk, leaves the previous file (or none) and at worst a hidden ``.*.tmp*`` file,
never a torn file under the real name.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

#: The most digits a JSON integer may have: more than any seed or count (2**64 has 20), far fewer than Python's
#: int-conversion limit, whose error names no file.
MAX_JSON_DIGITS = 40


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; on success it is synced and renamed to ``path``.

    The temporary name keeps the suffix (SB3's ``save`` appends ``.zip`` to a path without it) and starts with
    a dot, so globs like ``step_*.zip`` never see it. On an exception the temporary file is removed and
    ``path`` is untouched.
    """
    path = Path(path)
    temporary = path.with_name(f".{path.stem}.{os.getpid()}.tmp{path.suffix}")
    try:
        with naming_errors(path):
            yield temporary
            with open(temporary, "rb+") as handle:
                os.fsync(handle.fileno())  # the data on disk before the name points at it
            os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


@contextmanager
def naming_errors(path: str | Path) -> Iterator[None]:
    """Give an ``OSError`` raised inside that names no file the name ``path``: a write that finds the disk full names
    none, and the message must say which output it was."""
    try:
        yield
    except OSError as error:
        if error.filename is None:
            error.filename = str(path)
        raise


def write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` to ``path`` atomically (:func:`atomic_path`)."""
    with atomic_path(path) as temporary:
        temporary.write_text(text)
    return Path(path)


def copy_file(source: str | Path, path: str | Path) -> Path:
    """Copy ``source`` to ``path`` atomically (:func:`atomic_path`)."""
    with atomic_path(path) as temporary:
        shutil.copyfile(source, temporary)
    return Path(path)


def file_digest(path: str | Path) -> str:
    """``sha256:`` and the hex SHA-256 of a file's bytes: names a checkpoint by its content, so a network retrained
    under the same name is not taken for the old one."""
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return "sha256:" + digest.hexdigest()


def set_aside(path: str | Path, reason: str, then: str = "") -> Path:
    """Rename a file that does not load to ``NAME.broken`` (out of every glob), saying why on standard error.

    ``then`` ends the message with what happens next (e.g. that the file will be made again). Returns the new path.
    """
    path = Path(path)
    broken = path.with_name(path.name + ".broken")
    path.replace(broken)
    print(f"skipped {path} (renamed to {broken.name}): {reason}{then}", file=sys.stderr, flush=True)
    return broken


def parse_json(text: str | bytes, source: str) -> Any:
    """The JSON value of ``text`` (bytes must be UTF-8); ``ValueError`` starting with ``source`` (a file's name) for
    text that is not UTF-8 or not JSON, nested too deep to read (a crafted file of 100,000 brackets), or holding an
    integer of more than :data:`MAX_JSON_DIGITS` digits."""
    try:
        return json.loads(text, parse_int=_bounded_int)
    except UnicodeDecodeError:
        raise ValueError(f"{source} is not JSON: it is not UTF-8 text") from None
    except RecursionError:
        raise ValueError(f"{source} is not JSON this program reads: it is nested too deep") from None
    except _LongInteger as error:
        raise ValueError(f"{source} is not JSON this program reads: {error}") from None
    except ValueError as error:  # json.JSONDecodeError
        raise ValueError(f"{source} is not JSON: {error}") from None


def read_json(path: str | Path) -> Any:
    """The JSON value of the file ``path`` (:func:`parse_json`'s checks; ``OSError`` when it cannot be read)."""
    return parse_json(Path(path).read_bytes(), str(path))


class _LongInteger(ValueError):
    """A JSON integer longer than :data:`MAX_JSON_DIGITS` digits."""


def _bounded_int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_JSON_DIGITS:
        raise _LongInteger(f"it holds an integer of {len(digits.lstrip('-')):,} digits (at most {MAX_JSON_DIGITS} are "
                         "read)")
    return int(digits)
