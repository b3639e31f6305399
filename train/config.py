"""The training config: a dataclass schema read from YAML, with errors that name the key and the value.

Every key is optional except where the schema has no default; ``configs/default.yaml`` shows them
all with comments. :func:`load_config` reads a file, applies ``--set key.path=value`` overrides,
and validates; :func:`config_to_dict` gives the resolved config a run records.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

import yaml

from train.specs import checkpoint_path, validate_spec
from uno_env.belief import BeliefKind
from uno_env.cards import short_repr
from uno_env.core import COMPILED_PLAYERS as NATIVE_OPPONENTS
from uno_env.vector import MAX_WEIGHT

#: Minibatches per PPO-phase update (``train.integrations.cleanrl_ppo``'s default).
PHASE_MINIBATCHES = 4

#: The opponent-mix key meaning "a recent checkpoint of the agent being trained" (self-play).
SELF = "self"


class ConfigError(ValueError):
    """A config key is unknown, missing, or has a bad value; the message names the key and value."""


def _positive(value: float) -> str | None:
    return None if value > 0 else "must be > 0"


def _non_negative(value: float) -> str | None:
    return None if value >= 0 else "must be >= 0"


def _unit(value: float) -> str | None:
    return None if 0 <= value <= 1 else "must be between 0 and 1"


def _bounded(low: int, high: int) -> Any:
    """A check that an int lies in ``low..high``: past a library's limits it would crash or exhaust memory."""
    def check(value: int) -> str | None:
        if value < low:
            return "must be > 0" if low == 1 else f"must be >= {low}"
        return None if value <= high else f"must be at most {high:,}"

    return check


def _at_most(high: float) -> Any:
    """A check that a positive number is at most ``high``: beyond it, training only makes NaNs."""
    def check(value: float) -> str | None:
        return "must be > 0" if value <= 0 else None if value <= high else f"must be at most {high:g}"

    return check


#: Seeds go to numpy, random and torch, which take 0..2**32-1; runs add their step and offsets to them.
_seed = _bounded(0, 2**31 - 1)


def _check(check: Any) -> dict[str, Any]:
    return {"check": check}


@dataclass
class EnvConfig:
    """Options of the training env (``uno_env.UnoEnv``)."""

    belief: BeliefKind = "none"
    first_player: Literal["agent", "opponent", "random"] = "random"
    n_particles: int = field(default=200, metadata=_check(_bounded(1, 100_000)))
    max_episode_steps: int = field(default=1000, metadata=_check(_bounded(1, 10_000_000)))
    # See train.training.trainer.CardCountShaping.
    reward_shaping: float = field(default=0.0, metadata=_check(_non_negative))


@dataclass
class PPOConfig:
    """MaskablePPO hyperparameters (stable-baselines3 names; ``n_steps`` is per env)."""

    learning_rate: float = field(default=3e-4, metadata=_check(_at_most(1.0)))
    lr_schedule: Literal["constant", "linear"] = "constant"
    n_steps: int = field(default=256, metadata=_check(_bounded(1, 1_000_000)))
    batch_size: int = field(default=512, metadata=_check(_bounded(1, 10_000_000)))
    n_epochs: int = field(default=4, metadata=_check(_positive))
    gamma: float = field(default=0.99, metadata=_check(_unit))
    gae_lambda: float = field(default=0.95, metadata=_check(_unit))
    clip_range: float = field(default=0.2, metadata=_check(_positive))
    ent_coef: float = field(default=0.01, metadata=_check(_non_negative))
    vf_coef: float = field(default=0.5, metadata=_check(_non_negative))
    max_grad_norm: float = field(default=0.5, metadata=_check(_positive))
    target_kl: float | None = field(default=None, metadata=_check(_positive))


