"""Opponent models: the policy-aware likelihood ``pi_2(action | hand, public state)`` of the notes.

Without a model a belief assumes nothing about how the opponent chooses among its playable cards: playing
``z`` only tells that the hand held a ``z``. A model makes the filter weigh each hypothesis by the probability
that the opponent, holding that hand, would have chosen exactly the action it took.

A model is an object with

* ``code``: which compiled likelihood :func:`action_likelihood` evaluates (:data:`RANDOM_MODEL`, :data:`RULE_MODEL`,
  ...); the policy-aware filter (:mod:`uno_env.belief.trajectory`) runs it inside its kernels;
* ``player``: the compiled player (a name of :data:`uno_env.core.COMPILED_PLAYERS`) that plays as the model says,
  so a search can play out the model's games with it;
* ``likelihood(hands, action, decision) -> (n,) floats``: ``pi_2(action | hand)`` for each row of ``hands``
  (54 counts, including the card being played), the same function over many hands (exact enumeration).

There is a model for each compiled player: ``random``, ``rule`` and every opponent style of :mod:`uno_env.styles`.
Its likelihood is that player's move distribution, :func:`uno_env.core.player_options` itself, called here on each
hand, so a policy and its model cannot drift apart. A policy carries its own model as a ``likelihood_model``
attribute (the built-in ones and the styles do); :func:`opponent_model` finds it. The belief knows no policy: it
imports only the engine.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
from numba import njit

from uno_env.belief.tracker import Decision
from uno_env.cards import NUM_COLOURS, PLAYABLE, action_card, card_actions, card_rank
from uno_env.core import COMPILED_PLAYERS, PLAYER_NOISE, player_options
from uno_env.style_kernels import RULE_NOISE  # noqa: F401 (re-exported: the noise of NoisyRuleModel, long read here)

#: Likelihood codes of :func:`action_likelihood`: the plain one (the hand held the card), then one per compiled
#: player's model (its class below names the player): ``random``, ``rule``, ``rule`` with a share
#: :data:`~uno_env.style_kernels.RULE_NOISE` of uniform choices, and the other opponent styles.
(PLAIN_MODEL, RANDOM_MODEL, RULE_MODEL, NOISY_RULE_MODEL, HOLD_WILDS_MODEL, WILDS_FIRST_MODEL, DUMP_ACTIONS_MODEL,
 HOLD_ACTIONS_MODEL, HIGHEST_NUMBER_MODEL, FIXED_COLOUR_MODEL) = range(10)

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

    0 if the hand does not hold the card; else 1 for :data:`PLAIN_MODEL`, and for a player's model that player's
    probability of choosing ``action`` holding that hand (its opponent holding ``opponent_hand_size`` cards), from
    :func:`uno_env.core.player_options`: ``(1 - e) [action is an option] / (options) + e / (legal action ids)``,
    ``e`` the player's share of uniform choices (:data:`uno_env.core.PLAYER_NOISE`). So :data:`RANDOM_MODEL` gives
    ``1 / (legal action ids)``, :data:`RULE_MODEL` 1 for the action :func:`~uno_env.style_kernels.rule_action` picks
    and 0 otherwise. ``legal`` is a scratch array of at least 60 ints.
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
    policy = _MODEL_POLICY[model]
    _, options = player_options(policy, hand, opponent_hand_size, legal, n)
    chosen = 0.0
    if (options >> action) & 1:
        k = 0
        for i in range(n):
            k += (options >> legal[i]) & 1
        chosen = 1.0 / k
    noise = PLAYER_NOISE[policy]
    return (1.0 - noise) * chosen + noise * (1.0 / n)


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
    """A model whose likelihood is :func:`action_likelihood` with its ``code``: the move distribution of the compiled
    player ``player``."""

    code: int
    #: The compiled player (a name of :data:`uno_env.core.COMPILED_PLAYERS`) that plays as this model says.
    player: str

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
    :func:`~uno_env.style_kernels.rule_action` picks holding that hand and 0 otherwise."""

    code = RULE_MODEL
    player = "rule"


class NoisyRuleModel(_CompiledModel):
    """``noisy-rule`` (:class:`uno_env.styles.NoisyRulePolicy`): ``rule`` most of the time,
    ``pi_2 = (1 - e) [rule_action picks it] + e / (legal action ids)``, ``e =``
    :data:`~uno_env.style_kernels.RULE_NOISE`. Also a candidate of the learned opponent model
    (:mod:`uno_env.belief.learned`) for players that are rule-like but not ``rule`` itself."""

    code = NOISY_RULE_MODEL
    player = "noisy-rule"


class HoldWildsModel(_CompiledModel):
    """``hold-wilds`` (:class:`uno_env.styles.HoldWildsPolicy`): uniform over the coloured plays, over the wilds'
    actions when there is none."""

    code = HOLD_WILDS_MODEL
    player = "hold-wilds"


class WildsFirstModel(_CompiledModel):
    """``wilds-first`` (:class:`uno_env.styles.WildsFirstPolicy`): deterministic, 1 for its choice, else 0."""

    code = WILDS_FIRST_MODEL
    player = "wilds-first"


class DumpActionsModel(_CompiledModel):
    """``dump-actions`` (:class:`uno_env.styles.DumpActionsPolicy`): deterministic, 1 for its choice, else 0."""

    code = DUMP_ACTIONS_MODEL
    player = "dump-actions"


class HoldActionsModel(_CompiledModel):
    """``hold-actions`` (:class:`uno_env.styles.HoldActionsPolicy`): uniform over the number plays, else over the
    plain wilds' actions, else over all legal actions."""

    code = HOLD_ACTIONS_MODEL
    player = "hold-actions"


class HighestNumberModel(_CompiledModel):
    """``highest-number`` (:class:`uno_env.styles.HighestNumberPolicy`): deterministic, 1 for its choice, else 0."""

    code = HIGHEST_NUMBER_MODEL
    player = "highest-number"


class FixedColourRuleModel(_CompiledModel):
    """``rule-fixed-colour`` (:class:`uno_env.styles.FixedColourRulePolicy`): deterministic, 1 for its choice,
    else 0."""

    code = FIXED_COLOUR_MODEL
    player = "rule-fixed-colour"


#: The model class of every compiled player, by likelihood code (the plain likelihood, code 0, is no player's).
MODELS: tuple[type[_CompiledModel], ...] = (RandomModel, RuleModel, NoisyRuleModel, HoldWildsModel, WildsFirstModel,
                                             DumpActionsModel, HoldActionsModel, HighestNumberModel,
                                             FixedColourRuleModel)
# Each likelihood code's compiled player, as a policy code of uno_env.core (read by action_likelihood's kernel).
_MODEL_POLICY = np.full(len(MODELS) + 1, -1, np.int64)
for _model in MODELS:
    _MODEL_POLICY[_model.code] = COMPILED_PLAYERS.index(_model.player)


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

