"""Lazy hand hypotheses: the one representation behind card counting and the particle filter.

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

Domains whose lazy count is zero in every row are merged, so the split stays coarse. All randomness comes
from the generator passed to each method.
"""

from __future__ import annotations

import math

import numpy as np

from uno_env.cards import DECK_SIZE, NUM_CARD_TYPES

_MAX_COPIES = 4
_ALL_TYPES = np.arange(NUM_CARD_TYPES)


class Depleted(Exception):
    """Every hypothesis has zero weight: the observations contradict all of them."""

def _log_comb_table() -> np.ndarray:
    """``T[n, k + OFFSET] = log C(n, k)`` for 0 <= n <= 108 and |k| <= 108; ``-inf`` where C is 0."""
    table = np.full((DECK_SIZE + 1, 2 * _K_OFFSET + 1), -np.inf)
    for n in range(DECK_SIZE + 1):
        for k in range(n + 1):
            table[n, k + _K_OFFSET] = math.lgamma(n + 1.0) - math.lgamma(k + 1.0) - math.lgamma(n - k + 1.0)
    return table


_K_OFFSET = DECK_SIZE
_LOG_COMB = _log_comb_table()


_LOG_COMB_FLAT = _LOG_COMB.ravel()
_LOG_COMB_WIDTH = _LOG_COMB.shape[1]


def log_comb(n: np.ndarray, k: np.ndarray) -> np.ndarray:
    """``log C(n, k)`` elementwise for integer-valued ``0 <= n <= 108``, ``|k| <= 108``; ``-inf`` where C is 0.

    In every use here ``n`` counts unresolved copies (never negative) and ``k - g`` stays above -108.
    """
    index = np.asarray(n) * _LOG_COMB_WIDTH + np.asarray(k)  # exact: small integers held as floats
    return _LOG_COMB_FLAT[index.astype(np.intp) + _K_OFFSET]


def _exp(x: np.ndarray) -> np.ndarray:
    """``exp`` that maps the ``-inf - -inf`` of impossible rows to 0 instead of NaN."""
    with np.errstate(invalid="ignore"):
        out = np.exp(x)
    out[np.isnan(out)] = 0.0
    return out


def _hypergeometric_table() -> np.ndarray:
    """``H[a, m, k, g] = C(a, g) C(m - a, k - g) / C(m, k)`` for a, g <= 4 and m, k <= 108.

    The probability that a uniform ``k``-subset of ``m`` cards holds ``g`` of ``a`` given copies, computed with
    the very operations the callers used before the table existed (so the values are the same to the bit);
    entries with ``a > m`` are never read.
    """
    a = np.arange(_MAX_COPIES + 1.0)[:, None, None, None]
    m = np.arange(DECK_SIZE + 1.0)[None, :, None, None]
    k = np.arange(DECK_SIZE + 1.0)[None, None, :, None]
    g = np.arange(_MAX_COPIES + 1.0)
    with np.errstate(invalid="ignore"):
        return _exp(log_comb(a, g) + log_comb(np.maximum(m - a, 0.0), k - g) - log_comb(m, k))


_HYPER = _hypergeometric_table().reshape(-1, _MAX_COPIES + 1)


def _hypergeometric(a: np.ndarray, m: np.ndarray, k: np.ndarray) -> np.ndarray:
    """``P(g of the a copies in a uniform k-subset of m cards)`` for g = 0..4, on a new last axis."""
    index = (np.asarray(a) * (DECK_SIZE + 1) + m) * (DECK_SIZE + 1) + k
    return _HYPER[index.astype(np.intp)]


# OpenBLAS runs large products on several threads, which on a machine whose cores are busy (training processes,
# vectorized envs) turns a 0.2 ms product into 10 ms or more. Below these sizes (OpenBLAS's own thresholds) it
# stays on one thread, so large products are done in row blocks of that size.
_BLAS_GEMM_WORK = 1 << 18
_BLAS_GEMV_WORK = 8192


