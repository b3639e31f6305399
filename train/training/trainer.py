"""One training run, top to bottom: envs, MaskablePPO, checkpoints, evaluations, the final table.

A run writes everything to one folder::

    RUN_DIR/config.yaml          the resolved config (every key, defaults filled in)
    RUN_DIR/command.txt          each command line that worked on this run (train, resume)
    RUN_DIR/checkpoints/         step_000050000.zip ... (model, optimizer, step counter, env settings);
                                 with a warm start also step_000000000.zip, the model before PPO
    RUN_DIR/best_model.zip       the checkpoint with the best mean evaluation win rate
    RUN_DIR/evaluations.jsonl    one line per evaluation during training
    RUN_DIR/final_eval.json/.md  the final evaluation of the best model, on fresh deals
    RUN_DIR/run_info.json        wall time, steps/s and the machine, per session
    RUN_DIR/tb/                  TensorBoard events
    RUN_DIR/pretrain/            the warm start's generations: label shards, networks, records
    RUN_DIR/ppo_phase/           the PPO phase after the warm start, when the config has one
                                 (train.training.ppo_phase); its checkpoint is step_<its steps>.zip

:func:`train` resumes from the last checkpoint when asked. The opponent schedule and self-play
pool are functions of the step counter and the checkpoint folder, so a resumed run picks them up
where they were; the random streams are reseeded from ``seed`` and the step, so a resumed run is
reproducible but not bit-identical to an uninterrupted one. Training stops at ``total_timesteps``
exactly (the partial rollout at the end is not used for an update), wherever the run was resumed from.
"""

from __future__ import annotations

import json
import shlex
import sys
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from contextlib import suppress
from functools import partial
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
import yaml
from sb3_contrib import MaskablePPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.logger import Logger, TensorBoardOutputFormat
from stable_baselines3.common.utils import LinearSchedule
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecEnv, VecMonitor
from torch.utils.tensorboard import SummaryWriter

from agents.afterstate import AfterstatePolicy
from agents.files import copy_file, write_text
from agents.ppo import PPOPolicy, load_model, load_network, read_settings, save_model
from agents.privileged import PrivilegedCriticPolicy
from train.config import SELF, ConfigError, TrainConfig, config_to_dict, load_config
from train.evaluation.belief_quality import METRICS, cluster_mean, measure_quality
from train.evaluation.matches import (
    MatchResult,
    abandon,
    evaluate,
    format_table,
    make_executor,
    stop_stray_processes,
)
from train.interrupts import signals_held
from train.policies import resolve_policy
from train.specs import checkpoint_path, label
from train.training.labelling import Workers
from train.training.native_vec import NativeVecEnv
from train.training.opponent_mix import OpponentMix, OpponentMixWrapper, opponent_belief
from train.training.ppo_phase import run_ppo_phase
from train.training.pretrain import check_resumable, warm_start
from train.training.rollout_values import ACTIVATIONS
from train.training.run_folder import (
    LOCK,
    SessionRecord,
    finished,
    read_evaluations,
    repair_records,
    resume_checkpoint,
    run_lock,
)
from uno_env.env import UnoEnv
from uno_env.observation import PRIVILEGED_SIZE
from uno_env.policy import Policy, needs_of
from uno_env.view import WINNER_SCORES


class TrainingInterrupted(KeyboardInterrupt):
    """Training stopped by Ctrl-C or SIGTERM after saving a checkpoint; the message says how to resume.

    A ``KeyboardInterrupt``, so a script or notebook that calls :func:`train` stops as it would on Ctrl-C.
    """


class CardCountShaping(gym.Wrapper):
    """Potential-based reward shaping (Ng et al., 1999) with the potential ``weight * (their cards - my cards)``.

    Each step adds ``gamma * phi(next) - phi(now)``, with ``phi = 0`` once the game is over, so every
    card the agent sheds or the opponent draws pays at once, while the optimal policy is unchanged:
    the shaping terms telescope, and with the start position symmetric (7 cards each) they add up
    to (nearly, for gamma < 1) nothing over a game. ``info["is_success"]`` and the unshaped game result
    are untouched.
    """

    def __init__(self, env: gym.Env, weight: float, gamma: float) -> None:
        super().__init__(env)
        self.weight = weight
        self.gamma = gamma
        self.potential = 0.0

    def _potential(self, info: dict[str, Any]) -> float:
        return self.weight * (info["opponent_hand_size"] - len(info["hand"]))

    def reset(self, **kwargs: Any):
        obs, info = self.env.reset(**kwargs)
        self.potential = self._potential(info)
        return obs, info

    def step(self, action: Any):
        obs, reward, terminated, truncated, info = self.env.step(action)
        after = 0.0 if terminated else self._potential(info)
        reward += self.gamma * after - self.potential
        self.potential = after
        return obs, reward, terminated, truncated, info


