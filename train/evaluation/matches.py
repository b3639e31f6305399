"""Evaluate a player against opponents: paired, seat-balanced games spread over the CPU cores.

Every *deal pair* is one deal (one seed of :func:`uno_env.match.play_game`) played twice with
the seats swapped, so each player holds each hand once and moves first once; much of the luck
of the deal cancels. All deal seeds derive from one ``seed``, and the same deals are used against
every opponent, so results are reproducible and do not depend on the number of worker processes.

Scores count a win as 1, a draw as 1/2, a loss as 0, with a 95% confidence interval (a paired t-interval
over deal pairs, or Wilson's over games where t is not trustworthy: :mod:`train.evaluation.statistics`).

With a value network (``control_variates``), each game also gets an *adjusted score*, its score minus the luck of
its draws as the network measures it (:mod:`train.evaluation.control_variates`): the same expectation, a smaller
variance. A sequential test can stop the games as soon as a result is decided (``stop``, :mod:`train.evaluation.sprt`).

The command line is ``uno-evaluate`` (:mod:`train.cli.evaluate`).
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm import tqdm

from agents.files import file_digest
from train.evaluation.control_variates import game_correction
from train.evaluation.lookahead import seat_players
from train.evaluation.pair_store import PairStore
from train.evaluation.statistics import CI_METHODS, mean_interval, paired_interval, score_interval
from train.evaluation.value import ValueFunction
from train.interrupts import as_finished
from train.policies import resolve_policy
from train.specs import checkpoint_path, label
from train.table.records import record_match
from uno_env.game import Game
from uno_env.match import play_game
from uno_env.policy import Policy

Player = str | Policy
#: ``run_matches``' sequential stopping rule: ``stop(done, scores, adjusted) -> bool``.
Stop = Callable[[np.ndarray, np.ndarray, np.ndarray], bool]


@dataclass(frozen=True)
class MatchResult:
    """The outcome of ``agent`` against ``opponent`` over ``pairs`` deal pairs (2 games each)."""

    agent: str
    opponent: str
    pair_scores: np.ndarray = field(repr=False)  # (pairs, 2): the agent's score in each game of each pair
    lengths: np.ndarray = field(repr=False)  # (pairs, 2): decisions per game
    #: (pairs, 2): the agent's adjusted score in each game (control variates), or None without them
    adjusted_scores: np.ndarray | None = field(default=None, repr=False)

    @property
    def pairs(self) -> int:
        return len(self.pair_scores)

    @property
    def games(self) -> int:
        return self.pair_scores.size

    @property
    def wins(self) -> int:
        return int((self.pair_scores == 1.0).sum())

    @property
    def draws(self) -> int:
        return int((self.pair_scores == 0.5).sum())

    @property
    def losses(self) -> int:
        return int((self.pair_scores == 0.0).sum())

    @property
    def score(self) -> float:
        """Mean score of the agent: its win rate with draws counted as half."""
        return float(self.pair_scores.mean())

    @property
    def ci(self) -> tuple[float, float]:
        """95% confidence interval of :attr:`score` (module docstring)."""
        return paired_interval(self.pair_scores)

    @property
    def ci_method(self) -> str:
        """How :attr:`ci` was computed: ``"t"`` or ``"W"`` (:data:`CI_METHODS`)."""
        return score_interval(self.pair_scores)[2]

    @property
    def adjusted(self) -> tuple[float, float, float] | None:
        """The adjusted score and its 95% paired t-interval, ``(mean, low, high)``; ``None`` without control
        variates. Adjusted scores are not confined to [0, 1], so the interval is always t's, never Wilson's."""
        if self.adjusted_scores is None:
            return None
        means = self.adjusted_scores.mean(axis=1)
        return mean_interval(means) if len(means) > 1 else (float(means.mean()), np.nan, np.nan)

    @property
    def mean_length(self) -> float:
        """Mean decisions per game (both players, forced draws included)."""
        return float(self.lengths.mean())

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary."""
        low, high = self.ci
        row = {"agent": self.agent, "opponent": self.opponent, "pairs": self.pairs, "games": self.games,
               "wins": self.wins, "draws": self.draws, "losses": self.losses, "win_rate": self.score,
               "ci_low": low, "ci_high": high, "ci_method": CI_METHODS[self.ci_method],
               "mean_length": self.mean_length}
        if self.adjusted is not None:
            mean, low, high = self.adjusted
            row["adjusted"] = {"win_rate": mean, "ci_low": low, "ci_high": high, "method": ADJUSTED_METHOD}
        return row


