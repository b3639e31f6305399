"""A training run's PPO phase: the fitted network, improved by masked PPO on the native vector env.

``uno-train`` runs it after expert iteration (or distillation) when the config sets ``ppo_phase.steps``
(:class:`~train.config.PPOPhaseConfig`). The loop is :func:`train.integrations.cleanrl_ppo.train`, CleanRL-style
masked PPO whose games are stepped by one compiled call, so the phase makes millions of steps in minutes where SB3's
MaskablePPO, which a run uses otherwise, makes about 700 a second; a KL penalty toward the fitted policy keeps what
the search taught.

Everything the phase makes is in ``RUN_DIR/ppo_phase/``: ``start.zip`` (the fitted network, pi_0 of the KL
penalty), ``latest.zip`` and ``state.pt`` (its last checkpoint, written atomically, from which a killed run goes
on), ``args.json``; its TensorBoard curves (losses, KL to the start, win rates against ``rule`` and ``random`` with
95% intervals, samples a second) are in ``RUN_DIR/tb/ppo_phase``. The trainer then loads the phase's network into
the run's model, so the usual checkpoint, evaluation and ``best_model.zip`` choice follow.
"""

from __future__ import annotations

from pathlib import Path

from sb3_contrib import MaskablePPO

from agents.ppo import load_network, read_settings, save_model
from train.config import PHASE_MINIBATCHES, ConfigError, TrainConfig
from train.integrations.cleanrl_ppo import Args, check_args
from train.integrations.cleanrl_ppo import train as train_phase


def phase_args(config: TrainConfig, folder: Path, tensorboard: Path) -> Args:
    """The loop's settings for the run's ``ppo_phase``, its evaluations on the run's evaluation deals."""
    phase = config.ppo_phase
    return Args(out=str(folder), seed=config.seed, total_steps=phase.steps, num_envs=phase.num_envs,
                num_steps=phase.num_steps, opponent=",".join(f"{name}={weight!r}" for name, weight in
                                                             phase.opponent.items()),
                init=str(folder / "start.zip"), learning_rate=phase.learning_rate, ent_coef=phase.ent_coef,
                kl_coef=phase.kl_coef, num_minibatches=PHASE_MINIBATCHES, update_epochs=phase.update_epochs,
                eval_every=phase.eval_every, eval_pairs=config.eval.pairs, eval_seed=config.eval.seed,
                eval_workers=config.eval.workers, threads=config.torch_threads, tb=str(tensorboard))


def run_ppo_phase(model: MaskablePPO, config: TrainConfig, run_dir: Path, quiet: bool = False) -> int:
    """Run, or continue after a kill, the PPO phase on ``model``'s network; load the result into ``model``.

    Returns the phase's steps, which the trainer counts as the model's (its checkpoint is ``step_<steps>.zip``).
    """
    folder = run_dir / "ppo_phase"
    folder.mkdir(exist_ok=True)
    start = folder / "start.zip"
    if not start.exists():  # on resume pi_0 stays the fitted network, whatever model holds by then
        save_model(model, start, {"belief": "none", "config": config.name, "steps": 0})
    args = phase_args(config, folder, run_dir / "tb" / "ppo_phase")
    problem = check_args(args)
    if problem is not None:  # the config's checks should have caught it: say which setting, do not start
        raise ConfigError(f"ppo_phase: {problem}")
    train_phase(args, resume=(folder / "state.pt").exists(), log=(lambda _: None) if quiet else print)
    model.policy.load_state_dict(load_network(folder / "latest.zip").state_dict())
    return int(read_settings(folder / "latest.zip")["steps"])
