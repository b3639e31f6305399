"""The compiled players' decisions: the rule player and the opponent styles, one compiled function each.

Each function reads what a style may know (the mover's hand as 54 counts, the opponent's hand size and the legal
actions ``legal[:n]``, ascending, ``n >= 2``) and gives the style's choice, or for a style that chooses at random
its *options*, as a mask over action ids (bit ``a`` set: action ``a`` is an option), among which it plays
uniformly. :func:`uno_env.core.player_options` puts every compiled player's answer in that one form, and the three
users of a style read it from there, so none can drift from another:

* the Python policies of :mod:`uno_env.opponents` and :mod:`uno_env.styles` (the choice, or the options sampled
  with their seeded ``numpy.random.Generator``);
* :func:`uno_env.core.choose`, which samples the options from a kernel stream or from a Python generator's draws:
  the search's rollouts, :func:`uno_env.core.playout`, the native vector env and the single env's compiled path;
* the belief's likelihood of a play, :func:`uno_env.belief.models.action_likelihood`.

Most choices here are "the legal action of the largest key, the first (lowest id) among equal keys", a key being a
number per card type (a table made below by a small Python function of the card, the readable definition) plus a
weight per colour the play leaves in force (the cards held of that colour, or ``rule-fixed-colour``'s fixed
preference): :func:`first_best`. The styles themselves are documented on their Python classes (:mod:`uno_env.styles`).

This module knows only the cards; :mod:`uno_env.core` imports it, and Python reaches the players through
:func:`uno_env.core.player_options`. Each style is compiled once, on its own (``cache=True``): inlined into every
kernel that plays (numba's ``inline="always"``), they took 8 s more to compile in every process with an empty cache.
``rule_action``, the players' own hot path (the search's rollouts, the training opponent), is inlined.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numba import njit

from uno_env.cards import (
    DRAW2,
    NUM_ACTIONS,
    NUM_CARD_TYPES,
    NUM_COLOURED_RANKS,
    REVERSE,
    SKIP,
    WILD,
    WILD_DRAW4,
    action_card,
)

#: The share of uniformly random choices of ``noisy-rule``: a player that mostly chooses as ``rule`` does but not
#: always (another colour preference, another tier order) is not refuted by its first deviation.
RULE_NOISE = 0.25
#: ``rule-fixed-colour``'s preference by colour index (red 0, green 1, blue 2, yellow 3): red, green, blue, yellow.
FIXED_PREFERENCE = (3, 2, 1, 0)
# A card key's unit: above any colour weight (at most 25 cards of a colour are held), so the card decides first.
_CARD = 64
# A rule tier's unit: above any rule score (-6 to 61).
_TIER = 1024
_ACTION_CARD = np.array([action_card(action) for action in range(NUM_ACTIONS)], dtype=np.int64)


def is_number(card: int) -> bool:
    """Whether a card type is a coloured number card (rank 0 to 9)."""
    return 0 <= card < WILD and card % NUM_COLOURED_RANKS < SKIP


def is_coloured_action(card: int) -> bool:
    """Whether a card type is a coloured skip, reverse or draw two."""
    return 0 <= card < WILD and card % NUM_COLOURED_RANKS in (SKIP, REVERSE, DRAW2)


def rule_tier_score(card: int, danger: bool) -> tuple[int, int]:
    """The rule player's (tier, score bonus) for playing ``card`` (``danger``: the opponent holds 2 cards or fewer).

    Tiers: attacks when in danger, then coloured cards, then wilds; bonuses -5 for a wild, -4 for a +4 (+36 when
    attacking), +2 for skip/reverse/+2 (+20 attacking). ``rule`` and ``rule-fixed-colour`` share them.
    """
    if card == WILD:
        return 0, -5
    if card == WILD_DRAW4:
        return (2, 36) if danger else (0, -4)
    if is_coloured_action(card):
        return (2, 20) if danger else (1, 2)
    return 1, 0


def _table(key: Callable[[int], int]) -> np.ndarray:
    """``key(card)`` for every card type, as an int64 table the kernels index."""
    return np.array([key(card) for card in range(NUM_CARD_TYPES)], dtype=np.int64)


def _rule_key(card: int, danger: bool, own_colour: bool) -> int:
    """A rule tier and bonus as one key; ``own_colour``: ``rule``'s score counts the *other* cards held of the
    colour, so a coloured card, which is one of them, scores one less."""
    tier, bonus = rule_tier_score(card, danger)
    return tier * _TIER + bonus - (1 if own_colour and card < WILD else 0)


# The card keys, by danger (row 1: the opponent holds 2 cards or fewer) where the style looks at it.
_RULE_KEYS = np.stack([_table(lambda card, d=danger: _rule_key(card, d, True)) for danger in (False, True)])
_FIXED_COLOUR_KEYS = np.stack([_table(lambda card, d=danger: _rule_key(card, d, False)) for danger in (False, True)])
# dump-actions: skip/reverse/draw two, then a wild draw four, then numbers, a plain wild last.
_DUMP_ACTIONS_KEYS = _table(lambda card: _CARD * (3 if is_coloured_action(card) else 2 if card == WILD_DRAW4
                                                  else 1 if card < WILD else 0))
# highest-number: numbers by their number, then action cards, wilds last.
_HIGHEST_NUMBER_KEYS = _table(lambda card: _CARD * (16 * 2 + card % NUM_COLOURED_RANKS if is_number(card)
                                                    else 16 if card < WILD else 0))
# wilds-first: a wild draw four, then a wild; 0 for a coloured card (then it plays as rule).
_WILDS_FIRST_KEYS = _table(lambda card: _CARD * (2 if card == WILD_DRAW4 else 1 if card == WILD else 0))
# The random styles' tiers: uniform over the legal actions of the highest.
_HOLD_WILDS_TIERS = _table(lambda card: 1 if card < WILD else 0)
_HOLD_ACTIONS_TIERS = _table(lambda card: 2 if is_number(card) else 1 if card == WILD else 0)


@njit(inline="always")
def colours_held(hand: np.ndarray) -> tuple[int, int, int, int]:
    """The coloured cards held of each colour (red, green, blue, yellow), from 54 counts."""
    # Locals, not an array: an array would be allocated at every choice of a compiled opponent.
    red = green = blue = yellow = 0
    for rank in range(NUM_COLOURED_RANKS):
        red += hand[rank]
        green += hand[NUM_COLOURED_RANKS + rank]
        blue += hand[2 * NUM_COLOURED_RANKS + rank]
        yellow += hand[3 * NUM_COLOURED_RANKS + rank]
    return red, green, blue, yellow


@njit(inline="always")
def first_best(card_keys: np.ndarray, colour_weights: tuple[int, int, int, int], legal: np.ndarray, n: int) -> int:
    """The action of ``legal[:n]`` with the largest ``card_keys[card] + colour_weights[colour in force after it]``;
    the first (lowest id) among equal keys. No draw among them (it is only ever legal alone)."""
    best_action, best_key = legal[0], -(2**62)
    for i in range(n):
        action = legal[i]
        key = card_keys[_ACTION_CARD[action]] + colour_weights[action // 15]
        if key > best_key:
            best_action, best_key = action, key
    return best_action


@njit(inline="always")
def top_tier(tiers: np.ndarray, legal: np.ndarray, n: int) -> int:
    """The actions of ``legal[:n]`` whose card has the highest tier (``tiers[card]``), as a mask over action ids."""
    best, mask = -1, 0
    for i in range(n):
        action = legal[i]
        tier = tiers[_ACTION_CARD[action]]
        if tier > best:
            best, mask = tier, 1 << action
        elif tier == best:
            mask |= 1 << action
    return mask


@njit(inline="always")
def rule_action(hand: np.ndarray, opponent_hand_size: int, legal: np.ndarray, n: int) -> int:
    """The rule-based player's choice among ``legal[:n]`` (ascending); the scoring is documented on RulePolicy.

    The best (tier, score) wins and ties keep the lowest action id. Tiers and bonuses: :func:`rule_tier_score`;
    the score also counts the other cards held of the colour the play leaves in force.
    """
    if n == 1:
        return legal[0]
    return first_best(_RULE_KEYS[1 if opponent_hand_size <= 2 else 0], colours_held(hand), legal, n)


@njit(cache=True)
def fixed_colour_action(hand: np.ndarray, opponent_hand_size: int, legal: np.ndarray, n: int) -> int:
    """``rule-fixed-colour``: the rule player's tiers and bonuses, :data:`FIXED_PREFERENCE` for the colour held."""
    return first_best(_FIXED_COLOUR_KEYS[1 if opponent_hand_size <= 2 else 0], FIXED_PREFERENCE, legal, n)


