"""The updates of the lazy hand hypotheses (:mod:`uno_env.belief.lazy`): one compiled kernel per public event.

Each takes the state's arrays (:mod:`uno_env.belief.lazy_rows`), the pool ``U`` (unseen copies per type) and
the event, keeps the rows exact (the module docstring of :mod:`uno_env.belief.lazy` gives the laws), and returns
False when no row explains the event (the caller raises :class:`~uno_env.belief.lazy.Depleted`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from uno_env.belief.combinatorics import exp0, hyper, log_comb
from uno_env.belief.lazy_rows import (
    MAX_COPIES,
    add_count,
    deal,
    detach,
    domain_pools,
    expand,
    layout,
    lazy_copies,
    merge,
    mix,
    normalize,
    reweight,
    row_pool,
    row_sum,
    split,
)
from uno_env.belief.sampling import next_below, next_multinomial
from uno_env.cards import DECK_SIZE, NUM_CARD_TYPES

_T = NUM_CARD_TYPES


@njit(cache=True)
def own_draw(rows: np.ndarray, cnt: np.ndarray, w: np.ndarray, meta: np.ndarray, dom: np.ndarray,
             U: np.ndarray, card: int) -> bool:
    """Weigh rows by the chance of our drawing ``card``: ``A_c (m_j - K_j) / m_j`` (see HandStates.own_draw)."""
    S, D = meta[0], meta[1]
    j = dom[card]
    order, start, pool = layout(dom, D, U)
    like = np.empty(S)
    for s in range(S):
        m = row_pool(rows, s, order, start, pool, j)
        k = rows[s, _T + j]
        like[s] = (U[card] - rows[s, card]) * (m - k) / m if m > 0 else 0.0
    return reweight(rows, cnt, w, meta, like, np.empty(S))


@njit(cache=True)
def play(rows: np.ndarray, cnt: np.ndarray, w: np.ndarray, meta: np.ndarray, dom: np.ndarray, U: np.ndarray,
         card: int, require: bool, remove: bool, stream: np.ndarray) -> bool:
    """Resolve type ``card`` (given the hand holds one if ``require``), then take one out if ``remove``."""
    S, D = meta[0], meta[1]
    j = dom[card]
    order, start, pool = layout(dom, D, U)
    probs = np.empty((max(S, 1), MAX_COPIES + 1))
    like = np.ones(S)
    for s in range(S):
        m = row_pool(rows, s, order, start, pool, j)
        k = rows[s, _T + j]
        a = U[card] - rows[s, card]
        # More than a copies or than k lazy cards, or fewer than k - (m - a), has probability exactly 0: no exp.
        least, most = max(0, k - (m - a)), min(a, k)
        for g in range(MAX_COPIES + 1):
            probs[s, g] = hyper(a, m, k, g) if least <= g <= most else 0.0
        if require and rows[s, card] < 1:
            probs[s, 0] = 0.0
            like[s] = probs[s].sum()
    if require and not reweight(rows, cnt, w, meta, like, probs):
        return False
    outcome = np.empty(cnt.shape[0], np.int64)
    if not split(rows, cnt, w, meta, probs, MAX_COPIES + 1, outcome, stream):
        return False
    for s in range(meta[0]):
        rows[s, card] += outcome[s] - int(remove)
        rows[s, _T + j] -= outcome[s]
    mask = np.zeros(_T, np.bool_)
    mask[card] = True
    detach(rows, meta, dom, mask)
    return True


@njit(cache=True)
def constrain(rows: np.ndarray, cnt: np.ndarray, w: np.ndarray, meta: np.ndarray, dom: np.ndarray,
              U: np.ndarray, mask: np.ndarray) -> bool:
    """The hand held none of the ``mask`` types: weigh rows by that probability, detach the types."""
    S, D = meta[0], meta[1]
    order, start, pool = layout(dom, D, U)
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
        domain_pools(rows, s, order, start, pool, D, m)
        log_like = 0.0
        for j in range(D):
            k = rows[s, _T + j]
            log_like += log_comb(m[j] - a[j], k) - log_comb(m[j], k)
        like[s] = exp0(log_like)
    if not reweight(rows, cnt, w, meta, like, np.empty(S)):
        return False
    detach(rows, meta, dom, mask)
    return True


#: Cards of one draw grouped per particle (the sorted list of their domains as an int64 in base D <= 55).
_DRAW_CHUNK = 10
_KEY_SPACE = 4096


@njit(cache=True)
def draw(rows: np.ndarray, cnt: np.ndarray, w: np.ndarray, meta: np.ndarray, dom: np.ndarray, U: np.ndarray,
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


class _Children(NamedTuple):
    """A draw's children as they are made (:func:`_draw_chunk`): child ``i`` is row ``parent[i]`` with the cards of
    ``key[i]`` (a multiset of domains: its sorted picks in base ``D``) added, for ``group[i]`` particles; ``hashes``
    and the open-addressing table ``slots`` (``-1`` empty, ``2**bits`` of them) find a child equal to a new one;
    ``diff`` is room for one comparison (:func:`_keep_child`)."""

    parent: np.ndarray
    group: np.ndarray
    key: np.ndarray
    hashes: np.ndarray
    slots: np.ndarray
    bits: int
    diff: np.ndarray


@njit(cache=True)
def _draw_chunk(rows: np.ndarray, cnt: np.ndarray, w: np.ndarray, meta: np.ndarray, dom: np.ndarray,
                U: np.ndarray, count: int, stream: np.ndarray) -> bool:
    """:func:`draw` of ``count <= _DRAW_CHUNK`` cards.

    Each particle draws its cards one after the other (without replacement); particles of a row that drew the
    same multiset of domains share a child row, whatever the order of the cards. One card: the row's particles are
    split over the domains by a multinomial draw (:func:`~uno_env.belief.sampling.next_multinomial`) instead.

    Children of different parents often coincide (``K = (2, 1)`` plus a card of domain 2 is ``K = (1, 2)`` plus one
    of domain 1), and right after a resampling their weights are equal too: they are merged as they are made
    (:func:`_keep_child`), which keeps the row count, which every later update pays for, down. The rows kept, their
    order and counts are those of writing every child and merging equal rows afterwards, which spent a third of
    a one-card draw hashing and copying children.
    """
    S, D = meta[0], meta[1]
    order, start, pool = layout(dom, D, U)
    m = np.empty(D, np.int64)
    deck = np.empty(D, np.int64)
    left = np.empty(D, np.int64)
    weights = np.empty(D)
    cum = np.empty(D)
    bucket = np.zeros(D, np.int64)
    picks = np.empty(count, np.int64)
    most = 0
    total = 0
    for s in range(S):
        most = max(most, cnt[s])
        total += min(cnt[s], D) if count == 1 else cnt[s]
    keys = np.empty(most, np.int64)
    # Keys of a multiset of domains: sorted picks in base D. Up to _KEY_SPACE keys, a row's particles are counted
    # per key in a table (sorting a thousand keys cost more than drawing them); beyond, keys are sorted.
    space = 1
    for _ in range(count):
        space = min(space * D, _KEY_SPACE + 1)
    table = space <= _KEY_SPACE
    per_key = np.zeros(space if table else 0, np.int64)
    bits = 1
    while (1 << bits) < 2 * total:  # at most half full, as in merge
        bits += 1
    kids = _Children(np.empty(total, np.int64), np.empty(total, np.int64), np.empty(total, np.int64),
                     np.empty(total, np.uint64), np.full(1 << bits, -1, np.int64), bits, np.empty(D, np.int64))
    n = 0
    x = stream[0]
    for s in range(S):
        domain_pools(rows, s, order, start, pool, D, m)
        size = 0
        for j in range(D):
            deck[j] = m[j] - rows[s, _T + j]
            size += deck[j]
        if size < count:
            return False
        base = row_sum(rows, s, _T + D)
        if count == 1:
            for j in range(D):
                weights[j] = deck[j]
                cum[j] = deck[j] + (cum[j - 1] if j > 0 else 0.0)
            x = next_multinomial(x, cnt[s], weights, cum, D, bucket)
            for j in range(D):
                if bucket[j] > 0:
                    n = _keep_child(rows, w, s, j, bucket[j], base, count, D, kids, n)
                    bucket[j] = 0
            continue
        n_keys = 0
        for q in range(cnt[s]):
            left[:] = deck
            for c in range(count):
                x, r = next_below(x, size - c)
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
                n = _keep_child(rows, w, s, keys[i], per_key[keys[i]], base, count, D, kids, n)
                per_key[keys[i]] = 0
            continue
        if cnt[s] > 1:
            keys[:cnt[s]].sort()
        q = 0
        while q < cnt[s]:
            stop = q + 1
            while stop < cnt[s] and keys[stop] == keys[q]:
                stop += 1
            n = _keep_child(rows, w, s, keys[q], stop - q, base, count, D, kids, n)
            q = stop
    stream[0] = x
    parent = kids.parent
    # A row whose children all joined earlier ones is dropped: the rows that keep a child move down first, so that
    # every parent has a child and expand's in-place writing (children at or after their parent) holds.
    kept = -1
    last = -1
    for i in range(n):
        if parent[i] != last:
            last = parent[i]
            kept += 1
            if kept != last:
                rows[kept, :_T + D] = rows[last, :_T + D]
                w[kept] = w[last]
        parent[i] = kept
    expand(rows, cnt, w, meta, parent, kids.group, n)
    for i in range(n):
        key = kids.key[i]
        for _ in range(count):
            rows[i, _T + key % D] += 1
            key //= D
    if normalize(rows, meta, dom):  # a folded domain can make equal rows of children that differed
        merge(rows, cnt, w, meta)
    return True


@njit(inline="always")
def _keep_child(rows: np.ndarray, w: np.ndarray, s: int, key: int, particles: int, base: np.uint64, count: int,
                D: int, kids: _Children, n: int) -> int:
    """Offer row ``s`` plus the cards of ``key`` (``particles`` of them) to the children made so far: an equal one
    (same counts, same weight) takes its particles, else it becomes child ``n``. Returns the number of children.

    Its hash is the parent's :func:`row_sum` plus the weights of the added cards, and it is compared with a child
    through their parents (``kids.diff``: the cards the child made adds minus those the new one adds), so no child is
    written before it is known to be new."""
    h = base
    rest = key
    for _ in range(count):
        h = add_count(h, _T + rest % D)
        rest //= D
    h = mix(h)
    bits, diff = kids.bits, kids.diff
    mask = (1 << bits) - 1
    i = np.int64(h >> np.uint64(64 - bits))
    while kids.slots[i] >= 0:
        q = kids.slots[i]
        a = kids.parent[q]
        if kids.hashes[q] == h and w[a] == w[s]:
            diff[:] = 0
            mine, theirs = key, kids.key[q]
            for _ in range(count):
                diff[theirs % D] += 1
                diff[mine % D] -= 1
                mine //= D
                theirs //= D
            same = True
            for c in range(_T):
                if rows[a, c] != rows[s, c]:
                    same = False
                    break
            for j in range(D):
                if same and rows[a, _T + j] + diff[j] != rows[s, _T + j]:
                    same = False
            if same:
                kids.group[q] += particles
                return n
        i = (i + 1) & mask
    kids.slots[i] = n
    kids.parent[n], kids.group[n], kids.key[n], kids.hashes[n] = s, particles, key, h
    return n + 1


@njit(cache=True)
def resolve_all(rows: np.ndarray, cnt: np.ndarray, w: np.ndarray, meta: np.ndarray, dom: np.ndarray,
                U: np.ndarray, stream: np.ndarray) -> None:
    """Every particle's lazy cards drawn: one full hand per particle (in place, from the last row back), then
    one domain with no lazy cards and equal rows merged."""
    S, D = meta[0], meta[1]
    order, start, _ = layout(dom, D, U)
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
        lazy_copies(rows, s, U, order, start, D, cards, first, lazy)
        for _ in range(cnt[s]):
            end -= 1
            # The children of row s land at index >= s; the last one written may be row s itself, which deal
            # reads before writing (its lazy counts and copies are already in lazy and cards).
            x = deal(rows, s, end, D, cards, first, lazy, x)
            w[end] = weight
            cnt[end] = 1
    stream[0] = x
    meta[0] = total
    dom[:] = 0
    meta[1] = 1
    for s in range(total):
        rows[s, _T] = 0
    merge(rows, cnt, w, meta)