#: How the adjusted scores' interval is made, as the JSON rows name it.
ADJUSTED_METHOD = ("control variates (at every draw and known-probability move, a full-state value network at the "
                   "next chance event), paired t-interval over deal pairs")


def deal_seeds(seed: int, pairs: int) -> tuple[np.ndarray, np.ndarray]:
    """The game seeds and first-moving seats of ``pairs`` deal pairs, all derived from ``seed``."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, 2**62, size=pairs), rng.integers(0, 2, size=pairs)


# ---------------------------------------------------------------------------------------- workers
_CACHE: dict[tuple[Any, ...], Policy] = {}
_VALUES: dict[tuple[Path, int], ValueFunction] = {}


def _policy(spec: Player, role: int, deterministic: bool) -> Policy:
    """A worker's policy for a seat role; string specs are loaded once per worker (and per file version)."""
    if not isinstance(spec, str):
        return resolve_policy(spec)
    path = checkpoint_path(spec)
    key = (spec, role, deterministic, path.stat().st_mtime_ns if path else None)
    if key not in _CACHE:
        _CACHE[key] = resolve_policy(spec, deterministic=deterministic)
    return _CACHE[key]


def _value(path: Path) -> ValueFunction:
    """A worker's value network, loaded once per worker (and per file version)."""
    key = (path, path.stat().st_mtime_ns)
    if key not in _VALUES:
        _VALUES[key] = ValueFunction.load(path)
    return _VALUES[key]


def _init_worker(parent: int) -> None:
    # Worker processes share few cores: one torch thread each avoids oversubscription.
    torch.set_num_threads(1)
    threading.Thread(target=_exit_with, args=(parent,), daemon=True).start()


def _exit_with(parent: int) -> None:
    """End this worker once ``parent``, the process that made its pool, is gone.

    A pool's workers are the forkserver's children, not the parent's: a parent killed outright (``kill -9`` of its
    process alone, no cleanup) would leave them waiting for work forever."""
    while not _ended(parent):
        time.sleep(1.0)
    os._exit(1)


def _ended(pid: int) -> bool:
    """Whether process ``pid`` has ended. On Linux a process killed but not yet reaped by its own parent (a zombie)
    has ended too: it still answers ``os.kill``, and a parent that waits for our output before reaping it (as
    ``subprocess``'s ``communicate`` does) would wait forever."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        if os.path.exists("/proc/self/stat"):
            return True  # Linux, and no such process
    try:  # no /proc: ask the kernel
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def _play_chunk(agent: Player, opponent: Player, seeds: np.ndarray, firsts: np.ndarray,
                n_particles: int, deterministic: bool, value_path: Path | None = None, save_as: Path | None = None,
                first_pair: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Play deal pairs; returns the agent's scores, the game lengths and the agent's adjusted scores (by the value
    network at ``value_path``; NaN without one), each (len(seeds), 2).

    With ``save_as`` (a folder and the start of a name), each game's record (:mod:`train.table.records`) is saved
    as ``save_as`` followed by the deal pair's number (``first_pair`` is the number of this chunk's first pair) and
    a/b for the seats; a record never replaces a file (:meth:`~train.table.records.GameRecord.save`).
    """
    agent_policy = _policy(agent, 0, deterministic)
    opponent_policy = _policy(opponent, 1, deterministic)
    value = None if value_path is None else _value(value_path)
    forward = None if value is None else seat_players((agent_policy, opponent_policy))
    replayed = None if forward is None else (forward, forward.swapped())
    scores = np.empty((len(seeds), 2))
    lengths = np.empty((len(seeds), 2), dtype=np.int64)
    adjusted = np.full((len(seeds), 2), np.nan)
    for i, (seed, first) in enumerate(zip(seeds, firsts, strict=True)):
        for game, (seats, agent_seat) in enumerate((((agent_policy, opponent_policy), 0),
                                                    ((opponent_policy, agent_policy), 1))):
            dealt: list[Game] = []
            if save_as is None:
                result = play_game(seats, int(seed), first_player=int(first), n_particles=n_particles,
                                   on_deal=dealt.append)
            else:
                specs = (agent, opponent) if agent_seat == 0 else (opponent, agent)
                result, record = record_match(seats, int(seed), int(first), [label(s) for s in specs],
                                              n_particles=n_particles, on_deal=dealt.append)
                record.save(save_as.with_name(f"{save_as.name}-pair{first_pair + i:05d}-{'ab'[game]}.json"))
            scores[i, game] = 0.5 if result.winner == -1 else float(result.winner == agent_seat)
            lengths[i, game] = result.decisions
            if value is not None:
                correction = game_correction(int(seed), int(first), dealt[0].events, seats, value, replayed[game])
                adjusted[i, game] = scores[i, game] - (correction if agent_seat == 0 else -correction)
    return scores, lengths, adjusted