# ------------------------------------------------------------------------------------ belief quality
def belief_log_loss(player: str | Policy, opponent: str | Policy, games: int, seed: int,
                    n_particles: int = 200) -> dict[str, float]:
    """How well ``player``'s belief predicts the opponent's hand in ``games`` seeded games against ``opponent``.

    A thin wrapper of :func:`train.evaluation.belief_quality.measure_quality` (the tracked seat is seat 0, game ``g``
    has its own seed from ``seed`` and first mover ``g % 2``): the mean per decision of the log-loss of the
    opponent's true hand per card type, in nats, for the player's belief kind (``log_loss``) and for card
    counting (``log_loss_counting``), and both by game phase (``log_loss/<phase>`` and
    ``log_loss_counting/<phase>``, the opponent's hand size: :data:`~train.evaluation.belief_quality.PHASES`).
    ``player`` is a checkpoint or Policy whose ``belief`` is not ``"none"``.
    """
    policy, rival = resolve_policy(player), resolve_policy(opponent)
    kind = needs_of(policy).belief
    if kind == "none":
        raise ValueError(f"{label(player)} has belief='none': there is no belief to measure")
    # measure_quality takes Policy objects as well as names (make_policy passes them through) in one process.
    result = measure_quality(games, seed, tracked=policy, opponent=rival,
                             particles=(n_particles,) if kind == "particles" else (), aware=(), plain=())
    log_loss = cluster_mean(result.sums, result.counts)[0][:, METRICS.index("log-loss")]
    # The first belief measured is counting; with belief="particles" the filter follows it.
    out = {"log_loss": float(log_loss[-1]), "log_loss_counting": float(log_loss[0])}
    for phase, losses in result.phase_log_loss().items():
        if phase.startswith("opponent holds "):
            hand = phase.removeprefix("opponent holds ")
            out[f"log_loss/hand_{hand}"] = float(losses[-1])
            out[f"log_loss_counting/hand_{hand}"] = float(losses[0])
    return out


def make_env(env_options: dict[str, Any], mix: dict[str, float], opponent_belief: str,
             gamma: float = 0.99, privileged: bool = False) -> gym.Env:
    """One training env: UnoEnv with an :class:`OpponentMix` opponent, a step limit, the mix wrapper.

    ``privileged`` appends the hidden-state channels a privileged critic reads (``UnoEnv(privileged=True)``).
    """
    torch.set_num_threads(1)  # in a SubprocVecEnv worker: checkpoint opponents must not fight for cores
    opponent = OpponentMix(mix, belief=opponent_belief)
    env = UnoEnv(opponent=opponent, first_player=env_options["first_player"], belief=env_options["belief"],
                 n_particles=env_options["n_particles"], privileged=privileged)
    env = gym.wrappers.TimeLimit(env, env_options["max_episode_steps"])
    if env_options["reward_shaping"]:
        env = CardCountShaping(env, env_options["reward_shaping"], gamma)
    return OpponentMixWrapper(env, opponent)


def _policy_kwargs(config: TrainConfig, observation_size: int) -> dict[str, Any]:
    arch = list(config.policy.net_arch)
    activation = ACTIVATIONS[config.policy.activation]
    kwargs = {"net_arch": {"pi": arch, "vf": arch}, "activation_fn": activation, "ortho_init": config.policy.ortho_init}
    if config.policy.critic == "privileged":
        kwargs["public_size"] = observation_size - PRIVILEGED_SIZE
    if config.policy.actor == "afterstate":
        kwargs["head_arch"] = arch
    return kwargs


def _ppo_kwargs(config: TrainConfig) -> dict[str, Any]:
    ppo = config.ppo
    rate = LinearSchedule(ppo.learning_rate, 0.0, 1.0) if ppo.lr_schedule == "linear" else ppo.learning_rate
    return {"learning_rate": rate, "n_steps": ppo.n_steps, "batch_size": ppo.batch_size, "n_epochs": ppo.n_epochs,
            "gamma": ppo.gamma, "gae_lambda": ppo.gae_lambda, "clip_range": ppo.clip_range, "ent_coef": ppo.ent_coef,
            "vf_coef": ppo.vf_coef, "max_grad_norm": ppo.max_grad_norm, "target_kl": ppo.target_kl}