@njit(cache=True)
def dump_actions_action(hand: np.ndarray, opponent_hand_size: int, legal: np.ndarray, n: int) -> int:
    """``dump-actions``: skip/reverse/draw two, a wild draw four, numbers, a plain wild; the colour held most."""
    return first_best(_DUMP_ACTIONS_KEYS, colours_held(hand), legal, n)


@njit(cache=True)
def highest_number_action(hand: np.ndarray, opponent_hand_size: int, legal: np.ndarray, n: int) -> int:
    """``highest-number``: the highest number, else an action card, wilds last; the colour held most."""
    return first_best(_HIGHEST_NUMBER_KEYS, colours_held(hand), legal, n)


@njit(cache=True)
def wilds_first_action(hand: np.ndarray, opponent_hand_size: int, legal: np.ndarray, n: int) -> int:
    """``wilds-first``: a wild draw four, else a wild, declaring the colour held most; else ``rule``'s choice."""
    action = first_best(_WILDS_FIRST_KEYS, colours_held(hand), legal, n)
    return action if _ACTION_CARD[action] >= WILD else rule_action(hand, opponent_hand_size, legal, n)


@njit(cache=True)
def hold_wilds_options(legal: np.ndarray, n: int) -> int:
    """``hold-wilds``' options (a mask): its coloured plays, or its wilds when it has no coloured play."""
    return top_tier(_HOLD_WILDS_TIERS, legal, n)


@njit(cache=True)
def hold_actions_options(legal: np.ndarray, n: int) -> int:
    """``hold-actions``' options (a mask): its numbers, else its plain wilds, else its other plays."""
    return top_tier(_HOLD_ACTIONS_TIERS, legal, n)