@dataclass
class PolicyConfig:
    """The actor and critic networks (separate MLPs of the same shape).

    ``critic: privileged`` gives the critic hidden state during training (the opponent's hand, the next deck
    cards) while the actor keeps the public observation (:mod:`agents.privileged`).

    ``actor: afterstate`` scores each legal move with one MLP of ``net_arch`` reading the observation and what the
    move leaves (:mod:`agents.afterstate`) instead of an output row per action; the critic stays an MLP.

    ``init`` names a checkpoint (a shipped agent's name or a ``.zip``) whose actor and critic the run's network starts
    from instead of random weights, to continue training a network, e.g. expert iteration from a shipped agent; it
    must have this config's observation (``env.belief``), ``net_arch``, ``activation`` and ``critic``.
    """

    net_arch: list[int] = field(default_factory=lambda: [128, 128])
    activation: Literal["tanh", "relu"] = "tanh"
    ortho_init: bool = True
    critic: Literal["public", "privileged"] = "public"
    actor: Literal["mlp", "afterstate"] = "mlp"
    init: str | None = None


@dataclass
class PhaseConfig:
    """One phase of the opponent schedule: until a fraction of the run, each game's opponent is drawn from ``mix``.

    ``mix`` maps players (policy names, checkpoints, ``module:attribute``, or ``self``) to weights.
    """

    mix: dict[str, float]
    until: float = field(default=1.0, metadata=_check(lambda v: None if 0 < v <= 1 else "must be in (0, 1]"))


@dataclass
class SelfPlayConfig:
    """The pool ``self`` draws from: the most recent checkpoints of this run (see ``checkpoint_every``)."""

    pool_size: int = field(default=5, metadata=_check(_positive))