class ResumedTensorBoard(TensorBoardOutputFormat):
    """SB3's TensorBoard output, hiding what an earlier session logged at or after ``purge_step``.

    A killed session may have logged past its last checkpoint; the resumed session logs those steps
    again, and TensorBoard (through the purge marker of ``SummaryWriter``) shows only the new ones.
    """

    def __init__(self, folder: str, purge_step: int) -> None:
        _wait_past_event_files(Path(folder))
        super().__init__(folder)
        self.writer.close()  # SB3 opens a writer without a purge step; replace it with one that has one
        self.writer = SummaryWriter(log_dir=folder, purge_step=purge_step)


def _wait_past_event_files(folder: Path) -> None:
    """Sleep until the clock is past the second in which the folder's newest event file was created.

    TensorBoard reads a folder's event files in name order. A name starts with its creation second and ends
    with a per-process counter that sorts as text (``.10`` before ``.9``), so a session resumed within the same
    second could be read before the one it continues, whose older steps would then purge the new ones.
    """
    seconds = [int(path.name.split(".")[3]) for path in folder.glob("events.out.tfevents.*")]
    while seconds and time.time() < max(seconds) + 1:
        time.sleep(0.05)


#: Called after each evaluation during training with its ``evaluations.jsonl`` record (e.g. to report it to a
#: hyperparameter search: ``train.sweeps.tune``).
EvaluationHook = Callable[[dict[str, Any]], None]


