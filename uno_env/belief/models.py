"""Opponent models: the policy-aware likelihood ``pi_2(action | hand, public state)`` of the notes.

Without a model a belief assumes nothing about how the opponent chooses among its playable cards: playing
``z`` only tells that the hand held a ``z``. A model makes the filter weigh each hypothesis by the probability
that the opponent, holding that hand, would have chosen exactly the action it took.

A model is an object with

* ``code``: which compiled likelihood :func:`action_likelihood` evaluates (:data:`RANDOM_MODEL` or
  :data:`RULE_MODEL`); the policy-aware filter (:mod:`uno_env.belief.trajectory`) runs it inside its kernels;
* ``likelihood(hands, action, decision) -> (n,) floats``: ``pi_2(action | hand)`` for each row of ``hands``
  (54 counts, including the card being played), the same function over many hands (exact enumeration).

:class:`RandomModel` and :class:`RuleModel` mirror the built-in ``random`` and ``rule`` policies of
:mod:`uno_env.opponents`; the rule player's choice is :func:`uno_env.core.rule_action` itself, called here on
each hand, so the policy and its model cannot drift apart. A policy carries its own model as a
``likelihood_model`` attribute (those two do); :func:`opponent_model` finds it. The belief knows no policy:
it imports only the engine.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
from numba import njit

from uno_env.belief.tracker import Decision
from uno_env.cards import NUM_COLOURS, PLAYABLE, action_card, card_actions, card_rank
from uno_env.core import rule_action

#: Likelihood codes of :func:`action_likelihood`: the plain one (the hand held the card), ``random``, ``rule``, and
#: ``rule`` with a share :data:`RULE_NOISE` of uniform choices.
PLAIN_MODEL, RANDOM_MODEL, RULE_MODEL, NOISY_RULE_MODEL = 0, 1, 2, 3
#: The share of uniformly random plays in :data:`NOISY_RULE_MODEL`: a player that mostly chooses as ``rule`` does but
#: not always (another colour preference, another tier order) is not refuted by its first deviation.
RULE_NOISE = 0.25

_RANKS = 15


def _playable_action_table() -> tuple[np.ndarray, np.ndarray]:
    """Per (colour in force, top rank): the play actions of the playable types, ascending, and how many."""
    actions = np.zeros((NUM_COLOURS, _RANKS, 60), np.int64)
    counts = np.zeros((NUM_COLOURS, _RANKS), np.int64)
    for colour in range(NUM_COLOURS):
        for rank in range(_RANKS):
            ids = sorted(a for card in PLAYABLE[colour][rank] for a in card_actions(card))
            actions[colour, rank, :len(ids)] = ids
            counts[colour, rank] = len(ids)
    return actions, counts


_PLAYABLE_ACTIONS, _PLAYABLE_COUNT = _playable_action_table()
_ACTION_CARD = np.array([action_card(a) for a in range(60)], np.int64)


@njit(cache=True)
def action_likelihood(model: int, hand: np.ndarray, action: int, colour: int, top_rank: int,
                      opponent_hand_size: int, legal: np.ndarray) -> float:
    """``pi_2(action | hand)`` of a play ``action`` made with ``colour`` / ``top_rank`` in force.

    0 if the hand does not hold the card; else 1 for :data:`PLAIN_MODEL`, ``1 / (legal action ids)`` for
    :data:`RANDOM_MODEL`, and for :data:`RULE_MODEL` 1 if :func:`uno_env.core.rule_action` holding that hand
    (its opponent holding ``opponent_hand_size`` cards) picks ``action``, else 0; :data:`NOISY_RULE_MODEL` mixes
    the last two, ``(1 - e) [rule picks action] + e / (legal action ids)`` with ``e =`` :data:`RULE_NOISE`.
    ``legal`` is a scratch array of at least 60 ints.
    """
    if hand[_ACTION_CARD[action]] < 1:
        return 0.0
    if model == PLAIN_MODEL:
        return 1.0
    n = 0
    for i in range(_PLAYABLE_COUNT[colour, top_rank]):
        candidate = _PLAYABLE_ACTIONS[colour, top_rank, i]
        if hand[_ACTION_CARD[candidate]] > 0:
            legal[n] = candidate
            n += 1
    uniform = 1.0 / n
    if model == RANDOM_MODEL:
        return uniform
    rule = 1.0 if rule_action(hand, opponent_hand_size, legal, n) == action else 0.0
    if model == RULE_MODEL:
        return rule
    return (1.0 - RULE_NOISE) * rule + RULE_NOISE * uniform


@njit(cache=True)
def _likelihoods(model: int, hands: np.ndarray, action: int, colour: int, top_rank: int,
                 opponent_hand_size: int) -> np.ndarray:
    out = np.empty(len(hands))
    legal = np.empty(60, np.int64)
    for s in range(len(hands)):
        out[s] = action_likelihood(model, hands[s], action, colour, top_rank, opponent_hand_size, legal)
    return out


class OpponentModel(Protocol):
    """What a policy-aware belief needs to know about the opponent's policy (module docstring)."""

    code: int

    def likelihood(self, hands: np.ndarray, action: int, decision: Decision) -> np.ndarray: ...


class _CompiledModel:
    """A model whose likelihood is :func:`action_likelihood` with its ``code``."""

    code: int

    def likelihood(self, hands: np.ndarray, action: int, decision: Decision) -> np.ndarray:
        """``pi_2(action | hand)`` for each row of ``hands`` (54 counts each)."""
        return _likelihoods(self.code, np.ascontiguousarray(hands, dtype=np.int64), action,
                            decision.active_colour, card_rank(decision.top), decision.opponent_hand_size)


class RandomModel(_CompiledModel):
    """``random``: uniform over the legal action ids, so ``pi_2 = 1 / (number of legal actions)``.

    A wild counts four times (one id per declared colour), as :class:`uno_env.opponents.RandomPolicy` draws.
    """

    code = RANDOM_MODEL
    player = "random"


class RuleModel(_CompiledModel):
    """``rule`` (:class:`uno_env.opponents.RulePolicy`): deterministic, so ``pi_2`` is 1 for the action
    :func:`uno_env.core.rule_action` picks holding that hand and 0 otherwise."""

    code = RULE_MODEL
    player = "rule"


class NoisyRuleModel(_CompiledModel):
    """``rule`` most of the time: ``pi_2 = (1 - e) [rule_action picks it] + e / (legal action ids)``,
    ``e =`` :data:`RULE_NOISE`. No built-in player plays it; it is a candidate of the learned opponent model
    (:mod:`uno_env.belief.learned`) for players that are rule-like but not ``rule`` itself."""

    code = NOISY_RULE_MODEL


def opponent_model(policy: Any) -> OpponentModel | None:
    """The model of a policy: a model passes through; a policy gives the ``likelihood_model`` it carries.

    Anything else (``None``, learned or search players, mixtures) gives ``None``: no policy-aware likelihood.
    """
    if policy is None or _is_model(policy):
        return policy
    model = getattr(policy, "likelihood_model", None)
    return model if _is_model(model) else None


def _is_model(candidate: Any) -> bool:
    return isinstance(getattr(candidate, "code", None), int) and callable(getattr(candidate, "likelihood", None))

