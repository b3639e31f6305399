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

**Storage.** The rows live in preallocated arrays of a fixed capacity (the most particles the state will
hold: a split never makes more rows than particles): ``rows`` (capacity x 109 int64) holds ``R`` in its
first 54 columns and ``K`` in the next ``D``; ``cnt``, ``w`` per row; ``meta = [S, D]`` the live row and
domain counts. Every update and every answer is one ``numba`` kernel over these arrays (one call from
Python): an env step with ``N = 1000`` spends tens of microseconds here instead of the milliseconds of the
numpy version it replaced, which was dominated by the cost of many small array operations
(docs/BENCHMARKS.md, "The lazy filter compiled").

**Randomness** comes from a splitmix64 stream (:func:`uno_env.core.below`, a ``uint64`` array of one
element) that the state carries, seeded by its owner (:class:`~uno_env.belief.filters.ParticleBelief` seeds
it from its ``numpy`` generator at each ``reset``): the same seed gives the same particles. A split draws an
outcome per particle (a multinomial draw, one category at a time), so the rows are the same in law as the
numpy version's, not the same draws. :meth:`HandStates.sample` seeds its own stream from the generator it is
given, so drawing hands for a planner leaves the filter's stream alone.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from uno_env.cards import DECK_SIZE, NUM_CARD_TYPES
from uno_env.core import below, splitmix_mix

_MAX_COPIES = 4
_T = NUM_CARD_TYPES
#: Most domains a state can hold: each live domain has two or more types, plus the settled one and a new one.
DOMAIN_CAP = NUM_CARD_TYPES + 1
#: Columns of ``HandStates.rows``: ``R`` (54), then ``K`` (up to ``DOMAIN_CAP``).
ROW_WIDTH = NUM_CARD_TYPES + DOMAIN_CAP
_TWO_53 = 9007199254740992.0


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


# ---------------------------------------------------------------------------------------------- kernel helpers
@njit(cache=True)
def _lc(n: int, k: int) -> float:
    """``log C(n, k)`` (``-inf`` where C is 0); ``n`` in 0..108, ``k`` in -108..108."""
    return _LOG_COMB[n, k + _K_OFFSET]


@njit(cache=True)
def _exp0(x: float) -> float:
    """``exp`` that maps the ``-inf - -inf`` (NaN) of an impossible row to 0."""
    return 0.0 if x != x else math.exp(x)


@njit(cache=True)
def _hyper(a: int, m: int, k: int, g: int) -> float:
    """``P(g of the a copies in a uniform k-subset of m cards) = C(a, g) C(m - a, k - g) / C(m, k)``."""
    return _exp0(_lc(a, g) + _lc(max(m - a, 0), k - g) - _lc(m, k))


@njit(cache=True)
def _uniform(stream: np.ndarray) -> float:
    """A uniform float in [0, 1) from the stream (53 bits)."""
    return below(stream, 9007199254740992) / _TWO_53


# The hot loops draw one number per particle. They keep the splitmix64 state in a local variable (written back to
# the stream at the end) and map 53 random bits to 0..n-1 by an integer product: the splitmix64 sequence of
# uno_env.core, 2.5 times faster in these loops than a call that loads and stores the stream each time.
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


@njit(inline="always")
def _bits53(x: np.uint64) -> np.uint64:
    """53 random bits from splitmix64 state ``x`` (already advanced)."""
    return splitmix_mix(x) >> np.uint64(11)


@njit(inline="always")
def _below(x: np.uint64, n: int) -> tuple[np.uint64, int]:
    """(next state, a uniform int in ``0..n-1``) for ``0 < n < 2**11`` (so the product fits in 64 bits)."""
    x = x + _GOLDEN
    return x, np.int64((_bits53(x) * np.uint64(n)) >> np.uint64(53))


@njit(inline="always")
def _pick_cumulative(cum: np.ndarray, n: int, x: np.uint64) -> tuple[np.uint64, int]:
    """(next state, an index ``i`` in ``0..n-1`` drawn with probability ``(cum[i] - cum[i - 1]) / cum[n - 1]``).

    Counts the cumulative weights at or below the draw without branching: a loop that stops at the drawn outcome
    mispredicts about once per draw, which cost twice as much as the comparisons (outcomes are few here).
    """
    x = x + _GOLDEN
    r = _bits53(x) / _TWO_53 * cum[n - 1]
    i = 0
    for o in range(n - 1):
        i += r >= cum[o]
    while i > 0 and cum[i] == cum[i - 1]:  # only if rounding put r at the top: the last possible outcome
        i -= 1
    return x, i


@njit(inline="always")
def _pick(p: np.ndarray, n: int, total: float, x: np.uint64) -> tuple[np.uint64, int]:
    """(next state, an index in ``0..n-1`` drawn with probability ``p[i] / total``, never one with ``p[i] = 0``)."""
    x = x + _GOLDEN
    r = _bits53(x) / _TWO_53 * total
    last = -1
    for i in range(n):
        if p[i] > 0.0:
            last = i
            r -= p[i]
            if r < 0.0:
                return x, i
    return x, last  # rounding left r >= 0 after the last positive entry: that entry


