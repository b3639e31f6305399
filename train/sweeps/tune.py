"""Sweeps on Ray Tune: each trial one run of the project's trainer, reporting every evaluation to Tune.

Each trial is one run of :func:`train.training.trainer.train_once` in ``SWEEP_DIR/runs/<trial id>/``, the usual
run folder (config, checkpoints, evaluations, TensorBoard). After every evaluation the trial reports the metrics
to Tune with a small Tune checkpoint that points at the run folder, and the run folder's own checkpoints hold the
state: a trial that Tune stops early (ASHA) keeps its folder, and a trial that is restored (``--resume``)
continues from its last checkpoint. The sweep folder holds::

    SWEEP_DIR/sweep.yaml      the sweep as run (what --resume reads)
    SWEEP_DIR/runs/<trial>/   the trials' run folders
    SWEEP_DIR/trials.json     the trials: config values, last metric, steps, time, status, final win rates
    SWEEP_DIR/best.yaml       the best trial's training config, ready for uno-train
    SWEEP_DIR/...             Ray Tune's experiment state and per-trial results

The best trial is the one with the highest metric at its last evaluation. The sweep file is described in
:mod:`train.sweeps.config`, the results in :mod:`train.sweeps.report`; the command line is ``uno-tune``
(:mod:`train.cli.tune`). Ray is imported inside the functions, so importing this module needs no Ray.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from agents.files import write_text
from train.sweeps.config import SweepConfig
from train.sweeps.report import TrialSummary, trials_json
from train.training.run_folder import read_evaluations
from train.training.trainer import train_once

_FINAL_FIELDS = ("win_rate", "ci_low", "ci_high", "games")


def _encode(value: Any) -> str:
    """A choice or grid value as Tune sees it: JSON text, since Optuna's categories must be plain scalars."""
    return json.dumps(value)


def param_space(sweep: SweepConfig) -> dict[str, Any]:
    """The sweep's space in Ray Tune's terms (integer ranges include their upper bound)."""
    from ray import tune

    space: dict[str, Any] = {}
    for d in sweep.space:
        if d.kind in ("choice", "grid"):
            values = [_encode(v) for v in d.values]
            space[d.key] = tune.grid_search(values) if d.kind == "grid" else tune.choice(values)
        elif d.kind == "uniform":
            space[d.key] = tune.randint(d.values[0], d.values[1] + 1) if d.integer else tune.uniform(*d.values)
        else:
            space[d.key] = tune.lograndint(d.values[0], d.values[1] + 1) if d.integer else tune.loguniform(*d.values)
    return space


def decode(sweep: SweepConfig, params: dict[str, Any]) -> dict[str, Any]:
    """A trial's config values from Tune's (the inverse of :func:`param_space`), in the sweep's key order."""
    values = {}
    for d in sweep.space:
        value = params[d.key]
        values[d.key] = json.loads(value) if d.kind in ("choice", "grid") else value
    return values


def _metrics(record: dict[str, Any], run_dir: Path) -> dict[str, Any]:
    """What a trial reports for one evaluation record of ``evaluations.jsonl``."""
    return {"step": record["step"], "mean_win_rate": record["mean_win_rate"],
            **{f"win_rate/{r['opponent']}": r["win_rate"] for r in record["results"]}, "run_dir": str(run_dir)}


def _report(metrics: dict[str, Any], run_dir: Path) -> None:
    """Report to Tune with a checkpoint that points at the run folder (which holds the trial's real state)."""
    from ray import tune

    with tempfile.TemporaryDirectory() as folder:  # Tune copies it into the sweep folder before returning
        (Path(folder) / "run.json").write_text(json.dumps({"run_dir": str(run_dir), "step": metrics["step"]}))
        tune.report(metrics, checkpoint=tune.Checkpoint.from_directory(folder))


def run_trial(params: dict[str, Any], sweep: SweepConfig, runs: str) -> None:
    """The Tune trainable: train one trial's run to its end (or resume it), reporting each evaluation.

    The last evaluation (at ``total_timesteps``) is reported once the run has finished, together with the
    final evaluation of its best model on fresh deals (``final``), so the last report of a trial that ran to
    its end always carries its final win rates.
    """
    from ray import tune

    values = decode(sweep, params)
    trial = tune.get_context().get_trial_id()
    run_dir = Path(runs) / trial
    total = sweep.trial_config(values).total_timesteps  # a combination the config refuses fails here

    def on_evaluation(record: dict[str, Any]) -> None:
        if record["step"] < total:
            _report(_metrics(record, run_dir), run_dir)

    overrides = [*sweep.trial_overrides(values), f"name={sweep.name}-{trial}", "progress_bar=false"]
    train_once(sweep.base, overrides, run_dir, f"uno-tune trial {trial} of sweep {sweep.name}", on_evaluation)
    final = json.loads((run_dir / "final_eval.json").read_text())
    metrics = _metrics(read_evaluations(run_dir / "evaluations.jsonl")[-1], run_dir)
    metrics["final"] = {r["opponent"]: {k: r[k] for k in _FINAL_FIELDS} for r in final["results"]}
    _report(metrics, run_dir)


