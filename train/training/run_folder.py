"""A run folder's records: the lock that keeps one process in it, its checkpoints, evaluations and sessions.

What :mod:`train.training.trainer` reads back when a run resumes lives here, each with the repair it needs after a
kill at any moment: a torn evaluation line is dropped, a checkpoint that does not load is set aside with its reason,
the records of steps after the checkpoint resumed from are dropped (they are made again), and each session's time
is rewritten at every checkpoint (``run_info.json``).
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import platform
import sys
import time
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

from agents.files import copy_file, set_aside, write_text
from agents.ppo import load_network, read_settings
from train.config import ConfigError
from uno_env.cards import short_repr

#: The file a training process holds locked in its run folder.
LOCK = ".lock"


def read_evaluations(path: Path) -> list[dict[str, Any]]:
    """The records of ``evaluations.jsonl``; a torn line (a write cut short by a kill) is left out.

    So is a line of valid JSON without the fields a run reads back (``step``, ``mean_win_rate``): a file edited
    or written by something else must not stop a resume.
    """
    if not path.exists():
        return []
    records = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if _is_evaluation(record):
            records.append(record)
    return records


def _is_evaluation(record: Any) -> bool:
    """Whether a parsed line has what a run reads back: an int ``step`` and a finite ``mean_win_rate``."""
    number = record.get("mean_win_rate") if isinstance(record, dict) else None
    return isinstance(record, dict) and type(record.get("step")) is int and type(number) in (int, float) \
        and (type(number) is int or math.isfinite(number))


def checkpoint_problem(path: Path) -> str | None:
    """Why a checkpoint of this run does not load (read without unpickling), or None.

    Besides the network a player loads, every member :func:`~agents.ppo.load_model` reads must be whole (its CRC
    checked) and ``data`` must be a JSON object, or ``--resume`` would stop on it.
    """
    try:
        load_network(path, read_settings(path, trusted=False), trusted=False)
        with zipfile.ZipFile(path) as archive:
            for info in archive.infolist():
                content = archive.read(info)
                if info.filename == "data" and not isinstance(json.loads(content), dict):
                    raise ValueError(f"{path} is not a valid checkpoint: its data member is not a JSON object")
    except (ValueError, OSError) as error:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        return str(error)
    except (zipfile.BadZipFile, zlib.error, EOFError, RecursionError) as error:
        return f"{path} is not a valid checkpoint (a damaged member: {short_repr(str(error))})"
    return None


def machine() -> str:
    """A one-line description of this machine for model cards and run records."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} x {model}, Python {platform.python_version()}, torch {torch.__version__}"


@contextmanager
def run_lock(run_dir: Path) -> Iterator[None]:
    """Hold ``RUN_DIR/.lock`` while training, so two processes never write one run folder at once.

    The lock file goes when the run ends, and so does the folder if this call created it and nothing was
    written: a refused command leaves the disk as it was. (A killed process leaves a stale ``.lock`` file,
    but not the lock: that goes with the process.) Because the file is deleted on release, a process may
    lock a file that was just deleted while a third one locks its replacement; so a lock only counts if
    the name still points at the locked file afterwards, and otherwise we try again.
    """
    if run_dir.exists() and not run_dir.is_dir():
        raise ConfigError(f"run folder {run_dir} is a file, not a folder")
    created = not run_dir.exists()
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        os.close(os.open(run_dir / LOCK, os.O_WRONLY | os.O_CREAT, 0o644))  # writable: checked before anything
    except (OSError, ValueError) as error:  # under a file, unwritable, a NUL in the name
        raise ConfigError(f"cannot write the run folder {short_repr(str(run_dir))}: "
                          f"{short_repr(getattr(error, 'strerror', None) or str(error))}") from None
    lock = run_dir / LOCK
    try:
        while True:
            handle = open(lock, "a")  # noqa: SIM115  (kept open, and locked, for the whole run)
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                handle.close()
                raise ConfigError(f"run folder {run_dir} is in use by another training process") from None
            try:
                current = os.stat(lock).st_ino
            except FileNotFoundError:
                current = None
            if current == os.fstat(handle.fileno()).st_ino:
                break
            handle.close()  # we locked a deleted lock file: the holder released it; take the new one
        with handle:
            try:
                yield
            finally:
                lock.unlink(missing_ok=True)  # while still locked: nobody can hold the name's new file yet
    finally:
        if created and not any(run_dir.iterdir()):
            run_dir.rmdir()


def resume_checkpoint(run_dir: Path) -> Path:
    """The newest checkpoint of the run that loads; newer ones that do not are set aside, each with its reason.

    Checkpoints are written atomically, but a run folder from an older version, a disk error or a copy
    cut short can still hold a torn one; resuming must not need a hand to delete it.
    """
    for path in sorted((run_dir / "checkpoints").glob("step_*.zip"), reverse=True):
        problem = checkpoint_problem(path)
        if problem is None:
            return path
        set_aside(path, problem)
    raise ConfigError(f"cannot resume {run_dir}: none of its checkpoints/step_*.zip loads")


