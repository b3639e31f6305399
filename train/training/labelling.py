"""Labelling jobs in shards: the search's labels made, kept and gathered on local processes or Ray tasks.

A generation of expert iteration labels the positions of ``games`` games
(:func:`train.training.search_labels.collect`). This module cuts that work into **shards** of ``shard_games``
games each and makes it survive anything that can happen to a long run:

* **Same seed, same labels, however the work is spread.** Shard ``s`` of generation ``g`` plays its games from the
  seed ``SeedSequence([seed, g, s])``, so the labels depend on neither the number of workers nor the machines, nor on
  whether the run was killed and resumed.
* **Checkpointed as they are made.** Each finished shard is written at once as ``shard_NNNNN.npz`` (under a
  temporary name, then renamed: :mod:`agents.files`), and ``labels.json`` records the settings and the shards
  written. ``--resume`` after a kill at any moment reuses every finished shard and labels only the missing ones.
  The workers send their labels back and the driver writes them, so on a Ray cluster the files land in the run
  folder, not on the machine that made them.
* **Never mixed.** Each shard carries the settings it was made with (:meth:`LabelJob.settings`); a folder whose
  labels were made with other settings is refused with a message naming the first setting that differs. A shard
  that does not load or does not match (a copy cut short, a disk error) is set aside as ``NAME.broken`` with
  its reason, and labelled again.
* **Stopped at once.** Ctrl-C (or SIGTERM turned into it by ``uno-train``) cancels the queued shards and
  terminates the workers; finished shards stay. A worker process that dies is replaced and its shard labelled
  again (Ray retries a task on its own; the local pool is rebuilt), so no shard is lost or counted twice.
* **Watched.** A progress bar across workers (games labelled, positions, positions per second, time left) on a
  terminal; elsewhere (a log file, a pipe) a plain progress line every :data:`PROGRESS_SECONDS` seconds.

Layout of a generation's folder::

    FOLDER/labels.json          {"settings": {...}, "shards": {"0": {"games": 50, "positions": 431}, ...}}
    FOLDER/shard_00000.npz      observations, values, moves, the settings and the shard's index
"""

from __future__ import annotations

import json
import sys
import threading
import time
import zipfile
import zlib
from concurrent.futures import Executor, Future
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from agents.files import atomic_path, file_digest, set_aside, write_text
from train.config import SELF, ConfigError
from train.evaluation.matches import abandon, make_executor, pool_size, worker_lost
from train.interrupts import as_finished, signals_held
from train.training.search_labels import BUILT_IN_BASES, SearchLabels, collect
from uno_env.belief import BeliefKind, LearnedOpponent
from uno_env.cards import NUM_ACTIONS

_MANIFEST = "labels.json"
#: Times a shard is started again after the process labelling it died, before the generation gives up.
_RETRIES = 3
#: Seconds :meth:`Workers.close` waits for a pool to shut down before it terminates the workers itself.
CLOSE_TIMEOUT = 60.0
#: Seconds between two plain progress lines when the labelling is not watched on a terminal.
PROGRESS_SECONDS = 10.0
Labels = tuple[np.ndarray, np.ndarray, np.ndarray]  # observations, move values (NaN: illegal), base moves


