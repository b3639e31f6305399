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
Every random draw of a style comes from a generator seeded in ``reset``, so a seed gives the same game.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from uno_env.belief.models import RULE_NOISE, NoisyRuleModel
from uno_env.cards import DRAW2, NUM_COLOURED_RANKS, NUM_COLOURS, REVERSE, SKIP, WILD, WILD_DRAW4, action_card
from uno_env.opponents import RulePolicy
from uno_env.seeding import seeded_generator
from uno_env.view import PublicView

#: The ranks of the coloured action cards.
ACTION_RANKS = (SKIP, REVERSE, DRAW2)
#: ``rule-fixed-colour``'s preference by colour index (red 0, green 1, blue 2, yellow 3): red, green, blue, yellow.
FIXED_PREFERENCE = (3, 2, 1, 0)


def colour_counts(hand: list[int]) -> list[int]:
    """The coloured cards held of each colour, from a hand of 54 counts by card type."""
    return [sum(hand[colour * NUM_COLOURED_RANKS:(colour + 1) * NUM_COLOURED_RANKS]) for colour in range(NUM_COLOURS)]


def is_number(card: int) -> bool:
    """Whether a card type is a coloured number card (rank 0 to 9)."""
    return 0 <= card < WILD and card % NUM_COLOURED_RANKS < SKIP


def is_coloured_action(card: int) -> bool:
    """Whether a card type is a coloured skip, reverse or draw two."""
    return 0 <= card < WILD and card % NUM_COLOURED_RANKS in ACTION_RANKS


class _Style:
    """What every style shares: ``act`` is ``act_legal`` on the view's legal actions, hand and opponent size."""

    def act(self, view: PublicView) -> int:
        """This style's choice among ``view.legal_actions``."""
        return self.act_legal(view.legal_actions, view.hand, view.opponent_hand_size)

    def act_legal(self, legal: list[int], hand: list[int], opponent_hand_size: int) -> int:
        """:meth:`act` from the legal actions, the hand (54 counts) and the opponent's hand size."""
        raise NotImplementedError


class ScoredStyle(_Style):
    """A deterministic style: each legal action gets a key and the largest is played (ties: the lowest id).

    Subclasses define :meth:`key`; ``reset`` has nothing to seed.
    """

    def reset(self, seed: int | None = None) -> None:
        """Nothing to reset: the style is deterministic."""

    def key(self, action: int, card: int, colours: list[int], opponent_hand_size: int) -> tuple[int, ...]:
        """The ordering of ``action`` (playing ``card``), given the colours held and the opponent's hand size."""
        raise NotImplementedError

    def act_legal(self, legal: list[int], hand: list[int], opponent_hand_size: int) -> int:
        """The legal action of the largest key; the first in ``legal`` (ascending ids) among equal keys."""
        if len(legal) == 1:  # also the draw, which is only ever legal alone
            return legal[0]
        colours = colour_counts(hand)
        return max(legal, key=lambda action: self.key(action, action_card(action), colours, opponent_hand_size))


class TieredStyle(_Style):
    """A random style: uniform over the legal actions of the highest tier (:meth:`tier`), drawn from a generator
    seeded in ``reset``."""

    def __init__(self) -> None:
        self.rng = np.random.default_rng()

    def reset(self, seed: int | None = None) -> None:
        """Seed the choices (``default_rng(seed)``'s stream)."""
        self.rng = seeded_generator(seed) if type(seed) is int else np.random.default_rng(seed)

    def tier(self, card: int) -> int:
        """How much the style wants to play ``card`` (larger first)."""
        raise NotImplementedError

    def act_legal(self, legal: list[int], hand: list[int], opponent_hand_size: int) -> int:
        """A uniform draw among the legal actions of the best tier (no draw when there is one legal action)."""
        if len(legal) == 1:
            return legal[0]
        tiers = [self.tier(action_card(action)) for action in legal]
        top = max(tiers)
        options = [action for action, tier in zip(legal, tiers, strict=True) if tier == top]
        return options[int(self.rng.integers(len(options)))] if len(options) > 1 else options[0]


class HoldWildsPolicy(TieredStyle):
    """Hoards wilds: a uniform coloured play; a wild (uniform over its actions) only when nothing else is legal."""

    def tier(self, card: int) -> int:
        """Coloured cards before wilds."""
        return 1 if card < WILD else 0


