"""Player *specs*: the strings that name a player on the command line or in a config, read without loading one.

A spec is one of:

* a registered policy name: ``random``, ``rule``, ``search``, a shipped agent (:mod:`uno_env.policy`);
* a MaskablePPO checkpoint: a ``.zip`` file, a shipped-agent folder holding ``model.zip``
  (``models/search-q-none``, or just ``search-q-none`` for a shipped agent: :mod:`agents.shipped` says where they are),
  or a training run folder (its ``best_model.zip``);
* ``module:attribute``: an importable Policy object, class or zero-argument factory.

Nothing here loads torch, so a config names its players cheaply; :mod:`train.policies` builds them.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from agents.shipped import MODELS_DIR  # a bare name like ``search-q-none`` is MODELS_DIR / name
from uno_env.cards import short_repr
from uno_env.policy import Policy, make_policy, policy_names

CHECKPOINT_NAMES = ("model.zip", "best_model.zip")


def checkpoint_path(spec: str) -> Path | None:
    """The checkpoint file a spec names, or None when the spec is not a checkpoint."""
    for base in (Path(spec), MODELS_DIR / spec):
        if base.is_file() and base.suffix == ".zip":
            return base
        if base.is_dir():
            for name in CHECKPOINT_NAMES:
                if (base / name).is_file():
                    return base / name
    return None


def validate_spec(spec: str) -> str | None:
    """Why ``spec`` cannot name a player, or None when it can (cheap: loads no checkpoint)."""
    if spec in policy_names() or checkpoint_path(spec) is not None:
        return None
    if ":" in spec:
        try:
            import_policy(spec)  # imports and builds it: a module:attribute that is no Policy is refused here
        except ValueError as error:
            return str(error)
        return None
    return (f"not a policy name ({', '.join(policy_names())}), a checkpoint, a model folder, "
            "or module:attribute")


def label(spec: str | Policy) -> str:
    """A short name for tables: the policy name, the model folder's name, or the class name."""
    if not isinstance(spec, str):
        return getattr(spec, "name", type(spec).__name__)
    path = Path(spec)
    if path.suffix == ".zip":
        return path.stem if path.stem not in ("model", "best_model") else path.parent.name
    return path.name or spec


def import_policy(spec: str) -> Policy:
    """The Policy a ``module:attribute`` spec names (``ValueError`` when it names none)."""
    module_name, _, attribute = spec.partition(":")
    try:
        target: Any = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError, TypeError, ValueError) as error:  # TypeError/ValueError: e.g. "..:x"
        raise ValueError(f"cannot import player {short_repr(spec)}: {short_repr(str(error))}") from None
    if isinstance(target, type) or not _is_policy(target):
        try:
            target = target()  # a class or zero-argument factory
        except Exception as error:  # whatever the user's callable raises, reported as a bad spec
            raise ValueError(f"{short_repr(spec)} is not a Policy, nor a class or zero-argument factory of one: "
                             f"calling it raised {type(error).__name__}: {short_repr(str(error))}") from None
    if not _is_policy(target):
        raise ValueError(f"{short_repr(spec)} did not give a Policy (an object with reset(seed) and act(view)), "
                         f"but {short_repr(target)}")
    return make_policy(target)


def _is_policy(target: Any) -> bool:
    return callable(getattr(target, "act", None)) and callable(getattr(target, "reset", None))