@dataclass(frozen=True)
class LabelJob:
    """What one generation labels: ``games`` games of ``base`` against ``opponent``, in shards of ``shard_games``.

    ``base`` is ``"rule"``, ``"random"`` or a checkpoint's path; ``search`` the search's settings
    (:class:`~train.training.search_labels.SearchLabels`); ``belief`` the belief features of the recorded
    observations. ``opponent`` is the mix each game's opponent is drawn from (pairs of a player and its weight;
    ``self``: one of the base players in ``pool``).
    """

    games: int
    shard_games: int
    seed: int
    generation: int
    belief: BeliefKind
    base: str
    search: SearchLabels
    opponent: tuple[tuple[str, float], ...] = (("rule", 1.0),)
    pool: tuple[str, ...] = ()

    @property
    def shards(self) -> int:
        """How many shards the generation has (the last one may have fewer games)."""
        return -(-self.games // self.shard_games)

    def shard_size(self, shard: int) -> int:
        """The games of shard ``shard``."""
        return min(self.shard_games, self.games - shard * self.shard_games)

    def shard_seed(self, shard: int) -> int:
        """Shard ``shard``'s seed: a function of the run's seed, the generation and the shard alone."""
        return int(np.random.SeedSequence([self.seed, self.generation, shard]).generate_state(1)[0])

    def settings(self) -> dict[str, Any]:
        """The settings the labels depend on, by the config key a user sets (the base by its file's content: a base
        retrained differently makes other labels)."""
        settings: dict[str, Any] = {
            "seed": self.seed, "generation": self.generation, "expert_iteration.games": self.games,
            "expert_iteration.shard_games": self.shard_games, "env.belief": self.belief,
            "base player": self.base if self.base in BUILT_IN_BASES else file_digest(self.base),
            "expert_iteration.opponent": dict(self.opponent),
            "expert_iteration.simulations": self.search.simulations,
            "expert_iteration.belief": self.search.belief,
            "expert_iteration.leaf_moves": self.search.leaf_moves,
        }
        if self.search.opponent_rollout != "rule":
            # Only when set: the labels of runs made before the setting existed keep their settings, and resume.
            settings["expert_iteration.opponent_rollout"] = self.search.opponent_rollout
        if self.search.belief == "learned":
            # The learned model's candidates and weighing make other labels: a run labelled with other defaults
            # must not resume onto these.
            settings["learned opponent model"] = repr(LearnedOpponent())
        if dict(self.opponent).get(SELF, 0) > 0:
            settings["self-play pool"] = [player if player in BUILT_IN_BASES else file_digest(player)
                                          for player in self.pool]
        return settings


def label_shard(job: LabelJob, shard: int) -> Labels:
    """Label shard ``shard`` of ``job`` (run by a worker: a pool process or a Ray task)."""
    return collect(job.shard_size(shard), job.shard_seed(shard), job.belief, job.base, job.search,
                   dict(job.opponent), job.pool)


def shard_path(folder: Path, shard: int) -> Path:
    """Where shard ``shard`` of a generation lives."""
    return folder / f"shard_{shard:05d}.npz"


def _write_shard(folder: Path, shard: int, labels: Labels, settings: str) -> None:
    observations, values, moves = labels
    with atomic_path(shard_path(folder, shard)) as temporary, open(temporary, "wb") as out:
        np.savez_compressed(out, observations=observations, values=values, moves=moves,
                            settings=np.array(settings), shard=np.array(shard))


def _read_shard(path: Path, shard: int, settings: str) -> Labels:
    """A shard's labels; ``ValueError`` naming what is wrong when it does not load or does not belong here."""
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {key: data[key] for key in ("observations", "values", "moves", "settings", "shard")}
    except (OSError, EOFError, KeyError, ValueError, zipfile.BadZipFile, zlib.error) as error:
        raise ValueError(f"it does not load ({type(error).__name__}: {error})") from None
    observations, values, moves = arrays["observations"], arrays["values"], arrays["moves"]
    if str(arrays["settings"]) != settings or int(arrays["shard"]) != shard:
        raise ValueError("it was made with other settings or for another shard")
    n = len(moves)
    if (observations.ndim != 2 or values.shape != (n, NUM_ACTIONS) or moves.shape != (n,) or len(observations) != n
            or not np.isfinite(observations).all()):
        raise ValueError(f"its arrays do not fit together (observations {observations.shape}, values "
                         f"{values.shape}, moves {moves.shape})")
    return observations, values, moves


def read_generation(folder: Path) -> Labels:
    """The labels of a generation folder's finished shards, concatenated in shard order, each checked as
    ``--resume`` checks it; ``ValueError`` naming the folder or the shard when it is not a generation of labels."""
    try:
        manifest = json.loads((folder / _MANIFEST).read_text())
        fingerprint, shards = json.dumps(manifest["settings"], sort_keys=True), sorted(map(int, manifest["shards"]))
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ValueError(f"{folder} is not a generation of labels ({_MANIFEST}: {error})") from None
    if not shards:
        raise ValueError(f"{folder} is not a generation of labels: {_MANIFEST} lists no finished shard")
    parts = []
    for shard in shards:
        try:
            parts.append(_read_shard(shard_path(folder, shard), shard, fingerprint))
        except ValueError as error:
            raise ValueError(f"{shard_path(folder, shard)}: {error}") from None
    return tuple(np.concatenate(arrays) for arrays in zip(*parts, strict=True))


def check_settings(folder: Path, settings: dict[str, Any]) -> None:
    """Refuse a folder whose labels were made with other settings, naming the first that differs."""
    try:
        recorded = json.loads((folder / _MANIFEST).read_text())["settings"]
    except (OSError, ValueError, KeyError, TypeError):
        return  # no record (a first start, or one killed before it was written): the shards' own check decides
    for key, value in settings.items():
        if recorded.get(key) != value:
            raise ConfigError(f"the labels in {folder} were made with {key} = {recorded.get(key)!r}, this run asks "
                              f"for {value!r}; labels made with other settings are never mixed: set it back, or "
                              f"start a new run")


class _Manifest:
    """``labels.json``: the settings and the shards written so far, rewritten (atomically) after each shard."""

    def __init__(self, folder: Path, settings: dict[str, Any]) -> None:
        self.path = folder / _MANIFEST
        self.settings = settings
        self.shards: dict[str, dict[str, int]] = {}

    def add(self, shard: int, games: int, positions: int, write: bool = True) -> None:
        """Record a shard on disk; ``write=False`` defers the file's rewrite to :meth:`write`."""
        self.shards[str(shard)] = {"games": games, "positions": positions}
        if write:
            self.write()

    def write(self) -> None:
        shards = dict(sorted(self.shards.items(), key=lambda item: int(item[0])))
        write_text(self.path, json.dumps({"settings": self.settings, "shards": shards}, indent=1) + "\n")


class Workers:
    """Where shards are labelled: a pool of local processes, or Ray tasks (local Ray, or a cluster's ``address``).

    The executor starts on first use (a generation whose shards are all on disk starts none) and serves every generation
    of a run; a process pool that breaks (a worker killed) is replaced by :meth:`renew`. Use it as a context
    manager, or call :meth:`close`.
    """

    def __init__(self, processes: int = 2, address: str | None = None) -> None:
        self.processes = processes
        self.address = address
        self._executor: Executor | None = None

    def get(self) -> Executor:
        """The executor, started if it is not yet."""
        if self._executor is None:
            if self.address is None:
                self._executor = make_executor(self.processes)
            else:
                # Ray only when asked for: it is the optional tune extra, and the env and local runs never need it.
                from train.evaluation.distributed import RayExecutor

                self._executor = RayExecutor(None if self.address == "local" else self.address)
        return self._executor

    @property
    def width(self) -> int:
        """How many tasks run at once: the processes (at most the cores), or the Ray cluster's CPUs."""
        executor = self.get()
        return executor.cpus if hasattr(executor, "cpus") else pool_size(self.processes)

    def renew(self) -> Executor:
        """A new executor in place of a broken one (whose workers are stopped at once: nothing is worth waiting for,
        and a pool whose manager thread waits on a dead worker's half-sent result would never shut down)."""
        self.close(cancel=True)
        return self.get()

    def close(self, cancel: bool = False) -> None:
        """Stop the executor; with ``cancel``, drop queued work and terminate the workers at once.

        Without ``cancel`` the pool gets :data:`CLOSE_TIMEOUT` seconds to shut down, then its workers are
        terminated: in CPython 3.11 a worker killed (by the OOM killer, say) while the pool shuts down can leave
        ``ProcessPoolExecutor.shutdown(wait=True)`` waiting forever, and a run must not hang at a generation's end.
        """
        executor, self._executor = self._executor, None
        if executor is None:
            return
        if not cancel:
            closing = threading.Thread(target=executor.shutdown, name="close-workers", daemon=True)
            closing.start()
            closing.join(CLOSE_TIMEOUT)
            if closing.is_alive():
                print(f"the labelling workers did not stop within {CLOSE_TIMEOUT:g} s; terminating them",
                      file=sys.stderr, flush=True)
                cancel = True
        if cancel:  # not waiting for the shards being labelled
            abandon(executor)

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, kind: type[BaseException] | None, *rest: Any) -> None:
        self.close(cancel=kind is not None)