class RunCallback(BaseCallback):
    """Opponent schedule, checkpoints, self-play pool, evaluations and extra TensorBoard scalars."""

    def __init__(self, config: TrainConfig, run_dir: Path, on_evaluation: EvaluationHook | None = None) -> None:
        super().__init__()
        self.config = config
        self.run_dir = run_dir
        self.on_evaluation = on_evaluation
        self.checkpoints = run_dir / "checkpoints"
        self.executor: ProcessPoolExecutor | None = None
        self.recent: dict[str, deque[float]] = {}
        self.mix: dict[str, float] | None = None
        # On resume, the evaluations so far: the best to beat, and the step already evaluated (a run resumed
        # when already finished must not evaluate its last checkpoint a second time).
        records = read_evaluations(run_dir / "evaluations.jsonl")
        self.best = max((r["mean_win_rate"] for r in records), default=-1.0)
        self.last_eval_step = max((r["step"] for r in records), default=-1)
        self.record: SessionRecord | None = None  # set by train(): this session's entry in run_info.json

    # ------------------------------------------------------------------ run state
    def settings(self) -> dict[str, Any]:
        """Env settings stored in every checkpoint (agents.ppo)."""
        env = self.config.env
        return {"belief": env.belief, "n_particles": env.n_particles, "first_player": env.first_player,
                "config": self.config.name, "steps": int(self.model.num_timesteps),
                "privileged_size": PRIVILEGED_SIZE if self.config.policy.critic == "privileged" else 0}

    def checkpoint_files(self) -> list[Path]:
        return sorted(self.checkpoints.glob("step_*.zip"))

    def save_checkpoint(self) -> Path:
        """Save the model now (idempotent per step)."""
        path = self.checkpoints / f"step_{self.model.num_timesteps:09d}.zip"
        if not path.exists():
            with signals_held():  # a Ctrl-C or SIGTERM inside torch's zip writer would be replaced by its error
                save_model(self.model, path, self.settings())
            if self.record is not None:
                self.record.update(int(self.model.num_timesteps))
        return path

    def sync_opponents(self) -> None:
        """Push the mix in force and the self-play pool to every env (saving a first checkpoint for an empty pool)."""
        mix = self.config.mix_at(self.model.num_timesteps)
        pool: list[str] = []
        if self.config.uses_self_play():
            if not self.checkpoint_files():
                self.save_checkpoint()
            pool = [str(p) for p in self.checkpoint_files()[-self.config.self_play.pool_size:]]
        self.training_env.env_method("set_opponent_mix", mix, pool)
        self.mix = mix

    def close(self, at_once: bool = False) -> None:
        """Stop the evaluation workers, dropping queued games; ``at_once`` (training was interrupted): without waiting
        for the running ones either (:func:`~train.evaluation.matches.abandon`)."""
        if self.executor is not None:
            if at_once:
                abandon(self.executor)
            else:
                self.executor.shutdown(cancel_futures=True)
            self.executor = None

    # ------------------------------------------------------------------ SB3 hooks
    def _on_step(self) -> bool:
        for done, info in zip(self.locals["dones"], self.locals["infos"], strict=True):
            if done and "opponent" in info:
                self.recent.setdefault(info["opponent"], deque(maxlen=500)).append(
                    WINNER_SCORES.get(info.get("winner"), 0.5))  # a truncated game (no winner) counts as a draw
        step = self.model.num_timesteps
        cfg = self.config
        checkpoint_due = step // cfg.checkpoint_every > (step - self.training_env.num_envs) // cfg.checkpoint_every
        if checkpoint_due:
            self.save_checkpoint()
        if cfg.mix_at(step) != self.mix or (checkpoint_due and cfg.uses_self_play()):
            self.sync_opponents()
        if cfg.eval.every and step // cfg.eval.every > (step - self.training_env.num_envs) // cfg.eval.every:
            self.run_evaluation()
        # Stop at total_timesteps exactly, not at the end of the rollout that crosses it: a run resumed from a
        # checkpoint taken mid-rollout then ends (and evaluates) at the same step as one never interrupted.
        return step < cfg.total_timesteps

    def _on_rollout_end(self) -> None:
        for name, scores in self.recent.items():
            self.logger.record(f"train/win_rate/{name}", float(np.mean(scores)))

    # ------------------------------------------------------------------ evaluation
    def run_evaluation(self) -> list[MatchResult]:
        """Evaluate the current model, log it, keep the best model.

        With belief features on (and ``eval.belief_games`` > 0), also log the belief's log-loss of the
        opponent's true hand, and card counting's for comparison (:func:`belief_log_loss`).
        """
        cfg = self.config.eval
        path = self.save_checkpoint()
        if cfg.workers > 1 and self.executor is None:
            self.executor = make_executor(cfg.workers)
        started = time.perf_counter()
        results = evaluate(str(path), cfg.opponents, cfg.pairs, cfg.seed, workers=cfg.workers,
                           n_particles=self.config.env.n_particles, executor=self.executor)
        mean = float(np.mean([r.score for r in results]))
        for r in results:
            self.logger.record(f"eval/win_rate/{r.opponent}", r.score)
        self.logger.record("eval/mean_win_rate", mean)
        self.logger.record("eval/game_length", float(np.mean([r.mean_length for r in results])))
        quality: dict[str, float] = {}
        if self.config.env.belief != "none" and cfg.belief_games > 0:
            policy = PPOPolicy.load(path)  # the checkpoint, not self.model.policy: PPOPolicy puts it in eval mode
            quality = belief_log_loss(policy, cfg.opponents[0], cfg.belief_games, cfg.seed,
                                      self.config.env.n_particles)
            for key, value in quality.items():
                self.logger.record(f"belief/{key}", value)
        self.logger.dump(self.model.num_timesteps)
        record = {"step": int(self.model.num_timesteps), "checkpoint": path.name, "mean_win_rate": mean,
                  "seconds": round(time.perf_counter() - started, 2), "results": [r.to_dict() for r in results]}
        if self.record is not None:  # training time so far, all sessions, for learning curves against wall time
            record["train_seconds"] = round(self.record.total_seconds(), 1)
        if quality:
            record["belief"] = quality
        # An append-only log: one write per record, and a line torn by a kill is dropped when the run resumes.
        with open(self.run_dir / "evaluations.jsonl", "a") as out:
            out.write(json.dumps(record) + "\n")
        if mean > self.best:
            self.best = mean
            copy_file(path, self.run_dir / "best_model.zip")
        self.last_eval_step = self.model.num_timesteps
        if self.on_evaluation is not None:  # after the record and best model are on disk: the hook may stop us
            self.on_evaluation(record)
        return results


