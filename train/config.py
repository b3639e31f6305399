"""The training config: a dataclass schema read from YAML, with errors that name the key and the value.

A run is expert iteration (``expert_iteration``), distillation of finished generations (``distil``), SB3's
MaskablePPO (``total_timesteps``, ``ppo``, ``opponents``), or expert iteration followed by MaskablePPO.
Every key is optional except where the schema has no default; ``configs/default.yaml`` shows the common ones with
comments. :func:`load_config` reads a file, applies ``--set key.path=value`` overrides, and validates;
:func:`config_to_dict` gives the resolved config a run records.

Why a hand-written schema rather than a library (pydantic, OmegaConf, Hydra): it is about 150 lines of parsing, needs
nothing beyond PyYAML (``uno-train --help`` and a config check load no torch and no extra dependency), and its errors
are written for a person at a terminal: each names the full key and the value given (``expert_iteration.games must be
> 0, got 0``), an unknown key gets a did-you-mean with its section (``did you mean 'expert_iteration.games'?``), and
``--set key.path=value`` overrides are checked the same way as the file.
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
from uno_env.belief import MAX_PARTICLES, BeliefKind, LearnedOpponent
from uno_env.cards import short_repr
from uno_env.core import COMPILED_PLAYERS as NATIVE_OPPONENTS
from uno_env.vector import MAX_WEIGHT

#: What a config (or a run folder's config.yaml) of the earlier schema is told: the section's new name and keys.
RENAMED = ("the section is now 'expert_iteration', with start (was teacher), generations (rounds), simulations "
           "(search_simulations), belief (search_belief), leaf_moves (search_leaf_moves), generation_net_arch "
           "(round_net_arch), generation_simulations (round_simulations); behaviour cloning (labels: moves) and "
           "rollout-value labels are gone (configs/default.yaml). A run folder made with it cannot be resumed: start "
           "a new run")

#: The opponent-mix key meaning "a recent checkpoint of the agent being trained" (self-play).
SELF = "self"


class ConfigError(ValueError):
    """A config key is unknown, missing, or has a bad value; the message names the key and value."""


#: The most digits a YAML integer may have: far more than any count needs, far fewer than Python's limit for
#: converting digits to an int (4,300), past which it raises an error that names neither the file nor the line.
MAX_DIGITS = 100


class StrictLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a key given twice in one mapping and an integer of more than
    :data:`MAX_DIGITS` digits, each with the line it is on.

    PyYAML keeps the last of two equal keys silently, so a key set twice in a long config took effect from a line
    its author may not have seen. A merge key (``<<: *defaults``) may still be overridden by the mapping's own keys,
    as YAML means it to be.
    """

    def construct_mapping(self, node: yaml.Node, deep: bool = False) -> dict[Any, Any]:
        """The mapping of ``node``; ``ConstructorError`` at the second of two equal keys."""
        if isinstance(node, yaml.MappingNode):
            first_of: dict[Any, yaml.Node] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)  # kept by the constructor: built once
                try:
                    first = first_of.setdefault(key, key_node)
                except TypeError:  # an unhashable key: the base class refuses it
                    continue
                if first is not key_node:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"key {short_repr(key)} is given twice (first on line {first.start_mark.line + 1})",
                        key_node.start_mark)
        return super().construct_mapping(node, deep)

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        """The value of ``node``; a value PyYAML's constructors refuse with a bare ``ValueError`` (a date such as
        ``2024-13-45``) becomes a ``ConstructorError`` at its line."""
        try:
            return super().construct_object(node, deep)
        except ValueError as error:  # a ConstructorError is no ValueError: the innermost node's passes through
            raise yaml.constructor.ConstructorError(None, None, str(error), node.start_mark) from None

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        """The integer of ``node``; ``ConstructorError`` when it has more than :data:`MAX_DIGITS` digits."""
        digits = sum(character.isdigit() for character in node.value)
        if digits > MAX_DIGITS:
            raise yaml.constructor.ConstructorError(
                None, None, f"an integer of {digits:,} digits (at most {MAX_DIGITS} are read)", node.start_mark)
        return super().construct_yaml_int(node)