def run(job: LabelJob, folder: Path, workers: Workers, progress: bool = True) -> tuple[Labels, int]:
    """Every shard of ``job`` in ``folder``: the finished ones read back, the others labelled; all concatenated,
    and how many of the positions were labelled by this call.

    The missing shards go to ``workers`` (started only if some are missing). Raises ``ConfigError`` if the folder's
    labels were made with other settings; ``KeyboardInterrupt`` passes through after the workers are stopped
    (finished shards stay on disk).
    """
    folder.mkdir(parents=True, exist_ok=True)
    settings = job.settings()
    check_settings(folder, settings)
    fingerprint = json.dumps(settings, sort_keys=True)
    for stale in folder.glob(".shard_*.tmp*"):  # a write cut short by a kill
        stale.unlink()
    manifest = _Manifest(folder, settings)
    parts: dict[int, Labels] = {}
    for shard in range(job.shards):
        path = shard_path(folder, shard)
        if path.exists():
            try:
                parts[shard] = _read_shard(path, shard, fingerprint)
            except ValueError as error:
                set_aside(path, str(error), then="; it will be labelled again")
                continue
            manifest.add(shard, job.shard_size(shard), len(parts[shard][2]), write=False)
    manifest.write()
    missing = [shard for shard in range(job.shards) if shard not in parts]
    made = -sum(len(labels[2]) for labels in parts.values())
    if missing:
        try:
            _label(job, missing, folder, fingerprint, manifest, parts, workers, progress)
        except BaseException:
            # Ctrl-C, SIGTERM or an error: drop the queued shards and stop the workers now, not after their
            # current shards.
            workers.close(cancel=True)
            raise
    made += sum(len(labels[2]) for labels in parts.values())
    return tuple(np.concatenate([parts[shard][i] for shard in range(job.shards)]) for i in range(3)), made


