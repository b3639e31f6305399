"""A population of opponent styles: heuristic players that each choose differently from ``rule``.

Every strong player of the project was made against ``rule`` (:class:`uno_env.opponents.RulePolicy`). These
styles measure how that carries over to players who want other things. Each is a small policy (the protocol of
:mod:`uno_env.policy`: ``reset(seed)``, ``act(view)`` and the seat's fast path ``act_legal``), registered by name
in :func:`uno_env.policy.make_policy`, so ``gym.make("Uno-v0", opponent="hold-wilds")``, ``uno-evaluate`` and
``uno-play`` accept them:

* ``"hold-wilds"`` (:class:`HoldWildsPolicy`): hoards wilds. A uniform coloured play; a wild only when it has
  no coloured play.
* ``"wilds-first"`` (:class:`WildsFirstPolicy`): spends wilds at once. A wild draw four, else a wild, whenever
  it holds one (declaring the colour it holds most); otherwise it plays as ``rule``.
* ``"dump-actions"`` (:class:`DumpActionsPolicy`): plays skip, reverse and draw two before anything else, then a
  wild draw four, then numbers, a plain wild last; within a kind, the colour it holds most.
* ``"hold-actions"`` (:class:`HoldActionsPolicy`): the opposite. A uniform number card; else a plain wild; skip,
  reverse, draw two and wild draw four only when nothing else is legal (drawing is never voluntary, so this is
  the nearest a player can come to drawing rather than playing an action card).
* ``"highest-number"`` (:class:`HighestNumberPolicy`): plays the highest number it can (ties: the colour it holds
  most), action cards when it has no number, wilds last.
* ``"rule-fixed-colour"`` (:class:`FixedColourRulePolicy`): sticks to one colour. The rule player's tiers and
  tempo bonuses, with a fixed colour preference (red, then green, blue, yellow) instead of the colour it holds most;
  a wild declares red when it can.
* ``"noisy-rule"`` (:class:`NoisyRulePolicy`): ``rule``, but a quarter of its choices (:data:`RULE_NOISE`) are
  uniform over the legal actions. It is the player the learned opponent model's noisy candidate describes
  (:class:`~uno_env.belief.models.NoisyRuleModel`), and carries that model.

The styles of :data:`HELD_OUT_STYLES` are kept for evaluation: nothing is ever trained or tuned against them, so
they measure how a player does against a style it never met. :data:`TRAINING_STYLES` are the others.

Each style is defined once, compiled: its move distribution is :func:`uno_env.core.player_options` for its name in
:data:`uno_env.core.COMPILED_PLAYERS` (the functions of :mod:`uno_env.style_kernels`). The policy here samples it with
a generator seeded in ``reset`` (so a seed gives the same game), the compiled player (``compiled_player``) samples it
in the search's rollouts, the native vector env and the single env's compiled path (the same choices as this policy
there, draw for draw), and the style's ``likelihood_model`` (:mod:`uno_env.belief.models`) evaluates it for the
belief. The classes below document each style.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from uno_env.belief.models import (
    DumpActionsModel,
    FixedColourRuleModel,
    HighestNumberModel,
    HoldActionsModel,
    HoldWildsModel,
    NoisyRuleModel,
    OpponentModel,
    WildsFirstModel,
)
from uno_env.core import COMPILED_PLAYERS, DETERMINISTIC_PLAYERS, PLAYER_NOISE, player_options
from uno_env.opponents import SeededPolicy
from uno_env.style_kernels import RULE_NOISE
from uno_env.view import PublicView


def sample_options(rng: np.random.Generator, legal: list[int], options: int, noise: float) -> int:
    """A draw from a compiled player's move distribution (:func:`uno_env.core.player_options`): with probability
    ``noise`` (one ``rng.random()``, only if ``noise > 0``) a uniform legal action, else a uniform one of the
    ``options`` (a mask over action ids), drawn only when there are several. :func:`uno_env.core.choose_from` makes
    the same draws from the generator's words."""
    if noise > 0.0 and rng.random() < noise:
        return legal[int(rng.integers(len(legal)))]
    chosen = [action for action in legal if options >> action & 1]
    return chosen[int(rng.integers(len(chosen)))] if len(chosen) > 1 else chosen[0]