class HoldActionsPolicy(TieredStyle):
    """Keeps its action cards: a uniform number card, else a plain wild, else skip/reverse/draw two/wild draw four."""

    def tier(self, card: int) -> int:
        """Numbers, then a plain wild, then the action cards."""
        return 2 if is_number(card) else 1 if card == WILD else 0


class WildsFirstPolicy(_Style):
    """Spends wilds at once: a wild draw four, else a wild, declaring the colour held most; otherwise ``rule``."""

    def __init__(self) -> None:
        self.rule = RulePolicy()

    def reset(self, seed: int | None = None) -> None:
        """Nothing to reset: the style is deterministic."""

    def act_legal(self, legal: list[int], hand: list[int], opponent_hand_size: int) -> int:
        """The wild draw four or wild of the colour held most (the first such colour), else ``rule``'s choice."""
        wilds = [action for action in legal if action_card(action) >= WILD]
        if not wilds:
            return self.rule.act_legal(legal, hand, opponent_hand_size)
        colours = colour_counts(hand)
        return max(wilds, key=lambda action: (action_card(action), colours[action // 15]))


class DumpActionsPolicy(ScoredStyle):
    """Plays skip/reverse/draw two first, then a wild draw four, numbers, a plain wild last; colour held most."""

    def key(self, action: int, card: int, colours: list[int], opponent_hand_size: int) -> tuple[int, ...]:
        """(kind, cards held of the colour the play leaves in force)."""
        kind = 3 if is_coloured_action(card) else 2 if card == WILD_DRAW4 else 1 if card < WILD else 0
        return kind, colours[action // 15]


class HighestNumberPolicy(ScoredStyle):
    """Plays the highest number it can (ties: the colour held most), action cards without a number, wilds last."""

    def key(self, action: int, card: int, colours: list[int], opponent_hand_size: int) -> tuple[int, ...]:
        """(kind, the number, cards held of the colour the play leaves in force)."""
        if is_number(card):
            return 2, card % NUM_COLOURED_RANKS, colours[action // 15]
        return (1 if card < WILD else 0), 0, colours[action // 15]


class FixedColourRulePolicy(ScoredStyle):
    """The rule player's tiers and tempo bonuses with a fixed colour preference instead of its colour counts."""

    def key(self, action: int, card: int, colours: list[int], opponent_hand_size: int) -> tuple[int, ...]:
        """(tier, score) as :class:`~uno_env.opponents.RulePolicy` scores, the preference in place of the counts."""
        danger = opponent_hand_size <= 2
        score = FIXED_PREFERENCE[action // 15]
        if card == WILD:
            return 0, score - 5
        if card == WILD_DRAW4:
            return (2, score + 36) if danger else (0, score - 4)
        if is_coloured_action(card):
            return (2, score + 20) if danger else (1, score + 2)
        return 1, score


class NoisyRulePolicy(_Style):
    """``rule``, except that a share ``noise`` of its choices is uniform over the legal actions.

    Args:
        noise: the share of uniform choices, in ``[0, 1]``; at :data:`RULE_NOISE` (the default) the policy is
            exactly :class:`~uno_env.belief.models.NoisyRuleModel`, which it then carries as its
            ``likelihood_model``.
    """

    def __init__(self, noise: float = RULE_NOISE) -> None:
        if not 0.0 <= noise <= 1.0:
            raise ValueError(f"noise must be in [0, 1], got {noise!r}")
        self.noise = noise
        self.rule = RulePolicy()
        self.rng = np.random.default_rng()
        if noise == RULE_NOISE:
            self.likelihood_model = NoisyRuleModel()

    def reset(self, seed: int | None = None) -> None:
        """Seed the choices (``default_rng(seed)``'s stream)."""
        self.rng = seeded_generator(seed) if type(seed) is int else np.random.default_rng(seed)

    def act_legal(self, legal: list[int], hand: list[int], opponent_hand_size: int) -> int:
        """With probability ``noise`` a uniform legal action, else ``rule``'s choice."""
        if len(legal) == 1:
            return legal[0]
        if self.rng.random() < self.noise:
            return legal[int(self.rng.integers(len(legal)))]
        return self.rule.act_legal(legal, hand, opponent_hand_size)


#: Every style by name (the names :func:`uno_env.policy.make_policy` accepts for them).
STYLES: dict[str, Callable[[], _Style]] = {
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