@njit(cache=True)
def _layout(dom: np.ndarray, D: int, U: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The types listed domain by domain (``order[start[j]:start[j + 1]]`` are those of domain ``j``), and the
    pool's copies per domain: what every row shares, computed once per update."""
    start = np.zeros(D + 1, np.int64)
    pool = np.zeros(D, np.int64)
    for t in range(_T):
        start[dom[t] + 1] += 1
        pool[dom[t]] += U[t]
    for j in range(D):
        start[j + 1] += start[j]
    order = np.empty(_T, np.int64)
    fill = start[:D].copy()
    for t in range(_T):
        order[fill[dom[t]]] = t
        fill[dom[t]] += 1
    return order, start, pool


@njit(inline="always")
def _row_pool(rows: np.ndarray, s: int, order: np.ndarray, start: np.ndarray, pool: np.ndarray, j: int) -> int:
    """Unresolved copies of domain ``j`` in row ``s``: the pool's copies minus the row's resolved ones."""
    # Summed domain by domain in a register: a scatter over m[dom[t]] chains every add through memory.
    m = pool[j]
    for i in range(start[j], start[j + 1]):
        m -= rows[s, order[i]]
    return m


@njit(inline="always")
def _domain_pools(rows: np.ndarray, s: int, order: np.ndarray, start: np.ndarray, pool: np.ndarray, D: int,
                  m: np.ndarray) -> None:
    """``m[j]``: unresolved copies of domain ``j`` in row ``s`` (``sum of U - R`` over its types)."""
    for j in range(D):
        m[j] = _row_pool(rows, s, order, start, pool, j)


@njit(cache=True)
def _reweight(rows: np.ndarray, cnt: np.ndarray, w: np.ndarray, meta: np.ndarray, like: np.ndarray,
              extra: np.ndarray) -> bool:
    """Multiply row weights by ``like``, drop impossible rows (with their row of ``extra``), renormalize.

    Returns False, and leaves the weights alone, when no row survives (the caller raises :class:`Depleted`).
    Weights are normalized (particle masses sum to 1), so they never underflow over a game.
    """
    S, W = meta[0], _T + meta[1]
    n = 0
    total = 0.0
    for s in range(S):
        x = w[s] * like[s]
        if not (x > 0.0) or not math.isfinite(x):
            continue
        if n != s:
            rows[n, :W] = rows[s, :W]
            cnt[n] = cnt[s]
            extra[n] = extra[s]
        w[n] = x
        total += cnt[n] * x
        n += 1
    if n == 0:
        return False
    for s in range(n):
        w[s] /= total
    meta[0] = n
    return True


@njit(cache=True)
def _expand(rows: np.ndarray, cnt: np.ndarray, w: np.ndarray, meta: np.ndarray, parent: np.ndarray,
            count: np.ndarray, n: int) -> None:
    """Replace the rows by ``n`` children: child ``i`` is a copy of row ``parent[i]`` with ``count[i]`` particles.

    The children are listed in parent order, each parent having at least one, so the children of row ``s``
    land at or after index ``s``: written from the last one backwards, they never overwrite a parent still to
    be read, and no second buffer is needed.
    """
    W = _T + meta[1]
    for i in range(n - 1, -1, -1):
        s = parent[i]
        if i != s:
            for c in range(W):
                rows[i, c] = rows[s, c]
            w[i] = w[s]
        cnt[i] = count[i]
    meta[0] = n


@njit(cache=True)
def _split(rows: np.ndarray, cnt: np.ndarray, w: np.ndarray, meta: np.ndarray, probs: np.ndarray, n_out: int,
           outcome: np.ndarray, stream: np.ndarray) -> bool:
    """Send each row's particles to outcomes with weights ``probs`` (rows x ``n_out``), one draw per particle
    (a multinomial draw of the row's count). Each (row, outcome) that received particles becomes a row, its
    outcome in ``outcome``. False if a row has no possible outcome."""
    S = meta[0]
    n = 0
    for s in range(S):
        n += min(cnt[s], n_out)
    parent = np.empty(n, np.int64)
    count = np.empty(n, np.int64)
    bucket = np.zeros(n_out, np.int64)
    cum = np.empty(n_out)
    n = 0
    x = stream[0]
    for s in range(S):
        total = 0.0
        for o in range(n_out):
            p = max(probs[s, o], 0.0)
            probs[s, o] = p
            total += p
            cum[o] = total
        if not (total > 0.0):
            return False
        only = -1  # the one possible outcome, if there is one: its particles need no draw
        for o in range(n_out):
            if probs[s, o] > 0.0:
                only = o if only == -1 else -2
        if only >= 0:
            bucket[only] = cnt[s]
        else:
            for _ in range(cnt[s]):
                x, o = _pick_cumulative(cum, n_out, x)
                bucket[o] += 1
        for o in range(n_out):
            if bucket[o] > 0:
                parent[n] = s
                count[n] = bucket[o]
                outcome[n] = o
                bucket[o] = 0
                n += 1
    stream[0] = x
    _expand(rows, cnt, w, meta, parent, count, n)
    return True


@njit(cache=True)
def _normalize(rows: np.ndarray, meta: np.ndarray, dom: np.ndarray) -> None:
    """Canonical split: single-type domains folded into ``R``; domains with no lazy card anywhere merged."""
    S, D = meta[0], meta[1]
    sizes = np.zeros(D, np.int64)
    for t in range(_T):
        sizes[dom[t]] += 1
    lazy = np.zeros(D, np.bool_)
    for s in range(S):
        for j in range(D):
            if rows[s, _T + j] > 0:
                lazy[j] = True
    for j in range(D):
        if sizes[j] == 1 and lazy[j]:
            for t in range(_T):
                if dom[t] == j:
                    for s in range(S):
                        rows[s, t] += rows[s, _T + j]
                        rows[s, _T + j] = 0
            lazy[j] = False
    new_id = np.full(D, -1, np.int64)
    live = 0
    for j in range(D):
        if lazy[j] and sizes[j] > 0:
            new_id[j] = live
            live += 1
    settled = False
    for j in range(D):
        if not lazy[j] and sizes[j] > 0:
            new_id[j] = live
            settled = True
    for s in range(S):  # new ids of live domains only decrease, so the columns move left in place
        for j in range(D):
            if lazy[j] and new_id[j] != j:
                rows[s, _T + new_id[j]] = rows[s, _T + j]
        if settled:
            rows[s, _T + live] = 0
    for t in range(_T):
        dom[t] = new_id[dom[t]]
    meta[1] = live + settled


@njit(cache=True)
def _detach(rows: np.ndarray, meta: np.ndarray, dom: np.ndarray, mask: np.ndarray) -> None:
    """Move the ``mask`` types into a new domain with no lazy cards, then normalize.

    Only valid when no row's lazy subset can hold these types any more (they were resolved or ruled out).
    """
    S, D = meta[0], meta[1]
    for t in range(_T):
        if mask[t]:
            dom[t] = D
    for s in range(S):
        rows[s, _T + D] = 0
    meta[1] = D + 1
    _normalize(rows, meta, dom)


def _hash_weights() -> np.ndarray:
    """Odd random 64-bit multipliers, one per column (fixed: the hash only groups candidates for comparison)."""
    return np.random.default_rng(20261123).integers(0, 2**63, ROW_WIDTH, dtype=np.int64).astype(np.uint64) | 1


_HASH_WEIGHTS = _hash_weights()


@njit(cache=True)
def _row_hash(rows: np.ndarray, s: int, W: int) -> np.uint64:
    """A hash of the row's counts: a sum of independent products (no chain of dependent multiplies as in FNV);
    equal rows hash alike, and the merge compares rows whose hashes agree."""
    h = np.uint64(0)
    for c in range(W):
        h += np.uint64(rows[s, c]) * _HASH_WEIGHTS[c]
    return h ^ (h >> np.uint64(29))


@njit(cache=True)
def _merge(rows: np.ndarray, cnt: np.ndarray, w: np.ndarray, meta: np.ndarray) -> None:
    """Merge identical rows of equal weight (their particles pool; law and ESS unchanged), first one kept."""
    S, W = meta[0], _T + meta[1]
    if S < 2:
        return
    keys = np.empty(S, np.uint64)
    for s in range(S):
        keys[s] = _row_hash(rows, s, W)
    order = np.argsort(keys, kind="mergesort")  # stable: within equal keys, rows in their order
    keep = np.ones(S, np.bool_)
    start = 0
    while start < S:
        stop = start + 1
        while stop < S and keys[order[stop]] == keys[order[start]]:
            stop += 1
        for a in range(start + 1, stop):
            r = order[a]
            for b in range(start, a):
                q = order[b]
                if not keep[q] or w[q] != w[r]:
                    continue
                same = True
                for c in range(W):
                    if rows[q, c] != rows[r, c]:
                        same = False
                        break
                if same:
                    keep[r] = False
                    cnt[q] += cnt[r]
                    break
        start = stop
    n = 0
    for s in range(S):
        if keep[s]:
            if n != s:
                rows[n, :W] = rows[s, :W]
                cnt[n] = cnt[s]
                w[n] = w[s]
            n += 1
    meta[0] = n


@njit(cache=True)
def _lazy_copies(rows: np.ndarray, s: int, U: np.ndarray, order: np.ndarray, start: np.ndarray, D: int,
                 cards: np.ndarray, first: np.ndarray, lazy: np.ndarray) -> None:
    """The unresolved physical cards of row ``s``'s domains with lazy cards, one entry per copy (its type), domain
    ``j``'s in ``cards[first[j]:first[j + 1]]``; ``lazy[j]`` := its lazy count."""
    n = 0
    for j in range(D):
        first[j] = n
        lazy[j] = rows[s, _T + j]
        if lazy[j] == 0:
            continue
        for i in range(start[j], start[j + 1]):
            t = order[i]
            for _ in range(U[t] - rows[s, t]):
                cards[n] = t
                n += 1
    first[D] = n


@njit(cache=True)
def _deal(rows: np.ndarray, src: int, dst: int, D: int, cards: np.ndarray, first: np.ndarray, lazy: np.ndarray,
          x: np.uint64) -> np.uint64:
    """Row ``dst`` := row ``src`` (its copies listed by :func:`_lazy_copies`) with every lazy card drawn: ``lazy[j]``
    cards of domain ``j`` without replacement, by a partial Fisher-Yates shuffle of its copies (any order of the
    list gives a uniform subset, so one list serves every particle of the row). Returns the random state."""
    if dst != src:
        for t in range(_T):
            rows[dst, t] = rows[src, t]
    for j in range(D):
        rows[dst, _T + j] = 0
        lo, size = first[j], first[j + 1] - first[j]
        for i in range(lazy[j]):
            x, r = _below(x, size - i)
            a, b = lo + i, lo + i + r
            cards[a], cards[b] = cards[b], cards[a]
            rows[dst, cards[a]] += 1
    return x


# ---------------------------------------------------------------------------------------------- event kernels
@njit(cache=True)
def _own_draw(rows: np.ndarray, cnt: np.ndarray, w: np.ndarray, meta: np.ndarray, dom: np.ndarray,
              U: np.ndarray, card: int) -> bool:
    """Weigh rows by the chance of our drawing ``card``: ``A_c (m_j - K_j) / m_j`` (see HandStates.own_draw)."""
    S, D = meta[0], meta[1]
    j = dom[card]
    order, start, pool = _layout(dom, D, U)
    like = np.empty(S)
    for s in range(S):
        m = _row_pool(rows, s, order, start, pool, j)
        k = rows[s, _T + j]
        like[s] = (U[card] - rows[s, card]) * (m - k) / m if m > 0 else 0.0
    return _reweight(rows, cnt, w, meta, like, np.empty(S))


@njit(cache=True)
def _play(rows: np.ndarray, cnt: np.ndarray, w: np.ndarray, meta: np.ndarray, dom: np.ndarray, U: np.ndarray,
          card: int, require: bool, remove: bool, stream: np.ndarray) -> bool:
    """Resolve type ``card`` (given the hand holds one if ``require``), then take one out if ``remove``."""
    S, D = meta[0], meta[1]
    j = dom[card]
    order, start, pool = _layout(dom, D, U)
    probs = np.empty((max(S, 1), _MAX_COPIES + 1))
    like = np.ones(S)
    for s in range(S):
        m = _row_pool(rows, s, order, start, pool, j)
        k = rows[s, _T + j]
        a = U[card] - rows[s, card]
        for g in range(_MAX_COPIES + 1):
            probs[s, g] = _hyper(a, m, k, g)
        if require and rows[s, card] < 1:
            probs[s, 0] = 0.0
            like[s] = probs[s].sum()
    if require and not _reweight(rows, cnt, w, meta, like, probs):
        return False
    outcome = np.empty(cnt.shape[0], np.int64)
    if not _split(rows, cnt, w, meta, probs, _MAX_COPIES + 1, outcome, stream):
        return False
    for s in range(meta[0]):
        rows[s, card] += outcome[s] - int(remove)
        rows[s, _T + j] -= outcome[s]
    mask = np.zeros(_T, np.bool_)
    mask[card] = True
    _detach(rows, meta, dom, mask)
    return True


@njit(cache=True)
def _constrain(rows: np.ndarray, cnt: np.ndarray, w: np.ndarray, meta: np.ndarray, dom: np.ndarray,
               U: np.ndarray, mask: np.ndarray) -> bool:
    """The hand held none of the ``mask`` types: weigh rows by that probability, detach the types."""
    S, D = meta[0], meta[1]
    order, start, pool = _layout(dom, D, U)
    m = np.empty(D, np.int64)
    # In a row holding none of the types, their unresolved copies are the pool's: a_j is the same in every row.
    a = np.zeros(D, np.int64)
    types = np.empty(_T, np.int64)
    n_types = 0
    for t in range(_T):
        if mask[t]:
            a[dom[t]] += U[t]
            types[n_types] = t
            n_types += 1
    like = np.empty(S)
    for s in range(S):
        held = 0
        for i in range(n_types):
            held += rows[s, types[i]]
        if held > 0:
            like[s] = 0.0
            continue
        _domain_pools(rows, s, order, start, pool, D, m)
        log_like = 0.0
        for j in range(D):
            k = rows[s, _T + j]
            log_like += _lc(m[j] - a[j], k) - _lc(m[j], k)
        like[s] = _exp0(log_like)
    if not _reweight(rows, cnt, w, meta, like, np.empty(S)):
        return False
    _detach(rows, meta, dom, mask)
    return True


#: Cards of one draw grouped per particle (the sorted list of their domains as an int64 in base D <= 55).
_DRAW_CHUNK = 10
_KEY_SPACE = 4096


@njit(cache=True)
def _draw(rows: np.ndarray, cnt: np.ndarray, w: np.ndarray, meta: np.ndarray, dom: np.ndarray, U: np.ndarray,
          count: int, stream: np.ndarray) -> bool:
    """The opponent drew ``count`` unseen cards: each comes uniformly from the deck, which holds ``m_j - K_j``
    cards of domain ``j``, and joins that domain's lazy subset (in chunks of at most :data:`_DRAW_CHUNK`)."""
    done = 0
    while done < count:
        chunk = min(count - done, _DRAW_CHUNK)
        if not _draw_chunk(rows, cnt, w, meta, dom, U, chunk, stream):
            return False
        done += chunk
    return True


@njit(cache=True)
def _draw_chunk(rows: np.ndarray, cnt: np.ndarray, w: np.ndarray, meta: np.ndarray, dom: np.ndarray,
                U: np.ndarray, count: int, stream: np.ndarray) -> bool:
    """:func:`_draw` of ``count <= _DRAW_CHUNK`` cards.

    Each particle draws its cards one after the other (without replacement); particles of a row that drew the
    same multiset of domains share a child row, whatever the order of the cards (equal rows of equal weight).
    """
    S, D = meta[0], meta[1]
    order, start, pool = _layout(dom, D, U)
    m = np.empty(D, np.int64)
    deck = np.empty(D, np.int64)
    left = np.empty(D, np.int64)
    bucket = np.empty(D, np.int64)
    picks = np.empty(count, np.int64)
    most = 0
    total = 0
    for s in range(S):
        most = max(most, cnt[s])
        total += cnt[s]
    keys = np.empty(most, np.int64)
    # Keys of a multiset of domains: sorted picks in base D. Up to _KEY_SPACE keys, a row's particles are counted
    # per key in a table (sorting a thousand keys cost more than drawing them); beyond, keys are sorted.
    space = 1
    for _ in range(count):
        space = min(space * D, _KEY_SPACE + 1)
    table = space <= _KEY_SPACE
    per_key = np.zeros(space if table else 0, np.int64)
    parent = np.empty(total, np.int64)
    group = np.empty(total, np.int64)
    key_of = np.empty(total, np.int64)
    n = 0
    x = stream[0]
    for s in range(S):
        _domain_pools(rows, s, order, start, pool, D, m)
        size = 0
        for j in range(D):
            deck[j] = m[j] - rows[s, _T + j]
            size += deck[j]
        if size < count:
            return False
        if count == 1:  # one card: count the particles per domain, no keys to sort
            bucket[:] = 0
            below_end = 0
            for j in range(D):
                below_end += deck[j]
                left[j] = below_end  # cumulative deck counts (left is free here)
            for _ in range(cnt[s]):
                x, r = _below(x, size)
                j = 0
                for i in range(D - 1):  # branch-free, as in _pick_cumulative
                    j += r >= left[i]
                bucket[j] += 1
            for j in range(D):
                if bucket[j] > 0:
                    parent[n] = s
                    group[n] = bucket[j]
                    key_of[n] = j
                    n += 1
            continue
        n_keys = 0
        for q in range(cnt[s]):
            left[:] = deck
            for c in range(count):
                x, r = _below(x, size - c)
                j = 0
                while r >= left[j]:
                    r -= left[j]
                    j += 1
                left[j] -= 1
                # insertion into the sorted picks, so that a multiset has one key
                i = c
                while i > 0 and picks[i - 1] > j:
                    picks[i] = picks[i - 1]
                    i -= 1
                picks[i] = j
            key = 0
            for c in range(count):
                key = key * D + picks[c]
            if table:
                if per_key[key] == 0:
                    keys[n_keys] = key  # first appearance: the children follow the order of the draws
                    n_keys += 1
                per_key[key] += 1
            else:
                keys[q] = key
        if table:
            for i in range(n_keys):
                parent[n] = s
                group[n] = per_key[keys[i]]
                key_of[n] = keys[i]
                per_key[keys[i]] = 0
                n += 1
            continue
        if cnt[s] > 1:
            keys[:cnt[s]].sort()
        q = 0
        while q < cnt[s]:
            stop = q + 1
            while stop < cnt[s] and keys[stop] == keys[q]:
                stop += 1
            parent[n] = s
            group[n] = stop - q
            key_of[n] = keys[q]
            n += 1
            q = stop
    stream[0] = x
    _expand(rows, cnt, w, meta, parent, group, n)
    for i in range(n):
        key = key_of[i]
        for _ in range(count):
            rows[i, _T + key % D] += 1
            key //= D
    _normalize(rows, meta, dom)
    # Children of different parents often coincide (a row with K = (2, 1) that drew from domain 2 and one with
    # (1, 2) that drew from domain 1); right after a resampling their weights are equal too, and merging them
    # keeps the row count, which every later update pays for, down.
    _merge(rows, cnt, w, meta)
    return True


@njit(cache=True)
def _resolve_all(rows: np.ndarray, cnt: np.ndarray, w: np.ndarray, meta: np.ndarray, dom: np.ndarray,
                 U: np.ndarray, stream: np.ndarray) -> None:
    """Every particle's lazy cards drawn: one full hand per particle (in place, from the last row back), then
    one domain with no lazy cards and equal rows merged."""
    S, D = meta[0], meta[1]
    order, start, _ = _layout(dom, D, U)
    total = 0
    for s in range(S):
        total += cnt[s]
    cards = np.empty(DECK_SIZE, np.int64)
    first = np.empty(D + 1, np.int64)
    lazy = np.empty(D, np.int64)
    end = total
    x = stream[0]
    for s in range(S - 1, -1, -1):
        weight = w[s]
        _lazy_copies(rows, s, U, order, start, D, cards, first, lazy)
        for _ in range(cnt[s]):
            end -= 1
            # The children of row s land at index >= s; the last one written may be row s itself, which _deal
            # reads before writing (its lazy counts and copies are already in lazy and cards).
            x = _deal(rows, s, end, D, cards, first, lazy, x)
            w[end] = weight
            cnt[end] = 1
    stream[0] = x
    meta[0] = total
    dom[:] = 0
    meta[1] = 1
    for s in range(total):
        rows[s, _T] = 0
    _merge(rows, cnt, w, meta)


@njit(cache=True)
def _ess(cnt: np.ndarray, w: np.ndarray, S: int) -> float:
    """Effective sample size ``(sum cnt w)^2 / sum cnt w^2`` of the first ``S`` rows."""
    mass = 0.0
    square = 0.0
    for s in range(S):
        mass += cnt[s] * w[s]
        square += cnt[s] * w[s] * w[s]
    return mass * mass / square


@njit(cache=True)
def _resample(rows: np.ndarray, cnt: np.ndarray, w: np.ndarray, meta: np.ndarray, particles: int,
              u: float) -> None:
    """Systematic resampling with offset ``u`` to ``particles`` equal particles, then equal rows merged."""
    S, W = meta[0], _T + meta[1]
    total = 0.0
    for s in range(S):
        total += cnt[s] * w[s]
    cumulative = 0.0
    before = 0
    n = 0
    for s in range(S):
        cumulative += cnt[s] * w[s]
        edge = 1.0 if s == S - 1 else cumulative / total
        upper = math.ceil(particles * edge - u)
        copies = upper - before
        before = upper
        if copies > 0:
            if n != s:
                rows[n, :W] = rows[s, :W]
            cnt[n] = copies
            n += 1
    meta[0] = n
    for s in range(n):
        w[s] = 1.0 / particles
    _merge(rows, cnt, w, meta)


@njit(cache=True)
def _resample_below(rows: np.ndarray, cnt: np.ndarray, w: np.ndarray, meta: np.ndarray, particles: int,
                    threshold: float, stream: np.ndarray) -> bool:
    """Resample (:func:`_resample`, offset from the stream) if the ESS is below ``threshold``; True if it did."""
    if _ess(cnt, w, meta[0]) >= threshold:
        return False
    _resample(rows, cnt, w, meta, particles, _uniform(stream))
    return True


# ---------------------------------------------------------------------------------------------- answer kernels
@njit(cache=True)
def _features(rows: np.ndarray, cnt: np.ndarray, w: np.ndarray, meta: np.ndarray, dom: np.ndarray,
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
    log_all = np.empty(D)
    coef = np.zeros(D)
    resolved = np.empty(_T, np.int64)
    mass = 0.0
    for s in range(S):
        mass += cnt[s] * w[s]
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
            log_all[j] = _lc(m[j], k)
        for i in range(n_res):
            t = resolved[i]
            expected[t] += p * rows[s, t] * keep[dom[t]]
        for i in range(n_sets):
            if held & set_bits[i]:
                continue
            log_p = 0.0
            for j in range(D):
                if pool_in[i, j] > 0:
                    log_p += _lc(m[j] - pool_in[i, j], rows[s, _T + j]) - log_all[j]
            none[i] += p * _exp0(log_p)
    for t in range(_T):
        expected[t] += coef[dom[t]] * U[t]


@njit(cache=True)
def _features_into(rows: np.ndarray, cnt: np.ndarray, w: np.ndarray, meta: np.ndarray, dom: np.ndarray,
                   U: np.ndarray, sets: np.ndarray, out: np.ndarray) -> None:
    """The belief feature vector into ``out`` (float32, 54 + n): expected counts, then ``P(a card of set i)``.

    P(none) mixes row masses that sum to 1 only up to rounding, so it can exceed 1 by an ulp; clipped, the
    probabilities never fall below 0, the low bound of the env's observation space.
    """
    expected = np.empty(_T)
    none = np.empty(sets.shape[1])
    _features(rows, cnt, w, meta, dom, U, sets, expected, none)
    for t in range(_T):
        out[t] = expected[t]
    for i in range(sets.shape[1]):
        out[_T + i] = min(max(1.0 - none[i], 0.0), 1.0)


@njit(cache=True)
def _marginals(rows: np.ndarray, cnt: np.ndarray, w: np.ndarray, meta: np.ndarray, dom: np.ndarray,
               U: np.ndarray) -> np.ndarray:
    """``P(count of type t = x)`` (54 x 5): per row ``R_t + G``, ``G`` hypergeometric; mixed by mass."""
    S, D = meta[0], meta[1]
    order, start, pool = _layout(dom, D, U)
    m = np.empty(D, np.int64)
    out = np.zeros((_T, _MAX_COPIES + 1))
    mass = 0.0
    for s in range(S):
        mass += cnt[s] * w[s]
    for s in range(S):
        p = cnt[s] * w[s] / mass
        _domain_pools(rows, s, order, start, pool, D, m)
        for t in range(_T):
            j = dom[t]
            for g in range(_MAX_COPIES + 1):
                x = _hyper(U[t] - rows[s, t], m[j], rows[s, _T + j], g)
                if x > 0.0:
                    out[t, min(rows[s, t] + g, _MAX_COPIES)] += p * x
    return out


@njit(cache=True)
def _log_prob(rows: np.ndarray, cnt: np.ndarray, w: np.ndarray, meta: np.ndarray, dom: np.ndarray,
              U: np.ndarray, hand: np.ndarray) -> float:
    """``log P(hand)`` under the rows: ``log sum_s mass_s prod_j [prod_t C(A_t, h_t - R_t)] / C(m_j, K_j)``."""
    S, D = meta[0], meta[1]
    order, start, pool = _layout(dom, D, U)
    m = np.empty(D, np.int64)
    lazy = np.empty(D, np.int64)
    logs = np.full(S, -np.inf)
    mass = 0.0
    for s in range(S):
        mass += cnt[s] * w[s]
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
            log_p += _lc(U[t] - rows[s, t], extra)
        if not fits:
            continue
        _domain_pools(rows, s, order, start, pool, D, m)
        for j in range(D):
            if lazy[j] != rows[s, _T + j]:
                fits = False
            log_p -= _lc(m[j], rows[s, _T + j])
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
def _sample(rows: np.ndarray, cnt: np.ndarray, w: np.ndarray, meta: np.ndarray, dom: np.ndarray, U: np.ndarray,
            n: int, stream: np.ndarray) -> np.ndarray:
    """``n`` independent full hands: a row by mass, then its lazy cards drawn."""
    S, D = meta[0], meta[1]
    mass = np.empty(S)
    for s in range(S):
        mass[s] = cnt[s] * w[s]
    total = mass.sum()
    hands = np.empty((n, _T), np.int64)
    order, start, _ = _layout(dom, D, U)
    cards = np.empty(DECK_SIZE, np.int64)
    first = np.empty(D + 1, np.int64)
    lazy = np.empty(D, np.int64)
    work = np.empty((1, rows.shape[1]), np.int64)
    x = stream[0]
    for i in range(n):
        x, s = _pick(mass, S, total, x)
        _lazy_copies(rows, s, U, order, start, D, cards, first, lazy)
        work[0, :_T + D] = rows[s, :_T + D]
        x = _deal(work, 0, 0, D, cards, first, lazy, x)
        hands[i] = work[0, :_T]
    stream[0] = x
    return hands


# ---------------------------------------------------------------------------------------------- the class
_TYPE_MASKS: dict[tuple[int, ...], np.ndarray] = {}


def seeded_stream(rng: np.random.Generator) -> np.ndarray:
    """A kernel random stream (splitmix64 state, ``uint64`` array of one element) seeded from ``rng``."""
    return np.array([rng.integers(0, 2**63)], dtype=np.uint64)


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
        self.rows = np.zeros((capacity, ROW_WIDTH), np.int64)
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
        return _ess(self.cnt_buf, self.w_buf, int(self.meta[0]))

    def _reserve(self, capacity: int) -> None:
        """Grow the buffers to ``capacity`` rows, keeping the live ones (a resampling to more particles)."""
        S = self.size
        rows, cnt, w = self.rows, self.cnt_buf, self.w_buf
        self.rows = np.zeros((capacity, ROW_WIDTH), np.int64)
        self.cnt_buf, self.w_buf = np.zeros(capacity, np.int64), np.zeros(capacity)
        self.rows[:S], self.cnt_buf[:S], self.w_buf[:S] = rows[:S], cnt[:S], w[:S]
        self._args = (self.rows, self.cnt_buf, self.w_buf, self.meta, self.dom)

    # ------------------------------------------------------------------ events (each raises Depleted if no row lives)
    def own_draw(self, U: np.ndarray, card: int) -> None:
        """The tracking seat drew ``card`` from the deck: weigh rows by its expected copies in their deck."""
        if not _own_draw(*self._args, U, card):
            raise Depleted

    def resolve_type(self, U: np.ndarray, card: int, require: bool, remove: bool = False) -> None:
        """Draw the lazy count of type ``card`` into ``R`` (given the hand holds one, if ``require``); with
        ``remove``, one ``card`` then leaves every row (the opponent played it)."""
        if not _play(*self._args, U, card, require, remove, self.stream):
            raise Depleted

    def constrain(self, U: np.ndarray, types: tuple[int, ...] | np.ndarray) -> None:
        """The hand held none of ``types``: weigh rows by that probability and take the types out of the domains."""
        key = tuple(types)
        mask = _TYPE_MASKS.get(key)
        if mask is None:  # a few dozen playable sets occur (PLAYABLE): each mask is built once
            mask = _TYPE_MASKS[key] = np.zeros(_T, np.bool_)
            mask[list(key)] = True
        if not _constrain(*self._args, U, mask):
            raise Depleted

    def draw(self, U: np.ndarray, count: int) -> None:
        """The opponent drew ``count`` unseen cards: each joins the lazy subset of the domain it came from."""
        if not _draw(*self._args, U, count, self.stream):
            raise Depleted

    def resolve(self, U: np.ndarray) -> None:
        """Draw every lazy card: each particle becomes a full hand (multivariate hypergeometric per domain)."""
        _resolve_all(*self._args, U, self.stream)

    def resample(self, particles: int, u: float | None = None) -> None:
        """Systematic resampling to ``particles`` equally weighted particles (offset ``u``, drawn from the stream
        if omitted), then merge duplicates."""
        if particles > len(self.cnt_buf):  # later splits may make a row per particle: room for them
            self._reserve(particles)
        _resample(*self._args[:4], particles, _uniform(self.stream) if u is None else u)

    def resample_below(self, particles: int, threshold: float) -> bool:
        """:meth:`resample` to ``particles`` if the ESS is below ``threshold`` (one compiled call); True if it did."""
        if particles > len(self.cnt_buf):
            self._reserve(particles)
        return _resample_below(*self._args[:4], particles, threshold, self.stream)

    def merge(self) -> None:
        """Merge identical rows of equal weight (their particles pool; the law and the ESS do not change)."""
        _merge(*self._args[:4])

    # ------------------------------------------------------------------ what the rows say about the hand
    def features_into(self, U: np.ndarray, sets: np.ndarray, out: np.ndarray) -> None:
        """The feature vector into ``out`` (float32, 54 + n): ``E[count of each type]``, then
        ``P(the hand holds a card of set i)`` for each column of the (54 x n) boolean ``sets``."""
        _features_into(*self._args, U, sets, out)

    def expected_counts(self, U: np.ndarray) -> np.ndarray:
        """``E[count of each type in the hand]``, float64 (54,)."""
        expected = np.empty(_T)
        _features(*self._args, U, np.zeros((_T, 0), np.bool_), expected, np.empty(0))
        return expected

    def prob_none(self, U: np.ndarray, sets: np.ndarray) -> np.ndarray:
        """``P(the hand holds no card of set i)`` for each column ``i`` of the (54 x n) boolean ``sets``."""
        none = np.empty(sets.shape[1])
        _features(*self._args, U, np.asarray(sets, np.bool_), np.empty(_T), none)
        return none

    def marginals(self, U: np.ndarray) -> np.ndarray:
        """``P(count of type t = x)`` as a (54, 5) array (x = 0..4)."""
        return _marginals(*self._args, U)

    def log_prob(self, U: np.ndarray, hand: np.ndarray) -> float:
        """``log P(hand)`` of one full hand (54 counts) under the rows; ``-inf`` if no row allows it."""
        return float(_log_prob(*self._args, U, np.asarray(hand, dtype=np.int64)))

    def sample(self, U: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` independent full hands (int64 rows of 54 counts) drawn from the rows, with a stream seeded from
        ``rng`` (the state's own stream is left alone, so sampling does not change the filter's later draws)."""
        return _sample(*self._args, U, n, seeded_stream(rng))