class CompiledStyle(SeededPolicy):
    """A style played as its compiled player ``compiled_player`` decides (module docstring); subclasses name it and
    carry its ``likelihood_model``. A deterministic style draws nothing and has nothing to seed."""

    compiled_player: str
    likelihood_model: OpponentModel

    def __init__(self) -> None:
        super().__init__()
        self._code = COMPILED_PLAYERS.index(type(self).compiled_player)
        #: The share of uniform choices over the legal actions (the compiled player's).
        self.noise = float(PLAYER_NOISE[self._code])

    def reset(self, seed: int | None = None) -> None:
        """Seed the choices (``default_rng(seed)``'s stream); nothing for a deterministic style."""
        if type(self).compiled_player not in DETERMINISTIC_PLAYERS:
            super().reset(seed)

    def act(self, view: PublicView) -> int:
        """This style's choice among ``view.legal_actions``."""
        return self.act_legal(view.legal_actions, view.hand, view.opponent_hand_size)

    def act_legal(self, legal: list[int], hand: list[int], opponent_hand_size: int) -> int:
        """:meth:`act` from the legal actions, the hand (54 counts) and the opponent's hand size."""
        if len(legal) == 1:  # also the draw, which is only ever legal alone
            return legal[0]
        choice, options = player_options(self._code, np.asarray(hand, dtype=np.int64), opponent_hand_size,
                                         np.asarray(legal, dtype=np.int64), len(legal))
        if choice >= 0 and self.noise == 0.0:
            return int(choice)
        return sample_options(self.rng, legal, int(options), self.noise)


class HoldWildsPolicy(CompiledStyle):
    """Hoards wilds: a uniform coloured play; a wild (uniform over its actions) only when nothing else is legal."""

    compiled_player = "hold-wilds"
    likelihood_model = HoldWildsModel()


class HoldActionsPolicy(CompiledStyle):
    """Keeps its action cards: a uniform number card, else a plain wild, else skip/reverse/draw two/wild draw four
    (uniform over the legal actions of the first kind it has)."""

    compiled_player = "hold-actions"
    likelihood_model = HoldActionsModel()


class WildsFirstPolicy(CompiledStyle):
    """Spends wilds at once: a wild draw four, else a wild, declaring the colour held most (the first such colour:
    red, green, blue, yellow); otherwise ``rule``'s choice."""

    compiled_player = "wilds-first"
    likelihood_model = WildsFirstModel()


class DumpActionsPolicy(CompiledStyle):
    """Plays skip/reverse/draw two first, then a wild draw four, numbers, a plain wild last; within a kind the play
    that leaves in force the colour held most (ties: the lowest action id)."""

    compiled_player = "dump-actions"
    likelihood_model = DumpActionsModel()


class HighestNumberPolicy(CompiledStyle):
    """Plays the highest number it can (ties: the colour held most, then the lowest action id), action cards without
    a number, wilds last (each also by the colour held most)."""

    compiled_player = "highest-number"
    likelihood_model = HighestNumberModel()


class FixedColourRulePolicy(CompiledStyle):
    """The rule player's tiers and tempo bonuses (:class:`~uno_env.opponents.RulePolicy`) with a fixed colour
    preference in place of its colour counts: a play scores 3 if it leaves red in force, 2 green, 1 blue, 0 yellow
    (:data:`~uno_env.style_kernels.FIXED_PREFERENCE`), and no -1 for a coloured card."""

    compiled_player = "rule-fixed-colour"
    likelihood_model = FixedColourRuleModel()


class NoisyRulePolicy(CompiledStyle):
    """``rule``, except that a share ``noise`` of its choices is uniform over the legal actions.

    Args:
        noise: the share of uniform choices, in ``[0, 1]``; at :data:`~uno_env.style_kernels.RULE_NOISE` (the
            default) the policy is exactly the compiled player ``noisy-rule`` and
            :class:`~uno_env.belief.models.NoisyRuleModel`, which it then carries as its ``likelihood_model``;
            another share has neither (``compiled_player`` is ``None`` on the instance).
    """

    compiled_player = "noisy-rule"
    likelihood_model = NoisyRuleModel()

    def __init__(self, noise: float = RULE_NOISE) -> None:
        if not 0.0 <= noise <= 1.0:
            raise ValueError(f"noise must be in [0, 1], got {noise!r}")
        super().__init__()
        if noise != RULE_NOISE:
            self.noise = noise
            self.compiled_player = None
            self.likelihood_model = None


#: Every style by name (the names :func:`uno_env.policy.make_policy` accepts for them).
STYLES: dict[str, Callable[[], CompiledStyle]] = {
    "hold-wilds": HoldWildsPolicy,
    "wilds-first": WildsFirstPolicy,
    "dump-actions": DumpActionsPolicy,
    "hold-actions": HoldActionsPolicy,
    "highest-number": HighestNumberPolicy,
    "rule-fixed-colour": FixedColourRulePolicy,
    "noisy-rule": NoisyRulePolicy,
}
#: Styles never trained or tuned against: they measure play against a style a player never met.
HELD_OUT_STYLES = ("hold-wilds", "highest-number", "rule-fixed-colour")
#: The styles training may use.
TRAINING_STYLES = tuple(name for name in STYLES if name not in HELD_OUT_STYLES)