class GenerationWriter:
    """The warm start's curve per round (generation): a :data:`~train.training.pretrain.GenerationLog` for
    TensorBoard, in its own folder (``tb/generations``, a run of its own in TensorBoard) with the generation as
    the step, since the warm start's rounds are not PPO steps."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.writer: SummaryWriter | None = None

    def __call__(self, generation: int, scalars: dict[str, float]) -> None:
        if self.writer is None:
            self.writer = SummaryWriter(log_dir=str(self.folder))
        for tag, value in scalars.items():
            self.writer.add_scalar(f"generation/{tag}", value, generation)
        self.writer.flush()

    def __enter__(self) -> GenerationWriter:
        return self

    def __exit__(self, *exception: Any) -> None:
        if self.writer is not None:
            self.writer.close()


def build_vec_env(config: TrainConfig, seed: int) -> VecEnv:
    """The vectorized training envs; the first games use the schedule's fixed players until the pool exists."""
    first_mix = {k: v for k, v in config.opponents[0].mix.items() if k != SELF and v > 0} or {"random": 1.0}
    env_options = config_to_dict(config)["env"]
    if config.vec_env == "native":  # the config checked that the schedule and env settings compile
        venv = NativeVecEnv(config.n_envs, first_mix, env_options["first_player"], env_options["belief"],
                            env_options["max_episode_steps"])
        venv.seed(seed)
        return VecMonitor(venv)
    vec_cls, vec_kwargs = (SubprocVecEnv, {"start_method": config.start_method}) if config.vec_env == "subproc" \
        else (DummyVecEnv, {})
    return make_vec_env(partial(make_env, env_options, first_mix, opponent_belief(config), config.ppo.gamma,
                                config.policy.critic == "privileged"),
                        n_envs=config.n_envs,
                        seed=seed, vec_env_cls=vec_cls, vec_env_kwargs=vec_kwargs)


def train(config: TrainConfig, run_dir: str | Path, resume: bool = False, command: str | None = None,
          quiet: bool = False, on_evaluation: EvaluationHook | None = None, address: str | None = None) -> Path:
    """Train (or, with ``resume``, continue) the run in ``run_dir``; returns ``run_dir``.

    Ends with the final evaluation table (printed unless ``quiet``, and saved in the run folder).
    ``on_evaluation`` is called with the record of every evaluation during training, once it is written.
    ``address`` labels the warm start's shards as Ray tasks: on the cluster at ``HOST:PORT``, or on local Ray
    (``"local"``); ``None`` labels them on ``eval.workers`` local processes.
    A second process asked to train the same folder meanwhile is refused (``ConfigError``).
    """
    with run_lock(Path(run_dir)):
        return _train(config, Path(run_dir), resume, command, quiet, on_evaluation, address)


def train_once(config: str | Path, overrides: list[str], run_dir: Path, command: str,
               on_evaluation: EvaluationHook | None = None) -> Path:
    """Bring the run in ``run_dir`` to its end once, for scripts that train many runs (sweeps, ablations).

    A run with its final evaluation is left alone; one with checkpoints (or a warm start begun) is resumed from its own
    ``config.yaml`` (with ``overrides``); otherwise it starts from ``config`` with ``overrides``. So a script
    killed midway picks up where it stopped. Returns ``run_dir``.
    """
    if (run_dir / "final_eval.json").exists():
        return run_dir
    checkpoints = run_dir / "checkpoints"
    resume = (checkpoints.is_dir() and any(checkpoints.glob("step_*.zip"))) or (run_dir / "pretrain").is_dir()
    print(f"training {run_dir}" + (" (resuming)" if resume else ""), flush=True)
    return train(load_config(run_dir / "config.yaml" if resume else config, overrides), run_dir, resume=resume,
                 quiet=True, command=command, on_evaluation=on_evaluation)


def _check_checkpoint_players(config: TrainConfig) -> None:
    """Load every checkpoint the config seats (opponents, teacher, expert, evaluation opponents) once, before the run
    starts: a damaged one is a ``ConfigError`` naming its key, not a traceback minutes into the run."""
    named = [(f"opponents[{i}].mix", spec) for i, phase in enumerate(config.opponents) for spec in phase.mix]
    named += [(f"pretrain.{key}", getattr(config.pretrain, key)) for key in ("teacher", "expert")]
    named += [("policy.init", config.policy.init)]
    named += [(f"eval.opponents[{i}]", spec) for i, spec in enumerate(config.eval.opponents)]
    for key, spec in named:
        path = checkpoint_path(spec) if spec not in (None, SELF) else None
        if path is not None:
            try:
                load_network(path)
            except (ValueError, OSError) as error:
                raise ConfigError(f"{key}: {str(error)[:300]}") from None