@dataclass
class PretrainConfig:
    """Imitation of a teacher before PPO (``train.training.pretrain``); off while ``teacher`` is null.

    With ``labels: moves`` (imitation), round 1 is behaviour cloning of ``teacher`` on ``games`` games; each
    further round is a DAgger round: the student plays ``expert_games`` games (default: ``games``), ``expert``
    (default: the teacher; e.g. ``search`` to distil the search player) labels its positions, and the student
    is refit on every label the expert gave.

    With ``labels: rollout-values`` (policy improvement, :mod:`train.training.rollout_values`), each round plays
    ``games`` games of a base player against ``rule`` and labels every move of every decision by rollouts on
    ``deck_orders`` deck orders; the student's logits regress the values (``base_bonus`` added to the base
    player's move). The base player of round 1 is the teacher (``rule``, ``random``: from scratch, or a
    belief-``none`` checkpoint), of each later round the student of the round before: approximate policy
    iteration. ``labels: search-values`` labels the same positions by the search player's root values instead
    (``search_simulations`` each, worlds from ``search_belief``: ``counting``, ``particles``, or ``aware``, the
    particle filter told that the opponent plays ``rule``; :class:`~train.training.rollout_values.SearchLabels`),
    whose rollouts continue with the base player on its seat: from ``random``, the search is the improvement step.
    ``round_net_arch`` makes every round but the last fit a ReLU network of those layers, without belief features,
    as the next round's base instead of the run's network: a small one keeps the playouts that run it cheap (they
    cost about 3 times the rule player's with 64x64, 26 times with a 256x256 tanh network).

    ``search_leaf_moves`` guides that search by the base network (from round 2 on, or a checkpoint teacher): each
    simulation stops after that many of the learner's decisions and the network's critic scores it, instead of
    playing to the end (``null``: to the end; rounds whose base is ``rule`` or ``random`` always play to the end).
    ``round_simulations`` (one number per round) gives each round's search its own simulations instead of
    ``search_simulations``: a stronger, costlier teacher for the last generations (docs/RESULTS.md, "The teacher and
    its student").

    The labels of a round are made in shards of ``shard_games`` games, each saved as soon as it is made
    (:mod:`train.training.labelling`), so a run killed while labelling resumes without relabelling them. Each round
    (a generation of expert iteration) fits on the labels of its last ``window`` rounds, the last round (the run's
    network) on its last ``last_window`` rounds if set (more labels for the large network: docs/RESULTS.md, "More
    labels for the last generation"); with ``gate_pairs`` > 0
    its network is evaluated against ``rule``, ``random`` and the network it improved on (the last one kept) on that
    many deal pairs (seed ``eval.seed``: these deals choose, the final evaluation's do not), and becomes the next
    base only if it is not worse than that one. With ``critic_games`` > 0 each round's network then plays that many
    games against ``rule`` and its critic is refitted on their outcomes (:mod:`train.training.outcome_critic`), so
    the next round's guided search scores its leaves with a value learned from results as well as labels.

    ``opponent`` is the mix the labelled games are played against (``rollout-values`` and ``search-values``): each
    game's opponent is drawn from it by weight, a player (a name or a checkpoint without belief features) or
    ``self``: one of the run's base players so far, drawn evenly (the teacher and every generation kept since,
    the current one included: self-play against the generations). The search's own model of the opponent stays
    ``rule`` (its rollouts and, with ``aware``, its belief), so ``aware`` is refused with anything but ``rule``.

    ``centred`` and ``cosine`` change how the run's network (not a round's small one) fits the values: ``centred``
    fits each position's values less their mean over its legal moves (the differences a player acts on),
    ``cosine`` anneals the learning rate to 0 along a half cosine over the epochs
    (:func:`~train.training.rollout_values.fit_values`; docs/RESULTS.md, "An afterstate actor").
    """

    teacher: str | None = None
    labels: Literal["moves", "rollout-values", "search-values"] = "moves"
    games: int = field(default=2000, metadata=_check(_positive))
    rounds: int = field(default=1, metadata=_check(_positive))
    expert: str | None = None
    expert_games: int | None = field(default=None, metadata=_check(_positive))
    epochs: int = field(default=10, metadata=_check(_positive))
    learning_rate: float = field(default=1e-3, metadata=_check(_at_most(1.0)))
    batch_size: int = field(default=256, metadata=_check(_positive))
    deck_orders: int = field(default=4, metadata=_check(_bounded(1, 64)))
    base_bonus: float = field(default=0.1, metadata=_check(_non_negative))
    search_simulations: int = field(default=800, metadata=_check(_bounded(1, 1_000_000)))
    round_simulations: list[int] | None = None
    search_belief: Literal["counting", "particles", "aware"] = "counting"
    search_leaf_moves: int | None = field(default=None, metadata=_check(_non_negative))
    round_net_arch: list[int] | None = None
    shard_games: int = field(default=50, metadata=_check(_bounded(1, 1_000_000)))
    window: int = field(default=1, metadata=_check(_positive))
    last_window: int | None = field(default=None, metadata=_check(_positive))
    gate_pairs: int = field(default=0, metadata=_check(_non_negative))
    critic_games: int = field(default=0, metadata=_check(_bounded(0, 500_000)))  # ~22 kB of memory each
    centred: bool = False
    cosine: bool = False
    opponent: dict[str, float] = field(default_factory=lambda: {"rule": 1.0})


@dataclass
class PPOPhaseConfig:
    """A PPO phase after the warm start (:mod:`train.training.ppo_phase`); off while ``steps`` is 0.

    Masked PPO on the native vector env's compiled games (the loop of ``train.integrations.cleanrl_ppo``, about 30
    times SB3's steps a second here), started from the warm start's network and held near it by
    ``kl_coef * KL(pi || pi_0)``. On an expert-iteration generation's 64x64 network, 10M steps against ``rule`` added
    about 2 points against ``rule`` (docs/RESULTS.md, "A PPO phase on a generation's network"). ``opponent`` is a mix
    of the compiled players; ``eval_every`` counts updates of ``num_envs * num_steps`` steps. It replaces SB3's PPO
    (``total_timesteps: 0``) and plays without belief features.
    """

    steps: int = field(default=0, metadata=_check(_bounded(0, 10**11)))
    opponent: dict[str, float] = field(default_factory=lambda: {"rule": 1.0})
    kl_coef: float = field(default=0.1, metadata=_check(_non_negative))
    learning_rate: float = field(default=1e-4, metadata=_check(_at_most(1.0)))
    ent_coef: float = field(default=0.0, metadata=_check(_non_negative))
    num_envs: int = field(default=256, metadata=_check(_bounded(1, 4096)))
    num_steps: int = field(default=32, metadata=_check(_bounded(1, 4096)))
    update_epochs: int = field(default=4, metadata=_check(_bounded(1, 100)))
    eval_every: int = field(default=100, metadata=_check(_non_negative))


