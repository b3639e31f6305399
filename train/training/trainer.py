"""One training run, top to bottom: expert iteration or distillation, then PPO if asked, then the final evaluation.

:func:`train` reads as the run goes:

1. check the config's players and the run folder (new, or resumed: :mod:`train.training.resume`);
2. build the training envs and the network (:mod:`train.training.sb3_ppo`);
3. fit the network: expert iteration's generations (:mod:`train.training.expert_iteration`) or the distillation of
   finished generations (:mod:`train.training.distil`); the result is checkpoint ``step_000000000.zip``;
4. SB3's MaskablePPO for ``total_timesteps`` steps, with checkpoints and evaluations
   (:class:`~train.training.sb3_ppo.RunCallback`);
5. the final evaluation of ``best_model.zip`` on fresh deals.

A run writes everything to one folder::

    RUN_DIR/config.yaml          the resolved config (every key, defaults filled in)
    RUN_DIR/command.txt          each command line that worked on this run (train, resume)
    RUN_DIR/checkpoints/         step_000000000.zip (the fitted network, before any PPO), step_000050000.zip ...
                                 (model, optimizer, step counter, env settings)
    RUN_DIR/best_model.zip       the checkpoint with the best mean evaluation win rate: the run's model
    RUN_DIR/evaluations.jsonl    one line per evaluation during training
    RUN_DIR/final_eval.json/.md  the final evaluation of the best model, on fresh deals
    RUN_DIR/run_info.json        wall time, steps/s and the machine, per session
    RUN_DIR/tb/                  TensorBoard events (:mod:`train.training.tensorboard`)
    RUN_DIR/expert_iteration/    the generations: label shards, networks, records

:func:`train` resumes from the last checkpoint when asked, or continues expert iteration where it stopped. The
opponent schedule and self-play pool are functions of the step counter and the checkpoint folder, so a resumed run
picks them up where they were; the random streams are reseeded from ``seed`` and the step, so a resumed run is
reproducible but not bit-identical to an uninterrupted one. Training stops at ``total_timesteps`` exactly (the
partial rollout at the end is not used for an update), wherever the run was resumed from.
"""

from __future__ import annotations

import json
import shlex
import sys
import time
from contextlib import suppress
from pathlib import Path
from typing import Any

import torch
import yaml
from stable_baselines3.common.logger import Logger

from agents.files import copy_file, write_text
from agents.ppo import load_model, read_settings
from train.config import ConfigError, TrainConfig, config_to_dict, load_config
from train.evaluation.matches import MatchResult, evaluate, format_table, make_executor, stop_stray_processes
from train.training import resume as checks
from train.training.distil import distil, read_labels
from train.training.expert_iteration import FOLDER, check_resumable, run_expert_iteration
from train.training.labelling import Workers
from train.training.opponent_mix import opponent_belief
from train.training.run_folder import SessionRecord, finished, repair_records, resume_checkpoint, run_lock
from train.training.sb3_ppo import (
    EvaluationHook,
    RunCallback,
    build_vec_env,
    new_model,
    policy_kwargs,
    ppo_kwargs,
)
from train.training.tensorboard import FitWriter, GenerationWriter, ResumedTensorBoard
from uno_env.env import UnoEnv

__all__ = ["EvaluationHook", "TrainingInterrupted", "build_vec_env", "final_evaluation", "policy_kwargs",
           "ppo_kwargs", "train", "train_once"]


class TrainingInterrupted(KeyboardInterrupt):
    """Training stopped by Ctrl-C or SIGTERM after saving a checkpoint; the message says how to resume.

    A ``KeyboardInterrupt``, so a script or notebook that calls :func:`train` stops as it would on Ctrl-C.
    """


def train(config: TrainConfig, run_dir: str | Path, resume: bool = False, command: str | None = None,
          quiet: bool = False, on_evaluation: EvaluationHook | None = None, address: str | None = None) -> Path:
    """Train (or, with ``resume``, continue) the run in ``run_dir``; returns ``run_dir``.

    Ends with the final evaluation table (printed unless ``quiet``, and saved in the run folder).
    ``on_evaluation`` is called with the record of every evaluation during training, once it is written.
    ``address`` labels expert iteration's shards as Ray tasks: on the cluster at ``HOST:PORT``, or on local Ray
    (``"local"``); ``None`` labels them on ``eval.workers`` local processes.
    A second process asked to train the same folder meanwhile is refused (``ConfigError``).
    """
    with run_lock(Path(run_dir)):
        return _train(config, Path(run_dir), resume, command, quiet, on_evaluation, address)