def _start_from(model: Any, spec: str, venv: Any) -> None:
    """Give ``model`` the weights of the checkpoint ``spec`` names (``policy.init``); a ``ConfigError`` naming the key
    and the checkpoint's network if it is not this config's."""
    path = checkpoint_path(spec)
    settings = read_settings(path)
    try:
        model.policy.load_state_dict(load_network(path, settings).state_dict())
    except RuntimeError:  # torch lists every tensor whose shape differs; what the checkpoint is says it better
        venv.close()
        record = settings.get("policy", {})
        arch = record.get("net_arch")
        raise ConfigError(f"policy.init: {path} is not this config's network: it has belief {settings.get('belief')!r}"
                          f", {settings.get('observation_size')} inputs (+{settings.get('privileged_size', 0)} "
                          f"privileged), net_arch {arch.get('pi') if isinstance(arch, dict) else arch}, activation "
                          f"{str(record.get('activation')).lower()!r}, actor "
                          f"{'afterstate' if record.get('class') == 'AfterstatePolicy' else 'mlp'!r}") from None


def _records(run_dir: Path) -> bool:
    """Whether the run folder records anything: an entry other than the lock and empty folders (a run killed as it
    began can leave those, and a new command may start over in it without losing anything)."""
    return any(path.name != LOCK and not (path.is_dir() and not any(path.iterdir())) for path in run_dir.iterdir())


def _pretrain_change(was: Any, asked: Any, growing: bool = False) -> tuple[str, Any, Any] | None:
    """The first ``pretrain`` setting of ``asked`` that differs from the recorded ``was``, as (key, recorded, asked),
    or None. ``growing``: a larger ``rounds`` and an extended ``round_simulations`` (more generations) do not
    count."""
    for key in asked.__dataclass_fields__:
        before, now = getattr(was, key), getattr(asked, key)
        grown = growing and (key == "rounds" and now >= before or key == "round_simulations" and before is not None
                             and now is not None and now[:len(before)] == before)
        if before != now and not grown:
            return key, before, now
    return None


def _check_warm_start_unchanged(config: TrainConfig, run_dir: Path) -> None:
    """Refuse (``ConfigError``, naming the setting) a resume past the first checkpoint that changes a ``pretrain``
    setting: the warm start comes before it, so the change could not act, and ``config.yaml`` would then describe a
    run that never ran."""
    if not (run_dir / "config.yaml").is_file():  # train() called with a config of its own: nothing recorded
        return
    change = _pretrain_change(load_config(run_dir / "config.yaml", []).pretrain, config.pretrain)
    if change is not None:
        key, was, asked = change
        raise ConfigError(f"cannot resume {run_dir} with pretrain.{key} = {asked!r}: the run is past its warm "
                          f"start, which ran with pretrain.{key} = {was!r}; set it back, or start a new run")


def _more_generations(config: TrainConfig, run_dir: Path) -> bool:
    """Whether ``--resume`` asks a finished warm-start-only run for generations it has not made: ``pretrain.rounds``
    raised (or raised before a kill) on a run with no PPO that has its checkpoint, whose last round is not on disk.

    Every other ``pretrain`` setting must be the recorded one (``round_simulations`` may only be extended): a
    ``ConfigError`` names the first that differs. A smaller ``rounds`` is left to :func:`_check_warm_start_unchanged`.
    """
    if not (run_dir / "config.yaml").is_file() or config.total_timesteps or config.ppo_phase.steps \
            or config.pretrain.teacher is None or config.pretrain.labels == "moves" \
            or not any((run_dir / "checkpoints").glob("step_*.zip")):  # no checkpoint: stopped in its warm start
        return False
    recorded = load_config(run_dir / "config.yaml", [])
    if recorded.total_timesteps or recorded.ppo_phase.steps or config.pretrain.rounds < recorded.pretrain.rounds \
            or (run_dir / "pretrain" / f"round_{config.pretrain.rounds}.json").is_file():
        return False
    change = _pretrain_change(recorded.pretrain, config.pretrain, growing=True)
    if change is not None:
        key, was, asked = change
        raise ConfigError(f"cannot add generations to {run_dir} with pretrain.{key} = {asked!r}: its generations "
                          f"so far ran with pretrain.{key} = {was!r}; only pretrain.rounds (and "
                          "pretrain.round_simulations, extended) may change")
    return True