@dataclass
class EvalConfig:
    """Evaluation during and after training (paired, seat-balanced: see ``train.evaluation.matches``)."""

    every: int = field(default=0, metadata=_check(_non_negative))  # steps between evaluations; 0: only at the end
    pairs: int = field(default=100, metadata=_check(_positive))  # deal pairs per opponent (2 games each)
    final_pairs: int = field(default=500, metadata=_check(_non_negative))  # for the final table; 0 skips it
    opponents: list[str] = field(default_factory=lambda: ["random", "rule"])
    seed: int = field(default=12345, metadata=_check(_seed))
    workers: int = field(default=2, metadata=_check(_positive))
    belief_games: int = field(default=20, metadata=_check(_non_negative))  # games for the belief-quality scalars


@dataclass
class TrainConfig:
    """Everything a training run needs (see ``configs/default.yaml`` for a commented example)."""

    total_timesteps: int = field(metadata=_check(_non_negative))  # 0: the warm start alone (needs pretrain)
    name: str = "run"
    seed: int = field(default=0, metadata=_check(_seed))
    n_envs: int = field(default=8, metadata=_check(_bounded(1, 1024)))
    # "native": uno_env.vector's compiled games behind train.training.native_vec (built-in opponents only).
    vec_env: Literal["dummy", "subproc", "native"] = "dummy"
    start_method: Literal["forkserver", "spawn", "fork"] = "forkserver"
    torch_threads: int = field(default=1, metadata=_check(_bounded(1, 256)))
    checkpoint_every: int = field(default=50_000, metadata=_check(_positive))
    progress_bar: bool = True
    env: EnvConfig = field(default_factory=EnvConfig)
    ppo: PPOConfig = field(default_factory=PPOConfig)
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    opponents: list[PhaseConfig] = field(default_factory=lambda: [PhaseConfig(mix={"random": 1.0})])
    self_play: SelfPlayConfig = field(default_factory=SelfPlayConfig)
    pretrain: PretrainConfig = field(default_factory=PretrainConfig)
    ppo_phase: PPOPhaseConfig = field(default_factory=PPOPhaseConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)

    def uses_self_play(self) -> bool:
        """True when some phase of the opponent schedule draws from the self-play pool."""
        return any(SELF in phase.mix for phase in self.opponents)

    def mix_at(self, step: int) -> dict[str, float]:
        """The opponent mix in force at ``step``."""
        fraction = step / self.total_timesteps if self.total_timesteps else 0.0
        for phase in self.opponents:
            if fraction < phase.until:
                return phase.mix
        return self.opponents[-1].mix


# ------------------------------------------------------------------------------------ parsing
def _type_name(kind: Any) -> str:
    origin = get_origin(kind)
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in get_args(kind))
    if origin in (Union, types.UnionType):
        return " or ".join(_type_name(a) for a in get_args(kind))
    if origin is list:
        return f"a list of {_type_name(get_args(kind)[0])}"
    if origin is dict:
        return f"a mapping to {_type_name(get_args(kind)[1])}"
    if dataclasses.is_dataclass(kind):
        return "a mapping"
    return {int: "an integer", float: "a number", bool: "true or false", str: "a string",
            type(None): "null"}[kind]


