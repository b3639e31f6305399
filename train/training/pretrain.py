"""Warm start before PPO: imitate a teacher (behaviour cloning, then optional DAgger rounds), or improve on it.

PPO from scratch learns UNO slowly: the reward is one +-1 at the end of a game that luck decides
as much as play, so on a small CPU budget the policy barely moves away from random play
(docs/RESULTS.md). Imitating a teacher first (the rule-based player, or the search player to distil
search into the policy) gives the actor a sensible starting policy and the critic a matching value
function, so PPO starts improving on the teacher instead of rediscovering it.

:func:`warm_start` runs ``pretrain.rounds`` rounds of what ``pretrain.labels`` names. With ``rollout-values``
(:func:`improve`), each round is a step of rollout policy improvement (:mod:`train.training.rollout_values`):
the student learns the value of every move by playouts from the true position, which makes it *better* than
its base player, the teacher in round 1 and the previous student after. ``search-values`` is the same with
the search player's root values as labels (averaged over its belief's hidden hands; its rollouts play the base
player on the student's seat, so from ``random`` no knowledge of play enters). With ``moves`` (:func:`imitate`),
the rounds are behaviour cloning and DAgger (Ross et al. 2011):

1. round 1 plays the teacher's own moves and fits the student to them (behaviour cloning);
2. every later round lets the *student* play (sampling from its masked policy) while an expert (the
   teacher by default) labels each of the student's decisions with the move it would make; the expert's
   labels of all rounds are pooled and the student refit. So the student learns what the expert does in
   the positions the student itself reaches, not only in the teacher's.

Data comes from :func:`uno_env.match.play_game`: the student's seat is played by a recorder that asks
the teacher for each action (the teacher sees every view of the seat, so a search teacher's belief
follows the game) and stores the student's observation (encoded with the run's belief setting), the
legal-action mask and the teacher's action; the other seat draws its player from the first phase of the
opponent schedule (without ``self``). Both seats take turns, so positions are seen moving first and
second. The value target of every decision is the game's outcome for the student seat (+1, 0, -1)
discounted by ``gamma`` per remaining decision of that seat.
With a privileged critic (``policy.critic: privileged``) each recorded observation also carries the hidden
channels of :func:`uno_env.observation.encode_privileged`, as the training env's do; only the critic reads them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from agents.files import write_text
from agents.ppo import PPOPolicy, load_network, save_model
from train.config import SELF, ConfigError, TrainConfig
from train.evaluation.matches import evaluate
from train.evaluation.statistics import score_interval
from train.policies import resolve_policy, spec_belief
from train.specs import checkpoint_path
from train.training import labelling, outcome_critic, rollout_values
from train.training.labelling import Workers
from train.training.opponent_mix import OpponentMix, opponent_belief
from uno_env.belief import BeliefKind
from uno_env.game import Game
from uno_env.match import play_game
from uno_env.observation import BASE_SIZE, encode_privileged
from uno_env.policy import Needs, Policy
from uno_env.view import PublicView


class _Recorder:
    """Records (observation, mask, teacher's action) for the student; plays the teacher's move or the student's."""

    def __init__(self, teacher: Policy, belief: BeliefKind, privileged: bool = False,
                 student: Policy | None = None) -> None:
        self.teacher = teacher
        self.student = student
        self.needs = Needs(belief)
        self.privileged = privileged
        self.game: Game | None = None
        self.records: list[tuple[np.ndarray, np.ndarray, int]] = []
        self.agreed = self.choices = 0  # the student's own moves that match the teacher's, on real choices

    def deal(self, game: Game) -> None:
        """``play_game``'s ``on_deal`` hook: keep the game for the privileged channels (the teacher never sees it)."""
        self.game = game

    def reset(self, seed: int | None = None) -> None:
        self.teacher.reset(seed)
        if self.student is not None:
            self.student.reset(None if seed is None else seed + 1)
        self.records = []

    def observe_start(self, view: PublicView) -> None:
        if hasattr(self.teacher, "observe_start"):
            self.teacher.observe_start(view)

    def act(self, view: PublicView) -> int:
        action = self.teacher.act(view)
        obs = np.asarray(view.observation, dtype=np.float32)
        if self.privileged:
            obs = np.concatenate((obs, encode_privileged(self.game, self.game.current)))
        self.records.append((obs, view.action_mask.astype(bool), action))
        if self.student is None:
            return action
        played = self.student.act(view)
        if len(view.legal_actions) > 1:
            self.choices += 1
            self.agreed += played == action
        return played


@dataclass
class Demonstrations:
    """The teacher's decisions: observations, legal masks, actions and discounted outcomes."""

    observations: np.ndarray
    masks: np.ndarray
    actions: np.ndarray
    returns: np.ndarray

    def __len__(self) -> int:
        return len(self.actions)

    def __add__(self, other: Demonstrations) -> Demonstrations:
        return Demonstrations(*(np.concatenate((a, b)) for a, b in zip(
            (self.observations, self.masks, self.actions, self.returns),
            (other.observations, other.masks, other.actions, other.returns), strict=True)))


def collect(config: TrainConfig, seed: int, student: Policy | None = None, labeller: str | None = None,
            games: int | None = None) -> tuple[Demonstrations, float]:
    """Play ``games`` games against the first phase's opponents, ``labeller`` labelling every move.

    ``labeller`` and ``games`` default to ``pretrain.teacher`` and ``pretrain.games``. The labeller's moves
    are played, or with ``student`` the student's. Returns the demonstrations and how often the moves played
    agreed with the labeller's on decisions with a choice (1.0 without a student).
    """
    mix = {name: weight for name, weight in config.opponents[0].mix.items() if name != SELF} or {"random": 1.0}
    recorder = _Recorder(resolve_policy(labeller or config.pretrain.teacher), config.env.belief,
                         privileged=config.policy.critic == "privileged", student=student)
    # The mix's checkpoints get observations encoded with the belief they were trained with; named players
    # ignore the encoding.
    opponent = OpponentMix(mix, belief=opponent_belief(config))
    gamma = config.ppo.gamma
    rng = np.random.default_rng(seed)
    observations, masks, actions, returns = [], [], [], []
    for game in range(config.pretrain.games if games is None else games):
        seat = game % 2
        seats = (recorder, opponent) if seat == 0 else (opponent, recorder)
        result = play_game(seats, int(rng.integers(2**62)), first_player=int(rng.integers(2)),
                           n_particles=config.env.n_particles, on_deal=recorder.deal)
        outcome = 0.0 if result.winner == -1 else (1.0 if result.winner == seat else -1.0)
        n = len(recorder.records)
        for k, (obs, mask, action) in enumerate(recorder.records):
            observations.append(obs)
            masks.append(mask)
            actions.append(action)
            returns.append(outcome * gamma ** (n - 1 - k))
    data = Demonstrations(np.array(observations), np.array(masks), np.array(actions), np.array(returns, np.float32))
    return data, (recorder.agreed / recorder.choices if recorder.choices else 1.0)


#: Receives a generation's scalars for TensorBoard: ``log(generation, {tag: value})``.
GenerationLog = Callable[[int, dict[str, float]], None]


def warm_start(model: Any, config: TrainConfig, seed: int, workdir: Path, workers: Workers | None = None,
               progress: bool = False, log: GenerationLog | None = None) -> dict[str, float]:
    """The warm start ``pretrain.labels`` asks for: :func:`imitate` or :func:`improve`; returns the metrics.

    ``workdir`` receives what a warm start keeps on disk (:func:`improve`'s label shards and round networks), so a
    warm start killed at any moment continues where it stopped when called again with the same folder.
    ``workers``, ``progress`` and ``log`` are :func:`improve`'s.
    """
    if config.pretrain.labels != "moves":
        return improve(model, config, seed, workdir, workers, progress, log)
    return imitate(model, config, seed)


def improve(model: Any, config: TrainConfig, seed: int, workdir: Path, workers: Workers | None = None,
            progress: bool = False, log: GenerationLog | None = None) -> dict[str, float]:
    """Rounds (generations) of policy improvement (:mod:`train.training.rollout_values`); the last round's metrics.

    Round 1 improves on the teacher, each later round on the network of the round before. A round labels
    ``pretrain.games`` games in shards (:mod:`train.training.labelling`: ``workdir/round_K/``, on ``workers``, by
    default ``eval.workers`` local processes), fits a network on the labels of the last ``pretrain.window`` rounds
    and saves it as ``workdir/round_K.zip``, the next round's base, compiled by the labelling processes. With
    ``pretrain.round_net_arch`` that network is a small featureless ReLU network fitted for the purpose, and only
    the last round fits ``model``; without it every round refits ``model``.

    With ``pretrain.gate_pairs``, each round's network is evaluated against ``rule``, ``random`` and the network it
    improved on (its base: the last one kept, or a checkpoint teacher) on that many deal pairs (seed ``eval.seed``),
    and replaces it as the base only if it is not worse (the upper end of its 95% interval against it is at least
    1/2).

    Everything a round makes is on disk before the next starts (``round_K.json`` last), so called again on the same
    folder after a kill, this skips the rounds done, reuses their shards and networks, and gives the same result.
    ``log`` receives each round's scalars (:data:`GenerationLog`). Metrics: those of
    :func:`~train.training.rollout_values.fit_values`, the number of labelled ``examples``, and per round
    ``round_K/gain``: how much better the network's moves are than the base player's by the held-out labels.
    """
    settings = config.pretrain
    for name, weight in settings.opponent.items():  # their games are played without belief features
        belief = spec_belief(name) if name != SELF and weight > 0 else "none"
        if belief != "none":
            raise ConfigError(f"pretrain.opponent.{name}: the labelled games' opponents play without belief "
                              f"features, got a player of belief {belief!r}")
    base = _teacher(config)
    metrics: dict[str, float] = {}
    gains: dict[str, float] = {}
    history: list[labelling.Labels] = []
    generations = [base]  # every base player so far: the "self" of pretrain.opponent
    with workers or Workers(min(config.eval.workers, settings.games)) as pool:
        for round_ in range(1, settings.rounds + 1):
            started = time.perf_counter()
            job = _label_job(config, seed, round_, base, generations)
            labels, made = labelling.run(job, workdir / f"round_{round_}", pool, progress)
            labelled = time.perf_counter() - started
            last = round_ == settings.rounds
            window = settings.last_window if last and settings.last_window else settings.window
            history = [*history, labels][-max(settings.window, settings.last_window or 1):]  # what a fit may use
            observations, values, moves = (np.concatenate(arrays) for arrays in zip(*history[-window:], strict=True))
            network = workdir / f"round_{round_}.zip"
            record_path = workdir / f"round_{round_}.json"
            own_network = not last and settings.round_net_arch is not None
            record = _read_round(record_path) if not last else None
            if record is not None:  # fitted before the run was stopped: its network is on disk
                if not own_network:
                    model.policy.load_state_dict(load_network(network).state_dict())
            else:
                student, metrics = _fit_round(model, config, own_network, observations, values, moves, seed + round_)
                record = {"metrics": metrics}
                save_model(student, network, {
                    "belief": "none" if own_network else config.env.belief, "config": config.name, "steps": 0})
                record["labelled_positions"] = len(labels[2])
                record["positions_per_second"] = made / labelled if made else None
                if settings.gate_pairs:  # against the network this round improved on (a kept one)
                    previous = None if base in rollout_values.BUILT_IN_BASES else Path(base)
                    record.update(_gate(network, previous, config, pool))
                record["seconds"] = time.perf_counter() - started
                write_text(record_path, json.dumps(record, indent=1) + "\n")
                if log is not None:
                    log(round_, {key: value for key, value in record.items()
                                 if isinstance(value, float | int) and key != "metrics"} | record["metrics"])
            metrics = record["metrics"]
            gains[f"round_{round_}/gain"] = metrics["held_out_value_of_network_move"] - \
                metrics["held_out_value_of_base_move"]
            if record.get("kept", True):
                base = str(network)
                generations.append(base)
    return {**metrics, **gains, "examples": len(moves)}


def _teacher(config: TrainConfig) -> str:
    """Round 1's base player: a built-in name or the teacher checkpoint's path."""
    teacher = config.pretrain.teacher
    return teacher if teacher in rollout_values.BUILT_IN_BASES else str(checkpoint_path(teacher))


def _label_job(config: TrainConfig, seed: int, round_: int, base: str,
               generations: list[str]) -> labelling.LabelJob:
    """What round ``round_`` labels, from the config's settings; ``generations``: the base players so far."""
    settings = config.pretrain
    simulations = settings.search_simulations if settings.round_simulations is None else \
        settings.round_simulations[round_ - 1]
    search = rollout_values.SearchLabels(simulations, settings.search_belief, leaf_moves=settings.search_leaf_moves) \
        if settings.labels == "search-values" else None
    return labelling.LabelJob(settings.games, settings.shard_games, seed, round_, settings.deck_orders,
                              config.env.belief, base, search, tuple(settings.opponent.items()), tuple(generations))


def check_resumable(config: TrainConfig, seed: int, workdir: Path) -> None:
    """Refuse (``ConfigError``, naming the setting) to continue a warm start in ``workdir`` whose labels were made
    with other settings than ``config``'s; checked on round 1, whose base player is the teacher."""
    if config.pretrain.labels != "moves":
        teacher = _teacher(config)
        labelling.check_settings(workdir / "round_1", _label_job(config, seed, 1, teacher, [teacher]).settings())


def _read_round(path: Path) -> dict[str, Any] | None:
    """A finished round's record, or None (not finished, or a file from a run cut short)."""
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and isinstance(record.get("metrics"), dict) else None


def _fit_round(model: Any, config: TrainConfig, own_network: bool, observations: np.ndarray, values: np.ndarray,
               moves: np.ndarray, seed: int) -> tuple[Any, dict[str, float]]:
    """Fit a round's network (a small featureless one, or ``model``); it and the fit's metrics."""
    settings = config.pretrain
    if own_network:  # a small featureless network, the next round's base (config.PretrainConfig)
        student, metrics = rollout_values.fit(observations[:, :BASE_SIZE], values, moves, settings.epochs, seed,
                                              settings.base_bonus, "none", settings.round_net_arch, "relu",
                                              settings.learning_rate, settings.batch_size)
    else:
        student = model
        metrics = rollout_values.fit_values(model.policy, observations, values, moves, settings.epochs, seed,
                                            settings.base_bonus, settings.learning_rate, settings.batch_size,
                                            settings.centred, settings.cosine)
    if settings.critic_games:
        metrics |= outcome_critic.fit_critic_on_outcomes(
            student.policy, "none" if own_network else config.env.belief, settings.critic_games, seed,
            settings.learning_rate)
    return student, metrics


def _gate(network: Path, previous: Path | None, config: TrainConfig, workers: Workers) -> dict[str, Any]:
    """A round's network against ``rule``, ``random`` and its base ``previous``: win rates, intervals, kept or not.

    The games run on the labelling's ``workers``, so Ctrl-C stops them as it stops the labelling."""
    opponents = ["rule", "random"] + ([str(previous)] if previous is not None and previous.exists() else [])
    results = evaluate(str(network), opponents, config.pretrain.gate_pairs, config.eval.seed,
                       workers=workers.width, n_particles=config.env.n_particles, executor=workers.get())
    record: dict[str, Any] = {}
    for name, result in zip(("rule", "random", "previous"), results, strict=False):
        low, high, _ = score_interval(result.pair_scores)
        record |= {f"win_rate/{name}": result.score, f"win_rate/{name}/low": low, f"win_rate/{name}/high": high}
    record["kept"] = bool(record.get("win_rate/previous/high", 1.0) >= 0.5)
    return record


def imitate(model: Any, config: TrainConfig, seed: int) -> dict[str, float]:
    """Behaviour cloning, then ``pretrain.rounds - 1`` DAgger rounds (module docstring); returns the metrics.

    The DAgger rounds' labels come from ``pretrain.expert`` (default: the teacher), ``expert_games`` games a
    round (default: ``games``). Each refit continues from the student's current weights on every label the
    expert gave so far, the first round's included when the expert is the teacher. So a cheap teacher (the rule
    player, thousands of games) can start the student and a costly expert (the search player, a few hundred
    games) correct it where they disagree.

    Metrics: those of the last :func:`clone`, the number of ``examples`` in it, and (after a DAgger round)
    ``student_agreement``: how often the student's own moves matched the expert's in the last round's games,
    before that round's refit.
    """
    settings = config.pretrain
    data, _ = collect(config, seed)
    metrics = clone(model, data, config, seed)
    expert = settings.expert or settings.teacher
    if expert != settings.teacher:
        data = None  # the teacher's labels are not the expert's: refit on the expert's alone
    for round_ in range(1, settings.rounds):
        public_size = getattr(model.policy, "public_size", model.observation_space.shape[0])  # agents.privileged
        student = PPOPolicy(model.policy, belief=config.env.belief, observation_size=public_size, deterministic=False)
        more, agreement = collect(config, seed + round_, student=student, labeller=expert,
                                  games=settings.expert_games or settings.games)
        data = more if data is None else data + more
        metrics = clone(model, data, config, seed + round_)
        metrics["student_agreement"] = agreement
    metrics["examples"] = len(data) if data is not None else 0
    return metrics


def clone(model: Any, data: Demonstrations, config: TrainConfig, seed: int) -> dict[str, float]:
    """Fit the model's actor to the teacher's actions and its critic to the outcomes; returns final metrics.

    The actor's loss is the cross-entropy of the masked logits on decisions with a real choice
    (a forced move teaches nothing); the critic's is the squared error on every decision.
    """
    settings = config.pretrain
    policy = model.policy
    optimizer = torch.optim.Adam(policy.parameters(), lr=settings.learning_rate)
    generator = torch.Generator().manual_seed(seed)
    obs = torch.from_numpy(data.observations)
    masks = torch.from_numpy(data.masks)
    actions = torch.from_numpy(data.actions)
    returns = torch.from_numpy(data.returns)
    choice = masks.sum(dim=1) > 1
    metrics: dict[str, float] = {}
    policy.train()
    for _ in range(settings.epochs):
        order = torch.randperm(len(data), generator=generator)
        totals = np.zeros(3)
        for start in range(0, len(data), settings.batch_size):
            batch = order[start:start + settings.batch_size]
            features = policy.extract_features(obs[batch])
            pi_features, vf_features = features if isinstance(features, tuple) else (features, features)
            logits = policy.action_net(policy.mlp_extractor.forward_actor(pi_features))
            values = policy.value_net(policy.mlp_extractor.forward_critic(vf_features)).squeeze(-1)
            logits = logits.masked_fill(~masks[batch], -1e9)
            chosen = choice[batch]
            actor_loss = torch.nn.functional.cross_entropy(logits[chosen], actions[batch][chosen]) \
                if chosen.any() else logits.sum() * 0
            critic_loss = torch.nn.functional.mse_loss(values, returns[batch])
            optimizer.zero_grad()
            (actor_loss + config.ppo.vf_coef * critic_loss).backward()
            optimizer.step()
            agree = (logits[chosen].argmax(dim=1) == actions[batch][chosen]).sum().item()
            totals += (actor_loss.item() * len(batch), critic_loss.item() * len(batch), agree)
        metrics = {"actor_loss": totals[0] / len(data), "critic_loss": totals[1] / len(data),
                   "agreement": totals[2] / max(1, int(choice.sum()))}
    policy.set_training_mode(False)
    return metrics