def _reopen_warm_start(config: TrainConfig, run_dir: Path) -> None:
    """Make a finished warm-start-only run a run stopped during its warm start, which ``--resume`` continues.

    Its checkpoint and best model are the last generation's network, which ``pretrain/round_K.zip`` keeps; they and
    the step-0 evaluations are made again from the new last generation. The final evaluation moves to
    ``pretrain/round_K_final_eval.json`` (and ``.md``). The new ``config.yaml`` is written first and the checkpoints
    removed last, so a kill at any moment leaves a folder that ``--resume`` continues the same way.
    """
    write_text(run_dir / "config.yaml", yaml.safe_dump(config_to_dict(config), sort_keys=False))
    rounds = (path.stem.removeprefix("round_") for path in (run_dir / "pretrain").glob("round_*.json"))
    kept = max((int(number) for number in rounds if number.isdigit()), default=0)
    for suffix in ("json", "md"):
        final = run_dir / f"final_eval.{suffix}"
        if final.is_file():
            final.replace(run_dir / "pretrain" / f"round_{kept}_final_eval.{suffix}")
    for derived in (run_dir / "best_model.zip", run_dir / "evaluations.jsonl",
                    *sorted((run_dir / "checkpoints").glob("step_*.zip"))):
        derived.unlink(missing_ok=True)
    new = f"generation {kept + 1}" if kept + 1 == config.pretrain.rounds else \
        f"generations {kept + 1} to {config.pretrain.rounds}"
    print(f"{run_dir}: adding {new} to the {kept} made", flush=True)


