"""Lazy hand hypotheses: the one representation behind card counting and the particle filter, compiled.

A hypothesis about the opponent's hand does not have to name every card. Row ``s`` of a
:class:`HandStates` says:

* the hand surely holds ``R[s, t]`` cards of type ``t`` (the *resolved* part);
* the 54 card types are split into *domains* (``dom[t]`` is the domain of type ``t``, the same split for
  every row); for each domain ``j`` the hand holds ``K[s, j]`` further cards, and these are a uniformly
  random ``K[s, j]``-subset of the physical cards of domain ``j`` that are not resolved, i.e. of the
  ``A = U - R[s]`` copies, where ``U`` counts the *pool* (deck and opponent hand together: every card that
  is in neither the tracking seat's hand nor the discard pile).

Card counting is the single row ``R = 0`` with one domain holding the whole hand. The particle filter keeps
many rows; a row stands for ``cnt[s]`` particles of weight ``w[s]`` each, so the ``(N x 54)`` particle array
is stored with its duplicate rows merged. Events keep the rows exact (Rao-Blackwellized) instead of
sampling every card up front:

* a card drawn from the deck lands in domain ``j`` with probability (deck cards of ``j``) / (deck size),
  and joins its lazy subset, which stays uniform (exchangeability of unseen cards);
* "had no playable card" moves the playable types out of every domain: the lazy subsets keep their size and
  are uniform over the other types, with likelihood ``C(m - a, k) / C(m, k)`` per domain;
* playing card ``z`` resolves type ``z`` (its lazy count is drawn from the hypergeometric law given that
  the hand held one) with likelihood ``P(hand holds z)``;
* our own draw of ``c`` weighs a row by the expected number of ``c`` copies left in its deck.

Domains whose lazy count is zero in every row are merged, so the split stays coarse.

**Storage.** The rows live in preallocated arrays of a fixed capacity (the most particles the state will hold: a split
never makes more rows than particles): ``rows`` (capacity x 109 int8: no count exceeds the 108 cards of the deck, and
every kernel walks the rows, so narrow counts are less memory to read; the kernels compute in int64) holds ``R`` in its
first 54 columns and ``K`` in the next ``D``; ``cnt``, ``w`` per row; ``meta = [S, D]`` the live row and domain counts.
Every update and every answer is one ``numba`` kernel over these arrays (one call from Python): an env step with
``N = 1000`` spends tens of microseconds here instead of the milliseconds of the numpy version it replaced, which was
dominated by the cost of many small array operations (docs/benchmarks.md, "Belief cost").

**Where the kernels live.** This module holds :class:`HandStates`, the public face; the kernels are split by
what they do: the row algebra (storage, reweight, split, merge, resample: :mod:`uno_env.belief.lazy_rows`), the
updates (one per event: :mod:`uno_env.belief.lazy_updates`), the answers (features, marginals, ``log_prob``,
sampling: :mod:`uno_env.belief.lazy_answers`), with the random draws shared with the trajectory filter in
:mod:`uno_env.belief.sampling` and the binomial table in :mod:`uno_env.belief.combinatorics`.

**Randomness** comes from a splitmix64 stream (:func:`uno_env.core.below`, a ``uint64`` array of one
element) that the state carries, seeded by its owner (:class:`~uno_env.belief.filters.ParticleBelief` seeds
it from its ``numpy`` generator at each ``reset``): the same seed gives the same particles. A split makes a
multinomial draw of each row's particles over the outcomes (one draw per particle in a small row, conditional
binomials in a large one: :func:`~uno_env.belief.sampling.next_multinomial`), so the rows are the same in law as
the numpy version's, not the same draws. :meth:`HandStates.sample` seeds its own stream from the generator it is
given, so drawing hands for a planner leaves the filter's stream alone.
"""

from __future__ import annotations

import numpy as np

from uno_env.belief import lazy_answers, lazy_rows, lazy_updates, sampling
from uno_env.belief.lazy_rows import DOMAIN_CAP, MAX_COPIES, ROW_WIDTH
from uno_env.belief.sampling import seeded_stream
from uno_env.cards import DECK_SIZE, NUM_CARD_TYPES
from uno_env.core import uniform

__all__ = ["DOMAIN_CAP", "ROW_WIDTH", "Depleted", "HandStates", "seeded_stream"]

_T = NUM_CARD_TYPES
_COUNT = np.int8  # the rows' counts (module docstring)


class Depleted(Exception):
    """Every hypothesis has zero weight: the observations contradict all of them."""


#: The boolean type masks of :meth:`HandStates.constrain`, one per set of types met so far.
_TYPE_MASKS: dict[tuple[int, ...], np.ndarray] = {}


