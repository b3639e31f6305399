"""A model of an opponent nobody described: a softmax over what its moves do, with weights learned from its plays.

The candidates of the learned opponent model (:mod:`uno_env.belief.learned`) are the players the project knows.
Against a player of another kind none of them fits and the belief falls back to the plain filter's. The
*preference* candidate is the generic one: a player who weighs a few plain properties of each move,

    pi_theta(a | H) = exp(theta . phi(a, H)) / sum over the plays a' that H can make of exp(theta . phi(a', H)),

with the properties :data:`PREFERENCE_FEATURES` of the move ``a`` made from the hand ``H``: how high a number it
plays, whether it plays a skip or reverse, a draw two, a wild, a wild draw four, the share of the hand left in the
colour it leaves in force, whether it keeps the colour in force, and which colour it leaves (one channel each).
``theta = 0`` is the uniform player; large weights make a player that always prefers, say, its highest number or
its wilds.

The weights are learned while the filter tracks the hand. At a play the filter weighs each hypothesis with the
weights learned from the plays before it (``theta`` is logged with the play, so the play's likelihood stays fixed
and the filter's moves keep their detailed balance), then takes one gradient step of the play's log-likelihood,
averaged over the candidate's posterior of the hand:

    theta <- theta + rate * sum_p v_p (phi(a, H_p) - E_{pi_theta(. | H_p)} phi(., H_p))

(``v_p`` the particles' importance weights under this candidate). So the candidate is a sequential predictor:
each play is predicted from what the plays before it taught, and Bayes' rule among the candidates compares it with
the others on those predictions.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from uno_env.belief.models import legal_plays
from uno_env.belief.tracker import Decision
from uno_env.cards import ACTIONS_PER_COLOUR, NUM_COLOURED_RANKS, card_rank
from uno_env.core import ACTION_CARD

#: The likelihood code of the preference candidate (not a code of ``models.action_likelihood``: its weights are
#: the filter's, :mod:`uno_env.belief.trajectory_kernels`).
PREFERENCE_MODEL = 10
#: What the preference candidate weighs in a move (module docstring).
PREFERENCE_FEATURES = ("number", "skip or reverse", "draw two", "wild", "wild draw four", "colour share",
                       "keeps the colour", "red", "green", "blue", "yellow", "its highest number", "its lowest number")
N_PREFERENCES = len(PREFERENCE_FEATURES)
_LAST_NUMBER, _DRAW_TWO, _WILD, _WILD_DRAW4 = 9, 12, 13, 14


@njit(cache=True)
def _colour_left(hand: np.ndarray, action: int) -> float:
    """The coloured cards of the colour ``action`` leaves in force still in ``hand`` after it."""
    colour, rank = divmod(action, ACTIONS_PER_COLOUR)
    held = 0
    for t in range(colour * NUM_COLOURED_RANKS, (colour + 1) * NUM_COLOURED_RANKS):
        held += hand[t]
    return held - (rank < _WILD)


@njit(cache=True)
def _add_features(out: np.ndarray, scale: float, action: int, hand: np.ndarray, size: int, colour: int,
                  low: int, high: int) -> None:
    """Add ``scale * phi(action)`` to ``out`` for the hand ``hand`` of ``size`` cards with ``colour`` in force."""
    played, rank = divmod(action, ACTIONS_PER_COLOUR)
    if rank <= _LAST_NUMBER:
        out[0] += scale * rank / _LAST_NUMBER
    elif rank < _DRAW_TWO:
        out[1] += scale
    else:
        out[rank - _DRAW_TWO + 2] += scale
    out[5] += scale * _colour_left(hand, action) / max(1, size - 1)
    out[6] += scale * (played == colour)
    out[7 + played] += scale
    if rank == high:
        out[11] += scale
    if rank == low:
        out[12] += scale


@njit(cache=True)
def _logit(theta: np.ndarray, action: int, hand: np.ndarray, size: int, colour: int, low: int, high: int) -> float:
    """``theta . phi(action)`` for the hand ``hand`` of ``size`` cards with ``colour`` in force."""
    played, rank = divmod(action, ACTIONS_PER_COLOUR)
    value = theta[0] * rank / _LAST_NUMBER if rank <= _LAST_NUMBER else (
        theta[1] if rank < _DRAW_TWO else theta[rank - _DRAW_TWO + 2])
    value += theta[5] * _colour_left(hand, action) / max(1, size - 1)
    if played == colour:
        value += theta[6]
    if rank == high:
        value += theta[11]
    if rank == low:
        value += theta[12]
    return value + theta[7 + played]


@njit(cache=True)
def preference_likelihood(theta: np.ndarray, hand: np.ndarray, action: int, colour: int, top_rank: int,
                          legal: np.ndarray, gradient: np.ndarray) -> float:
    """``pi_theta(action | hand)`` of a play made with ``colour`` / ``top_rank`` in force (0 if the hand does not
    hold the card). When ``gradient`` is not empty, it receives ``d log pi_theta / d theta``, ``phi(action)`` less
    the expected ``phi`` under ``pi_theta``. ``legal`` is a scratch array of at least 60 ints."""
    if hand[ACTION_CARD[action]] < 1:
        return 0.0
    n = legal_plays(hand, colour, top_rank, legal)
    size = 0
    for t in range(len(hand)):
        size += hand[t]
    low, high = _LAST_NUMBER + 1, -1
    for i in range(n):
        rank = legal[i] % ACTIONS_PER_COLOUR
        if rank <= _LAST_NUMBER:
            low, high = min(low, rank), max(high, rank)
    top = -np.inf
    for i in range(n):
        top = max(top, _logit(theta, legal[i], hand, size, colour, low, high))
    total = 0.0
    for i in range(n):
        total += np.exp(_logit(theta, legal[i], hand, size, colour, low, high) - top)
    chosen = np.exp(_logit(theta, action, hand, size, colour, low, high) - top) / total
    if len(gradient):
        gradient[:] = 0.0
        _add_features(gradient, 1.0, action, hand, size, colour, low, high)
        for i in range(n):
            share = np.exp(_logit(theta, legal[i], hand, size, colour, low, high) - top) / total
            _add_features(gradient, -share, legal[i], hand, size, colour, low, high)
    return chosen


class PreferenceModel:
    """The preference candidate of :class:`~uno_env.belief.learned.LearnedOpponent` (module docstring).

    Args:
        rate: the step of each play's gradient update of the weights (positive).

    It is a candidate only: its weights live in the filter that learns them, so it is never an opponent model a
    filter is told, and no compiled player plays it (a search cannot roll it out).

    Raises:
        ValueError: naming a rate that is not a positive number.
    """

    code = PREFERENCE_MODEL

    def __init__(self, rate: float = 1.0) -> None:
        if isinstance(rate, bool) or not isinstance(rate, int | float) or not rate > 0:
            raise ValueError(f"rate must be a positive number, got {rate!r}")
        self.rate = float(rate)

    def likelihood(self, hands: np.ndarray, action: int, decision: Decision) -> np.ndarray:
        """``pi_theta(action | hand)`` for each row of ``hands`` at ``theta = 0`` (the weights before any play)."""
        theta, legal, none = np.zeros(N_PREFERENCES), np.zeros(60, np.int64), np.zeros(0)
        hands = np.ascontiguousarray(hands, dtype=np.int64)
        return np.array([preference_likelihood(theta, hand, action, decision.active_colour, card_rank(decision.top),
                                               legal, none) for hand in hands])

    def __repr__(self) -> str:
        return f"PreferenceModel(rate={self.rate})"
