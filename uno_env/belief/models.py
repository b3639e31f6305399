"""Opponent models: the policy-aware likelihood ``pi_2(action | hand, public state)`` of the notes.

Without a model the particle filter assumes nothing about how the opponent chooses among its playable
cards: playing ``z`` only tells that the hand held a ``z``. A model makes the filter weigh each hypothesis
by the probability that the opponent, holding that hand, would have chosen exactly the action it took.

A model is any object with

* ``needs(decision) -> card types``: the types whose exact counts the likelihood reads (the filter
  resolves only these, keeping the rest of each hypothesis lazy);
* ``likelihood(hands, action, decision) -> (n,) floats``: ``pi_2(action | hand)`` for each row of
  ``hands`` (54 counts, exact on ``needs``, including the card being played).

:class:`RandomModel` and :class:`RuleModel` mirror the built-in ``random`` and ``rule`` policies of
:mod:`uno_env.opponents`. A policy carries its own model as a ``likelihood_model`` attribute (those two do);
:func:`opponent_model` finds it. The belief knows no policy: it imports only the engine.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from uno_env.belief.tracker import Decision
from uno_env.cards import (
    DRAW2,
    NUM_CARD_TYPES,
    NUM_COLOURED_RANKS,
    PLAYABLE,
    REVERSE,
    SKIP,
    WILD,
    WILD_DRAW4,
    action_card,
    action_colour,
    card_rank,
)

_ALL_TYPES = np.arange(NUM_CARD_TYPES)
#: Legal action ids per held card type: one per coloured card, four (a declared colour each) per wild.
_ACTIONS_PER_TYPE = np.array([1] * WILD + [4, 4], dtype=np.float64)


class OpponentModel(Protocol):
    """What the particle filter needs to know about the opponent's policy (module docstring)."""

    def needs(self, decision: Decision) -> np.ndarray: ...

    def likelihood(self, hands: np.ndarray, action: int, decision: Decision) -> np.ndarray: ...


class RandomModel:
    """``random``: uniform over the legal action ids, so ``pi_2 = 1 / (number of legal actions)``."""

    def needs(self, decision: Decision) -> np.ndarray:
        """Only which playable types are held matters."""
        return np.array(decision.playable)

    def likelihood(self, hands: np.ndarray, action: int, decision: Decision) -> np.ndarray:
        """``1 / L(hand)`` with ``L`` the number of legal action ids."""
        playable = np.array(decision.playable)
        legal = (hands[:, playable] > 0) @ _ACTIONS_PER_TYPE[playable]
        return np.where(legal > 0, 1.0 / np.maximum(legal, 1.0), 0.0)


def _rule_tables(danger: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per play action (0..59): its card, its colour, and its (tier, score bonus) under ``RulePolicy``."""
    actions = np.arange(60)
    cards = np.array([action_card(a) for a in actions])
    tiers, bonus = np.ones(60), np.zeros(60)
    for a, card in enumerate(cards):
        bonus[a] = -1.0 if card < WILD else 0.0
        if card == WILD:
            tiers[a], bonus[a] = 0, bonus[a] - 5
        elif card == WILD_DRAW4:
            tiers[a], bonus[a] = (2, bonus[a] + 36) if danger else (0, bonus[a] - 4)
        elif card % NUM_COLOURED_RANKS in (SKIP, REVERSE, DRAW2):
            tiers[a], bonus[a] = (2, bonus[a] + 20) if danger else (1, bonus[a] + 2)
    return cards, np.array([action_colour(a) for a in actions]), tiers, bonus


_RULE_TABLES = {danger: _rule_tables(danger) for danger in (False, True)}


class RuleModel:
    """``rule`` (:class:`uno_env.opponents.RulePolicy`): deterministic, so ``pi_2`` is 1 for the action its
    (tier, score) ranking picks and 0 otherwise. Its scores read the colour counts of the whole hand."""

    def needs(self, decision: Decision) -> np.ndarray:
        """The whole hand."""
        return _ALL_TYPES

    def likelihood(self, hands: np.ndarray, action: int, decision: Decision) -> np.ndarray:
        """1 where ``RulePolicy`` holding that hand plays ``action``, else 0."""
        cards, colours, tiers, bonus = _RULE_TABLES[decision.opponent_hand_size <= 2]
        playable = np.zeros(NUM_CARD_TYPES, dtype=bool)
        playable[list(PLAYABLE[decision.active_colour][card_rank(decision.top)])] = True
        legal = (hands[:, cards] > 0) & playable[cards]
        colour_counts = hands[:, :WILD].reshape(len(hands), 4, NUM_COLOURED_RANKS).sum(axis=2)
        # Scores are far below 1000 in magnitude, so tier * 1000 + score orders by (tier, score).
        key = np.where(legal, tiers * 1000.0 + colour_counts[:, colours] + bonus, -np.inf)
        return (key.argmax(axis=1) == action).astype(np.float64)


def opponent_model(policy: Any) -> OpponentModel | None:
    """The model of a policy: a model passes through; a policy gives the ``likelihood_model`` it carries.

    Anything else (``None``, learned or search players, mixtures) gives ``None``: no policy-aware likelihood.
    """
    if policy is None or _is_model(policy):
        return policy
    model = getattr(policy, "likelihood_model", None)
    return model if _is_model(model) else None


def _is_model(candidate: Any) -> bool:
    return callable(getattr(candidate, "needs", None)) and callable(getattr(candidate, "likelihood", None))