def _number(value: Any) -> float | None:
    """YAML reads ``3e-4`` (no dot) as a string; accept numeric strings and real numbers, not booleans.

    Infinities and NaN (``.inf``, ``nan``) are refused: no key means them, and ``int()`` would raise on them.
    """
    if isinstance(value, bool):
        return None
    number: float | None = None
    if isinstance(value, int | float):
        number = value
    elif isinstance(value, str):
        try:
            number = float(value.replace("_", ""))
        except ValueError:
            return None
    return number if number is not None and math.isfinite(number) else None


def _parse(kind: Any, value: Any, key: str) -> Any:
    """Convert ``value`` to ``kind`` or raise ConfigError naming ``key``."""
    def bad() -> ConfigError:
        return ConfigError(f"{key} must be {_type_name(kind)}, got {short_repr(value)}")

    origin = get_origin(kind)
    if dataclasses.is_dataclass(kind):
        return _parse_dataclass(kind, value, key)
    if origin in (Union, types.UnionType):
        for option in get_args(kind):
            if option is type(None) and value is None:
                return None
        options = [a for a in get_args(kind) if a is not type(None)]
        if len(options) == 1 and value is not None:
            return _parse(options[0], value, key)
        raise bad()
    if origin is Literal:
        if value not in get_args(kind):
            raise bad()
        return value
    if origin is list:
        if not isinstance(value, list):
            raise bad()
        return [_parse(get_args(kind)[0], item, f"{key}[{i}]") for i, item in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise bad()
        return {str(k): _parse(get_args(kind)[1], v, f"{key}.{k}") for k, v in value.items()}
    if kind is bool:
        if not isinstance(value, bool):
            raise bad()
        return value
    if kind is str:
        if not isinstance(value, str):
            raise bad()
        return value
    number = _number(value)
    if number is None:
        raise bad()
    if kind is int:
        if float(number) != int(number):
            raise bad()
        return int(number)
    return float(number)


def _parse_dataclass(cls: Any, data: Any, prefix: str) -> Any:
    where = f"{prefix} " if prefix else "the config "
    if not isinstance(data, dict):
        raise ConfigError(f"{where.strip()} must be a mapping of keys to values, got {short_repr(data)}")
    hints = get_type_hints(cls)
    known = {f.name: f for f in dataclasses.fields(cls)}
    for key in data:
        if key not in known:
            close = difflib.get_close_matches(str(key), known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else f"; known keys: {', '.join(known)}"
            raise ConfigError(f"unknown key {_join(prefix, key)!r}{hint}")
    values = {}
    for name, spec in known.items():
        key = _join(prefix, name)
        if name not in data:
            if spec.default is dataclasses.MISSING and spec.default_factory is dataclasses.MISSING:
                raise ConfigError(f"missing key {key!r} ({_type_name(hints[name])})")
            continue
        value = _parse(hints[name], data[name], key)
        check = spec.metadata.get("check")
        problem = check(value) if check is not None and value is not None else None
        if problem:
            raise ConfigError(f"{key} {problem}, got {short_repr(data[name])}")
        values[name] = value
    return cls(**values)


def _join(prefix: str, name: Any) -> str:
    return f"{prefix}.{name}" if prefix else str(name)


def _validate(config: TrainConfig) -> None:
    """Checks that involve several keys, or the players the config names."""
    name = config.name
    if not name or name in (".", "..") or "/" in name or any(ord(c) < 32 for c in name):  # run folders are named so
        raise ConfigError(f"name must be a folder name (not empty, no '/', no control characters), got "
                          f"{short_repr(name)}")
    ppo = config.ppo
    rollout = ppo.n_steps * config.n_envs
    if ppo.batch_size > rollout:
        raise ConfigError(f"ppo.batch_size must be at most ppo.n_steps * n_envs = {rollout}, got {ppo.batch_size}")
    for key, arch in (("policy.net_arch", config.policy.net_arch), ("pretrain.round_net_arch",
                                                                     config.pretrain.round_net_arch)):
        if arch is not None and (not arch or len(arch) > 16 or min(arch) < 1 or max(arch) > 8192):
            # the bounds agents.ppo loads
            raise ConfigError(f"{key} must be a non-empty list of at most 16 positive layer sizes of at most 8192, "
                              f"got {short_repr(arch)}")
    if rollout > 10_000_000:  # the rollout buffer holds rollout observations: beyond this, memory runs out
        raise ConfigError(f"ppo.n_steps * n_envs must be at most 10,000,000, got {rollout:,}")
    if not config.opponents:
        raise ConfigError("opponents must list at least one phase, got []")
    previous = 0.0
    for i, phase in enumerate(config.opponents):
        key = f"opponents[{i}]"
        if phase.until <= previous:
            raise ConfigError(f"{key}.until must increase from phase to phase, got {phase.until!r} "
                              f"after {previous!r}")
        previous = phase.until
        _validate_mix(f"{key}.mix", phase.mix)
    if previous != 1.0:
        raise ConfigError(f"opponents[{len(config.opponents) - 1}].until must be 1.0 (the last phase ends the run), "
                          f"got {previous!r}")
    if config.total_timesteps == 0 and config.pretrain.teacher is None and not config.ppo_phase.steps:
        raise ConfigError("total_timesteps 0 trains nothing without a warm start: set pretrain.teacher, "
                          "ppo_phase.steps, or total_timesteps > 0")
    _validate_rollout_values(config)
    if config.policy.actor == "afterstate":
        _validate_afterstate(config)
    if config.vec_env == "native":
        _validate_native(config)
    if config.ppo_phase.steps:
        _validate_ppo_phase(config)
    for key in ("teacher", "expert"):
        spec = getattr(config.pretrain, key)
        problem = None if spec is None else validate_spec(spec)
        if problem:
            raise ConfigError(f"pretrain.{key}: unknown player {spec!r}: {problem}")
    if config.policy.init is not None and checkpoint_path(config.policy.init) is None:
        raise ConfigError(f"policy.init must name a checkpoint (a shipped agent or a .zip file), got "
                          f"{short_repr(config.policy.init)}")
    if not config.eval.opponents:  # the evaluations pick the best model by the mean over these
        raise ConfigError("eval.opponents must name at least one opponent, got []")
    for i, name in enumerate(config.eval.opponents):
        problem = validate_spec(name)
        if problem:
            raise ConfigError(f"eval.opponents[{i}]: unknown opponent {name!r}: {problem}")


def _validate_mix(key: str, mix: dict[str, float]) -> None:
    """An opponent mix: players (or ``self``) with weights from 0 to MAX_WEIGHT, some above 0."""
    if not mix:
        raise ConfigError(f"{key} must name at least one opponent, got {{}}")
    for name, weight in mix.items():
        if weight < 0:
            raise ConfigError(f"{key}.{name} must be >= 0, got {weight!r}")
        if weight > MAX_WEIGHT:  # weights are relative; huge ones would overflow their sum
            raise ConfigError(f"{key}.{name} must be at most {MAX_WEIGHT:g}, got {weight!r}")
        problem = None if name == SELF else validate_spec(name)
        if problem:
            raise ConfigError(f"{key}.{name}: unknown opponent {name!r}: {problem}")
    if sum(mix.values()) <= 0:
        raise ConfigError(f"{key} weights must sum to more than 0, got {mix!r}")


def _validate_afterstate(config: TrainConfig) -> None:
    """An afterstate actor (agents.afterstate) needs a public critic."""
    if config.policy.critic != "public":
        raise ConfigError(f"policy.critic must be 'public' with policy.actor 'afterstate', got "
                          f"{config.policy.critic!r}")


def _validate_native(config: TrainConfig) -> None:
    """``vec_env: native`` plays what the compiled games can: the compiled players (uno_env.core's table, which the
    vector env reads too), no belief filter, no shaping."""
    for i, phase in enumerate(config.opponents):
        for name, weight in phase.mix.items():
            if weight > 0 and name not in NATIVE_OPPONENTS:
                raise ConfigError(f"opponents[{i}].mix.{name}: vec_env 'native' plays only the opponents "
                                  f"{', '.join(map(repr, NATIVE_OPPONENTS))}; use 'dummy' or 'subproc' for {name!r}")
    if config.env.belief not in ("none", "counting"):
        raise ConfigError(f"env.belief must be 'none' or 'counting' with vec_env 'native', got {config.env.belief!r}")
    if config.env.reward_shaping:
        raise ConfigError(f"env.reward_shaping must be 0 with vec_env 'native', got {config.env.reward_shaping!r}")
    if config.policy.critic != "public":
        raise ConfigError(f"policy.critic must be 'public' with vec_env 'native', got {config.policy.critic!r}")


def _validate_ppo_phase(config: TrainConfig) -> None:
    """The PPO phase runs on the native vector env (compiled players, no belief features) instead of SB3's PPO."""
    phase = config.ppo_phase
    if config.total_timesteps:
        raise ConfigError(f"ppo_phase.steps replaces SB3's PPO: set total_timesteps to 0, got "
                          f"{config.total_timesteps:,}")
    for key, value, wanted in (("env.belief", config.env.belief, "none"), ("policy.critic", config.policy.critic,
                                                                           "public")):
        if value != wanted:
            raise ConfigError(f"{key} must be {wanted!r} with ppo_phase (the native vector env's games), got {value!r}")
    for name, weight in phase.opponent.items():
        if name not in NATIVE_OPPONENTS:
            raise ConfigError(f"ppo_phase.opponent.{name}: the phase plays only the compiled players "
                              f"{', '.join(map(repr, NATIVE_OPPONENTS))}, got {name!r}")
        if not 0 <= weight <= MAX_WEIGHT:
            raise ConfigError(f"ppo_phase.opponent.{name} must be between 0 and {MAX_WEIGHT:g}, got {weight!r}")
    if not phase.opponent or sum(phase.opponent.values()) <= 0:
        raise ConfigError(f"ppo_phase.opponent must give some compiled player a weight > 0, got {phase.opponent!r}")
    if phase.num_envs * phase.num_steps % PHASE_MINIBATCHES:
        raise ConfigError(f"ppo_phase.num_envs * ppo_phase.num_steps must be a multiple of {PHASE_MINIBATCHES} (the "
                          f"minibatches of an update), got {phase.num_envs * phase.num_steps:,}")


def parse_config(data: Any) -> TrainConfig:
    """Validate a config mapping (as read from YAML) and return the typed config."""
    config = _parse_dataclass(TrainConfig, data, "")
    _validate(config)
    return config


def apply_override(data: dict[str, Any], assignment: str) -> None:
    """Apply one ``key.path=value`` override (the value is read as YAML) to a raw config mapping."""
    key, sep, text = assignment.partition("=")
    if not sep or not key:
        raise ConfigError(f"an override must look like key.path=value, got {assignment!r}")
    *parents, last = key.split(".")
    node = data
    for i, part in enumerate(parents):
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise ConfigError(f"cannot set {key!r}: {'.'.join(parents[:i + 1])} is not a mapping")
        node = child
    try:
        node[last] = yaml.safe_load(text)
    except (yaml.YAMLError, RecursionError) as error:
        raise ConfigError(f"the value of override {short_repr(assignment)} is not valid YAML: "
                          f"{short_repr(str(error) or 'nested too deeply')}") from None


def load_config(path: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> TrainConfig:
    """Read a YAML config file, apply ``key.path=value`` overrides, validate."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist") from None
    except UnicodeDecodeError:  # e.g. a checkpoint .zip given as the config
        raise ConfigError(f"config file {path} is not a YAML text file") from None
    except OSError as error:  # e.g. a run folder given as the config (IsADirectoryError)
        raise ConfigError(f"cannot read config file {path}: {error.strerror or error}") from None
    except yaml.YAMLError as error:
        raise ConfigError(f"{path} is not valid YAML: {error}") from None
    except RecursionError:
        raise ConfigError(f"{path} nests too deeply to be a config") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path} must hold a mapping of keys to values, got {short_repr(data)}")
    for assignment in overrides:
        apply_override(data, assignment)
    try:
        return parse_config(data)
    except RecursionError:  # a YAML alias loop or a very deep value under a known key
        raise ConfigError(f"{path} nests too deeply to be a config") from None


def config_to_dict(config: TrainConfig) -> dict[str, Any]:
    """The resolved config as plain data (every key, defaults filled in), ready for YAML."""
    return dataclasses.asdict(config)


def _validate_rollout_values(config: TrainConfig) -> None:
    """``pretrain.labels: rollout-values`` (or ``search-values``) plays compiled base players: only those it can
    compile."""
    pretrain = config.pretrain
    if pretrain.labels == "moves":
        for key, value, default in (("round_net_arch", pretrain.round_net_arch, None),
                                    ("opponent", pretrain.opponent, {"rule": 1.0}),
                                    ("gate_pairs", pretrain.gate_pairs, 0), ("window", pretrain.window, 1),
                                    ("last_window", pretrain.last_window, None),
                                    ("critic_games", pretrain.critic_games, 0), ("centred", pretrain.centred, False),
                                    ("cosine", pretrain.cosine, False)):
            if value != default:
                raise ConfigError(f"pretrain.{key} is for labels: rollout-values or search-values, got labels: moves")
    _validate_mix("pretrain.opponent", pretrain.opponent)
    if pretrain.search_belief == "aware" and {name for name, weight in pretrain.opponent.items() if weight > 0} != \
            {"rule"}:
        raise ConfigError(f"pretrain.search_belief 'aware' is the filter told that the opponent plays rule: "
                          f"pretrain.opponent must be rule alone with it, got {pretrain.opponent!r}")
    if pretrain.critic_games and config.env.belief not in ("none", "counting"):
        raise ConfigError(f"pretrain.critic_games plays the native vector env's games, which compute belief 'none' or "
                          f"'counting': set env.belief to one of them, got {config.env.belief!r}")
    if pretrain.round_simulations is not None:
        simulations = pretrain.round_simulations
        if pretrain.labels != "search-values":
            raise ConfigError(f"pretrain.round_simulations is for labels: search-values, got labels: "
                              f"{pretrain.labels}")
        if len(simulations) != pretrain.rounds:
            raise ConfigError(f"pretrain.round_simulations must give one number per round (pretrain.rounds = "
                              f"{pretrain.rounds}), got {len(simulations)}: {short_repr(simulations)}")
        if min(simulations) < 1 or max(simulations) > 1_000_000:
            raise ConfigError(f"pretrain.round_simulations must be numbers from 1 to 1,000,000, got "
                              f"{short_repr(simulations)}")
    if pretrain.labels == "moves" or pretrain.teacher is None:
        return
    if pretrain.expert is not None:
        raise ConfigError(f"pretrain.expert is for labels: moves; with labels: {pretrain.labels} each round's base "
                          f"player is the previous round's student, got expert {pretrain.expert!r}")
    if config.policy.critic != "public":
        raise ConfigError(f"pretrain.labels: {pretrain.labels} fits a public critic, got policy.critic "
                          f"{config.policy.critic!r}")
    if pretrain.teacher not in ("rule", "random") and checkpoint_path(pretrain.teacher) is None:
        raise ConfigError(f"pretrain.teacher: with labels: {pretrain.labels} the base player is 'rule', 'random' or "
                          f"a checkpoint (belief none), got {pretrain.teacher!r}")
    if pretrain.rounds > 1 and config.env.belief != "none" and pretrain.round_net_arch is None:
        raise ConfigError(f"pretrain.rounds > 1 with labels: {pretrain.labels} plays the student, which "
                          f"compiles only without belief features: env.belief must be none, got "
                          f"{config.env.belief!r} (or set pretrain.round_net_arch: the rounds' own networks)")