StrictLoader.add_constructor("tag:yaml.org,2002:int", StrictLoader.construct_yaml_int)


def read_yaml(text: str, source: str) -> Any:
    """Parse YAML ``text`` with :class:`StrictLoader`; ``ConfigError`` in one line naming ``source``, the line and
    the problem (PyYAML's own message spans several lines and calls the text ``"<unicode string>"``)."""
    try:
        return yaml.load(text, Loader=StrictLoader)  # a SafeLoader: plain data only, no Python objects
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        context = f" ({error.context})" if error.context and error.problem else ""
        raise ConfigError(f"{source} is not valid YAML: {where}{error.problem or error.context}{context}") from None
    except yaml.reader.ReaderError as error:  # a character YAML does not allow (a control character)
        line = text.count("\n", 0, error.position) + 1
        raise ConfigError(f"{source} is not valid YAML: line {line}: {error.reason} (found U+{error.character:04X})") \
            from None
    except RecursionError:
        raise ConfigError(f"{source} nests too deeply to be a config") from None


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
#: The bound of a count of environment steps: ten billion, weeks of training on any machine this runs on.
MAX_STEPS = 10_000_000_000
#: The bound of a count of games or deal pairs: a million, days of search labelling or of evaluation.
MAX_GAMES = 1_000_000
#: The bound of a count of epochs, generations and the like, which each repeat a whole stage of the run.
MAX_ROUNDS = 1000


def _check(check: Any) -> dict[str, Any]:
    return {"check": check}


@dataclass
class EnvConfig:
    """Options of the training env (``uno_env.UnoEnv``)."""

    belief: BeliefKind = "none"
    first_player: Literal["agent", "opponent", "random"] = "random"
    n_particles: int = field(default=200, metadata=_check(_bounded(1, MAX_PARTICLES)))
    max_episode_steps: int = field(default=1000, metadata=_check(_bounded(1, 10_000_000)))
    # See train.training.sb3_ppo.CardCountShaping.
    reward_shaping: float = field(default=0.0, metadata=_check(_non_negative))


@dataclass
class PPOConfig:
    """MaskablePPO hyperparameters (stable-baselines3 names; ``n_steps`` is per env)."""

    learning_rate: float = field(default=3e-4, metadata=_check(_at_most(1.0)))
    lr_schedule: Literal["constant", "linear"] = "constant"
    n_steps: int = field(default=256, metadata=_check(_bounded(1, 1_000_000)))
    batch_size: int = field(default=512, metadata=_check(_bounded(1, 10_000_000)))
    n_epochs: int = field(default=4, metadata=_check(_bounded(1, MAX_ROUNDS)))
    gamma: float = field(default=0.99, metadata=_check(_unit))
    gae_lambda: float = field(default=0.95, metadata=_check(_unit))
    clip_range: float = field(default=0.2, metadata=_check(_positive))
    ent_coef: float = field(default=0.01, metadata=_check(_non_negative))
    vf_coef: float = field(default=0.5, metadata=_check(_non_negative))
    max_grad_norm: float = field(default=0.5, metadata=_check(_positive))
    target_kl: float | None = field(default=None, metadata=_check(_positive))


@dataclass
class PolicyConfig:
    """The run's network: an actor and a critic, separate MLPs of ``net_arch`` with ``activation``.

    ``actor: afterstate`` scores each legal move with one MLP of ``net_arch`` reading the observation and what the
    move leaves (:mod:`agents.afterstate`) instead of an output row per action; the critic stays an MLP.

    ``init`` names a checkpoint (a shipped agent's name or a ``.zip``) whose actor and critic the run's network starts
    from instead of random weights, to continue training a network, e.g. expert iteration from a shipped agent; it
    must have this config's observation (``env.belief``), ``net_arch``, ``activation`` and ``actor``.
    """

    net_arch: list[int] = field(default_factory=lambda: [128, 128])
    activation: Literal["tanh", "relu"] = "tanh"
    ortho_init: bool = True
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

    pool_size: int = field(default=5, metadata=_check(_bounded(1, MAX_ROUNDS)))


