"""The Policy protocol and the built-in policies an environment can embed.

A *policy* plays one seat. It is any object with

* ``reset(seed)``: start a new game; all its randomness comes from a generator seeded here;
* ``act(view) -> int``: a legal action id for the :class:`~uno_env.view.PublicView` of its seat
  (``view.legal_actions``, ``view.action_mask``, ``view.observation`` and the public fields).

A policy may declare ``belief = "counting"`` (or ``"particles"``) to have belief features in the
``view.observation`` it receives; by default it gets the base encoding.

A policy may also have an optional ``observe_start(view)`` method: harnesses (``UnoEnv``,
``uno_env.match.play_game``) call it after ``reset`` with the seat's view right after the deal, before
anyone moves, so a policy that tracks the game itself (the search player's belief) starts from the
initial position even when the other seat moves first.

Built in, by name: ``"random"`` (uniform over legal action ids) and ``"rule"`` (:class:`RulePolicy`).
Other modules add names with :func:`register_policy` (the search player registers ``"search"``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

import numpy as np

from uno_env.core import rule_action
from uno_env.view import PublicView


@runtime_checkable
class Policy(Protocol):
    """Anything that can play a seat: ``reset(seed)`` then ``act(view)`` once per decision."""

    def reset(self, seed: int | None = None) -> None: ...

    def act(self, view: PublicView) -> int: ...


class RandomPolicy:
    """Uniform over the legal action ids (so a wild counts four times, once per declared colour)."""

    def __init__(self) -> None:
        self.rng = np.random.default_rng()

    def reset(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)

    def act(self, view: PublicView) -> int:
        legal = view.legal_actions
        return legal[int(self.rng.integers(len(legal)))] if len(legal) > 1 else legal[0]


class RulePolicy:
    """A deterministic rule-based player, about as strong as a careful casual player.

    Every legal action gets a score and the best one is played (ties: the lowest action id):

    * **Keep wilds for later**: a wild scores -5 and a wild draw four -4, so any coloured card
      is played first (a +4 beats a plain wild: it also costs the opponent 4 cards and a turn).
    * **Stay in your strong colour**: +1 for every other card held of the colour the play leaves in
      force; this also picks the declared colour of a wild (the colour held most).
    * **Tempo**: skip, reverse and +2 score +2, since each gives this player another turn.
    * **Stop the opponent going out**: when the opponent holds 2 cards or fewer, skip/reverse/+2
      score +20 and +4 scores +20 more, so attacks come before anything else.

    Under random play from the other seat it wins about two thirds of the games (docs/RESULTS.md).
    """

    def reset(self, seed: int | None = None) -> None:
        """Nothing to reset: the policy is deterministic."""

    def act(self, view: PublicView) -> int:
        legal = view.legal_actions
        if len(legal) == 1:
            return legal[0]
        # The scoring is compiled (uno_env.core.rule_action), so the search player's compiled rollouts play
        # exactly this policy; it is also faster than the same loop in Python.
        return int(rule_action(np.asarray(view.hand, dtype=np.int64), view.opponent_hand_size,
                               np.asarray(legal, dtype=np.int64), len(legal)))


_REGISTRY: dict[str, Callable[[], Policy]] = {"random": RandomPolicy, "rule": RulePolicy}


def register_policy(name: str, factory: Callable[[], Policy]) -> None:
    """Make ``make_policy(name)`` build a policy with ``factory()``."""
    _REGISTRY[name] = factory


def policy_names() -> list[str]:
    """Names :func:`make_policy` accepts."""
    return sorted(_REGISTRY)


def make_policy(spec: str | Policy) -> Policy:
    """A policy from a registered name (``"random"``, ``"rule"``, ...) or an object with reset/act."""
    if isinstance(spec, str):
        try:
            return _REGISTRY[spec]()
        except KeyError:
            raise ValueError(f"unknown policy {spec!r}; known names: {', '.join(policy_names())}") from None
    if not (callable(getattr(spec, "act", None)) and callable(getattr(spec, "reset", None))):
        raise TypeError(f"a policy needs reset(seed) and act(view) methods; got {type(spec).__name__}")
    return spec