def _sum_over(x: np.ndarray, member: np.ndarray) -> np.ndarray:
    """``x @ member`` for an integer-valued ``x`` (rows x 54) and a 0/1 ``member``: exact, one BLAS thread."""
    rows = max(1, _BLAS_GEMM_WORK // (x.shape[1] * member.shape[1]))
    if len(x) <= rows:
        return x @ member
    return np.concatenate([x[i:i + rows] @ member for i in range(0, len(x), rows)])


def _mix(weights: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``weights @ x`` (the weighted sum of the rows), without BLAS threads for many rows."""
    return weights @ x if x.size <= _BLAS_GEMV_WORK else np.einsum("s,s...->...", weights, x)


def _type_mask(types: np.ndarray | list[int] | tuple[int, ...]) -> np.ndarray:
    mask = np.zeros(NUM_CARD_TYPES, dtype=bool)
    mask[np.asarray(types, dtype=np.intp)] = True
    return mask


class HandStates:
    """Distinct lazy hypotheses about the opponent's hand (see the module docstring), with particle counts.

    Attributes:
        R: ``(S, 54)`` resolved cards per type (float64 holding small integers, for BLAS products).
        K: ``(S, D)`` lazy cards per domain (float64 holding integers).
        dom: ``(54,)`` domain of each card type, shared by all rows; ``M`` its (54 x D) membership matrix.
        cnt: ``(S,)`` particles per row.
        w: ``(S,)`` weight of each particle of the row (not normalized).
    """

    __slots__ = ("R", "K", "dom", "M", "cnt", "w")

    def __init__(self, R: np.ndarray, K: np.ndarray, dom: np.ndarray, cnt: np.ndarray, w: np.ndarray) -> None:
        self.R, self.K, self.cnt, self.w = R, K, cnt, w
        self._set_domains(dom)

    def _set_domains(self, dom: np.ndarray) -> None:
        self.dom = dom
        self.M = np.eye(self.K.shape[1])[dom]

    @classmethod
    def uniform(cls, hand_size: int, particles: int) -> HandStates:
        """Card counting's hypothesis: ``hand_size`` cards, a uniform subset of the pool, as ``particles`` particles."""
        return cls(np.zeros((1, NUM_CARD_TYPES)), np.array([[float(hand_size)]]),
                   np.zeros(NUM_CARD_TYPES, np.intp), np.array([particles], np.int64), np.ones(1))

    # ------------------------------------------------------------------ derived quantities
    @property
    def size(self) -> int:
        """Number of distinct rows."""
        return len(self.cnt)

    @property
    def particles(self) -> int:
        """Number of particles the rows stand for."""
        return int(self.cnt.sum())

    def _pools(self, U: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``A = U - R`` per row and type, and ``m`` = unresolved copies per row and domain."""
        A = U - self.R
        return A, _sum_over(A, self.M)

    def _domain_pool(self, U: np.ndarray, j: int) -> np.ndarray:
        """Unresolved copies of domain ``j`` per row."""
        types = self.dom == j
        return U[types].sum() - self.R[:, types].sum(axis=1)

    def masses(self) -> np.ndarray:
        """Probability of each row (particle counts times weights, normalized)."""
        mass = self.cnt * self.w
        return mass / mass.sum()

    def ess(self) -> float:
        """Effective sample size ``(sum w)^2 / sum w^2`` over the particles."""
        mass = self.cnt * self.w
        return float(mass.sum() ** 2 / (self.cnt * self.w**2).sum())

    # ------------------------------------------------------------------ bookkeeping
    def _keep(self, rows: np.ndarray, cnt: np.ndarray | None = None) -> None:
        self.R = self.R[rows]
        self.K = self.K[rows]
        self.w = self.w[rows]
        self.cnt = self.cnt[rows] if cnt is None else cnt

    def reweight(self, likelihood: np.ndarray) -> np.ndarray:
        """Multiply each row's weight by ``likelihood``; drop impossible rows (returns the kept mask).

        Raises :class:`Depleted` when no row survives.
        """
        likelihood = np.where(np.isfinite(likelihood), likelihood, 0.0)
        w = self.w * likelihood
        alive = w > 0
        if not alive.any():
            raise Depleted
        self.w = w
        if not alive.all():
            self._keep(np.flatnonzero(alive))
        self.w = self.w / (self.cnt * self.w).sum()  # normalized, so weights never underflow over a game
        return alive

    def _split(self, probs: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """Send each row's particles to outcomes with probabilities ``probs`` (rows x outcomes).

        Rows become one row per (parent, outcome) that received particles; returns their parents and outcomes.
        """
        probs = np.maximum(probs, 0.0)
        probs = probs / probs.sum(axis=1, keepdims=True)
        counts = rng.multinomial(self.cnt, probs)
        rows, outcomes = np.nonzero(counts)
        self._keep(rows, counts[rows, outcomes])
        return rows, outcomes

    def detach(self, types: np.ndarray | list[int] | tuple[int, ...]) -> None:
        """Move ``types`` out of their domains into a new domain with no lazy cards.

        Only valid when no row's lazy subset can hold these types any more (they were resolved or ruled out).
        """
        mask = _type_mask(types)
        dom = self.dom.copy()
        dom[mask] = self.K.shape[1]
        self.K = np.hstack((self.K, np.zeros((self.size, 1))))
        self._set_domains(dom)
        self.normalize()

    def normalize(self) -> None:
        """Canonical split: single-type domains folded into ``R``; domains with no lazy card anywhere merged."""
        D = self.K.shape[1]
        sizes = np.bincount(self.dom, minlength=D)
        for j in np.flatnonzero((sizes == 1) & self.K.any(axis=0)):
            t = int(np.flatnonzero(self.dom == j)[0])
            self.R[:, t] += self.K[:, j]
            self.K[:, j] = 0
        idle = ~self.K.any(axis=0)
        live = np.flatnonzero(~idle & (sizes > 0))
        new_id = np.full(D, -1, dtype=np.intp)
        new_id[live] = np.arange(len(live))
        settled = idle & (sizes > 0)
        K = self.K[:, live]
        if settled.any():
            new_id[settled] = len(live)
            K = np.hstack((K, np.zeros((self.size, 1))))
        self.K = K
        self._set_domains(new_id[self.dom])

    def merge(self) -> None:
        """Merge identical rows (their particles pool their weight)."""
        if self.size < 2:
            return
        key = np.ascontiguousarray(np.hstack((self.R, self.K)).astype(np.int8))
        _, first, inverse = np.unique(key.view(np.dtype((np.void, key.shape[1]))).ravel(),
                                      return_index=True, return_inverse=True)
        if len(first) == self.size:
            return
        cnt = np.bincount(inverse, weights=self.cnt).astype(np.int64)
        mass = np.bincount(inverse, weights=self.cnt * self.w)
        self.R, self.K = self.R[first], self.K[first]
        self.cnt, self.w = cnt, mass / cnt

    def resample(self, particles: int, rng: np.random.Generator) -> None:
        """Systematic resampling to ``particles`` equally weighted particles, then merge duplicates."""
        mass = self.cnt * self.w
        edges = np.cumsum(mass) / mass.sum()
        edges[-1] = 1.0
        u = rng.random()
        upper = np.ceil(particles * edges - u)
        counts = np.diff(np.concatenate(([0.0], upper))).astype(np.int64)
        rows = np.flatnonzero(counts > 0)
        self._keep(rows, counts[rows])
        self.w = np.full(self.size, 1.0 / particles)
        self.merge()

    # ------------------------------------------------------------------ events
    def own_draw(self, U: np.ndarray, card: int) -> None:
        """The tracking seat drew ``card`` from the deck: weigh rows by its expected copies in their deck."""
        j = self.dom[card]
        m = self._domain_pool(U, j)
        k = self.K[:, j]
        available = U[card] - self.R[:, card]
        self.reweight(np.where(m > 0, available * (m - k) / np.maximum(m, 1), 0.0))

    def resolve_type(self, U: np.ndarray, card: int, rng: np.random.Generator, require: bool) -> None:
        """Draw the lazy count of type ``card`` into ``R`` (given the hand holds one, if ``require``)."""
        j = self.dom[card]
        m = self._domain_pool(U, j)
        k = self.K[:, j]
        available = U[card] - self.R[:, card]
        pmf = _hypergeometric(available, m, k)
        if require:
            held = self.R[:, card] >= 1
            pmf[~held, 0] = 0.0
            alive = self.reweight(np.where(held, 1.0, pmf.sum(axis=1)))
            pmf = pmf[alive]
        _, drawn = self._split(pmf, rng)
        self.R[:, card] += drawn
        self.K[:, j] -= drawn
        self.detach([card])

    def constrain(self, U: np.ndarray, types: tuple[int, ...]) -> None:
        """The hand held none of ``types``: weigh rows by that probability and take the types out of the domains."""
        mask = _type_mask(types)
        A, m = self._pools(U)
        a = _sum_over(A * mask, self.M)
        log_like = (log_comb(m - a, self.K) - log_comb(m, self.K)).sum(axis=1)
        self.reweight(np.where(self.R[:, mask].sum(axis=1) == 0, _exp(log_like), 0.0))
        self.detach(np.flatnonzero(mask))

    def draw(self, U: np.ndarray, count: int, rng: np.random.Generator) -> None:
        """The opponent drew ``count`` unseen cards: each joins the lazy subset of the domain it came from."""
        for _ in range(count):
            _, m = self._pools(U)
            _, landed = self._split(m - self.K, rng)
            self.K[np.arange(self.size), landed] += 1
        self.normalize()

    def resolve(self, U: np.ndarray, types: np.ndarray | tuple[int, ...], rng: np.random.Generator) -> None:
        """Draw the exact counts of ``types`` into ``R`` (multivariate hypergeometric within each domain)."""
        mask = _type_mask(types)
        for j in range(self.K.shape[1]):
            sub = np.flatnonzero(mask & (self.dom == j))
            if len(sub) == 0 or not self.K[:, j].any():
                continue
            m = self._domain_pool(U, j)
            a = U[sub].sum() - self.R[:, sub].sum(axis=1)
            k = self.K[:, j]
            g = np.arange(int(k.max()) + 1.0)
            pmf = _exp(log_comb(a[:, None], g) + log_comb((m - a)[:, None], k[:, None] - g)
                       - log_comb(m, k)[:, None])
            _, left = self._split(pmf, rng)
            self.K[:, j] -= left
            while left.any():
                # One more card of the resolved types per row that still owes some, among their remaining copies.
                weights = np.hstack(((U[sub] - self.R[:, sub]) * (left > 0)[:, None],
                                     (left == 0)[:, None]))
                parents, picked = self._split(weights, rng)
                left = left[parents]
                owed = picked < len(sub)
                self.R[np.flatnonzero(owed), sub[picked[owed]]] += 1
                left = left - owed
        self.detach(np.flatnonzero(mask))

    # ------------------------------------------------------------------ what the rows say about the hand
    def expected_counts(self, U: np.ndarray) -> np.ndarray:
        """``E[count of each type in the hand]``, float64 (54,)."""
        A, m = self._pools(U)
        share = np.where(m > 0, self.K / np.maximum(m, 1), 0.0)
        return _mix(self.masses(), self.R + share[:, self.dom] * A)

    def prob_none(self, U: np.ndarray, sets: np.ndarray) -> np.ndarray:
        """``P(the hand holds no card of set i)`` for each column ``i`` of the (54 x n) boolean ``sets``."""
        A, m = self._pools(U)
        n_sets, D = sets.shape[1], self.K.shape[1]
        per_set = (sets[:, :, None] * self.M[:, None, :]).reshape(NUM_CARD_TYPES, n_sets * D)
        a = _sum_over(A, per_set).reshape(self.size, n_sets, D)
        log_p = (log_comb(m[:, None, :] - a, self.K[:, None, :]) - log_comb(m, self.K)[:, None, :]).sum(axis=2)
        none = np.where(_sum_over(self.R, sets) == 0, _exp(log_p), 0.0)
        return _mix(self.masses(), none)

    def marginals(self, U: np.ndarray) -> np.ndarray:
        """``P(count of type t = x)`` as a (54, 5) array (x = 0..4)."""
        A, m = self._pools(U)
        pmf = _hypergeometric(A, m[:, self.dom], self.K[:, self.dom])
        g = np.arange(_MAX_COPIES + 1)
        count = np.minimum(self.R[..., None] + g, _MAX_COPIES).astype(np.intp)  # beyond 4 only where pmf is 0
        index = _ALL_TYPES[None, :, None] * (_MAX_COPIES + 1) + count
        weights = self.masses()[:, None, None] * pmf
        out = np.bincount(index.ravel(), weights=weights.ravel(), minlength=NUM_CARD_TYPES * (_MAX_COPIES + 1))
        return out.reshape(NUM_CARD_TYPES, _MAX_COPIES + 1)

    def log_prob(self, U: np.ndarray, hand: np.ndarray) -> float:
        """``log P(hand)`` of one full hand (54 counts) under the rows; ``-inf`` if no row allows it."""
        A, m = self._pools(U)
        lazy = np.asarray(hand, dtype=np.float64) - self.R
        fits = (lazy >= 0).all(axis=1) & (_sum_over(lazy, self.M) == self.K).all(axis=1)
        if not fits.any():
            return -math.inf
        log_p = log_comb(A, lazy).sum(axis=1) - log_comb(m, self.K).sum(axis=1)
        log_p = np.where(fits, log_p, -np.inf) + np.log(self.masses())
        top = log_p.max()
        return float(top + np.log(np.exp(log_p - top).sum())) if np.isfinite(top) else -math.inf

    def sample(self, U: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` full hands (rows of 54 counts) drawn from the rows, in random order."""
        picks = np.bincount(rng.choice(self.size, size=n, p=self.masses()), minlength=self.size)
        rows = np.flatnonzero(picks)
        drawn = HandStates(self.R[rows].copy(), self.K[rows].copy(), self.dom.copy(), picks[rows], self.w[rows])
        drawn.resolve(U, _ALL_TYPES, rng)
        hands = np.repeat(drawn.R.astype(np.int64), drawn.cnt, axis=0)
        return hands[rng.permutation(n)]
