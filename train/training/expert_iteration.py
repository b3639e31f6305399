"""Expert iteration: generations of a player improved by the search and distilled into a network.

Each generation plays its player against ``expert_iteration.opponent``; at every decision with a choice the search
player values every legal move with rollouts that continue with the generation's player
(:mod:`train.training.search_labels`, labelled in shards by :mod:`train.training.labelling`); a network regresses those
values (:mod:`train.training.fit`) and, if it is not worse than the player it improved on (the gate), becomes the
next generation's player. Generation 1's player is ``expert_iteration.start`` (``rule``, ``random``, or a
checkpoint); the last generation fits the run's network.

Everything a generation makes is on disk before the next starts, in the run's ``expert_iteration/`` folder::

    generation_K/          its label shards (labels.json, shard_NNNNN.npz)
    generation_K.zip       its network
    generation_K.json      its record (fit metrics, gate results, positions a second, seconds), written last

so called again on the same folder after a kill, :func:`run_expert_iteration` skips the generations done, reuses their
shards and networks, and gives the same result.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from agents.files import write_text
from agents.ppo import load_network, save_model
from train.config import SELF, ConfigError, TrainConfig
from train.evaluation.matches import evaluate
from train.evaluation.statistics import score_interval
from train.policies import spec_belief
from train.specs import checkpoint_path
from train.training import labelling
from train.training.fit import EpochLog, fit, fit_values
from train.training.labelling import Workers
from train.training.search_labels import BUILT_IN_BASES, SearchLabels
from uno_env.observation import BASE_SIZE

#: Receives a generation's scalars for TensorBoard: ``log(generation, {tag: value})``.
GenerationLog = Callable[[int, dict[str, float]], None]
#: Gives the per-epoch log of a generation's fit: ``fit_log(generation)`` (see :mod:`train.training.tensorboard`).
FitLogs = Callable[[int], EpochLog]

#: The run folder's subfolder that holds the generations.
FOLDER = "expert_iteration"


def generation_path(workdir: Path, generation: int, suffix: str = "") -> Path:
    """``workdir/generation_K`` (the labels), or with ``suffix`` ``.zip`` or ``.json`` its network or record."""
    return workdir / f"generation_{generation}{suffix}"


def run_expert_iteration(model: Any, config: TrainConfig, seed: int, workdir: Path, workers: Workers | None = None,
                         progress: bool = False, log: GenerationLog | None = None,
                         fit_log: FitLogs | None = None) -> dict[str, float]:
    """Run (or continue) ``expert_iteration.generations`` generations; the run's network ``model`` is the last one's.

    A generation labels ``expert_iteration.games`` games in shards (on ``workers``, by default ``eval.workers``
    local processes; ``progress`` shows a bar or progress lines), fits a network on the labels of the last
    ``window`` generations and saves it as ``generation_K.zip``, the next generation's player, compiled by the
    labelling processes. With ``generation_net_arch`` that network is a small featureless ReLU network fitted for the
    purpose, and only the last generation fits ``model``; without it every generation refits ``model``.

    With ``gate_pairs``, each generation's network is evaluated against ``rule``, ``random`` and the network it
    improved on (the last one kept, or a checkpoint ``start``) on that many deal pairs (seed ``eval.seed``), and
    becomes the next player only if it is not worse (the upper end of its 95% interval against it is at least 1/2).

    ``log`` receives each generation's scalars, ``fit_log(K)`` each epoch's losses of generation K's fit. Returns the
    last fit's metrics (:func:`~train.training.fit.fit_values`), the number of labelled ``examples`` it fitted, and per
    generation ``generation_K/gain``: how much better the network's moves are than its player's by held-out labels.
    """
    settings = config.expert_iteration
    for name, weight in settings.opponent.items():  # their games are played without belief features
        belief = spec_belief(name) if name != SELF and weight > 0 else "none"
        if belief != "none":
            raise ConfigError(f"expert_iteration.opponent.{name}: the labelled games' opponents play without belief "
                              f"features, got a player of belief {belief!r}")
    base = _start(config)
    metrics: dict[str, float] = {}
    gains: dict[str, float] = {}
    history: list[labelling.Labels] = []
    players = [base]  # every generation's player so far: the "self" of expert_iteration.opponent
    with workers or Workers(min(config.eval.workers, settings.games)) as pool:
        for generation in range(1, settings.generations + 1):
            started = time.perf_counter()
            job = _label_job(config, seed, generation, base, players)
            labels, made = labelling.run(job, generation_path(workdir, generation), pool, progress)
            labelled = time.perf_counter() - started
            last = generation == settings.generations
            window = settings.last_window if last and settings.last_window else settings.window
            history = [*history, labels][-max(settings.window, settings.last_window or 1):]  # what a fit may use
            observations, values, moves = (np.concatenate(arrays) for arrays in zip(*history[-window:], strict=True))
            network = generation_path(workdir, generation, ".zip")
            record_path = generation_path(workdir, generation, ".json")
            own_network = not last and settings.generation_net_arch is not None
            record = _read_record(record_path) if not last else None
            if record is not None:  # fitted before the run was stopped: its network is on disk
                if not own_network:
                    model.policy.load_state_dict(load_network(network).state_dict())
            else:
                epochs = None if fit_log is None else fit_log(generation)
                student, metrics = _fit(model, config, own_network, observations, values, moves, seed + generation,
                                        epochs)
                record = {"metrics": metrics}
                save_model(student, network, {
                    "belief": "none" if own_network else config.env.belief, "config": config.name, "steps": 0})
                record["labelled_positions"] = len(labels[2])
                record["positions_per_second"] = made / labelled if made else None
                if settings.gate_pairs:  # against the network this generation improved on (a kept one)
                    previous = None if base in BUILT_IN_BASES else Path(base)
                    record.update(_gate(network, previous, config, pool))
                record["seconds"] = time.perf_counter() - started
                write_text(record_path, json.dumps(record, indent=1) + "\n")
                if log is not None:
                    log(generation, {key: value for key, value in record.items()
                                     if isinstance(value, float | int) and key != "metrics"} | record["metrics"])
            metrics = record["metrics"]
            gains[f"generation_{generation}/gain"] = metrics["held_out_value_of_network_move"] - \
                metrics["held_out_value_of_base_move"]
            if record.get("kept", True):
                base = str(network)
                players.append(base)
    return {**metrics, **gains, "examples": len(moves)}


def _start(config: TrainConfig) -> str:
    """Generation 1's player: a built-in name or the checkpoint's path."""
    start = config.expert_iteration.start
    return start if start in BUILT_IN_BASES else str(checkpoint_path(start))


def _label_job(config: TrainConfig, seed: int, generation: int, base: str, players: list[str]) -> labelling.LabelJob:
    """What generation ``generation`` labels, from the config's settings; ``players``: the generations' players so
    far."""
    settings = config.expert_iteration
    simulations = settings.simulations if settings.generation_simulations is None else \
        settings.generation_simulations[generation - 1]
    search = SearchLabels(simulations, settings.belief, leaf_moves=settings.leaf_moves,
                          opponent_rollout=settings.opponent_rollout)
    return labelling.LabelJob(settings.games, settings.shard_games, seed, generation, config.env.belief, base, search,
                              tuple(settings.opponent.items()), tuple(players))


def check_resumable(config: TrainConfig, seed: int, workdir: Path) -> None:
    """Refuse (``ConfigError``, naming the setting) to continue expert iteration in ``workdir`` whose labels were made
    with other settings than ``config``'s; checked on generation 1, whose player is ``start``."""
    start = _start(config)
    labelling.check_settings(generation_path(workdir, 1), _label_job(config, seed, 1, start, [start]).settings())


