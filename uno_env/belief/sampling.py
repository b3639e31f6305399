"""Random draws and resampling for the particle filters' compiled kernels: one home for both filters.

Every draw comes from a splitmix64 stream (:func:`uno_env.core.below`: a ``uint64`` array of one element) that
a filter seeds from its ``numpy`` generator (:func:`seeded_stream`), so the same seed gives the same particles.
The lazy rows (:mod:`uno_env.belief.lazy`) and the trajectory particles (:mod:`uno_env.belief.trajectory`)
draw and resample through these helpers (their uniform floats are :func:`uno_env.core.uniform`, the vector env's too).

**Two forms of systematic resampling.** Both give output particle ``k`` the source whose cumulative weight
interval holds ``(k + u) * total / n``; they differ in what they walk, and each keeps its filter's seeded draws:

* :func:`systematic_copies` for rows that stand for ``cnt`` particles each (the lazy filter): the copies of
  row ``s`` are ``ceil(n * edge_s - u)`` minus those of the rows before it, with the edge computed in closed
  form, one step per row (a thousand particles are often a few dozen rows);
* :func:`systematic_sources` for single particles (the trajectory filter): a source per output particle, by a
  walk that adds the step ``total / n`` once per particle.

Rounding can place an edge on the other side of a position in one form and not in the other, so replacing one
by the other would change seeded particles in rare games; the law is the same.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from uno_env.core import splitmix_mix

_TWO_53 = 9007199254740992.0


def seeded_stream(rng: np.random.Generator) -> np.ndarray:
    """A kernel random stream (splitmix64 state, ``uint64`` array of one element) seeded from ``rng``."""
    return np.array([rng.integers(0, 2**63)], dtype=np.uint64)


# The hot loops draw one number per particle. They keep the splitmix64 state in a local variable (written back to
# the stream at the end) and map 53 random bits to 0..n-1 by an integer product: the splitmix64 sequence of
# uno_env.core, 2.5 times faster in these loops than a call that loads and stores the stream each time.
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


@njit(inline="always")
def bits53(x: np.uint64) -> np.uint64:
    """53 random bits from splitmix64 state ``x`` (already advanced)."""
    return splitmix_mix(x) >> np.uint64(11)


@njit(inline="always")
def next_below(x: np.uint64, n: int) -> tuple[np.uint64, int]:
    """(next state, a uniform int in ``0..n-1``) for ``0 < n < 2**11`` (so the product fits in 64 bits)."""
    x = x + _GOLDEN
    return x, np.int64((bits53(x) * np.uint64(n)) >> np.uint64(53))


@njit(inline="always")
def next_cumulative(cum: np.ndarray, n: int, x: np.uint64) -> tuple[np.uint64, int]:
    """(next state, an index ``i`` in ``0..n-1`` drawn with probability ``(cum[i] - cum[i - 1]) / cum[n - 1]``).

    Counts the cumulative weights at or below the draw without branching: a loop that stops at the drawn outcome
    mispredicts about once per draw, which cost twice as much as the comparisons (outcomes are few here).
    """
    x = x + _GOLDEN
    r = bits53(x) / _TWO_53 * cum[n - 1]
    i = 0
    for o in range(n - 1):
        i += r >= cum[o]
    while i > 0 and cum[i] == cum[i - 1]:  # only if rounding put r at the top: the last possible outcome
        i -= 1
    return x, i


@njit(inline="always")
def next_weighted(p: np.ndarray, n: int, total: float, x: np.uint64) -> tuple[np.uint64, int]:
    """(next state, an index in ``0..n-1`` drawn with probability ``p[i] / total``, never one with ``p[i] = 0``)."""
    x = x + _GOLDEN
    r = bits53(x) / _TWO_53 * total
    last = -1
    for i in range(n):
        if p[i] > 0.0:
            last = i
            r -= p[i]
            if r < 0.0:
                return x, i
    return x, last  # rounding left r >= 0 after the last positive entry: that entry


#: Below this mean a binomial is drawn by inversion from 0 (its probability there is one ``exp``); above, from the
#: mode outward (three ``lgamma``, and about ``sqrt(n p q)`` steps instead of ``n p``).
_FROM_ZERO_MEAN = 16.0


@njit(inline="always")
def next_binomial(x: np.uint64, n: int, p: float) -> tuple[np.uint64, int]:
    """(next state, a draw of Binomial(``n``, ``p``)) by inversion, from one uniform of the stream.

    The outcomes are visited in a fixed order (from 0 up when ``n p`` is small, else from the mode outward,
    alternately down and up), each probability from the previous one by the ratio ``C(n, k + 1) / C(n, k)``; the
    first at which the running sum passes the uniform is returned (if rounding leaves the uniform above the sum of
    all of them: the last one from 0, the mode from the mode). ``p`` above one half draws the complement, so a draw
    takes about ``min(n p, sqrt(n p q))`` steps. No draw for ``p <= 0``, ``p >= 1`` or ``n == 0``.
    """
    if n <= 0 or p <= 0.0:
        return x, 0
    if p >= 1.0:
        return x, n
    flip = p > 0.5
    if flip:
        p = 1.0 - p
    q = 1.0 - p
    ratio = p / q
    x = x + _GOLDEN
    u = bits53(x) / _TWO_53
    if n * p < _FROM_ZERO_MEAN:
        k = 0
        f = math.exp(n * math.log1p(-p))
        while u >= f and k < n:
            u -= f
            f *= (n - k) / (k + 1.0) * ratio
            k += 1
    else:
        k = np.int64((n + 1) * p)  # the mode
        f = math.exp(math.lgamma(n + 1.0) - math.lgamma(k + 1.0) - math.lgamma(n - k + 1.0)
                     + k * math.log(p) + (n - k) * math.log(q))
        u -= f
        low, high, f_low, f_high = k, k, f, f
        while u >= 0.0 and (low > 0 or high < n):
            if low > 0:
                f_low *= low / ((n - low + 1.0) * ratio)
                low -= 1
                u -= f_low
                if u < 0.0:
                    k = low
                    break
            if high < n:
                f_high *= (n - high) / (high + 1.0) * ratio
                high += 1
                u -= f_high
                if u < 0.0:
                    k = high
                    break
    return x, (n - k if flip else k)


#: Rows of fewer particles than this are split one draw per particle (a draw costs a few nanoseconds); larger rows
#: by conditional binomials (one per outcome, up to about 140 ns each, measured).
PER_PARTICLE_BELOW = 48


@njit(inline="always")
def next_multinomial(x: np.uint64, n: int, weights: np.ndarray, cum: np.ndarray, n_out: int,
                     bucket: np.ndarray) -> np.uint64:
    """Add a Multinomial(``n``, ``weights / sum``) draw to ``bucket[:n_out]``; returns the next state.

    ``cum`` holds the cumulative ``weights`` (non-negative, with a positive sum). With one possible outcome no
    draw is made; below :data:`PER_PARTICLE_BELOW` each of the ``n`` is drawn in turn (:func:`next_cumulative`);
    else outcome after outcome by conditional binomials: outcome ``o`` gets Binomial(those left, ``weights[o]`` /
    the weight of the outcomes from ``o`` on), and the last possible outcome the rest. Both are the same law.
    """
    first, last = -1, -1
    for o in range(n_out):
        if weights[o] > 0.0:
            last = o
            if first < 0:
                first = o
    if first == last:
        bucket[first] += n
        return x
    if n < PER_PARTICLE_BELOW:
        for _ in range(n):
            x, o = next_cumulative(cum, n_out, x)
            bucket[o] += 1
        return x
    left = n
    for o in range(first, last):
        if left == 0:
            return x
        if weights[o] > 0.0:
            x, k = next_binomial(x, left, weights[o] / (cum[n_out - 1] - (cum[o - 1] if o > 0 else 0.0)))
            bucket[o] += k
            left -= k
    bucket[last] += left
    return x


@njit(cache=True)
def total_mass(cnt: np.ndarray, w: np.ndarray, S: int) -> float:
    """``sum cnt w`` over the first ``S`` rows (summed in row order: every kernel sees the same rounding)."""
    mass = 0.0
    for s in range(S):
        mass += cnt[s] * w[s]
    return mass


@njit(cache=True)
def ess(cnt: np.ndarray, w: np.ndarray, S: int) -> float:
    """Effective sample size ``(sum cnt w)^2 / sum cnt w^2`` of the first ``S`` rows."""
    mass = 0.0
    square = 0.0
    for s in range(S):
        mass += cnt[s] * w[s]
        square += cnt[s] * w[s] * w[s]
    return mass * mass / square


@njit(cache=True)
def systematic_copies(cnt: np.ndarray, w: np.ndarray, S: int, particles: int, u: float, copies: np.ndarray) -> None:
    """``copies[s]``: the particles row ``s`` (``cnt[s]`` particles of weight ``w[s]``) gets when ``particles`` are
    drawn by systematic resampling with offset ``u`` in [0, 1) over the first ``S`` rows."""
    total = total_mass(cnt, w, S)
    cumulative = 0.0
    before = 0
    for s in range(S):
        cumulative += cnt[s] * w[s]
        edge = 1.0 if s == S - 1 else cumulative / total
        upper = math.ceil(particles * edge - u)
        copies[s] = upper - before
        before = upper


@njit(cache=True)
def systematic_sources(w: np.ndarray, u: float, sources: np.ndarray) -> None:
    """``sources[k]``: the particle output ``k`` copies when ``len(w)`` single particles of weights ``w`` are
    resampled systematically with offset ``u`` in [0, 1)."""
    n = len(w)
    total = w.sum()
    step = total / n
    position = u * step
    cumulative = w[0]
    src = 0
    for k in range(n):
        while cumulative <= position and src < n - 1:
            src += 1
            cumulative += w[src]
        sources[k] = src
        position += step
