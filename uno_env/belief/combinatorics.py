"""Counting subsets of the pool: the table of ``log C(n, k)`` and the hypergeometric law, for compiled kernels.

Card counting (:mod:`uno_env.belief.filters`) and the lazy rows (:mod:`uno_env.belief.lazy`) read every
probability of a hidden hand from binomial coefficients of at most the deck's 108 cards; a table made once at
import answers each in one load instead of three ``lgamma`` calls.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from uno_env.cards import DECK_SIZE

#: Offset of ``k`` in :data:`LOG_COMB`'s second index (``k`` may be negative: then ``C(n, k) = 0``).
K_OFFSET = DECK_SIZE


def _log_comb_table() -> np.ndarray:
    """``T[n, k + K_OFFSET] = log C(n, k)`` for 0 <= n <= 108 and |k| <= 108; ``-inf`` where C is 0."""
    table = np.full((DECK_SIZE + 1, 2 * K_OFFSET + 1), -np.inf)
    for n in range(DECK_SIZE + 1):
        for k in range(n + 1):
            table[n, k + K_OFFSET] = math.lgamma(n + 1.0) - math.lgamma(k + 1.0) - math.lgamma(n - k + 1.0)
    return table


#: ``LOG_COMB[n, k + K_OFFSET] = log C(n, k)``.
LOG_COMB = _log_comb_table()


def _falling_table() -> np.ndarray:
    """``T[m, k] = m (m - 1) ... (m - k + 1)`` for 0 <= m, k <= 108 (0 where k > m), multiplied in that order in
    float64: exact below 2**53, and the same number a kernel multiplying it out gets."""
    table = np.zeros((DECK_SIZE + 1, DECK_SIZE + 1))
    for m in range(DECK_SIZE + 1):
        f = 1.0
        for k in range(m + 1):
            table[m, k] = f
            f *= m - k
    return table


#: ``FALLING[m, k] = m! / (m - k)!``, ``C(m, k) k!``: a ratio of two is a ratio of binomials, in one load each.
FALLING = _falling_table()


@njit(cache=True)
def log_comb(n: int, k: int) -> float:
    """``log C(n, k)`` (``-inf`` where C is 0); ``n`` in 0..108, ``k`` in -108..108."""
    return LOG_COMB[n, k + K_OFFSET]


@njit(cache=True)
def exp0(x: float) -> float:
    """``exp`` that maps the ``-inf - -inf`` (NaN) of an impossible row to 0."""
    return 0.0 if x != x else math.exp(x)


@njit(cache=True)
def hyper(a: int, m: int, k: int, g: int) -> float:
    """``P(g of the a copies in a uniform k-subset of m cards) = C(a, g) C(m - a, k - g) / C(m, k)``."""
    return exp0(log_comb(a, g) + log_comb(max(m - a, 0), k - g) - log_comb(m, k))