def _train(config: TrainConfig, run_dir: Path, resume: bool, command: str | None, quiet: bool,
           on_evaluation: EvaluationHook | None, address: str | None) -> Path:
    """:func:`train`, with the run folder locked."""
    started = time.perf_counter()  # the session's wall time counts from here (run_info.json)
    checkpoints = run_dir / "checkpoints"
    # 1. The players the config names, and the folder: new, resumed, or continued before its first checkpoint.
    opponent_belief(config)  # a ConfigError here, before the envs are built, names the checkpoints at fault
    checks.check_checkpoint_players(config)
    if resume:
        checks.refuse_old_layout(run_dir)
    if resume and checks.more_generations(config, run_dir):
        checks.reopen(config, run_dir)
    fitted = config.expert_iteration.start is not None or bool(config.distil.labels)
    if resume and not (checkpoints.is_dir() and any(checkpoints.glob("step_*.zip"))):
        # Stopped before its first checkpoint: it starts again on the same folder and reuses what it had made.
        if not fitted or not (run_dir / "config.yaml").is_file():
            raise ConfigError(f"cannot resume {run_dir}: it has no checkpoints/step_*.zip")
        if config.expert_iteration.start is not None:
            check_resumable(config, config.seed, run_dir / FOLDER)
        resume = False
    elif not resume and checks.has_records(run_dir):
        raise ConfigError(f"run folder {run_dir} already exists and is not empty; use --resume to continue it")
    start_step = 0
    if resume:
        checks.check_unchanged(config, run_dir)
        last = resume_checkpoint(run_dir)
        start_step = int(read_settings(last)["steps"])
    # Distillation's labels, read before anything is built or written: a folder that is not one is a ConfigError.
    labels = read_labels(config.distil.labels, UnoEnv(belief=config.env.belief).observation_space.shape[0]) \
        if config.distil.labels and not resume else None

    # 2. The envs and the network.
    venv = build_vec_env(config, config.seed + start_step)
    torch.set_num_threads(config.torch_threads)
    if resume:
        try:
            # MaskablePPO.load unpickles: acceptable here only because these are this run's own checkpoints.
            model = load_model(last, env=venv, policy_kwargs=policy_kwargs(config), **ppo_kwargs(config))
        except ValueError as error:  # e.g. --set env.belief=... or policy.net_arch=... unlike the checkpoints
            venv.close()
            raise ConfigError(f"cannot resume {run_dir}: {error}") from None
        if start_step >= config.total_timesteps and finished(run_dir):  # checked once the settings matched
            venv.close()
            more = f"add --set expert_iteration.generations=N with N > {config.expert_iteration.generations} (more " \
                "generations)" if not start_step and config.expert_iteration.start is not None else \
                f"add --set total_timesteps=N with N > {start_step}"
            print(f"run {run_dir} is finished ({start_step:,} steps; final evaluation in "
                  f"{run_dir / 'final_eval.md'}): nothing to do. To train longer, {more}.", flush=True)
            return run_dir
        repair_records(run_dir, start_step)
        model.set_random_seed(config.seed + start_step)
    else:
        model = new_model(config, venv)
    # Only now record the run: a command that failed above must leave the folder (its config.yaml) as it was.
    write_text(run_dir / "config.yaml", yaml.safe_dump(config_to_dict(config), sort_keys=False))
    checkpoints.mkdir(parents=True, exist_ok=True)
    with open(run_dir / "command.txt", "a") as out:
        out.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')}  {command or ' '.join(sys.argv)}\n")
    record = SessionRecord(run_dir, start_step, started=started)

    # 3. The fit: expert iteration's generations, or the distillation of finished ones.
    metrics: dict[str, float] = {}
    if not resume and fitted:
        try:
            metrics = _fit(model, config, run_dir, labels, record, progress=config.progress_bar and not quiet,
                           address=address)
        except KeyboardInterrupt:  # what is labelled is on disk; expert iteration continues from it
            venv.close()
            kept = f"its finished generations and label shards are kept in {run_dir / FOLDER}" if labels is None \
                else "the fit starts again"
            raise TrainingInterrupted(f"training interrupted during {_fit_section(config).replace('_', ' ')}; "
                                      f"{kept}. Continue with: uno-train --resume {shlex.quote(str(run_dir))}") \
                from None
        metrics["seconds"] = round(time.perf_counter() - started, 1)
        record.fit = {_fit_section(config): metrics}
    # Our own logger: TensorBoard events straight into RUN_DIR/tb, continued (same folder) on resume.
    model.set_logger(Logger(str(run_dir / "tb"), [ResumedTensorBoard(str(run_dir / "tb"), start_step + 1)]))
    callback = RunCallback(config, run_dir, on_evaluation)
    callback.init_callback(model)
    callback.record = record
    if metrics:
        for key, value in metrics.items():
            model.logger.record(f"{_fit_section(config)}/{key}", value)
        model.logger.dump(0)
        # Step 0: the fitted network alone is kept, so what PPO adds to it can be measured, and evaluated with the
        # others, so it competes for best_model.zip (PPO may make it worse).
        if config.eval.every:
            callback.run_evaluation()
        else:
            callback.save_checkpoint()

    # 4. SB3's MaskablePPO.
    try:
        callback.sync_opponents()
        remaining = config.total_timesteps - model.num_timesteps
        if remaining > 0:
            model.learn(remaining, callback=callback, tb_log_name="ppo", reset_num_timesteps=not resume,
                        progress_bar=config.progress_bar and not quiet)
        final = callback.save_checkpoint()
        record.update(int(model.num_timesteps))
        if config.eval.every and callback.last_eval_step != model.num_timesteps:
            callback.run_evaluation()
        if not (run_dir / "best_model.zip").exists():
            copy_file(final, run_dir / "best_model.zip")
        # 5. The final evaluation.
        results = final_evaluation(config, run_dir, callback)
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM turned into one by the command line (train.cli.train)
        callback.close(at_once=True)  # the workers first: they may be dead already (a terminal's Ctrl-C reaches them)
        saved = callback.save_checkpoint()
        record.update(int(model.num_timesteps))
        raise TrainingInterrupted(f"training interrupted at step {model.num_timesteps:,}; saved {saved}. "
                                  f"Continue with: uno-train --resume {shlex.quote(str(run_dir))}") from None
    finally:
        callback.close()
        model.logger.close()  # TensorBoard's files complete before the run returns (a reader may open them next)
        with suppress(OSError, EOFError):  # SubprocVecEnv workers that an interrupt already ended
            venv.close()
        stop_stray_processes()
    record.update(int(model.num_timesteps), finished=True)
    if results and not quiet:
        print(f"\nFinal evaluation of {run_dir / 'best_model.zip'} ({config.eval.final_pairs} deal pairs "
              f"per opponent, seed {config.eval.seed + 1}):\n{format_table(results)}")
    return run_dir