class HandStates:
    """Distinct lazy hypotheses about the opponent's hand (see the module docstring), with particle counts.

    Args:
        R: ``(S, 54)`` resolved cards per type.
        K: ``(S, D)`` lazy cards per domain.
        dom: ``(54,)`` domain of each card type, shared by all rows.
        cnt: ``(S,)`` particles per row.
        w: ``(S,)`` weight of each particle of the row (not normalized).
        stream: the splitmix64 stream of its random draws (:func:`seeded_stream`); a zero-seeded one if omitted.
        capacity: rows it can hold (at least the particles it stands for, the default).

    The attributes ``R``, ``K``, ``cnt``, ``w`` are views of the live rows; ``dom`` is the domain split.
    """

    __slots__ = ("rows", "cnt_buf", "w_buf", "dom", "meta", "stream", "_args")

    def __init__(self, R: np.ndarray, K: np.ndarray, dom: np.ndarray, cnt: np.ndarray, w: np.ndarray,
                 stream: np.ndarray | None = None, capacity: int | None = None) -> None:
        S, D = np.shape(K)
        capacity = max(int(np.sum(cnt)), S, 1) if capacity is None else capacity
        if D > DOMAIN_CAP or capacity < max(int(np.sum(cnt)), S):
            raise ValueError(f"{D} domains or capacity {capacity} out of range for {S} rows of {np.sum(cnt)} particles")
        if np.max(R, initial=0) > MAX_COPIES or np.max(K, initial=0) > DECK_SIZE or np.min(R, initial=0) < 0 \
                or np.min(K, initial=0) < 0:
            raise ValueError(f"counts out of range: R must be 0..{MAX_COPIES} and K 0..{DECK_SIZE} cards")
        self.rows = np.zeros((capacity, ROW_WIDTH), _COUNT)
        self.rows[:S, :_T] = R
        self.rows[:S, _T:_T + D] = K
        self.cnt_buf = np.zeros(capacity, np.int64)
        self.cnt_buf[:S] = cnt
        self.w_buf = np.zeros(capacity)
        self.w_buf[:S] = w
        self.dom = np.array(dom, dtype=np.int64)
        self.meta = np.array([S, D], np.int64)
        self.stream = np.zeros(1, np.uint64) if stream is None else stream
        self._args = (self.rows, self.cnt_buf, self.w_buf, self.meta, self.dom)  # what every kernel takes first

    @classmethod
    def uniform(cls, hand_size: int, particles: int, stream: np.ndarray | None = None) -> HandStates:
        """Card counting's hypothesis: ``hand_size`` cards, a uniform subset of the pool, as ``particles`` particles."""
        return cls(np.zeros((1, _T), np.int64), np.array([[hand_size]]), np.zeros(_T, np.int64),
                   np.array([particles]), np.ones(1), stream)

    # ------------------------------------------------------------------ views and derived quantities
    @property
    def R(self) -> np.ndarray:
        """``(S, 54)`` resolved cards per type (a view of the live rows)."""
        return self.rows[:self.meta[0], :_T]

    @property
    def K(self) -> np.ndarray:
        """``(S, D)`` lazy cards per domain (a view of the live rows)."""
        return self.rows[:self.meta[0], _T:_T + self.meta[1]]

    @property
    def cnt(self) -> np.ndarray:
        """``(S,)`` particles per row (a view)."""
        return self.cnt_buf[:self.meta[0]]

    @property
    def w(self) -> np.ndarray:
        """``(S,)`` weight of each particle of the row (a view)."""
        return self.w_buf[:self.meta[0]]

    @property
    def size(self) -> int:
        """Number of distinct rows."""
        return int(self.meta[0])

    @property
    def particles(self) -> int:
        """Number of particles the rows stand for."""
        return int(self.cnt.sum())

    def masses(self) -> np.ndarray:
        """Probability of each row (particle counts times weights, normalized)."""
        mass = self.cnt * self.w
        return mass / mass.sum()

    def ess(self) -> float:
        """Effective sample size ``(sum w)^2 / sum w^2`` over the particles."""
        return sampling.ess(self.cnt_buf, self.w_buf, int(self.meta[0]))

    def _reserve(self, capacity: int) -> None:
        """Grow the buffers to ``capacity`` rows, keeping the live ones (a resampling to more particles)."""
        S = self.size
        rows, cnt, w = self.rows, self.cnt_buf, self.w_buf
        self.rows = np.zeros((capacity, ROW_WIDTH), _COUNT)
        self.cnt_buf, self.w_buf = np.zeros(capacity, np.int64), np.zeros(capacity)
        self.rows[:S], self.cnt_buf[:S], self.w_buf[:S] = rows[:S], cnt[:S], w[:S]
        self._args = (self.rows, self.cnt_buf, self.w_buf, self.meta, self.dom)

    # ------------------------------------------------------------------ events (each raises Depleted if no row lives)
    def own_draw(self, U: np.ndarray, card: int) -> None:
        """The tracking seat drew ``card`` from the deck: weigh rows by its expected copies in their deck."""
        if not lazy_updates.own_draw(*self._args, U, card):
            raise Depleted

    def resolve_type(self, U: np.ndarray, card: int, require: bool, remove: bool = False) -> None:
        """Draw the lazy count of type ``card`` into ``R`` (given the hand holds one, if ``require``); with
        ``remove``, one ``card`` then leaves every row (the opponent played it)."""
        if not lazy_updates.play(*self._args, U, card, require, remove, self.stream):
            raise Depleted

    def constrain(self, U: np.ndarray, types: tuple[int, ...] | np.ndarray) -> None:
        """The hand held none of ``types``: weigh rows by that probability and take the types out of the domains."""
        key = tuple(types)
        mask = _TYPE_MASKS.get(key)
        if mask is None:  # a few dozen playable sets occur (PLAYABLE): each mask is built once
            mask = _TYPE_MASKS[key] = np.zeros(_T, np.bool_)
            mask[list(key)] = True
        if not lazy_updates.constrain(*self._args, U, mask):
            raise Depleted

    def draw(self, U: np.ndarray, count: int) -> None:
        """The opponent drew ``count`` unseen cards: each joins the lazy subset of the domain it came from."""
        if not lazy_updates.draw(*self._args, U, count, self.stream):
            raise Depleted

    def resolve(self, U: np.ndarray) -> None:
        """Draw every lazy card: each particle becomes a full hand (multivariate hypergeometric per domain)."""
        lazy_updates.resolve_all(*self._args, U, self.stream)

    def resample(self, particles: int, u: float | None = None) -> None:
        """Systematic resampling to ``particles`` equally weighted particles (offset ``u``, drawn from the stream
        if omitted), then merge duplicates."""
        if particles > len(self.cnt_buf):  # later splits may make a row per particle: room for them
            self._reserve(particles)
        lazy_rows.resample(*self._args[:4], particles, uniform(self.stream) if u is None else u)

    def resample_below(self, particles: int, threshold: float) -> bool:
        """:meth:`resample` to ``particles`` if the ESS is below ``threshold`` (one compiled call); True if it did."""
        if particles > len(self.cnt_buf):
            self._reserve(particles)
        return lazy_rows.resample_below(*self._args[:4], particles, threshold, self.stream)

    def merge(self) -> None:
        """Merge identical rows of equal weight (their particles pool; the law and the ESS do not change)."""
        lazy_rows.merge(*self._args[:4])

    # ------------------------------------------------------------------ what the rows say about the hand
    def features_into(self, U: np.ndarray, sets: np.ndarray, out: np.ndarray) -> None:
        """The feature vector into ``out`` (float32, 54 + n): ``E[count of each type]``, then
        ``P(the hand holds a card of set i)`` for each column of the (54 x n) boolean ``sets``."""
        lazy_answers.features_into(*self._args, U, sets, out)

    def expected_counts(self, U: np.ndarray) -> np.ndarray:
        """``E[count of each type in the hand]``, float64 (54,)."""
        expected = np.empty(_T)
        lazy_answers.features(*self._args, U, np.zeros((_T, 0), np.bool_), expected, np.empty(0))
        return expected

    def prob_none(self, U: np.ndarray, sets: np.ndarray) -> np.ndarray:
        """``P(the hand holds no card of set i)`` for each column ``i`` of the (54 x n) boolean ``sets``."""
        none = np.empty(sets.shape[1])
        lazy_answers.features(*self._args, U, np.asarray(sets, np.bool_), np.empty(_T), none)
        return none

    def marginals(self, U: np.ndarray) -> np.ndarray:
        """``P(count of type t = x)`` as a (54, 5) array (x = 0..4)."""
        return lazy_answers.marginals(*self._args, U)

    def log_prob(self, U: np.ndarray, hand: np.ndarray) -> float:
        """``log P(hand)`` of one full hand (54 counts) under the rows; ``-inf`` if no row allows it."""
        return float(lazy_answers.log_prob(*self._args, U, np.asarray(hand, dtype=np.int64)))

    def sample(self, U: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` independent full hands (int64 rows of 54 counts) drawn from the rows, with a stream seeded from
        ``rng`` (the state's own stream is left alone, so sampling does not change the filter's later draws)."""
        return lazy_answers.sample(*self._args, U, n, seeded_stream(rng))
