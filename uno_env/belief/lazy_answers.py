"""What the lazy hand hypotheses (:mod:`uno_env.belief.lazy`) say about the hand: compiled answer kernels.

Features (expected counts and the chance of holding a card of each set), marginals, the probability of a full
hand, and full hands drawn. Each reads the state's arrays (:mod:`uno_env.belief.lazy_rows`) and the pool ``U``
and changes nothing but its outputs (:func:`sample` advances the stream it is given).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from uno_env.belief.combinatorics import FALLING, hyper, log_comb
from uno_env.belief.lazy_rows import MAX_COPIES, deal, domain_pools, layout, lazy_copies
from uno_env.belief.sampling import next_weighted, total_mass
from uno_env.cards import DECK_SIZE, NUM_CARD_TYPES

_T = NUM_CARD_TYPES


@njit(cache=True)
def features(rows: np.ndarray, cnt: np.ndarray, w: np.ndarray, meta: np.ndarray, dom: np.ndarray,
             U: np.ndarray, sets: np.ndarray, expected: np.ndarray, none: np.ndarray) -> None:
    """``expected[t] = E[count of t]`` and ``none[i] = P(no card of set i)`` (``sets``: 54 x n booleans).

    Per row: ``R + K_j A / m_j = R (1 - K_j / m_j) + U K_j / m_j``, and ``[R_S = 0] prod_j C(m_j - a_{S,j}, K_j)
    / C(m_j, K_j)``; mixed by mass. What keeps a row's cost near one branch-free pass over its 54 counts: the
    ``U`` term sums per domain over the rows; a row's resolved types (a few) are listed in that pass, with a
    bit mask of them that says at once whether it holds a card of a set; and in a row with ``R_S = 0`` the
    unresolved copies of ``S`` in domain ``j`` are those of the pool, ``a_{S,j} = U_{S,j}``, the same in every row.
    """
    S, D = meta[0], meta[1]
    n_sets = sets.shape[1]
    pool = np.zeros(D, np.int64)  # U per domain
    pool_in = np.zeros((n_sets, D), np.int64)  # U per set and domain
    set_bits = np.zeros(n_sets, np.uint64)  # the types of each set, bit t for type t
    for t in range(_T):
        pool[dom[t]] += U[t]
        for i in range(n_sets):
            if sets[t, i]:
                set_bits[i] |= np.uint64(1) << np.uint64(t)
                pool_in[i, dom[t]] += U[t]
    m = np.empty(D, np.int64)
    keep = np.empty(D)  # 1 - K_j / m_j
    falling = np.empty(D)  # m_j (m_j - 1) ... (m_j - K_j + 1): C(m_j, K_j) K_j!
    coef = np.zeros(D)
    resolved = np.empty(_T, np.int64)
    mass = total_mass(cnt, w, S)
    expected[:] = 0.0
    none[:] = 0.0
    for s in range(S):
        p = cnt[s] * w[s] / mass
        n_res = 0
        held = np.uint64(0)
        for t in range(_T):  # branch-free: list the resolved types and mark them
            some = rows[s, t] != 0
            resolved[n_res] = t
            n_res += some
            held |= np.uint64(some) << np.uint64(t)
        m[:] = pool
        for i in range(n_res):
            t = resolved[i]
            m[dom[t]] -= rows[s, t]
        for j in range(D):
            k = rows[s, _T + j]
            share = k / m[j] if m[j] > 0 else 0.0
            keep[j] = 1.0 - share
            coef[j] += p * share
            falling[j] = FALLING[m[j], k]
        for i in range(n_res):
            t = resolved[i]
            expected[t] += p * rows[s, t] * keep[dom[t]]
        for i in range(n_sets):
            if held & set_bits[i]:
                continue
            # C(m - a, K) / C(m, K) as a ratio of falling factorials: products of small integers, exact in float64
            # up to 2**53, where the log-binomial form needed an exp per set and row.
            numer = 1.0
            denom = 1.0
            for j in range(D):
                a, k = pool_in[i, j], rows[s, _T + j]
                if a > 0 and k > 0:
                    numer *= FALLING[m[j] - a, k]
                    denom *= falling[j]
            if denom > 0.0:  # 0: a domain with more lazy cards than copies, an impossible row
                none[i] += p * (numer / denom)
    for t in range(_T):
        expected[t] += coef[dom[t]] * U[t]


@njit(cache=True)
def features_into(rows: np.ndarray, cnt: np.ndarray, w: np.ndarray, meta: np.ndarray, dom: np.ndarray,
                  U: np.ndarray, sets: np.ndarray, out: np.ndarray) -> None:
    """The belief feature vector into ``out`` (float32, 54 + n): expected counts, then ``P(a card of set i)``.

    P(none) mixes row masses that sum to 1 only up to rounding, so it can exceed 1 by an ulp; clipped, the
    probabilities never fall below 0, the low bound of the env's observation space.
    """
    expected = np.empty(_T)
    none = np.empty(sets.shape[1])
    features(rows, cnt, w, meta, dom, U, sets, expected, none)
    for t in range(_T):
        out[t] = expected[t]
    for i in range(sets.shape[1]):
        out[_T + i] = min(max(1.0 - none[i], 0.0), 1.0)


@njit(cache=True)
def marginals(rows: np.ndarray, cnt: np.ndarray, w: np.ndarray, meta: np.ndarray, dom: np.ndarray,
              U: np.ndarray) -> np.ndarray:
    """``P(count of type t = x)`` (54 x 5): per row ``R_t + G``, ``G`` hypergeometric; mixed by mass."""
    S, D = meta[0], meta[1]
    order, start, pool = layout(dom, D, U)
    m = np.empty(D, np.int64)
    out = np.zeros((_T, MAX_COPIES + 1))
    mass = total_mass(cnt, w, S)
    for s in range(S):
        p = cnt[s] * w[s] / mass
        domain_pools(rows, s, order, start, pool, D, m)
        for t in range(_T):
            j = dom[t]
            for g in range(MAX_COPIES + 1):
                x = hyper(U[t] - rows[s, t], m[j], rows[s, _T + j], g)
                if x > 0.0:
                    out[t, min(rows[s, t] + g, MAX_COPIES)] += p * x
    return out


@njit(cache=True)
def log_prob(rows: np.ndarray, cnt: np.ndarray, w: np.ndarray, meta: np.ndarray, dom: np.ndarray,
             U: np.ndarray, hand: np.ndarray) -> float:
    """``log P(hand)`` under the rows: ``log sum_s mass_s prod_j [prod_t C(A_t, h_t - R_t)] / C(m_j, K_j)``."""
    S, D = meta[0], meta[1]
    order, start, pool = layout(dom, D, U)
    m = np.empty(D, np.int64)
    lazy = np.empty(D, np.int64)
    logs = np.full(S, -np.inf)
    mass = total_mass(cnt, w, S)
    for s in range(S):
        lazy[:] = 0
        fits = True
        log_p = 0.0
        for t in range(_T):
            extra = hand[t] - rows[s, t]
            if extra < 0:
                fits = False
                break
            lazy[dom[t]] += extra
            log_p += log_comb(U[t] - rows[s, t], extra)
        if not fits:
            continue
        domain_pools(rows, s, order, start, pool, D, m)
        for j in range(D):
            if lazy[j] != rows[s, _T + j]:
                fits = False
            log_p -= log_comb(m[j], rows[s, _T + j])
        if fits:
            logs[s] = log_p + math.log(cnt[s] * w[s] / mass)
    top = logs.max() if S > 0 else -np.inf
    if not math.isfinite(top):
        return -np.inf
    total = 0.0
    for s in range(S):
        total += math.exp(logs[s] - top)
    return top + math.log(total)


@njit(cache=True)
def sample(rows: np.ndarray, cnt: np.ndarray, w: np.ndarray, meta: np.ndarray, dom: np.ndarray, U: np.ndarray,
           n: int, stream: np.ndarray) -> np.ndarray:
    """``n`` independent full hands: a row by mass, then its lazy cards drawn."""
    S, D = meta[0], meta[1]
    mass = np.empty(S)
    for s in range(S):
        mass[s] = cnt[s] * w[s]
    total = mass.sum()
    hands = np.empty((n, _T), np.int64)
    order, start, _ = layout(dom, D, U)
    cards = np.empty(DECK_SIZE, np.int64)
    first = np.empty(D + 1, np.int64)
    lazy = np.empty(D, np.int64)
    work = np.empty((1, rows.shape[1]), np.int64)
    x = stream[0]
    for i in range(n):
        x, s = next_weighted(mass, S, total, x)
        lazy_copies(rows, s, U, order, start, D, cards, first, lazy)
        work[0, :_T + D] = rows[s, :_T + D]
        x = deal(work, 0, 0, D, cards, first, lazy, x)
        hands[i] = work[0, :_T]
    stream[0] = x
    return hands
