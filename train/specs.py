"""Player *specs*: the strings that name a player on the command line or in a config, read without loading one.

A spec is one of:

* a registered policy name: ``random``, ``rule``, ``search``, a shipped agent (:mod:`uno_env.policy`);
* a MaskablePPO checkpoint: a ``.zip`` file, a shipped-agent folder holding ``model.zip``
  (``models/search-q-none``, or just ``search-q-none`` for a shipped agent: :mod:`agents.shipped` says where they are),
  or a training run folder (its ``best_model.zip``);
* ``module:attribute``: an importable Policy object, Policy class, or zero-argument factory function annotated to
  return a Policy class; it is checked without being called (:func:`policy_target`).

Nothing here loads torch, so a config names its players cheaply; :mod:`train.policies` builds them. A spec that
names nothing is refused with the reason (:func:`validate_spec`): the closest policy name to a mistyped one, or
the file or folder that is missing.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import typing
from pathlib import Path
from typing import Any

from agents.shipped import MODELS_DIR  # a bare name like ``search-q-none`` is MODELS_DIR / name
from train.output import printable
from uno_env.cards import short_repr
from uno_env.policy import Policy, make_policy, policy_names

CHECKPOINT_NAMES = ("model.zip", "best_model.zip")


def checkpoint_path(spec: str) -> Path | None:
    """The checkpoint file a spec names, or None when the spec is not a checkpoint (or names a path this process
    may not look at: :func:`validate_spec` says so)."""
    try:
        for base in (Path(spec), MODELS_DIR / spec):
            if base.is_file() and base.suffix == ".zip":
                return base
            if base.is_dir():
                for name in CHECKPOINT_NAMES:
                    if (base / name).is_file():
                        return base / name
    except OSError:  # a folder on the way it may not enter (pathlib raises PermissionError there), a name too long
        return None
    return None


def validate_spec(spec: str) -> str | None:
    """Why ``spec`` cannot name a player, or None when it can (cheap: loads no checkpoint, calls nothing).

    The reason does not repeat the spec (callers put it in front): a mistyped name gets the closest policy name
    and the list of them; a path that does not exist, a folder without a checkpoint and a file that is not one
    are each said to be so.
    """
    if spec in policy_names() or checkpoint_path(spec) is not None:
        return None
    if ":" in spec:
        try:
            policy_target(spec)  # imported and checked, not called: building it waits until it is asked to play
        except ValueError as error:
            return str(error)
        return None
    return _not_a_player(spec)


def unknown_player(spec: str) -> str:
    """The message for a spec that names no player (``module:attribute`` aside): what is wrong with it, naming it."""
    reason = _not_a_player(spec)
    named_a_file = _looks_like_a_path(spec) or Path(spec).exists()
    return f"{spec}: {reason}" if named_a_file else f"unknown player {spec!r}: {reason}"


def _not_a_player(spec: str) -> str:
    path = Path(spec)
    try:
        path.stat()
    except FileNotFoundError:
        pass
    except OSError as error:  # e.g. a folder on its way this user may not enter
        return f"cannot be read ({error.strerror or error})"
    if path.is_dir():
        return (f"the folder holds no {' or '.join(CHECKPOINT_NAMES)} (a run folder has best_model.zip once it "
                "has evaluated a model)")
    if path.exists():
        return "not a checkpoint (a .zip file saved by uno-train)"
    if _looks_like_a_path(spec):
        return "no such file or folder"
    names = policy_names()
    close = difflib.get_close_matches(spec, names, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return (f"not a policy name{hint}; the names are {', '.join(names)}; a player may also be a checkpoint .zip, "
            "a run or model folder, or module:attribute")


def _looks_like_a_path(spec: str) -> bool:
    """Whether ``spec`` was meant as a file or folder rather than a name (a separator, a .zip, a leading dot)."""
    return "/" in spec or "\\" in spec or spec.endswith(".zip") or spec.startswith((".", "~"))


def label(spec: str | Policy) -> str:
    """A short name for tables: the policy name, the model folder's name, or the class name."""
    if not isinstance(spec, str):
        return printable(str(getattr(spec, "name", type(spec).__name__)))
    path = Path(spec)
    if path.suffix == ".zip":  # a file's name is shown in tables and at the table: its escape sequences must not act
        return printable(path.stem if path.stem not in ("model", "best_model") else path.parent.name)
    return printable(path.name or spec)


def policy_target(spec: str) -> Any:
    """What a ``module:attribute`` spec names, checked without calling it (``ValueError`` when it is no player).

    Accepted: a Policy object (``reset(seed)`` and ``act(view)``), a class whose instances are Policies, or a
    factory: a function whose return annotation is such a class (``def make() -> SearchPolicy``). Anything else,
    such as ``sys:exit``, is refused here, before it could run. The module itself is imported (its top-level code
    runs), as ``python -m`` would.
    """
    module_name, _, attribute = spec.partition(":")
    try:
        target: Any = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError, TypeError, ValueError) as error:  # TypeError/ValueError: e.g. "..:x"
        raise ValueError(f"cannot import player {short_repr(spec)}: {short_repr(str(error))}") from None
    if isinstance(target, type):
        if not _is_policy(target):
            raise ValueError(f"{short_repr(spec)} is a class without reset(seed) and act(view) methods, not a Policy")
        return target
    if _is_policy(target) or _factory_product(target) is not None:
        return target
    raise ValueError(f"{short_repr(spec)} is not a Policy object, a Policy class, or a factory annotated to return "
                     f"one (def make() -> MyPolicy), but {short_repr(target)}; it was not called")


def _factory_product(target: Any) -> type | None:
    """The Policy class a plain function's return annotation names, or None (a builtin or unannotated callable)."""
    if not inspect.isfunction(target):
        return None
    try:
        product = typing.get_type_hints(target).get("return")
    except Exception:  # an annotation that does not resolve (a name the module lacks): not a declared factory
        return None
    return product if isinstance(product, type) and _is_policy(product) else None


def import_policy(spec: str) -> Policy:
    """The Policy a ``module:attribute`` spec names, built (:func:`policy_target` says what it may name)."""
    target = policy_target(spec)
    if isinstance(target, type) or not _is_policy(target):
        try:
            target = target()  # a class or a factory, checked by policy_target
        except Exception as error:  # whatever the user's callable raises, reported as a bad spec
            raise ValueError(f"{short_repr(spec)}: building the player raised {type(error).__name__}: "
                             f"{short_repr(str(error))}") from None
    if not _is_policy(target):
        raise ValueError(f"{short_repr(spec)} did not give a Policy (an object with reset(seed) and act(view)), "
                         f"but {short_repr(target)}")
    return make_policy(target)


def _is_policy(target: Any) -> bool:
    return callable(getattr(target, "act", None)) and callable(getattr(target, "reset", None))