def _read_record(path: Path) -> dict[str, Any] | None:
    """A finished generation's record, or None (not finished, or a file from a run cut short)."""
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and isinstance(record.get("metrics"), dict) else None


def _fit(model: Any, config: TrainConfig, own_network: bool, observations: np.ndarray, values: np.ndarray,
         moves: np.ndarray, seed: int, log: EpochLog | None) -> tuple[Any, dict[str, float]]:
    """Fit a generation's network (a small featureless one, or ``model``); it and the fit's metrics."""
    settings = config.expert_iteration
    if own_network:  # a small featureless network, the next generation's player (config.ExpertIterationConfig)
        return fit(observations[:, :BASE_SIZE], values, moves, settings.epochs, seed, "none",
                   settings.generation_net_arch, "relu", settings.learning_rate, settings.batch_size, log=log)
    return model, fit_values(model.policy, observations, values, moves, settings.epochs, seed,
                             settings.learning_rate, settings.batch_size, settings.centred, settings.cosine, log)


def _gate(network: Path, previous: Path | None, config: TrainConfig, workers: Workers) -> dict[str, Any]:
    """A generation's network against ``rule``, ``random`` and its player ``previous``: win rates, intervals, kept
    or not. The games run on the labelling's ``workers``, so Ctrl-C stops them as it stops the labelling."""
    opponents = ["rule", "random"] + ([str(previous)] if previous is not None and previous.exists() else [])
    results = evaluate(str(network), opponents, config.expert_iteration.gate_pairs, config.eval.seed,
                       workers=workers.width, n_particles=config.env.n_particles, executor=workers.get())
    record: dict[str, Any] = {}
    for name, result in zip(("rule", "random", "previous"), results, strict=False):
        low, high, _ = score_interval(result.pair_scores)
        record |= {f"win_rate/{name}": result.score, f"win_rate/{name}/low": low, f"win_rate/{name}/high": high}
    record["kept"] = bool(record.get("win_rate/previous/high", 1.0) >= 0.5)
    return record
