"""The row algebra of the lazy hand hypotheses (:mod:`uno_env.belief.lazy`): storage, reweighting, splitting,
the domain split kept canonical, merging, resampling, and drawing a row's lazy cards.

A state is five arrays that every kernel takes first: ``rows`` (capacity x :data:`ROW_WIDTH` int8: ``R`` in the first 54
columns, ``K`` in the next ``D``; no count exceeds the 108 cards of the deck), ``cnt`` and ``w`` per row, ``meta = [S,
D]`` (live rows and domains) and ``dom`` (the domain of each card type). Live rows are the first ``S``; the kernels move
rows in place, so a state never allocates per particle. The updates (:mod:`uno_env.belief.lazy_updates`) and answers
(:mod:`uno_env.belief.lazy_answers`) are written with these operations.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from uno_env.belief.sampling import ess, next_below, next_multinomial, systematic_copies
from uno_env.cards import NUM_CARD_TYPES
from uno_env.core import uniform

_T = NUM_CARD_TYPES
#: Most copies of one card type.
MAX_COPIES = 4
#: Most domains a state can hold: each live domain has two or more types, plus the settled one and a new one.
DOMAIN_CAP = NUM_CARD_TYPES + 1
#: Columns of ``HandStates.rows``: ``R`` (54), then ``K`` (up to ``DOMAIN_CAP``).
ROW_WIDTH = NUM_CARD_TYPES + DOMAIN_CAP


@njit(cache=True)
def layout(dom: np.ndarray, D: int, U: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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
def row_pool(rows: np.ndarray, s: int, order: np.ndarray, start: np.ndarray, pool: np.ndarray, j: int) -> int:
    """Unresolved copies of domain ``j`` in row ``s``: the pool's copies minus the row's resolved ones."""
    # Summed domain by domain in a register: a scatter over m[dom[t]] chains every add through memory.
    m = pool[j]
    for i in range(start[j], start[j + 1]):
        m -= rows[s, order[i]]
    return m


@njit(inline="always")
def domain_pools(rows: np.ndarray, s: int, order: np.ndarray, start: np.ndarray, pool: np.ndarray, D: int,
                 m: np.ndarray) -> None:
    """``m[j]``: unresolved copies of domain ``j`` in row ``s`` (``sum of U - R`` over its types)."""
    for j in range(D):
        m[j] = row_pool(rows, s, order, start, pool, j)


@njit(cache=True)
def reweight(rows: np.ndarray, cnt: np.ndarray, w: np.ndarray, meta: np.ndarray, like: np.ndarray,
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
def expand(rows: np.ndarray, cnt: np.ndarray, w: np.ndarray, meta: np.ndarray, parent: np.ndarray,
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


@njit(inline="always")
def add_children(bucket: np.ndarray, n_out: int, s: int, parent: np.ndarray, count: np.ndarray,
                 outcome: np.ndarray, n: int) -> int:
    """List row ``s``'s particles, counted per outcome in ``bucket``, as children from index ``n`` (parent, count,
    outcome; for :func:`expand`), emptying ``bucket``; returns the index after the last child."""
    for o in range(n_out):
        if bucket[o] > 0:
            parent[n] = s
            count[n] = bucket[o]
            outcome[n] = o
            bucket[o] = 0
            n += 1
    return n


@njit(cache=True)
def split(rows: np.ndarray, cnt: np.ndarray, w: np.ndarray, meta: np.ndarray, probs: np.ndarray, n_out: int,
          outcome: np.ndarray, stream: np.ndarray) -> bool:
    """Send each row's particles to outcomes with weights ``probs`` (rows x ``n_out``) by a multinomial draw of the
    row's count (:func:`~uno_env.belief.sampling.next_multinomial`). Each (row, outcome) that received particles
    becomes a row, its outcome in ``outcome``. False if a row has no possible outcome."""
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
        x = next_multinomial(x, cnt[s], probs[s], cum, n_out, bucket)
        n = add_children(bucket, n_out, s, parent, count, outcome, n)
    stream[0] = x
    expand(rows, cnt, w, meta, parent, count, n)
    return True


@njit(cache=True)
def normalize(rows: np.ndarray, meta: np.ndarray, dom: np.ndarray) -> bool:
    """Canonical split: single-type domains folded into ``R``; domains with no lazy card anywhere merged. True if a
    domain was folded (rows that differed may now be equal: the merge of equal rows must then look again)."""
    S, D = meta[0], meta[1]
    sizes = np.zeros(D, np.int64)
    for t in range(_T):
        sizes[dom[t]] += 1
    lazy = np.zeros(D, np.bool_)
    for s in range(S):
        for j in range(D):
            if rows[s, _T + j] > 0:
                lazy[j] = True
    folded = False
    for j in range(D):
        if sizes[j] == 1 and lazy[j]:
            folded = True
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
    return folded


@njit(cache=True)
def detach(rows: np.ndarray, meta: np.ndarray, dom: np.ndarray, mask: np.ndarray) -> None:
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
    normalize(rows, meta, dom)


def _hash_weights() -> np.ndarray:
    """Odd random 64-bit multipliers, one per column (fixed: the hash only groups candidates for comparison)."""
    return np.random.default_rng(20261123).integers(0, 2**63, ROW_WIDTH, dtype=np.int64).astype(np.uint64) | 1


_HASH_WEIGHTS = _hash_weights()


@njit(cache=True)
def row_sum(rows: np.ndarray, s: int, W: int) -> np.uint64:
    """The row's counts weighed by :data:`_HASH_WEIGHTS` and summed (a sum of independent products, no chain of
    dependent multiplies as in FNV): linear in the counts, so a child's is its parent's plus the weights of the
    counts it adds."""
    h = np.uint64(0)
    for c in range(W):
        h += np.uint64(rows[s, c]) * _HASH_WEIGHTS[c]
    return h


@njit(inline="always")
def add_count(h: np.uint64, column: int) -> np.uint64:
    """The :func:`row_sum` ``h`` of a row with one more count in ``column``."""
    return h + _HASH_WEIGHTS[column]


@njit(inline="always")
def mix(h: np.uint64) -> np.uint64:
    """A :func:`row_sum` made a hash (its high bits index the tables): equal rows hash alike."""
    return h ^ (h >> np.uint64(29))


@njit(cache=True)
def _row_hash(rows: np.ndarray, s: int, W: int) -> np.uint64:
    """The hash of row ``s``; the merge compares rows whose hashes agree."""
    return mix(row_sum(rows, s, W))


@njit(cache=True)
def merge(rows: np.ndarray, cnt: np.ndarray, w: np.ndarray, meta: np.ndarray) -> None:
    """Merge identical rows of equal weight (their particles pool; law and ESS unchanged), first one kept.

    One pass in row order over an open-addressing table of the rows kept so far, keyed by their hash: a row
    equal (counts and weight) to a kept one adds its particles to it, else it is kept, moved down to the next
    free index. The rows kept, their order and their counts are those of sorting the hashes, which cost a
    third more (a stable argsort per call).
    """
    S, W = meta[0], _T + meta[1]
    if S < 2:
        return
    bits = 1
    while (1 << bits) < 2 * S:  # at most half full: short probes
        bits += 1
    mask = (1 << bits) - 1
    slots = np.full(mask + 1, -1, np.int64)  # index of a kept row, -1 empty
    keys = np.empty(S, np.uint64)
    n = 0
    for s in range(S):
        key = _row_hash(rows, s, W)
        i = np.int64(key >> np.uint64(64 - bits))
        found = -1
        while slots[i] >= 0:
            q = slots[i]
            if keys[q] == key and w[q] == w[s]:
                same = True
                for c in range(W):
                    if rows[q, c] != rows[s, c]:
                        same = False
                        break
                if same:
                    found = q
                    break
            i = (i + 1) & mask
        if found >= 0:
            cnt[found] += cnt[s]
            continue
        slots[i] = n
        keys[n] = key
        if n != s:
            rows[n, :W] = rows[s, :W]
            cnt[n] = cnt[s]
            w[n] = w[s]
        n += 1
    meta[0] = n


@njit(cache=True)
def lazy_copies(rows: np.ndarray, s: int, U: np.ndarray, order: np.ndarray, start: np.ndarray, D: int,
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
def deal(rows: np.ndarray, src: int, dst: int, D: int, cards: np.ndarray, first: np.ndarray, lazy: np.ndarray,
         x: np.uint64) -> np.uint64:
    """Row ``dst`` := row ``src`` (its copies listed by :func:`lazy_copies`) with every lazy card drawn: ``lazy[j]``
    cards of domain ``j`` without replacement, by a partial Fisher-Yates shuffle of its copies (any order of the
    list gives a uniform subset, so one list serves every particle of the row). Returns the random state."""
    if dst != src:
        for t in range(_T):
            rows[dst, t] = rows[src, t]
    for j in range(D):
        rows[dst, _T + j] = 0
        lo, size = first[j], first[j + 1] - first[j]
        for i in range(lazy[j]):
            x, r = next_below(x, size - i)
            a, b = lo + i, lo + i + r
            cards[a], cards[b] = cards[b], cards[a]
            rows[dst, cards[a]] += 1
    return x


@njit(cache=True)
def resample(rows: np.ndarray, cnt: np.ndarray, w: np.ndarray, meta: np.ndarray, particles: int, u: float) -> None:
    """Systematic resampling with offset ``u`` to ``particles`` equal particles, then equal rows merged."""
    S, W = meta[0], _T + meta[1]
    copies = np.empty(S, np.int64)
    systematic_copies(cnt, w, S, particles, u, copies)
    n = 0
    for s in range(S):
        if copies[s] > 0:
            if n != s:
                rows[n, :W] = rows[s, :W]
            cnt[n] = copies[s]
            n += 1
    meta[0] = n
    for s in range(n):
        w[s] = 1.0 / particles
    merge(rows, cnt, w, meta)


@njit(cache=True)
def resample_below(rows: np.ndarray, cnt: np.ndarray, w: np.ndarray, meta: np.ndarray, particles: int,
                   threshold: float, stream: np.ndarray) -> bool:
    """Resample (:func:`resample`, offset from the stream) if the ESS is below ``threshold``; True if it did."""
    if ess(cnt, w, meta[0]) >= threshold:
        return False
    resample(rows, cnt, w, meta, particles, uniform(stream))
    return True