@dataclass
class ExpertIterationConfig:
    """Expert iteration (:mod:`train.training.expert_iteration`); off while ``start`` is null.

    Each of ``generations`` generations plays ``games`` games of its player against ``opponent`` and, at every
    decision with a choice, lets the search player value every legal move (``simulations`` simulations over worlds
    from ``belief``: ``counting``, ``particles``, ``aware``, the particle filter told that the opponent plays
    ``rule``, or ``learned``, the particle filter learning the opponent's model from its plays;
    :class:`~train.training.search_labels.SearchLabels`); its rollouts continue with the generation's player
    on its seat and ``opponent_rollout`` on the other: ``rule``, or ``modelled`` (with ``belief: learned``), in each
    world a candidate of the learned model drawn by the weights it has learned from the game's plays. A network
    then regresses those values (:mod:`train.training.fit`) and becomes the next generation's player. Generation 1's
    player is ``start``: ``rule``, ``random`` (from scratch: the search is the improvement
    step), or a checkpoint without belief features.

    ``generation_net_arch`` makes every generation but the last fit a ReLU network of those layers, without belief
    features, as the next generation's player instead of the run's network: a small one keeps the rollouts that run it
    cheap (they cost about 3 times the rule player's with 64x64, 26 times with a 256x256 tanh network). The last
    generation fits the run's network (``policy``). ``leaf_moves`` guides the search by the generation's network
    (from generation 2 on, or a checkpoint ``start``): each simulation stops after that many of the learner's
    decisions and the network's critic scores it (``null``: to the end; a ``rule`` or ``random`` player always plays to
    the end). ``generation_simulations`` (one number per generation) gives each generation's search its own
    simulations instead of ``simulations``: a stronger, costlier teacher for the last generations.

    The labels of a generation are made in shards of ``shard_games`` games, each saved as soon as it is made
    (:mod:`train.training.labelling`), so a run killed while labelling resumes without relabelling them. Each
    generation fits on the labels of its last ``window`` generations, the last one (the run's network) on its last
    ``last_window`` if set. With ``gate_pairs`` > 0 each generation's network is evaluated against ``rule``,
    ``random`` and the network it improved on on that many deal pairs (seed ``eval.seed``: these deals choose, the
    final evaluation's do not), and becomes the next player only if it is not worse than that one.

    ``opponent`` is the mix the labelled games are played against: each game's opponent is drawn from it by weight,
    a player (a name or a checkpoint without belief features) or ``self``: one of the generations' players so far,
    drawn evenly. ``aware`` assumes the opponent is ``rule``, so it is refused with anything else; ``belief: learned``
    with ``opponent_rollout: modelled`` assumes nothing and suits a mix.

    The fit: ``epochs`` of Adam at ``learning_rate`` in batches of ``batch_size``; ``centred`` (the run's network
    only) fits each position's values less their mean over its legal moves, ``cosine`` anneals the learning rate to
    0 along a half cosine (:func:`~train.training.fit.fit_values`).
    """

    start: str | None = None
    generations: int = field(default=1, metadata=_check(_bounded(1, MAX_ROUNDS)))
    games: int = field(default=2000, metadata=_check(_bounded(1, MAX_GAMES)))
    simulations: int = field(default=800, metadata=_check(_bounded(1, 1_000_000)))
    generation_simulations: list[int] | None = None
    belief: Literal["counting", "particles", "aware", "learned"] = "counting"
    opponent_rollout: Literal["rule", "modelled"] = "rule"
    leaf_moves: int | None = field(default=None, metadata=_check(_bounded(0, 10_000)))
    generation_net_arch: list[int] | None = None
    shard_games: int = field(default=50, metadata=_check(_bounded(1, 1_000_000)))
    window: int = field(default=1, metadata=_check(_bounded(1, MAX_ROUNDS)))
    last_window: int | None = field(default=None, metadata=_check(_bounded(1, MAX_ROUNDS)))
    gate_pairs: int = field(default=0, metadata=_check(_bounded(0, MAX_GAMES)))
    epochs: int = field(default=10, metadata=_check(_bounded(1, MAX_ROUNDS)))
    learning_rate: float = field(default=1e-3, metadata=_check(_at_most(1.0)))
    batch_size: int = field(default=256, metadata=_check(_bounded(1, 10_000_000)))
    centred: bool = False
    cosine: bool = False
    opponent: dict[str, float] = field(default_factory=lambda: {"rule": 1.0})