def _count_attempt(job: LabelJob, shard: int, attempts: dict[int, int]) -> None:
    """One more start of ``shard`` whose worker died; too many, and the generation gives up."""
    attempts[shard] += 1
    if attempts[shard] > _RETRIES:
        raise RuntimeError(f"labelling shard {shard} of generation {job.generation} killed its worker process "
                           f"{_RETRIES + 1} times")


def _label(job: LabelJob, missing: list[int], folder: Path, fingerprint: str, manifest: _Manifest,
           parts: dict[int, Labels], workers: Workers, progress: bool) -> None:
    """Label the ``missing`` shards on ``workers``, writing each as it comes back."""
    attempts = dict.fromkeys(missing, 0)
    executor = workers.get()
    with _Progress(job, job.games - sum(job.shard_size(shard) for shard in missing), progress) as shown:
        while missing:
            futures: dict[Future, int] = {executor.submit(label_shard, job, shard): shard for shard in missing}
            lost = partial(worker_lost, executor)
            for future in as_finished(futures, stop=lambda lost=lost: shown.tick() or lost()):
                shard = futures[future]
                try:
                    labels = future.result()
                except BrokenProcessPool:
                    _count_attempt(job, shard, attempts)
                    continue
                with signals_held():  # a shard on disk is a shard in the manifest, whenever Ctrl-C comes
                    _write_shard(folder, shard, labels, fingerprint)
                    manifest.add(shard, job.shard_size(shard), len(labels[2]))
                parts[shard] = labels
                shown.add(job.shard_size(shard), len(labels[2]))
            missing = [shard for shard in missing if shard not in parts]
            if missing:  # a worker process died: its shard (and those queued with it) go to a new pool
                for future, shard in futures.items():
                    if future.running():  # the pool never said it broke (worker_lost): these were being labelled
                        _count_attempt(job, shard, attempts)
                executor = workers.renew()


class _Progress:
    """A generation's labelling progress: a tqdm bar on a terminal; elsewhere (a log file, a pipe, a notebook's
    captured output) a plain line on stdout every :data:`PROGRESS_SECONDS` seconds: games, positions, positions per
    second. ``shown=False`` shows nothing."""

    def __init__(self, job: LabelJob, done_games: int, shown: bool) -> None:
        self.job = job
        self.games = done_games
        self.positions = 0
        self.started = self.printed = time.perf_counter()
        terminal = shown and sys.stderr.isatty()
        self.lines = shown and not terminal
        self.bar = tqdm(total=job.games, initial=done_games, unit="game", desc=f"labelling generation "
                        f"{job.generation}", disable=not terminal, file=sys.stderr, leave=False)

    def rate(self) -> float:
        return self.positions / max(time.perf_counter() - self.started, 1e-9)

    def add(self, games: int, positions: int) -> None:
        """A shard of ``games`` games and ``positions`` labels is done."""
        self.games += games
        self.positions += positions
        self.bar.set_postfix_str(f"{self.positions:,} positions, {self.rate():,.0f}/s", refresh=False)
        self.bar.update(games)
        self.tick()

    def tick(self) -> bool:
        """Print a plain progress line if one is due; False (for :func:`~train.interrupts.as_finished`'s ``stop``)."""
        now = time.perf_counter()
        if self.lines and now - self.printed >= PROGRESS_SECONDS:
            self.printed = now
            print(f"labelling generation {self.job.generation}: {self.games:,}/{self.job.games:,} games, "
                  f"{self.positions:,} positions, {self.rate():,.1f} positions/s, {now - self.started:,.0f} s",
                  flush=True)
        return False

    def __enter__(self) -> _Progress:
        return self

    def __exit__(self, *exception: Any) -> None:
        self.bar.close()
