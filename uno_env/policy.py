"""The Policy protocol, what a policy needs from its seat, and the registry of policies by name.

A *policy* plays one seat. It is any object with

* ``reset(seed)``: start a new game; all its randomness comes from a generator seeded here;
* ``act(view) -> int``: a legal action id for the :class:`~uno_env.view.PublicView` of its seat
  (``view.legal_actions``, ``view.action_mask``, ``view.observation`` and the public fields).

Two optional members complete the protocol:

* ``needs``: a :class:`Needs` saying what the seat must give the policy: belief features of a kind
  (:data:`~uno_env.belief.BELIEF_KINDS`) in ``view.observation``, and their particle count. Without it a
  policy gets the base encoding (:data:`NO_NEEDS`). :func:`needs_of` reads it, for every harness.
* ``observe_start(view)``: the seat (:mod:`uno_env.seat`) calls it after ``reset`` with the seat's view
  right after the deal, before anyone moves, so a policy that tracks the game itself (the search player's
  belief) starts from the initial position even when the other seat moves first.
* ``act_legal(legal, hand, opponent_hand_size) -> int``: the same decision as ``act(view)``, for a policy that
  reads nothing of the view but ``view.legal_actions``, ``view.hand`` and ``view.opponent_hand_size`` (the
  built-in ``random`` and ``rule``). A seat without belief features (:meth:`uno_env.seat.Seat.play`) then calls
  it instead of building the full view, which was most of the embedded opponent's cost in ``UnoEnv``. It must
  make exactly the decision (and the random draws) ``act`` makes on the view with these values, and must not
  modify ``legal`` or ``hand`` (they may be the game's own lists).

* ``action_probabilities(legal, hand, opponent_hand_size) -> list[float]``: the probability of each of ``legal``
  that ``act_legal`` plays it, for a policy whose move probabilities are known (``random``): an evaluator's control
  variates then take the luck of its choices out of the scores, as they do for the draws.

A policy that plays like a known model may also carry a ``likelihood_model``
(:class:`~uno_env.belief.OpponentModel`), which policy-aware particle filters use against it.
A policy whose decisions a compiled player makes exactly (the same actions, from the same random draws) names it
in ``compiled_player`` (a name of :data:`uno_env.core.COMPILED_PLAYERS`), so the single env plays it compiled
(:meth:`uno_env.seat.Seat.compiled_twin`); it is read from the policy's own class only, not inherited, and an
instance whose settings the compiled player lacks sets its own to ``None``. When that
player draws no random number (:data:`uno_env.core.DETERMINISTIC_PLAYERS`: ``rule``, ...), the policy has nothing to
seed: its seat derives no seed for it and calls ``reset(None)`` (:attr:`uno_env.seat.Seat.reads_seed`).

Policies by name (:func:`make_policy`): ``"random"`` and ``"rule"`` (:mod:`uno_env.opponents`) and the opponent styles
(:mod:`uno_env.styles`: ``"hold-wilds"``, ``"noisy-rule"``, ...) are built in;
:func:`register_policy` adds names. Packages above ``uno_env`` add theirs through the entry-point groups
:data:`POLICY_GROUP` (a name and its ``"module:attribute"`` factory) and :data:`CATALOGUE_GROUP` (a function
listing further names), declared in their ``pyproject.toml`` and read from the installed metadata: this project's
``agents`` package declares ``"search"`` and the catalogue of the shipped agents (``"search-q-none"``, ...).
So ``uno_env`` never names a module above it (tests/test_layers.py checks its strings too), and naming a policy
imports nothing until it is built (docs/design.md, "Policies of upper layers by entry points").
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Protocol, runtime_checkable

from uno_env.belief import BELIEF_KINDS, BeliefKind, check_particles
from uno_env.opponents import RandomPolicy, RulePolicy
from uno_env.styles import STYLES
from uno_env.view import PublicView


@dataclass(frozen=True, slots=True)
class Needs:
    """What a policy needs in the views its seat hands it.

    Args:
        belief: the belief features in ``view.observation`` (:data:`~uno_env.belief.BELIEF_KINDS`).
        n_particles: the particle count for ``belief="particles"``; ``None``: the harness's setting
            (the env's or ``play_game``'s ``n_particles``).
    """

    belief: BeliefKind = "none"
    n_particles: int | None = None

    def __post_init__(self) -> None:
        if self.belief not in BELIEF_KINDS:
            raise ValueError(f"belief must be one of {', '.join(map(repr, BELIEF_KINDS))}, got {self.belief!r}")
        if self.n_particles is not None:
            check_particles(self.n_particles)


#: The needs of a policy that declares none: the base encoding, no belief features.
NO_NEEDS = Needs()


@runtime_checkable
class Policy(Protocol):
    """Anything that can play a seat: ``reset(seed)`` then ``act(view)`` once per decision.

    Optional members (module docstring): ``needs`` (a :class:`Needs`), ``observe_start(view)``,
    ``act_legal(legal, hand, opponent_hand_size)``, ``likelihood_model``, ``compiled_player``.
    """

    def reset(self, seed: int | None = None) -> None: ...

    def act(self, view: PublicView) -> int: ...


def needs_of(policy: Policy) -> Needs:
    """What ``policy`` declares it needs (its ``needs``), or :data:`NO_NEEDS` when it declares nothing."""
    needs = getattr(policy, "needs", None)
    if needs is None:
        old_style = getattr(policy, "belief", None)
        if isinstance(old_style, str):  # the declaration of earlier versions: refused, never silently dropped
            raise TypeError(f"{type(policy).__name__} declares belief={old_style[:40]!r}, which is no longer read; "
                            f"declare needs = uno_env.policy.Needs(belief={old_style[:40]!r}) instead")
        return NO_NEEDS
    if not isinstance(needs, Needs):
        raise TypeError(f"{type(policy).__name__}.needs must be a uno_env.policy.Needs, got {needs!r}")
    return needs


Factory = Callable[[], Policy]

#: The entry-point group of installed packages' policies: name = "module:attribute" of a factory.
POLICY_GROUP = "uno_rl.policies"
#: The entry-point group of installed packages' catalogues: "module:attribute" of a function listing names
#: (name -> factory), consulted when names are needed (the shipped agents: the folders under ``models/``).
CATALOGUE_GROUP = "uno_rl.policy_catalogues"

#: The modules of the ``train`` extra that players with a network load (torch and SB3); ``uno_env`` and the players
#: without a network (random, rule, search) never import them.
TRAINING_MODULES = frozenset({"torch", "stable_baselines3", "sb3_contrib", "tensorboard"})

#: Name -> factory, or "module:attribute" of one, imported when the name is first built.
_REGISTRY: dict[str, Factory | str] = {"random": RandomPolicy, "rule": RulePolicy, **STYLES}


def register_policy(name: str, factory: Factory | str) -> None:
    """Make ``make_policy(name)`` build a policy with ``factory()`` (a callable, or its ``"module:attribute"``)."""
    _REGISTRY[name] = factory


def policy_names() -> list[str]:
    """Names :func:`make_policy` accepts."""
    return sorted(_known())


def make_policy(spec: str | Policy) -> Policy:
    """A policy from a registered name (``"random"``, ``"rule"``, ...) or an object with reset/act (an instance: a
    class is refused with ``TypeError``)."""
    if isinstance(spec, str):
        factory = _REGISTRY.get(spec) or _known().get(spec)
        if factory is None:
            hint = "" if _installed(POLICY_GROUP) else f" (no {POLICY_GROUP!r} entry points: is uno-rl installed?)"
            raise ValueError(f"unknown policy {spec!r}; known names: {', '.join(policy_names())}{hint}")
        try:
            return _load(factory)() if isinstance(factory, str) else factory()
        except ModuleNotFoundError as error:
            if error.name is None or error.name.partition(".")[0] not in TRAINING_MODULES:
                raise
            raise ModuleNotFoundError(f"policy {spec!r} needs {error.name}, which is not installed: install the "
                                      "train extra (pip install 'uno-rl[train]')", name=error.name) from error
    return checked_policy(spec)


def compiled_player(policy: object) -> str | None:
    """The compiled player that makes exactly ``policy``'s decisions (module docstring): its own class's
    ``compiled_player``, not an inherited one, and ``None`` when the instance turns it off or there is none."""
    name = vars(type(policy)).get("compiled_player")
    return None if name is None or getattr(policy, "compiled_player", None) is None else name


def checked_policy(policy: Policy) -> Policy:
    """``policy`` itself, once it is known to be an object with ``reset`` and ``act`` (``TypeError`` otherwise,
    saying what to pass instead of a class)."""
    if isinstance(policy, type):  # its methods are there, unbound: it would fail only at the first reset
        raise TypeError(f"a policy must be an instance or a registered name, got the class {policy.__name__}: pass "
                        f"{policy.__name__}() (or a name, such as 'random' or 'rule')")
    if not (callable(getattr(policy, "act", None)) and callable(getattr(policy, "reset", None))):
        raise TypeError(f"a policy needs reset(seed) and act(view) methods; got {type(policy).__name__}")
    return policy


def _known() -> dict[str, Factory | str]:
    """The catalogues' names, then the installed packages' policies, then the registered names (the later wins)."""
    known: dict[str, Factory | str] = {}
    for catalogue in _installed(CATALOGUE_GROUP).values():
        known.update(_load(catalogue)())
    known.update(_installed(POLICY_GROUP))
    known.update(_REGISTRY)
    return known


@functools.cache
def _installed(group: str) -> dict[str, str]:
    """Name -> "module:attribute" of the entry points of ``group`` in the installed packages' metadata (read once
    per process: a scan of every installed distribution costs about 50 ms)."""
    return {point.name: point.value for point in entry_points(group=group)}


def _load(target: str) -> Callable:
    """The attribute a ``"module:attribute"`` string names, importing its module."""
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)