@dataclass
class DistilConfig:
    """Distillation (:mod:`train.training.distil`); off while ``labels`` is empty.

    The run's network (``policy``) is fitted from fresh weights on the labels of finished expert-iteration
    generations: ``labels`` lists their folders (``RUN/expert_iteration/generation_K``), whose observations must have
    this run's belief features (``env.belief``). The fit is expert iteration's (:func:`~train.training.fit.fit_values`)
    with these settings; the run's seed seeds it.
    """

    labels: list[str] = field(default_factory=list)
    epochs: int = field(default=30, metadata=_check(_bounded(1, MAX_ROUNDS)))
    learning_rate: float = field(default=1e-3, metadata=_check(_at_most(1.0)))
    batch_size: int = field(default=512, metadata=_check(_bounded(1, 10_000_000)))
    centred: bool = True
    cosine: bool = True


@dataclass
class EvalConfig:
    """Evaluation during and after training (paired, seat-balanced: see ``train.evaluation.matches``)."""

    # Steps between evaluations; 0: only at the end.
    every: int = field(default=0, metadata=_check(_bounded(0, MAX_STEPS)))
    pairs: int = field(default=100, metadata=_check(_bounded(1, MAX_GAMES)))  # deal pairs per opponent (2 games each)
    final_pairs: int = field(default=500, metadata=_check(_bounded(0, MAX_GAMES)))  # for the final table; 0 skips it
    opponents: list[str] = field(default_factory=lambda: ["random", "rule"])
    seed: int = field(default=12345, metadata=_check(_seed))
    workers: int = field(default=2, metadata=_check(_positive))
    # Games for the belief-quality scalars.
    belief_games: int = field(default=20, metadata=_check(_bounded(0, MAX_GAMES)))


@dataclass
class TrainConfig:
    """Everything a training run needs (see ``configs/default.yaml`` for a commented example)."""

    # 0: no PPO (expert iteration or distil alone).
    total_timesteps: int = field(metadata=_check(_bounded(0, MAX_STEPS)))
    name: str = "run"
    seed: int = field(default=0, metadata=_check(_seed))
    n_envs: int = field(default=8, metadata=_check(_bounded(1, 1024)))
    # "native": uno_env.vector's compiled games behind train.training.native_vec (built-in opponents only).
    vec_env: Literal["dummy", "subproc", "native"] = "dummy"
    start_method: Literal["forkserver", "spawn", "fork"] = "forkserver"
    torch_threads: int = field(default=1, metadata=_check(_bounded(1, 256)))
    checkpoint_every: int = field(default=50_000, metadata=_check(_bounded(1, MAX_STEPS)))
    progress_bar: bool = True
    env: EnvConfig = field(default_factory=EnvConfig)
    ppo: PPOConfig = field(default_factory=PPOConfig)
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    opponents: list[PhaseConfig] = field(default_factory=lambda: [PhaseConfig(mix={"random": 1.0})])
    self_play: SelfPlayConfig = field(default_factory=SelfPlayConfig)
    expert_iteration: ExpertIterationConfig = field(default_factory=ExpertIterationConfig)
    distil: DistilConfig = field(default_factory=DistilConfig)
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
        if isinstance(number, int):  # as it is: float() would round one beyond 2**53 (then "not an integer")
            return number
        if not number.is_integer():
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
        if not prefix and key == "pretrain":
            raise ConfigError(f"unknown key 'pretrain': {RENAMED}")
        if key not in known:
            close = difflib.get_close_matches(str(key), known, n=1)
            hint = f" (did you mean {_join(prefix, close[0])!r}?)" if close else f"; known keys: {', '.join(known)}"
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
    for key, arch in (("policy.net_arch", config.policy.net_arch),
                      ("expert_iteration.generation_net_arch", config.expert_iteration.generation_net_arch)):
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
    expert, distil = config.expert_iteration.start is not None, bool(config.distil.labels)
    if config.total_timesteps == 0 and not (expert or distil):
        raise ConfigError("total_timesteps 0 trains nothing: set expert_iteration.start, distil.labels, "
                          "or total_timesteps > 0")
    if expert and distil:
        raise ConfigError(f"a run either runs expert iteration or distils finished generations: set "
                          f"expert_iteration.start to null or distil.labels to [], got start "
                          f"{config.expert_iteration.start!r} and labels {short_repr(config.distil.labels)}")
    _validate_expert_iteration(config)
    if config.vec_env == "native":
        _validate_native(config)
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


