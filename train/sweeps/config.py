"""The sweep config of ``uno-tune``: a base training config, a search space over its keys, how to search.

A sweep file (YAML; examples in ``configs/sweeps/``)::

    name: lr-epochs                         # names the sweep folder (default: the file's name)
    base: configs/default.yaml              # the training config every trial starts from
    set: [total_timesteps=100000]           # overrides applied to every trial (uno-train's --set syntax)
    space:                                  # training-config keys and how to draw them
      ppo.learning_rate: {loguniform: [1.0e-5, 1.0e-3]}
      ppo.ent_coef: {uniform: [0.0, 0.02]}
      ppo.n_epochs: {choice: [4, 10]}
      policy.net_arch: {choice: [[64, 64], [256, 256]]}
      seed: {grid: [0, 1, 2]}               # every value, crossed with the other grid keys (search: grid)
    metric: mean_win_rate                   # or win_rate/<opponent> (an opponent of eval.opponents)
    search: optuna                          # optuna (Optuna's TPE through Ray Tune) | grid
    scheduler: asha                         # asha (stop trials that trail at step milestones) | none
    grace_period: 50000                     # ASHA: steps before a trial may be stopped (default: eval.every)
    reduction_factor: 2                     # ASHA: keep 1 trial in reduction_factor at each milestone
    trials: 12                              # Optuna: trials; grid: repetitions of the whole grid
    cpus_per_trial: 1
    seed: 0                                 # the search's own random seed
    compare: env.belief                     # optional: a table of this key's values over the other grid keys

``uniform`` and ``loguniform`` on an integer key draw integers (both bounds included). ``search: grid`` is Ray
Tune's basic variant generator: it crosses every ``grid`` key and draws the other distributions at random.
The metric is the paired evaluation's mean win rate during training (``evaluations.jsonl``); it needs
``eval.every`` > 0. Everything is checked before any trial starts: each value a distribution can take is
applied to the base config and validated the way ``uno-train`` validates it, and an error names the key.
This module does not import Ray.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from agents.files import write_text
from train.config import ConfigError, TrainConfig, config_to_dict, load_config, read_yaml
from train.shipped import find_config
from train.specs import label
from uno_env.cards import short_repr

DISTRIBUTIONS = ("loguniform", "uniform", "choice", "grid")
SEARCHES = ("optuna", "grid")
SCHEDULERS = ("asha", "none")
_KEYS = ("name", "base", "set", "space", "metric", "search", "scheduler", "grace_period", "reduction_factor",
         "trials", "cpus_per_trial", "seed", "compare")


@dataclass(frozen=True)
class Dimension:
    """One key of the search space: how its values are drawn.

    ``kind`` is one of :data:`DISTRIBUTIONS`; ``values`` holds ``[low, high]`` for the ranges and the
    candidates for ``choice`` and ``grid``; ``integer`` marks a range over an integer key.
    """

    key: str
    kind: str
    values: list[Any]
    integer: bool = False


@dataclass(frozen=True)
class SweepConfig:
    """A validated sweep (module docstring); ``base`` is the resolved path of the base training config."""

    name: str
    base: Path
    overrides: list[str]
    space: list[Dimension]
    metric: str = "mean_win_rate"
    search: str = "optuna"
    scheduler: str = "asha"
    grace_period: int = 0
    reduction_factor: float = 2.0
    trials: int = 1
    cpus_per_trial: float = 1.0
    seed: int = 0
    compare: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)  # as read, for the copy in the sweep folder

    def trial_overrides(self, params: dict[str, Any]) -> list[str]:
        """The ``--set`` overrides of a trial: the sweep's own, then the values drawn for it.

        Values go through JSON, which YAML reads back as the same value (JSON is YAML's flow syntax).
        """
        return [*self.overrides, *(f"{key}={json.dumps(value)}" for key, value in params.items())]

    def trial_config(self, params: dict[str, Any]) -> TrainConfig:
        """The training config of a trial with these drawn values (ConfigError if the combination is refused)."""
        return load_config(self.base, self.trial_overrides(params))

    def base_config(self) -> TrainConfig:
        """The base config with the sweep's overrides, before any drawn value."""
        return load_config(self.base, self.overrides)

    def best_config_yaml(self, params: dict[str, Any], header: str) -> str:
        """A ready training config (YAML) for these values, under a comment ``header``."""
        config = config_to_dict(self.trial_config(params))
        comment = "".join(f"# {line}\n" for line in header.splitlines())
        return comment + yaml.safe_dump(config, sort_keys=False)


def _need(condition: bool, message: str) -> None:
    if not condition:
        raise ConfigError(message)


def _integer(value: Any, key: str, low: int = 1) -> int:
    _need(isinstance(value, int) and not isinstance(value, bool) and value >= low,
          f"{key} must be an integer >= {low}, got {short_repr(value)}")
    return value


def _number(value: Any, key: str) -> float:
    _need(isinstance(value, int | float) and not isinstance(value, bool), f"{key} must be a number, "
          f"got {short_repr(value)}")
    return float(value)


def _attribute(config: TrainConfig, key: str) -> Any:
    """The value at a dotted key of a parsed config."""
    value: Any = config
    for part in key.split("."):
        value = getattr(value, part)
    return value


def _dimension(sweep_overrides: list[str], base: Path, key: Any, spec: Any, search: str) -> Dimension:
    """Parse and check one entry of ``space``: its shape, then every value it can take on the base config."""
    where = f"space.{key}"
    _need(isinstance(key, str) and bool(key), f"space keys must be training-config keys like ppo.learning_rate, "
          f"got {short_repr(key)}")
    forms = ", ".join(f"{{{d}: [...]}}" for d in DISTRIBUTIONS)
    _need(isinstance(spec, dict) and len(spec) == 1 and next(iter(spec)) in DISTRIBUTIONS,
          f"{where} must be one of {forms}, got {short_repr(spec)}")
    kind, values = next(iter(spec.items()))
    _need(isinstance(values, list) and len(values) > 0, f"{where}.{kind} must be a non-empty list, "
          f"got {short_repr(values)}")
    _need(kind != "grid" or search == "grid", f"{where}: grid needs search: grid (Optuna draws values; use "
          f"choice)")
    if kind in ("uniform", "loguniform"):
        _need(len(values) == 2 and all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)
              and values[0] < values[1], f"{where}.{kind} must be [low, high] with low < high, "
              f"got {short_repr(values)}")
        _need(kind == "uniform" or values[0] > 0, f"{where}.loguniform needs low > 0, got {short_repr(values)}")
    parsed = []
    for value in values:
        try:
            config = load_config(base, [*sweep_overrides, f"{key}={json.dumps(value)}"])
        except ConfigError as error:
            raise ConfigError(f"{where}: {error}") from None
        parsed.append(_attribute(config, key))
    integer = False
    if kind in ("uniform", "loguniform"):
        _need(all(isinstance(v, int | float) and not isinstance(v, bool) for v in parsed),
              f"{where}: {kind} needs a numeric key; {key} is not (use choice or grid)")
        integer = all(isinstance(v, int) for v in parsed)
    return Dimension(key, kind, list(values), integer)


