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

A policy that plays like a known model may also carry a ``likelihood_model``
(:class:`~uno_env.belief.OpponentModel`), which policy-aware particle filters use against it.

Policies by name (:func:`make_policy`): the registry maps a name to a ``"module:attribute"`` factory that is
imported on first use, so naming a policy imports nothing until it is built. Built in: ``"random"``,
``"rule"`` (:mod:`uno_env.opponents`), ``"search"`` (:mod:`agents.search`), and the shipped agents by folder
name (``"search-q-none"``, ``"search-q-ensemble"``: :mod:`agents.shipped`). :func:`register_policy` adds names.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from uno_env.belief import BELIEF_KINDS, BeliefKind
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
        if self.n_particles is not None and (isinstance(self.n_particles, bool) or not isinstance(self.n_particles, int)
                                             or self.n_particles < 1):
            raise ValueError(f"n_particles must be a positive int or None, got {self.n_particles!r}")


#: The needs of a policy that declares none: the base encoding, no belief features.
NO_NEEDS = Needs()


@runtime_checkable
class Policy(Protocol):
    """Anything that can play a seat: ``reset(seed)`` then ``act(view)`` once per decision.

    Optional members (module docstring): ``needs`` (a :class:`Needs`), ``observe_start(view)``,
    ``act_legal(legal, hand, opponent_hand_size)``, ``likelihood_model``.
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

#: Name -> factory, or "module:attribute" of one, imported when the name is first built.
_REGISTRY: dict[str, Factory | str] = {
    "random": "uno_env.opponents:RandomPolicy",
    "rule": "uno_env.opponents:RulePolicy",
    "search": "agents.search:SearchPolicy",
}
#: "module:attribute" of functions listing further names (name -> factory), consulted when names are needed:
#: the shipped agents, whose names are the folders under ``models/``.
_CATALOGUES: tuple[str, ...] = ("agents.shipped:shipped_policies",)


def register_policy(name: str, factory: Factory | str) -> None:
    """Make ``make_policy(name)`` build a policy with ``factory()`` (a callable, or its ``"module:attribute"``)."""
    _REGISTRY[name] = factory


def policy_names() -> list[str]:
    """Names :func:`make_policy` accepts."""
    return sorted(_known())


def make_policy(spec: str | Policy) -> Policy:
    """A policy from a registered name (``"random"``, ``"rule"``, ...) or an object with reset/act."""
    if isinstance(spec, str):
        factory = _REGISTRY.get(spec) or _known().get(spec)
        if factory is None:
            raise ValueError(f"unknown policy {spec!r}; known names: {', '.join(policy_names())}")
        return _load(factory)() if isinstance(factory, str) else factory()
    if not (callable(getattr(spec, "act", None)) and callable(getattr(spec, "reset", None))):
        raise TypeError(f"a policy needs reset(seed) and act(view) methods; got {type(spec).__name__}")
    return spec


def _known() -> dict[str, Factory | str]:
    """The registered names and the catalogues' names (a registered name wins)."""
    known: dict[str, Factory | str] = {}
    for catalogue in _CATALOGUES:
        known.update(_load(catalogue)())
    known.update(_REGISTRY)
    return known


def _load(target: str) -> Callable:
    """The attribute a ``"module:attribute"`` string names, importing its module."""
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)