def run_sweep(sweep: SweepConfig, sweep_dir: Path, resume: bool = False) -> list[TrialSummary]:
    """Run (or, with ``resume``, continue) the sweep in ``sweep_dir`` on the Ray this process is connected to.

    Writes ``trials.json`` and ``best.yaml`` in ``sweep_dir``; returns the trials, best first.
    """
    from ray import tune
    from ray.tune.schedulers import ASHAScheduler, FIFOScheduler
    from ray.tune.search.basic_variant import BasicVariantGenerator
    from ray.tune.search.optuna import OptunaSearch

    sweep_dir = sweep_dir.resolve()
    # Keeping one pointer checkpoint per trial makes Tune save the experiment state at every report, so a killed
    # sweep resumes from its last evaluations; Tune warns about those saves when trials report often. They are
    # wanted here, and the state is small: silence the warning (unless the user set the threshold).
    os.environ.setdefault("TUNE_WARN_EXCESSIVE_EXPERIMENT_CHECKPOINT_SYNC_THRESHOLD_S", "0")
    trainable = tune.with_resources(tune.with_parameters(run_trial, sweep=sweep, runs=str(sweep_dir / "runs")),
                                    {"cpu": sweep.cpus_per_trial})
    if resume:
        tuner = tune.Tuner.restore(str(sweep_dir), trainable, resume_errored=True)
    else:
        total = sweep.base_config().total_timesteps
        searcher = OptunaSearch(seed=sweep.seed) if sweep.search == "optuna" \
            else BasicVariantGenerator(random_state=sweep.seed)
        scheduler = ASHAScheduler(time_attr="step", max_t=total, grace_period=sweep.grace_period,
                                  reduction_factor=sweep.reduction_factor) if sweep.scheduler == "asha" \
            else FIFOScheduler()
        tuner = tune.Tuner(
            trainable, param_space=param_space(sweep),
            tune_config=tune.TuneConfig(metric=sweep.metric, mode="max", search_alg=searcher, scheduler=scheduler,
                                        num_samples=sweep.trials),
            run_config=tune.RunConfig(name=sweep_dir.name, storage_path=str(sweep_dir.parent), verbose=1,
                                      checkpoint_config=tune.CheckpointConfig(num_to_keep=1)))
    grid = tuner.fit()
    trials = sorted((_summary(sweep, result) for result in grid), key=TrialSummary.sort_key)
    write_text(sweep_dir / "trials.json", json.dumps(trials_json(sweep, trials, sweep_dir / "best.yaml"),
                                                     indent=1) + "\n")
    best = next((t for t in trials if t.metric is not None), None)
    if best is not None:
        header = (f"The best trial ({best.trial}, {sweep.metric} {best.metric:.3f} at step {best.step:,}) of sweep "
                  f"{sweep.name} ({sweep_dir}).\nTrain it with: uno-train {sweep_dir / 'best.yaml'}")
        write_text(sweep_dir / "best.yaml", sweep.best_config_yaml(best.config, header))
    return trials


def _summary(sweep: SweepConfig, result: Any) -> TrialSummary:
    """One trial's line of the results, from its Ray Tune ``Result``."""
    metrics = result.metrics or {}
    error = None
    if result.error is not None:
        lines = str(result.error).strip().splitlines()
        error = lines[-1] if lines else type(result.error).__name__
    status = "error" if error else "finished" if "final" in metrics else "stopped"
    return TrialSummary(
        trial=str(metrics.get("trial_id") or Path(result.path).name), status=status,
        config=decode(sweep, result.config), metric=metrics.get(sweep.metric), step=metrics.get("step"),
        seconds=metrics.get("time_total_s"),
        win_rates={k.split("/", 1)[1]: v for k, v in metrics.items() if k.startswith("win_rate/")},
        final=metrics.get("final", {}), run_dir=metrics.get("run_dir"), error=error)
