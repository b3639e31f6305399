"""SB3's MaskablePPO in a run: the training envs, the network, and the callback that checkpoints and evaluates.

:func:`build_vec_env` makes the vectorized envs (SB3's dummy or subprocess envs of :func:`make_env`, or the native
vector env's compiled games), :func:`new_model` the network (random weights, or ``policy.init``'s), and
:class:`RunCallback` follows the opponent schedule, saves checkpoints, feeds the self-play pool and evaluates the
model during training (``evaluations.jsonl``, ``best_model.zip``, TensorBoard).
"""

from __future__ import annotations

import json
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from sb3_contrib import MaskablePPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.utils import LinearSchedule
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecEnv, VecMonitor

from agents.afterstate import AfterstatePolicy
from agents.files import copy_file
from agents.ppo import PPOPolicy, load_network, read_settings, save_model
from train.config import SELF, ConfigError, TrainConfig, config_to_dict
from train.evaluation.belief_quality import METRICS, cluster_mean, measure_quality
from train.evaluation.matches import MatchResult, abandon, evaluate, make_executor
from train.interrupts import signals_held
from train.policies import resolve_policy
from train.specs import checkpoint_path, label
from train.training.fit import ACTIVATIONS
from train.training.native_vec import NativeVecEnv
from train.training.opponent_mix import OpponentMix, OpponentMixWrapper, opponent_belief
from train.training.run_folder import SessionRecord, read_evaluations
from uno_env.env import UnoEnv
from uno_env.policy import Policy, needs_of
from uno_env.view import WINNER_SCORES


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
             gamma: float = 0.99) -> gym.Env:
    """One training env: UnoEnv with an :class:`OpponentMix` opponent, a step limit, the mix wrapper."""
    torch.set_num_threads(1)  # in a SubprocVecEnv worker: checkpoint opponents must not fight for cores
    opponent = OpponentMix(mix, belief=opponent_belief)
    env = UnoEnv(opponent=opponent, first_player=env_options["first_player"], belief=env_options["belief"],
                 n_particles=env_options["n_particles"])
    env = gym.wrappers.TimeLimit(env, env_options["max_episode_steps"])
    if env_options["reward_shaping"]:
        env = CardCountShaping(env, env_options["reward_shaping"], gamma)
    return OpponentMixWrapper(env, opponent)


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
    return make_vec_env(partial(make_env, env_options, first_mix, opponent_belief(config), config.ppo.gamma),
                        n_envs=config.n_envs, seed=seed, vec_env_cls=vec_cls, vec_env_kwargs=vec_kwargs)


def policy_kwargs(config: TrainConfig) -> dict[str, Any]:
    """The network's settings for SB3 (``policy``)."""
    arch = list(config.policy.net_arch)
    activation = ACTIVATIONS[config.policy.activation]
    kwargs = {"net_arch": {"pi": arch, "vf": arch}, "activation_fn": activation, "ortho_init": config.policy.ortho_init}
    if config.policy.actor == "afterstate":
        kwargs["head_arch"] = arch
    return kwargs


def ppo_kwargs(config: TrainConfig) -> dict[str, Any]:
    """MaskablePPO's hyperparameters (``ppo``)."""
    ppo = config.ppo
    rate = LinearSchedule(ppo.learning_rate, 0.0, 1.0) if ppo.lr_schedule == "linear" else ppo.learning_rate
    return {"learning_rate": rate, "n_steps": ppo.n_steps, "batch_size": ppo.batch_size, "n_epochs": ppo.n_epochs,
            "gamma": ppo.gamma, "gae_lambda": ppo.gae_lambda, "clip_range": ppo.clip_range, "ent_coef": ppo.ent_coef,
            "vf_coef": ppo.vf_coef, "max_grad_norm": ppo.max_grad_norm, "target_kl": ppo.target_kl}


def new_model(config: TrainConfig, venv: VecEnv) -> MaskablePPO:
    """The run's network on ``venv``: random weights from ``seed``, or ``policy.init``'s."""
    policy = AfterstatePolicy if config.policy.actor == "afterstate" else "MlpPolicy"
    model = MaskablePPO(policy, venv, seed=config.seed, device="cpu", verbose=0, policy_kwargs=policy_kwargs(config),
                        **ppo_kwargs(config))
    if config.policy.init is not None:
        start_from(model, config.policy.init, venv)
    return model


def start_from(model: MaskablePPO, spec: str, venv: VecEnv) -> None:
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
        arch = arch.get("pi") if isinstance(arch, dict) else arch
        raise ConfigError(f"policy.init: {path} is not this config's network: it has belief {settings.get('belief')!r}"
                          f", {settings.get('observation_size')} inputs, net_arch {arch}, activation "
                          f"{str(record.get('activation')).lower()!r}, actor "
                          f"{'afterstate' if record.get('class') == 'AfterstatePolicy' else 'mlp'!r}") from None


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
                "config": self.config.name, "steps": int(self.model.num_timesteps)}

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
