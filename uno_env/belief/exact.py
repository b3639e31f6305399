"""Exact Bayesian filtering by enumeration, for small positions: the reference the filters are checked against.

The posterior is held as every possible opponent hand (a row of 54 counts) with its probability, starting
from the uniform prior over subsets of the unseen pool (hand ``h`` has weight ``prod_t C(U_t, h_t)``) and
updated exactly:

* our draw of ``c``: multiply by the copies of ``c`` left in that hand's deck, ``U_c - h_c``;
* opponent plays ``z``: keep hands holding a ``z`` (times ``pi_2`` with a model), remove it;
* opponent draws after having no playable card: keep hands without playable types; then, as for a forced
  draw, each drawn card is every deck card ``t`` with probability ``(U_t - h_t) / deck size``;
* reshuffle: the hand does not change (the pool grows).

It is written independently of :mod:`uno_env.belief.lazy` (full hands, no lazy parts, no sampling), so
agreement between the two is evidence that both are right. The support grows quickly with the pool and the
hand size; ``max_support`` bounds it (``ValueError`` beyond).
"""

from __future__ import annotations

import math

import numpy as np

from uno_env.belief.models import OpponentModel
from uno_env.belief.tracker import Decision, PublicTracker
from uno_env.cards import NUM_CARD_TYPES
from uno_env.view import PublicView


def _comb(n: np.ndarray, k: np.ndarray) -> np.ndarray:
    return np.vectorize(math.comb, otypes=[np.float64])(n, k)


def enumerate_hands(pool: np.ndarray, size: int, max_support: int) -> np.ndarray:
    """Every hand of ``size`` cards drawable from ``pool`` (54 counts), as rows of 54 counts."""
    hands = np.zeros((1, NUM_CARD_TYPES), np.int64)
    for t in np.flatnonzero(pool):
        held = hands.sum(axis=1)
        options = [hands[held + c <= size] + np.eye(NUM_CARD_TYPES, dtype=np.int64)[t] * c
                   for c in range(int(pool[t]) + 1)]
        hands = np.vstack(options)
        if len(hands) > 4 * max_support:
            raise ValueError(f"more than {max_support} possible hands: too large a position to enumerate")
    hands = hands[hands.sum(axis=1) == size]
    if len(hands) > max_support:
        raise ValueError(f"{len(hands)} possible hands, more than max_support={max_support}")
    return hands


class ExactBelief(PublicTracker):
    """The exact posterior over the opponent's hand, by enumeration (module docstring).

    Args:
        model: an opponent model for the policy-aware likelihood, or ``None`` (any hand holding the played
            card explains the play equally well: the particle filter's default).
        max_support: the most hands it agrees to hold.
    """

    def __init__(self, model: OpponentModel | None = None, max_support: int = 200_000) -> None:
        self.model = model
        self.max_support = max_support

    def reset(self, view: PublicView) -> None:
        """Start from a view; ``ValueError`` if the position has too many possible hands."""
        self._start(view)
        self.hands = enumerate_hands(self.pool, self.opp_size, self.max_support)
        self.probs = _comb(self.pool[None, :], self.hands).prod(axis=1)
        self.probs /= self.probs.sum()

    def update(self, view: PublicView) -> None:
        """Apply the view's events."""
        for event in view.events:
            self._apply(event)
        self._verify(view)

    def _keep(self, weights: np.ndarray) -> None:
        probs = self.probs * weights
        alive = probs > 0
        if not alive.any():
            raise ValueError("the observations are impossible under every hand")
        self.hands, self.probs = self.hands[alive], probs[alive] / probs[alive].sum()

    def _own_draw(self, card: int) -> None:
        self._keep((self.pool[card] - self.hands[:, card]).astype(np.float64))

    def _opp_play(self, card: int, action: int, decision: Decision) -> None:
        weights = (self.hands[:, card] >= 1).astype(np.float64)
        if self.model is not None:
            weights *= self.model.likelihood(self.hands, action, decision)
        self._keep(weights)
        self.hands = self.hands.copy()
        self.hands[:, card] -= 1

    def _opp_draw(self, count: int, playable: tuple[int, ...] | None) -> None:
        if playable is not None:
            self._keep((self.hands[:, list(playable)].sum(axis=1) == 0).astype(np.float64))
        for _ in range(count):
            deck = self.pool - self.hands
            rows, cards = np.nonzero(deck)
            hands = self.hands[rows].copy()
            hands[np.arange(len(rows)), cards] += 1
            probs = self.probs[rows] * deck[rows, cards] / deck.sum(axis=1)[rows]
            key = np.ascontiguousarray(hands.astype(np.int8))
            _, first, inverse = np.unique(key.view(np.dtype((np.void, NUM_CARD_TYPES))).ravel(),
                                          return_index=True, return_inverse=True)
            self.hands, self.probs = hands[first], np.bincount(inverse, weights=probs)
            if len(self.hands) > self.max_support:
                raise ValueError(f"{len(self.hands)} possible hands, more than max_support={self.max_support}")

    # ------------------------------------------------------------------ answers
    def expected_counts(self) -> np.ndarray:
        """``E[count of each card type]``, float64 (54,)."""
        return self.probs @ self.hands

    def marginals(self) -> np.ndarray:
        """``P(count of type t = x)``, (54, 5) for x = 0..4."""
        out = np.zeros((NUM_CARD_TYPES, 5))
        for x in range(5):
            out[:, x] = self.probs @ (self.hands == x)
        return out

    def log_prob(self, hand: np.ndarray) -> float:
        """``log P(opponent hand = hand)``."""
        match = (self.hands == np.asarray(hand)).all(axis=1)
        return math.log(self.probs[match].sum()) if match.any() else -math.inf

    def prob_none(self, types: list[int] | tuple[int, ...]) -> float:
        """``P(the hand holds none of types)``."""
        return float(self.probs @ (self.hands[:, list(types)].sum(axis=1) == 0))

    def sample_hands(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` hands drawn from the exact posterior."""
        return self.hands[rng.choice(len(self.hands), size=n, p=self.probs)].copy()
