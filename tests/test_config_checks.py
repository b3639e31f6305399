"""Every value check of the training config, one generated test per checked field.

``RULES`` states, field by field, the range a config key must lie in (the contract of configs/default.yaml's
comments). The set of checked fields is read from the schema's own dataclass metadata in train/config.py, and
:func:`test_every_checked_field_has_a_rule` fails when the two disagree, so a field cannot gain (or lose) a
check without this file saying which values it must refuse and accept.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

import pytest

from train.config import ConfigError, TrainConfig, parse_config

#: Allowed range of every checked field: "positive" (> 0), "non_negative" (>= 0), "unit" ([0, 1]),
#: "fraction" ((0, 1], the end of an opponent phase). ``opponents[]`` is a field of every phase.
RULES = {
    "total_timesteps": "non_negative", "n_envs": "positive", "torch_threads": "positive",
    "seed": "non_negative", "eval.seed": "non_negative",
    "checkpoint_every": "positive",
    "env.n_particles": "positive", "env.max_episode_steps": "positive", "env.reward_shaping": "non_negative",
    "ppo.learning_rate": "positive", "ppo.n_steps": "positive", "ppo.batch_size": "positive",
    "ppo.n_epochs": "positive", "ppo.gamma": "unit", "ppo.gae_lambda": "unit", "ppo.clip_range": "positive",
    "ppo.ent_coef": "non_negative", "ppo.vf_coef": "non_negative", "ppo.max_grad_norm": "positive",
    "ppo.target_kl": "positive",
    "opponents[].until": "fraction",
    "self_play.pool_size": "positive",
    "expert_iteration.games": "positive", "expert_iteration.generations": "positive",
    "expert_iteration.epochs": "positive", "expert_iteration.learning_rate": "positive",
    "expert_iteration.batch_size": "positive",
    "expert_iteration.simulations": "positive", "expert_iteration.leaf_moves": "non_negative",
    "expert_iteration.shard_games": "positive", "expert_iteration.window": "positive",
    "expert_iteration.last_window": "positive", "expert_iteration.gate_pairs": "non_negative",
    "distil.epochs": "positive", "distil.learning_rate": "positive", "distil.batch_size": "positive",
    "eval.every": "non_negative", "eval.pairs": "positive", "eval.final_pairs": "non_negative",
    "eval.workers": "positive", "eval.belief_games": "non_negative",
}

#: (refused values, accepted values) per rule, for int and float fields.
VALUES = {
    ("positive", int): ([0, -1], [1]), ("positive", float): ([0.0, -0.5], [1e-3]),
    ("non_negative", int): ([-1], [0]), ("non_negative", float): ([-1e-3], [0.0]),
    ("unit", float): ([-0.01, 1.01], [0.0, 1.0]),
    ("fraction", float): ([0.0, -0.5, 1.5], [1.0]),
}


def _base_type(kind: Any) -> Any:
    """int or float of a field type (``float | None`` is float)."""
    args = [a for a in typing.get_args(kind) if a is not type(None)]
    return args[0] if args else kind


def schema_fields(cls: Any = TrainConfig, prefix: str = "") -> dict[str, tuple[Any, bool]]:
    """Every field of the schema by config path: (its int/float type, whether its metadata carries a check)."""
    out: dict[str, tuple[Any, bool]] = {}
    hints = typing.get_type_hints(cls)
    for spec in dataclasses.fields(cls):
        kind = hints[spec.name]
        path = f"{prefix}{spec.name}"
        out[path] = (_base_type(kind), "check" in spec.metadata)
        inner = typing.get_args(kind)[0] if typing.get_origin(kind) is list else kind
        if dataclasses.is_dataclass(inner):
            out.update(schema_fields(inner, path + ("[]." if inner is not kind else ".")))
    return out


FIELDS = schema_fields()
CHECKED = {path: kind for path, (kind, checked) in FIELDS.items() if checked}


def config_with(path: str, value: Any) -> dict[str, Any]:
    """A minimal valid config mapping with ``path`` set to ``value``."""
    data: dict[str, Any] = {"total_timesteps": 1000, "ppo": {"batch_size": 8}}  # fits any rollout tried here
    if path == "total_timesteps":
        data["expert_iteration"] = {"start": "rule"}  # 0 steps is expert iteration alone
    if path == "opponents[].until":
        data["opponents"] = [{"mix": {"random": 1.0}, "until": value}]
        return data
    *parents, last = path.split(".")
    node = data
    for part in parents:
        node = node.setdefault(part, {})
    node[last] = value
    return data


def key_of(path: str) -> str:
    """The key an error message names for ``path``."""
    return path.replace("[]", "[0]")


def value_at(config: TrainConfig, path: str) -> Any:
    """The parsed value at ``path``."""
    if path == "opponents[].until":
        return config.opponents[0].until
    node: Any = config
    for part in path.split("."):
        node = getattr(node, part)
    return node


def test_every_checked_field_has_a_rule():
    assert set(CHECKED) == set(RULES), (
        f"checked in train/config.py without a rule here: {sorted(set(CHECKED) - set(RULES))}; "
        f"rules here for fields without a check: {sorted(set(RULES) - set(CHECKED))}")
    # Every rule has values to try for the field's type.
    assert all((RULES[path], kind) in VALUES for path, kind in CHECKED.items())


# Generated from the rules (for the fields the schema has), so a check that disappears fails its own cases too.
CASES = [(path, value, refused) for path, rule in sorted(RULES.items()) if path in FIELDS
         for refused, values in zip((True, False), VALUES.get((rule, FIELDS[path][0]), ((), ())), strict=True)
         for value in values]


@pytest.mark.parametrize(("path", "value", "refused"), CASES,
                         ids=[f"{p}={v}-{'refused' if r else 'accepted'}" for p, v, r in CASES])
def test_field_check(path: str, value: Any, refused: bool):
    key = key_of(path)
    if refused:
        with pytest.raises(ConfigError) as raised:
            parse_config(config_with(path, value))
        message = str(raised.value)
        # The field's own check answers (not a later check on another key that happens to mention it).
        assert message.startswith(f"{key} must"), message
        assert repr(value) in message
    else:
        config = parse_config(config_with(path, value))
        assert value_at(config, path) == value