def _metric(metric: Any, config: TrainConfig) -> str:
    """Check the metric names a number every evaluation reports."""
    opponents = [label(spec) for spec in config.eval.opponents]
    known = ["mean_win_rate", *(f"win_rate/{name}" for name in opponents)]
    _need(metric in known, f"metric must be one of {', '.join(known)}, got {short_repr(metric)}")
    return metric


def parse_sweep(data: Any, source: str = "the sweep") -> SweepConfig:
    """Validate a sweep mapping (as read from YAML); ConfigError names the key at fault."""
    _need(isinstance(data, dict), f"{source} must hold a mapping of keys to values, got {short_repr(data)}")
    unknown = [key for key in data if key not in _KEYS]
    _need(not unknown, f"unknown key {short_repr(unknown[0]) if unknown else ''} in {source}; "
          f"known keys: {', '.join(_KEYS)}")
    _need("base" in data and isinstance(data["base"], str), "base must name the training config the trials "
          f"start from, got {short_repr(data.get('base'))}")
    base = find_config(data["base"])
    _need(base.is_file(), f"base: config file {data['base']} does not exist")
    overrides = data.get("set", [])
    _need(isinstance(overrides, list) and all(isinstance(o, str) for o in overrides),
          f"set must be a list of key.path=value overrides, got {short_repr(overrides)}")
    try:
        config = load_config(base, overrides)
    except ConfigError as error:
        raise ConfigError(f"base {data['base']} with set: {error}") from None
    _need(config.eval.every > 0, "eval.every must be > 0 in a sweep's base config: the metric comes from "
          f"the evaluations during training, got {config.eval.every}")
    search = data.get("search", "optuna")
    _need(search in SEARCHES, f"search must be one of {', '.join(SEARCHES)}, got {short_repr(search)}")
    space = data.get("space")
    _need(isinstance(space, dict) and bool(space), "space must map at least one training-config key to a "
          f"distribution, got {short_repr(space)}")
    dimensions = [_dimension(overrides, base, key, spec, search) for key, spec in space.items()]
    scheduler = data.get("scheduler", "none")
    _need(scheduler in SCHEDULERS, f"scheduler must be one of {', '.join(SCHEDULERS)}, got {short_repr(scheduler)}")
    for key in ("grace_period", "reduction_factor"):
        _need(key not in data or scheduler == "asha", f"{key} applies only to scheduler: asha")
    grace = _integer(data.get("grace_period", config.eval.every), "grace_period")
    _need(scheduler != "asha" or grace <= config.total_timesteps, f"grace_period must be at most total_timesteps "
          f"({config.total_timesteps}), got {grace}")
    reduction = _number(data.get("reduction_factor", 2), "reduction_factor")
    _need(reduction > 1, f"reduction_factor must be > 1, got {reduction}")
    compare = data.get("compare")
    grid_keys = [d.key for d in dimensions if d.kind == "grid"]
    _need(compare is None or compare in grid_keys, "compare must be a grid key of space "
          f"({', '.join(grid_keys) or 'it has none'}), got {short_repr(compare)}")
    cpus = _number(data.get("cpus_per_trial", 1), "cpus_per_trial")
    _need(cpus > 0, f"cpus_per_trial must be > 0, got {cpus}")
    name = data.get("name", Path(source).stem)
    _need(isinstance(name, str) and bool(name) and "/" not in name, f"name must be a folder name, "
          f"got {short_repr(name)}")
    return SweepConfig(name=name, base=base.resolve(), overrides=list(overrides), space=dimensions,
                       metric=_metric(data.get("metric", "mean_win_rate"), config), search=search,
                       scheduler=scheduler, grace_period=grace, reduction_factor=reduction,
                       trials=_integer(data.get("trials", 1), "trials"), cpus_per_trial=cpus,
                       seed=_integer(data.get("seed", 0), "seed", low=0), compare=compare, raw=dict(data))


def load_sweep(path: str | Path, trials: int | None = None) -> SweepConfig:
    """Read and validate a sweep file; ``trials`` replaces its ``trials`` (``uno-tune --samples``)."""
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ConfigError(f"sweep file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"cannot read sweep file {path}: {error}") from None
    data = read_yaml(text, str(path))
    if trials is not None and isinstance(data, dict):
        data["trials"] = trials
    return parse_sweep(data, str(path))


def save_sweep(sweep: SweepConfig, path: Path) -> None:
    """Write the sweep as run (base made absolute), so ``uno-tune --resume`` rebuilds it from the sweep folder."""
    write_text(path, yaml.safe_dump({**sweep.raw, "name": sweep.name, "base": str(sweep.base),
                                     "trials": sweep.trials}, sort_keys=False))
