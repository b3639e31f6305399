"""Opponents no belief model knows, for measuring beliefs that are not told the opponent.

Importing this module registers them by name (:func:`uno_env.policy.register_policy`):

* ``"rule-fixed-colour"`` (:class:`FixedColourRulePolicy`): the rule player's tiers (attacks when the opponent
  is about to go out, then coloured cards, then wilds) and tempo bonuses, but a fixed colour preference (red, then
  yellow, green, blue) instead of staying in the colour it holds most; a wild declares its preferred colour. The
  ``rule`` model mispredicts many of its choices, so a filter told ``rule`` would be wrong about it.
* ``"hold-wilds"`` (:class:`HoldWildsPolicy`): uniform over its coloured plays, a wild only when it has no other
  play: neither the ``random`` nor the ``rule`` model.

    .venv/bin/python benchmarks/search_strength.py --opponents rule-fixed-colour --players particles learned
    .venv/bin/python -c "import benchmarks.unseen_opponents; from train.cli.belief_quality import main; \\
        main('--games 60 --tracked rule --opponent hold-wilds --learned 1000'.split())"

(``search_strength.py`` imports it from its own directory, so the names work there without the import.)
"""

from __future__ import annotations

import numpy as np

from uno_env.cards import DRAW2, REVERSE, SKIP, WILD, WILD_DRAW4, action_card, card_rank
from uno_env.policy import register_policy
from uno_env.view import PublicView

_PREFERENCE = (3, 2, 1, 0)  # by colour index: red first


class FixedColourRulePolicy:
    """The rule player with a fixed colour preference instead of its colour counts (module docstring)."""

    def reset(self, seed: int | None = None) -> None:
        """Nothing to reset: the policy is deterministic."""

    def act(self, view: PublicView) -> int:
        """The best (tier, score) legal action; ties: the lowest id."""
        return self.act_legal(view.legal_actions, view.hand, view.opponent_hand_size)

    def act_legal(self, legal: list[int], hand: list[int], opponent_hand_size: int) -> int:
        """:meth:`act` from the legal actions and the opponent's hand size."""
        danger = opponent_hand_size <= 2
        best, best_key = legal[0], (-1, 0)
        for action in legal:
            card = action_card(action)
            if card < 0:  # the draw action: only legal alone
                return action
            score = _PREFERENCE[action // 15]
            if card == WILD:
                tier, score = 0, score - 5
            elif card == WILD_DRAW4:
                tier, score = (2, score + 36) if danger else (0, score - 4)
            elif card_rank(card) in (SKIP, REVERSE, DRAW2):
                tier, score = (2, score + 20) if danger else (1, score + 2)
            else:
                tier = 1
            if (tier, score) > best_key:
                best, best_key = action, (tier, score)
        return best


class HoldWildsPolicy:
    """Uniform over the coloured plays; a wild (uniform over its actions) only when nothing else is legal."""

    def __init__(self) -> None:
        self.rng = np.random.default_rng()

    def reset(self, seed: int | None = None) -> None:
        """Seed the choices."""
        self.rng = np.random.default_rng(seed)

    def act(self, view: PublicView) -> int:
        """A coloured play if there is one, else any legal action, uniformly."""
        return self.act_legal(view.legal_actions, view.hand, view.opponent_hand_size)

    def act_legal(self, legal: list[int], hand: list[int], opponent_hand_size: int) -> int:
        """:meth:`act` from the legal actions."""
        coloured = [a for a in legal if 0 <= action_card(a) < WILD]
        options = coloured or legal
        return options[int(self.rng.integers(len(options)))]


register_policy("rule-fixed-colour", FixedColourRulePolicy)
register_policy("hold-wilds", HoldWildsPolicy)