def read_run_info(path: Path) -> dict[str, Any] | None:
    """``run_info.json``, or None when it is missing or unreadable (a torn file from an older version).

    A file that parses but has not the shape this module writes (e.g. edited by hand) is set aside as
    ``run_info.json.broken`` rather than read: the sessions recorded from now on start a new one.
    """
    try:
        info = json.loads(path.read_text())
    except (OSError, ValueError, RecursionError):
        return None
    sessions = info.get("sessions") if isinstance(info, dict) else None
    if isinstance(sessions, list) and all(
            isinstance(s, dict) and isinstance(s.get("train_seconds"), int | float) for s in sessions):
        return info
    set_aside(path, "it is not a record of sessions this version wrote", then="; a new one is started")
    return None


def finished(run_dir: Path) -> bool:
    """Whether the run's last session ended normally (final evaluation written)."""
    info = read_run_info(run_dir / "run_info.json")
    return bool(info and info["sessions"] and info["sessions"][-1].get("finished"))


def repair_records(run_dir: Path, step: int) -> None:
    """Before resuming from ``step``: drop torn lines and records after ``step``, set aside a bad best model.

    The session that is resumed may have run past its last checkpoint; what it logged after it is done
    again, and would otherwise appear twice.
    """
    evaluations = run_dir / "evaluations.jsonl"
    if evaluations.exists():
        records = read_evaluations(evaluations)
        lines = [line for line in evaluations.read_text(errors="replace").splitlines() if line.strip()]
        if len(lines) - len(records) > 1:  # more than a torn last line: lines this version did not write
            copy_file(evaluations, evaluations.with_name(evaluations.name + ".broken"))
            print(f"{evaluations}: {len(lines) - len(records)} lines are not evaluation records; they are left out "
                  f"(the file as it was is kept as {evaluations.name}.broken)", file=sys.stderr, flush=True)
        kept = [r for r in records if r["step"] <= step]
        write_text(evaluations, "".join(json.dumps(r) + "\n" for r in kept))
    best = run_dir / "best_model.zip"
    if best.exists():
        problem = checkpoint_problem(best)
        if problem is None and read_settings(best)["steps"] > step:
            problem = f"it is from step {read_settings(best)['steps']:,}, after the checkpoint resumed from"
        if problem is not None:
            set_aside(best, problem)
            # the best of the evaluations kept, if its checkpoint is still there; else the end of the run picks one
            records = read_evaluations(evaluations)
            if records:
                top = max(records, key=lambda r: r["mean_win_rate"])
                source = run_dir / "checkpoints" / str(top.get("checkpoint"))
                if source.is_file() and checkpoint_problem(source) is None:
                    copy_file(source, best)


class SessionRecord:
    """This session's entry in ``RUN_DIR/run_info.json``, rewritten at every checkpoint (and after each generation).

    A run that is killed (or dies) keeps the record of the steps and time it had reached at its last
    checkpoint, which is where ``--resume`` continues; ``finished`` turns true when the session ends normally.
    A session's time is its wall time from ``started`` (a ``time.perf_counter()`` reading, by default now): expert
    iteration, PPO, evaluations and the final evaluation; ``total_train_seconds`` adds up the sessions. ``fit``
    holds the metrics of the run's fit (``{"expert_iteration": {...}}`` or ``{"distil": {...}}``) once it is made.
    """

    def __init__(self, run_dir: Path, start_step: int, started: float | None = None) -> None:
        self.path = run_dir / "run_info.json"
        self.start_step = start_step
        self.fit: dict[str, dict[str, float]] = {}
        self.info = read_run_info(self.path) or {"machine": machine(), "sessions": []}
        self.index = len(self.info["sessions"])
        self.started = time.perf_counter() if started is None else started

    def total_seconds(self) -> float:
        """Wall time of the whole run until now: the earlier sessions' plus this one's so far."""
        earlier = sum(s["train_seconds"] for s in self.info["sessions"][:self.index])
        return earlier + time.perf_counter() - self.started

    def update(self, step: int, finished: bool = False) -> None:
        """Record that the session reached ``step`` now, or (``finished``) that it ended, after its final evaluation."""
        seconds = time.perf_counter() - self.started
        self.info.update(self.fit)
        entry = {"from_step": self.start_step, "to_step": step, "train_seconds": round(seconds, 1),
                 "steps_per_second": round((step - self.start_step) / seconds, 1) if seconds else None,
                 "finished": finished}
        self.info["sessions"][self.index:] = [entry]
        self.info["total_train_seconds"] = round(sum(s["train_seconds"] for s in self.info["sessions"]), 1)
        write_text(self.path, json.dumps(self.info, indent=1) + "\n")