#: The most deal pairs an evaluation plays per matchup: hours of the fastest players' games, and arrays of tens of
#: megabytes; more is surely a typo (``--pairs 10**20`` would ask numpy for zettabytes).
MAX_PAIRS = 1_000_000
#: Deal pairs in a chunk at most when a checkpoint keeps them: what a kill can cost each worker (about a minute of
#: the guided search's games).
CHECKPOINT_CHUNK = 20


def usable_cores() -> int:
    """The CPU cores this process may run on (its affinity where the system tells it, else all of them)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


_SAID_CLAMPED: set[int] = set()  # the worker counts already said to be too many: said once, not at every evaluation


def pool_size(workers: int | None) -> int:
    """How many processes a local pool asked for ``workers`` gets: ``workers``, at most :func:`usable_cores`
    (None: that many). Every process pool of the project is sized here.

    Games use a core each, so more processes only share the cores, each with its own copy of the players: a
    hundred thousand asked for would exhaust the memory. More than the cores is said once, on standard error.
    """
    cores = usable_cores()
    if workers is not None and workers > cores and workers not in _SAID_CLAMPED:
        _SAID_CLAMPED.add(workers)
        print(f"{workers} worker processes asked for, but this machine gives {cores} cores: using {cores}",
              file=sys.stderr, flush=True)
    return min(workers or cores, cores)


def make_executor(workers: int) -> ProcessPoolExecutor:
    """A process pool for :func:`run_matches` (forkserver: safe with torch loaded in the parent) of
    :func:`pool_size` processes."""
    return ProcessPoolExecutor(max_workers=pool_size(workers), mp_context=get_context("forkserver"),
                               initializer=_init_worker, initargs=(os.getpid(),))


def abandon(pool: Executor) -> None:
    """Stop a pool at once, after an interrupt or an error: queued work dropped, its processes terminated, nothing
    waited for.

    A worker terminated while it writes its result leaves half a message in a process pool's result pipe, and the
    pool's manager thread then waits in ``recv`` for the rest, which never comes. Python joins that thread when it
    exits, so the process would never end (as a labelling run stopped by SIGTERM does on CPython 3.11).
    Once the workers are gone, the last writer of that pipe is this process's end: closing it ends the read with EOF,
    and the manager thread then takes the pool as broken and finishes."""
    results = getattr(pool, "_result_queue", None)  # a ProcessPoolExecutor's; shutdown() forgets it
    pool.shutdown(wait=False, cancel_futures=True)
    stop_stray_processes()
    if results is not None:
        results._writer.close()


def worker_lost(pool: Executor) -> bool:
    """Whether a worker process of a process pool has died (its pool may never tell: see :func:`abandon`).

    A worker killed while it writes its result leaves the pool's manager thread waiting in ``recv`` for the rest of
    the message: the pool is never marked broken and its futures never finish. Checking the processes themselves
    finds the loss anyway. Executors without processes of their own (Ray's) never report one."""
    processes = getattr(pool, "_processes", None) or {}
    return any(process.exitcode is not None for process in list(processes.values()))


def stop_stray_processes() -> None:
    """Terminate the processes this one started that are still alive once its pools are closed.

    A signal that lands while a process pool is starting a worker can leave that worker unknown to the
    pool, so closing the pool does not stop it, and it would wait for work forever after the run ends.
    """
    for child in multiprocessing.active_children():
        child.terminate()
        child.join()


def run_matches(matchups: Sequence[tuple[Player, Player]], pairs: int, seed: int = 0, workers: int | None = None,
                n_particles: int = 200, deterministic: bool = True,
                executor: Executor | None = None, progress: bool = False,
                save_games: Path | None = None, checkpoint: Path | None = None,
                control_variates: Path | None = None, stop: Stop | None = None,
                chunk: int | None = None) -> list[MatchResult]:
    """Play every (agent, opponent) matchup on the same ``pairs`` deal pairs; results in matchup order.

    Games go to ``executor`` if given, else to a pool of ``workers`` processes (default, and at most: all
    cores, :func:`pool_size`; 1 plays in this process). The results do not depend on how games are spread.
    ``progress`` shows a progress bar of deal pairs on standard error (tqdm; only on a terminal).
    ``save_games`` is a folder (created if missing) that receives every game's record as JSON, named by the matchup,
    ``seed`` and the deal pair (``rule-vs-random-seed0-pair00000-a.json``); a name already taken gets a number.
    ``checkpoint`` is a folder that keeps every chunk of deal pairs as it is played
    (:class:`~train.evaluation.pair_store.PairStore`): the same call again plays only the pairs it does not hold,
    and gives the results an uninterrupted call would have.
    ``control_variates`` is a value network file (:mod:`train.evaluation.value`): every game then also gets its
    adjusted score (:attr:`MatchResult.adjusted_scores`).
    ``stop(done, scores, adjusted)`` is asked, before any game and after every chunk, whether to stop playing
    (a sequential test); it gets the (matchups, pairs) mask of the pairs played and their (matchups, pairs, 2)
    scores and adjusted scores (NaN where not played). Once it says yes the chunks not started are dropped, and the
    results hold NaN for the pairs never played. ``chunk`` caps the deal pairs in a chunk (the unit of work).
    """
    if pairs < 1:
        raise ValueError(f"pairs must be at least 1, got {pairs}")
    if pairs > MAX_PAIRS:
        raise ValueError(f"pairs must be at most {MAX_PAIRS}, got {pairs}")
    if save_games is not None:
        save_games.mkdir(parents=True, exist_ok=True)
    seeds, firsts = deal_seeds(seed, pairs)
    scores = np.full((len(matchups), pairs, 2), np.nan)
    lengths = np.zeros((len(matchups), pairs, 2), dtype=np.int64)
    adjusted = np.full((len(matchups), pairs, 2), np.nan)
    done = np.zeros((len(matchups), pairs), dtype=bool)
    store = None
    if checkpoint is not None:
        description = _description(matchups, pairs, seed, n_particles, deterministic)
        if control_variates is not None:  # chunks kept without adjusted scores are not mixed with adjusted ones
            description["control_variates"] = {"value": ValueFunction.load(control_variates).digest(),
                                               "at": "the next chance event"}
        store = PairStore(checkpoint, description)
        store.load_into(scores, lengths, adjusted, done)
    workers = pool_size(workers) if executor is None else workers or usable_cores()
    in_process = executor is None and workers == 1
    # Chunks of deal pairs: the unit of work for the pool, of the progress bar and of a checkpoint.
    size = -(-pairs // max(1, min(pairs, 4 * workers if not in_process else 10)))
    if store is not None:
        size = min(size, CHECKPOINT_CHUNK)
    if chunk is not None:
        size = min(size, chunk)
    chunks = [(m, lo, hi) for m in range(len(matchups)) for lo, hi in _runs(np.flatnonzero(~done[m]), size)]
    save_as = [None if save_games is None else save_games / f"{label(a)}-vs-{label(o)}-seed{seed}"
               for a, o in matchups]

    def finish(m: int, lo: int, hi: int, part: tuple[np.ndarray, np.ndarray, np.ndarray]) -> bool:
        """Keep a played chunk; whether to stop now."""
        scores[m, lo:hi], lengths[m, lo:hi], adjusted[m, lo:hi] = part
        done[m, lo:hi] = True
        if store is not None:
            store.save(m, lo, *part)
        bar.update(hi - lo)
        return stop is not None and stop(done, scores, adjusted)

    # disable=None: tqdm draws only on a terminal, so logs and captured output stay clean.
    with tqdm(total=pairs * len(matchups), initial=int(done.sum()), unit="pair", desc="deal pairs",
              disable=None if progress else True, file=sys.stderr, leave=False) as bar:
        if stop is not None and stop(done, scores, adjusted):
            chunks = []  # decided by the pairs a checkpoint holds
        if in_process:
            for m, lo, hi in chunks:
                a, o = matchups[m]
                if finish(m, lo, hi, _play_chunk(a, o, seeds[lo:hi], firsts[lo:hi], n_particles, deterministic,
                                                 control_variates, save_as[m], lo)):
                    break
        elif chunks:
            own = executor is None
            pool = make_executor(workers) if own else executor
            try:
                futures = {pool.submit(_play_chunk, *matchups[m], seeds[lo:hi], firsts[lo:hi], n_particles,
                                       deterministic, control_variates, save_as[m], lo): (m, lo, hi)
                           for m, lo, hi in chunks}
                stopped = False
                for future in as_finished(futures, stop=lambda: worker_lost(pool)):
                    if finish(*futures[future], future.result()):
                        stopped = True
                        for other in futures:  # the chunks being played finish; the others never start
                            other.cancel()
                        break
                if not stopped and not all(future.done() for future in futures):  # a worker died
                    raise BrokenProcessPool("a worker process of the evaluation died (killed?); its pool was stopped")
            except BaseException:
                if own:  # stopped (Ctrl-C, an error): not waiting for the chunks being played, which can take minutes
                    abandon(pool)
                raise
            if own:
                pool.shutdown()
    return [MatchResult(label(a), label(o), scores[m], lengths[m], None if control_variates is None else adjusted[m])
            for m, (a, o) in enumerate(matchups)]


def _runs(todo: np.ndarray, size: int) -> list[tuple[int, int]]:
    """The sorted pair indices ``todo`` as ranges ``(lo, hi)`` of consecutive pairs, each at most ``size`` long."""
    ranges = []
    for run in np.split(todo, np.flatnonzero(np.diff(todo) != 1) + 1):
        if len(run):
            start, end = int(run[0]), int(run[-1]) + 1
            ranges += [(lo, min(lo + size, end)) for lo in range(start, end, size)]
    return ranges


def _description(matchups: Sequence[tuple[Player, Player]], pairs: int, seed: int, n_particles: int,
                 deterministic: bool) -> dict[str, Any]:
    """What an evaluation is, for its checkpoint: the same description means the same games."""
    def player(spec: Player) -> str:
        path = checkpoint_path(spec) if isinstance(spec, str) else None
        return label(spec) if path is None else f"{label(spec)} ({file_digest(path)})"

    return {"matchups": [[player(a), player(o)] for a, o in matchups], "pairs": pairs, "seed": seed,
            "n_particles": n_particles, "deterministic": deterministic}


def evaluate(agent: Player, opponents: Sequence[Player] = ("random", "rule"), pairs: int = 200, seed: int = 0,
             workers: int | None = None, n_particles: int = 200, deterministic: bool = True,
             executor: Executor | None = None, progress: bool = False,
             save_games: Path | None = None, checkpoint: Path | None = None,
             control_variates: Path | None = None) -> list[MatchResult]:
    """Play ``agent`` against each opponent on ``pairs`` deal pairs (2 * pairs games each).

    Players are specs (:mod:`train.policies`: names, checkpoints, ``module:attribute``) or Policy
    objects. See :func:`run_matches` for ``workers``/``executor``/``progress``/``save_games``/``checkpoint``/
    ``control_variates``.
    """
    return run_matches([(agent, opponent) for opponent in opponents], pairs, seed, workers, n_particles,
                       deterministic, executor, progress, save_games, checkpoint, control_variates)


def format_table(results: Sequence[MatchResult]) -> str:
    """A Markdown table of win rates with 95% CIs, W-D-L counts and mean game length, then a note on the CIs.

    Markdown rather than a terminal-only table (rich): the same text goes into model cards and docs.
    """
    adjusted = any(r.adjusted is not None for r in results)
    lines = ["| agent | opponent | games | win rate | 95% CI | W-D-L | mean length |"
             + (" adjusted | adjusted 95% CI |" if adjusted else ""),
             "| --- | --- | ---: | ---: | ---: | ---: | ---: |" + (" ---: | ---: |" if adjusted else "")]
    for r in results:
        low, high, method = score_interval(r.pair_scores)
        line = (f"| {r.agent} | {r.opponent} | {r.games} | {r.score:.1%} | {low:.1%} - {high:.1%} ({method}) | "
                f"{r.wins}-{r.draws}-{r.losses} | {r.mean_length:.1f} |")
        if adjusted:
            mean, a_low, a_high = r.adjusted or (np.nan,) * 3
            line += f" {mean:.1%} | {a_low:.1%} - {a_high:.1%} |"
        lines.append(line)
    used = sorted({score_interval(r.pair_scores)[2] for r in results}, reverse=True)
    lines += ["", "95% CI: " + "; ".join(f"{method} = {CI_METHODS[method]}" for method in used) + "."]
    if adjusted:
        lines.append(f"adjusted: {ADJUSTED_METHOD}.")
    return "\n".join(lines)
