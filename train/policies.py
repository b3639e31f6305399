"""Turning a player *spec* (:mod:`train.specs`: a name, a checkpoint, ``module:attribute``) into a Policy."""

from __future__ import annotations

from agents.ppo import PPOPolicy, read_settings
from agents.shipped import shipped_names
from train.specs import checkpoint_path, import_policy, label, unknown_player
from uno_env.belief import BeliefKind
from uno_env.policy import Policy, make_policy, needs_of, policy_names


def resolve_policy(spec: str | Policy, deterministic: bool = True) -> Policy:
    """A fresh Policy for ``spec`` (see the module docstring); Policy objects pass through.

    ``deterministic`` applies to checkpoints (argmax instead of sampling). Raises ``ValueError``
    with the accepted forms when the spec matches none of them.
    """
    if not isinstance(spec, str):
        return make_policy(spec)
    if spec in policy_names() and spec not in shipped_names():  # shipped agents load below, as asked to play
        return make_policy(spec)
    path = checkpoint_path(spec)
    if path is not None:
        return PPOPolicy.load(path, deterministic=deterministic, name=label(spec))
    if ":" in spec:
        return import_policy(spec)
    raise ValueError(unknown_player(spec))


def spec_belief(spec: str | Policy) -> BeliefKind:
    """The belief setting a player declares (read from a checkpoint without loading the network)."""
    path = checkpoint_path(spec) if isinstance(spec, str) else None
    if path is not None:
        return read_settings(path)["belief"]
    return needs_of(resolve_policy(spec)).belief