def _validate_expert_iteration(config: TrainConfig) -> None:
    """Expert iteration plays compiled players (``start`` and the generations' networks): only those it can
    compile."""
    settings = config.expert_iteration
    _validate_mix("expert_iteration.opponent", settings.opponent)
    if settings.belief == "aware" and {name for name, weight in settings.opponent.items() if weight > 0} != {"rule"}:
        raise ConfigError(f"expert_iteration.belief 'aware' is the filter told that the opponent plays rule: "
                          f"expert_iteration.opponent must be rule alone with it, got {settings.opponent!r}")
    if settings.opponent_rollout == "modelled":
        if settings.belief != "learned":
            raise ConfigError(f"expert_iteration.opponent_rollout 'modelled' plays the opponent the search's belief "
                              f"has learned: it needs expert_iteration.belief 'learned', got {settings.belief!r}")
        try:
            LearnedOpponent().candidate_players()
        except ValueError as error:
            raise ConfigError(f"expert_iteration.opponent_rollout 'modelled': {error}") from None
    if settings.generation_simulations is not None:
        simulations = settings.generation_simulations
        if len(simulations) != settings.generations:
            raise ConfigError(f"expert_iteration.generation_simulations must give one number per generation "
                              f"(expert_iteration.generations = {settings.generations}), got {len(simulations)}: "
                              f"{short_repr(simulations)}")
        if min(simulations) < 1 or max(simulations) > 1_000_000:
            raise ConfigError(f"expert_iteration.generation_simulations must be numbers from 1 to 1,000,000, got "
                              f"{short_repr(simulations)}")
    if settings.start is None:
        return
    if settings.start not in ("rule", "random") and checkpoint_path(settings.start) is None:
        problem = validate_spec(settings.start)
        raise ConfigError(f"expert_iteration.start must be 'rule', 'random' or a checkpoint (belief none), got "
                          f"{settings.start!r}" + (f": {problem}" if problem else ""))
    if settings.generations > 1 and config.env.belief != "none" and settings.generation_net_arch is None:
        raise ConfigError(f"expert_iteration.generations > 1 plays the run's network, which compiles only without "
                          f"belief features: env.belief must be none, got {config.env.belief!r} (or set "
                          f"expert_iteration.generation_net_arch: the generations' own networks)")


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
    node[last] = read_yaml(text, f"the value of override {short_repr(assignment)}")


def load_config(path: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> TrainConfig:
    """Read a YAML config file, apply ``key.path=value`` overrides, validate."""
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist") from None
    except UnicodeDecodeError:  # e.g. a checkpoint .zip given as the config
        raise ConfigError(f"config file {path} is not a YAML text file") from None
    except OSError as error:  # e.g. a run folder given as the config (IsADirectoryError)
        raise ConfigError(f"cannot read config file {path}: {error.strerror or error}") from None
    data = read_yaml(text, str(path)) or {}
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
