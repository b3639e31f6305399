"""The checks a run passes before it starts or resumes, and the reopening of a finished run for more generations.

A resumed run must be the run its folder records: a setting of expert iteration or distillation that changed after
they ran could not act, and ``config.yaml`` would then describe a run that never ran (:func:`check_unchanged`). The
one change allowed is more generations for a finished expert-iteration run without PPO (:func:`more_generations`,
:func:`reopen`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from agents.files import write_text
from agents.ppo import load_network
from train.config import SELF, ConfigError, TrainConfig, config_to_dict, load_config
from train.specs import checkpoint_path
from train.training.expert_iteration import FOLDER, generation_path
from train.training.run_folder import LOCK

#: The sections whose settings act before the first checkpoint: a resume past it may not change them.
FITTED_SECTIONS = ("expert_iteration", "distil")


def has_records(run_dir: Path) -> bool:
    """Whether the run folder records anything: an entry other than the lock and empty folders (a run killed as it
    began can leave those, and a new command may start over in it without losing anything)."""
    return any(path.name != LOCK and not (path.is_dir() and not any(path.iterdir())) for path in run_dir.iterdir())


def refuse_old_layout(run_dir: Path) -> None:
    """A ``ConfigError`` for a run folder of an earlier layout (``pretrain/round_K``), which cannot be resumed."""
    if (run_dir / "pretrain").is_dir():
        raise ConfigError(f"cannot resume {run_dir}: it was made by an earlier version of uno-train (its generations "
                          f"are in pretrain/round_K, now {FOLDER}/generation_K); start a new run (its label folders "
                          f"can still be distilled: distil.labels)")


def _change(was: Any, asked: Any, growing: bool = False) -> tuple[str, Any, Any] | None:
    """The first setting of section ``asked`` that differs from the recorded ``was``, as (key, recorded, asked), or
    None. ``growing``: a larger ``generations`` and an extended ``generation_simulations`` do not count."""
    for key in asked.__dataclass_fields__:
        before, now = getattr(was, key), getattr(asked, key)
        grown = growing and (key == "generations" and now >= before or key == "generation_simulations"
                             and before is not None and now is not None and now[:len(before)] == before)
        if before != now and not grown:
            return key, before, now
    return None


def check_unchanged(config: TrainConfig, run_dir: Path) -> None:
    """Refuse (``ConfigError``, naming the setting) a resume past the first checkpoint that changes a setting of
    expert iteration or distillation: they come before it, so the change could not act."""
    if not (run_dir / "config.yaml").is_file():  # train() called with a config of its own: nothing recorded
        return
    recorded = load_config(run_dir / "config.yaml", [])
    for section in FITTED_SECTIONS:
        change = _change(getattr(recorded, section), getattr(config, section))
        if change is not None:
            key, was, asked = change
            raise ConfigError(f"cannot resume {run_dir} with {section}.{key} = {asked!r}: the run is past its "
                              f"{section.replace('_', ' ')}, which ran with {section}.{key} = {was!r}; set it back, or "
                              f"start a new run")


def more_generations(config: TrainConfig, run_dir: Path) -> bool:
    """Whether ``--resume`` asks a finished expert-iteration run without PPO for generations it has not made:
    ``expert_iteration.generations`` raised (or raised before a kill) on a run that has its checkpoint, whose last
    generation is not on disk.

    Every other ``expert_iteration`` setting must be the recorded one (``generation_simulations`` may only be
    extended): a ``ConfigError`` names the first that differs. Fewer generations are left to
    :func:`check_unchanged`.
    """
    if not (run_dir / "config.yaml").is_file() or config.total_timesteps \
            or config.expert_iteration.start is None \
            or not any((run_dir / "checkpoints").glob("step_*.zip")):  # no checkpoint: stopped in expert iteration
        return False
    recorded = load_config(run_dir / "config.yaml", [])
    generations = config.expert_iteration.generations
    if recorded.total_timesteps or generations < recorded.expert_iteration.generations \
            or generation_path(run_dir / FOLDER, generations, ".json").is_file():
        return False
    change = _change(recorded.expert_iteration, config.expert_iteration, growing=True)
    if change is not None:
        key, was, asked = change
        raise ConfigError(f"cannot add generations to {run_dir} with expert_iteration.{key} = {asked!r}: its "
                          f"generations so far ran with expert_iteration.{key} = {was!r}; only "
                          "expert_iteration.generations (and expert_iteration.generation_simulations, extended) may "
                          "change")
    return True


def reopen(config: TrainConfig, run_dir: Path) -> None:
    """Make a finished expert-iteration run a run stopped during expert iteration, which ``--resume`` continues.

    Its checkpoint and best model are the last generation's network, which ``expert_iteration/generation_K.zip``
    keeps; they and the step-0 evaluations are made again from the new last generation. The final evaluation moves to
    ``expert_iteration/generation_K_final_eval.json`` (and ``.md``). The new ``config.yaml`` is written first and the
    checkpoints removed last, so a kill at any moment leaves a folder that ``--resume`` continues the same way.
    """
    write_text(run_dir / "config.yaml", yaml.safe_dump(config_to_dict(config), sort_keys=False))
    workdir = run_dir / FOLDER
    made = (path.stem.removeprefix("generation_") for path in workdir.glob("generation_*.json"))
    kept = max((int(number) for number in made if number.isdigit()), default=0)
    for suffix in ("json", "md"):
        final = run_dir / f"final_eval.{suffix}"
        if final.is_file():
            final.replace(workdir / f"generation_{kept}_final_eval.{suffix}")
    for derived in (run_dir / "best_model.zip", run_dir / "evaluations.jsonl",
                    *sorted((run_dir / "checkpoints").glob("step_*.zip"))):
        derived.unlink(missing_ok=True)
    generations = config.expert_iteration.generations
    new = f"generation {kept + 1}" if kept + 1 == generations else f"generations {kept + 1} to {generations}"
    print(f"{run_dir}: adding {new} to the {kept} made", flush=True)


def check_checkpoint_players(config: TrainConfig) -> None:
    """Load every checkpoint the config seats (opponents, the start of expert iteration, ``policy.init``, evaluation
    opponents) once, before the run starts: a damaged one is a ``ConfigError`` naming its key, not a traceback
    minutes into the run."""
    named = [(f"opponents[{i}].mix", spec) for i, phase in enumerate(config.opponents) for spec in phase.mix]
    named += [("expert_iteration.start", config.expert_iteration.start), ("policy.init", config.policy.init)]
    named += [(f"eval.opponents[{i}]", spec) for i, spec in enumerate(config.eval.opponents)]
    for key, spec in named:
        path = checkpoint_path(spec) if spec not in (None, SELF) else None
        if path is not None:
            try:
                load_network(path)
            except (ValueError, OSError) as error:
                raise ConfigError(f"{key}: {str(error)[:300]}") from None