def _train(config: TrainConfig, run_dir: Path, resume: bool, command: str | None, quiet: bool,
           on_evaluation: EvaluationHook | None, address: str | None) -> Path:
    """:func:`train`, with the run folder locked."""
    checkpoints = run_dir / "checkpoints"
    opponent_belief(config)  # a ConfigError here, before the envs are built, names the checkpoints at fault
    _check_checkpoint_players(config)
    if resume and _more_generations(config, run_dir):
        _reopen_warm_start(config, run_dir)
    if resume and not (checkpoints.is_dir() and any(checkpoints.glob("step_*.zip"))):
        # Stopped during the warm start: it starts again on the same folder and reuses what it had made.
        if config.pretrain.teacher is None or not (run_dir / "config.yaml").is_file():
            raise ConfigError(f"cannot resume {run_dir}: it has no checkpoints/step_*.zip")
        check_resumable(config, config.seed, run_dir / "pretrain")
        resume = False
    elif not resume and _records(run_dir):
        raise ConfigError(f"run folder {run_dir} already exists and is not empty; use --resume to continue it")

    start_step = 0
    pretrain_metrics: dict[str, float] = {}
    if resume:
        _check_warm_start_unchanged(config, run_dir)
        last = resume_checkpoint(run_dir)
        start_step = int(read_settings(last)["steps"])
    venv = build_vec_env(config, config.seed + start_step)
    torch.set_num_threads(config.torch_threads)
    common = {"policy_kwargs": _policy_kwargs(config, venv.observation_space.shape[0]), **_ppo_kwargs(config)}
    if resume:
        try:
            # MaskablePPO.load unpickles: acceptable here only because these are this run's own checkpoints.
            model = load_model(last, env=venv, **common)
        except ValueError as error:  # e.g. --set env.belief=... or policy.net_arch=... unlike the checkpoints
            venv.close()
            raise ConfigError(f"cannot resume {run_dir}: {error}") from None
        if start_step >= config.total_timesteps and finished(run_dir):  # checked once the settings matched
            venv.close()
            more = f"add --set pretrain.rounds=N with N > {config.pretrain.rounds} (more generations)" \
                if not start_step and config.pretrain.labels != "moves" else \
                f"add --set total_timesteps=N with N > {start_step}"
            print(f"run {run_dir} is finished ({start_step:,} steps; final evaluation in "
                  f"{run_dir / 'final_eval.md'}): nothing to do. To train longer, {more}.", flush=True)
            return run_dir
        repair_records(run_dir, start_step)
        model.set_random_seed(config.seed + start_step)
    else:
        policy = PrivilegedCriticPolicy if config.policy.critic == "privileged" else \
            AfterstatePolicy if config.policy.actor == "afterstate" else "MlpPolicy"
        model = MaskablePPO(policy, venv, seed=config.seed, device="cpu", verbose=0, **common)
        if config.policy.init is not None:
            _start_from(model, config.policy.init, venv)
    # Only now record the run: a command that failed above must leave the folder (its config.yaml) as it was.
    write_text(run_dir / "config.yaml", yaml.safe_dump(config_to_dict(config), sort_keys=False))
    checkpoints.mkdir(parents=True, exist_ok=True)
    with open(run_dir / "command.txt", "a") as out:
        out.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')}  {command or ' '.join(sys.argv)}\n")
    if not resume and config.pretrain.teacher is not None:
        started = time.perf_counter()
        try:
            with GenerationWriter(run_dir / "tb" / "generations") as log, \
                    Workers(min(config.eval.workers, config.pretrain.games), address) as workers:
                pretrain_metrics = warm_start(model, config, config.seed, run_dir / "pretrain", workers,
                                              progress=config.progress_bar and not quiet, log=log)
        except KeyboardInterrupt:  # what is labelled is on disk; the warm start continues from it
            venv.close()
            raise TrainingInterrupted(f"training interrupted during the warm start; its finished label shards are "
                                      f"kept in {run_dir / 'pretrain'}. Continue with: uno-train --resume "
                                      f"{shlex.quote(str(run_dir))}") from None
        pretrain_metrics["seconds"] = round(time.perf_counter() - started, 1)
    # Our own logger: TensorBoard events straight into RUN_DIR/tb, continued (same folder) on resume.
    model.set_logger(Logger(str(run_dir / "tb"), [ResumedTensorBoard(str(run_dir / "tb"), start_step + 1)]))

    callback = RunCallback(config, run_dir, on_evaluation)
    callback.init_callback(model)
    for key, value in pretrain_metrics.items():
        model.logger.record(f"pretrain/{key}", value)
    if pretrain_metrics:
        model.logger.dump(0)
    callback.record = SessionRecord(run_dir, start_step, pretrain_metrics)
    if pretrain_metrics:
        # Step 0: the warm start alone is kept, so what PPO adds to it can be measured, and evaluated with the
        # others, so it competes for best_model.zip (PPO may make it worse).
        if config.eval.every:
            callback.run_evaluation()
        else:
            callback.save_checkpoint()
    try:
        callback.sync_opponents()
        if config.ppo_phase.steps and model.num_timesteps == 0:  # not yet done: the phase's checkpoint has steps
            callback.save_checkpoint()  # step 0, the phase's start, which a resume reloads
            model.num_timesteps = run_ppo_phase(model, config, run_dir, quiet)
        remaining = config.total_timesteps - model.num_timesteps
        if remaining > 0:
            model.learn(remaining, callback=callback, tb_log_name="ppo", reset_num_timesteps=not resume,
                        progress_bar=config.progress_bar and not quiet)
        final = callback.save_checkpoint()
        callback.record.update(int(model.num_timesteps))
        if config.eval.every and callback.last_eval_step != model.num_timesteps:
            callback.run_evaluation()
        if not (run_dir / "best_model.zip").exists():
            copy_file(final, run_dir / "best_model.zip")
        results = final_evaluation(config, run_dir, callback)
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM turned into one by the command line (train.cli.train)
        callback.close(at_once=True)  # the workers first: they may be dead already (a terminal's Ctrl-C reaches them)
        saved = callback.save_checkpoint()
        callback.record.update(int(model.num_timesteps))
        phase = run_dir / "ppo_phase" / "state.pt"
        where = f"in the PPO phase; its last checkpoint is {phase}" if model.num_timesteps == 0 and phase.exists() \
            else f"at step {model.num_timesteps:,}; saved {saved}"
        raise TrainingInterrupted(f"training interrupted {where}. Continue with: "
                                  f"uno-train --resume {shlex.quote(str(run_dir))}") from None
    finally:
        callback.close()
        model.logger.close()  # TensorBoard's files complete before the run returns (a reader may open them next)
        with suppress(OSError, EOFError):  # SubprocVecEnv workers that an interrupt already ended
            venv.close()
        stop_stray_processes()
    callback.record.update(int(model.num_timesteps), finished=True)
    if results and not quiet:
        print(f"\nFinal evaluation of {run_dir / 'best_model.zip'} ({config.eval.final_pairs} deal pairs "
              f"per opponent, seed {config.eval.seed + 1}):\n{format_table(results)}")
    return run_dir


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