def _fit_section(config: TrainConfig) -> str:
    """The config section whose fit the run makes before PPO."""
    return "expert_iteration" if config.expert_iteration.start is not None else "distil"


def _fit(model: Any, config: TrainConfig, run_dir: Path, labels: Any, record: SessionRecord, progress: bool,
         address: str | None) -> dict[str, float]:
    """Expert iteration or distillation on ``model``, logging to ``tb/generations`` and ``tb/fit``; the metrics."""
    with FitWriter(run_dir / "tb" / "fit") as fits:
        if labels is not None:
            return distil(model, config, labels, log=fits.fit(0))
        epochs = config.expert_iteration.epochs
        with GenerationWriter(run_dir / "tb" / "generations") as generations, \
                Workers(min(config.eval.workers, config.expert_iteration.games), address) as workers:

            def log(generation: int, scalars: dict[str, float]) -> None:
                generations(generation, scalars)
                record.update(0)  # a session killed in a later generation keeps the time it has spent

            return run_expert_iteration(model, config, config.seed, run_dir / FOLDER, workers, progress, log=log,
                                        fit_log=lambda k: fits.fit((k - 1) * epochs))


def final_evaluation(config: TrainConfig, run_dir: Path, callback: RunCallback) -> list[MatchResult]:
    """Evaluate the best model on deals not used for model selection; write final_eval.json/.md."""
    cfg = config.eval
    if not cfg.final_pairs:
        return []
    if cfg.workers > 1 and callback.executor is None:
        callback.executor = make_executor(cfg.workers)
    results = evaluate(str(run_dir / "best_model.zip"), cfg.opponents, cfg.final_pairs, cfg.seed + 1,
                       workers=cfg.workers, n_particles=config.env.n_particles, executor=callback.executor)
    best_step = read_settings(run_dir / "best_model.zip")["steps"]
    write_text(run_dir / "final_eval.json", json.dumps(
        {"model": "best_model.zip", "model_steps": best_step, "pairs": cfg.final_pairs, "seed": cfg.seed + 1,
         "results": [r.to_dict() for r in results]}, indent=1) + "\n")
    write_text(run_dir / "final_eval.md", format_table(results) + "\n")
    for r in results:
        callback.logger.record(f"final/win_rate/{r.opponent}", r.score)
    callback.logger.dump(callback.model.num_timesteps)
    return results


def train_once(config: str | Path, overrides: list[str], run_dir: Path, command: str,
               on_evaluation: EvaluationHook | None = None) -> Path:
    """Bring the run in ``run_dir`` to its end once, for scripts that train many runs (sweeps, ablations).

    A run with its final evaluation is left alone; one with checkpoints (or its fit begun: expert iteration or
    distillation) is resumed from its own ``config.yaml`` (with ``overrides``); otherwise it starts from ``config``
    with ``overrides``. So a script killed midway picks up where it stopped. Returns ``run_dir``.
    """
    if (run_dir / "final_eval.json").exists():
        return run_dir
    checkpoints = run_dir / "checkpoints"
    recorded = load_config(run_dir / "config.yaml", []) if (run_dir / "config.yaml").is_file() else None
    resume = (checkpoints.is_dir() and any(checkpoints.glob("step_*.zip"))) or recorded is not None and (
        recorded.expert_iteration.start is not None or bool(recorded.distil.labels))
    print(f"training {run_dir}" + (" (resuming)" if resume else ""), flush=True)
    return train(load_config(run_dir / "config.yaml" if resume else config, overrides), run_dir, resume=resume,
                 quiet=True, command=command, on_evaluation=on_evaluation)
