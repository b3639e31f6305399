"""A view's public events replayed over the lazy particle filter in one compiled call.

:class:`~uno_env.belief.filters.ParticleBelief` learns from each view's events: the tracker replays them
(:meth:`~uno_env.belief.tracker.PublicTracker._apply`), each event calls one update kernel
(:mod:`uno_env.belief.lazy_updates`) and, if it reweighted the rows, the resampling check. Done from Python,
that is three to six kernel calls per env step, each paying numba's argument checks, plus the replay's own
bookkeeping: more than the kernels' work at N = 1,000 (docs/benchmarks.md, "Belief cost"). :func:`apply_events`
does the same steps, in the same order and with the same kernels and draws, in one call, so the particles are the
same bit for bit; ``tests/test_belief_filters.py`` compares it with the event-by-event replay.

**Its on-disk cache** (``cache=True``) holds the kernels it calls as they were when it was compiled, and numba
keys it by this file alone: after a change to a kernel in another module (a split's draws, the features), a
checkout that already holds the cache runs the old kernels here and the new ones through the hooks until this
file changes too or ``uno_env/belief/__pycache__`` is cleared (the bit-for-bit test then fails).

Events go in as two int64 arrays (:func:`encode_events`): a row ``(kind, player, value, extra)`` per event, where
``extra`` is the colour in force after a play and, for the tracking seat's draws, the offset of their cards in the
second array. The public state the replay keeps (top card, colour in force, pending draw, the opponent's hand
size, the deck size, our hand size: :class:`Public`) goes in and comes back as ints.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from uno_env.belief.lazy_answers import features_into
from uno_env.belief.lazy_rows import resample_below
from uno_env.belief.lazy_updates import constrain, draw, own_draw, play, resolve_all
from uno_env.cards import DRAW2, NUM_CARD_TYPES, NUM_COLOURED_RANKS, PLAYABLE, WILD, WILD_DRAW4
from uno_env.view import DRAW, PLAY, RESHUFFLE, Event

_T = NUM_CARD_TYPES



class LazyRows(NamedTuple):
    """The lazy rows' arrays, in the order every row kernel takes them first (``HandStates._args``)."""

    rows: np.ndarray
    cnt: np.ndarray
    w: np.ndarray
    meta: np.ndarray
    dom: np.ndarray


class Tracked(NamedTuple):
    """The tracker's card counts (54 each) the replay updates in place."""

    pool: np.ndarray  # the unseen cards: the deck and the opponent's hand
    hand: np.ndarray  # our hand
    discard: np.ndarray  # the discard pile


class Events(NamedTuple):
    """The events as :func:`encode_events` writes them (module docstring)."""

    heads: np.ndarray  # a row (kind, player, value, extra) per event, flat
    cards: np.ndarray  # the cards of our draws, at the offsets their rows' ``extra`` give


class Public(NamedTuple):
    """The public quantities of the replay, which :func:`apply_events` takes and returns (in this order)."""

    top: int
    colour: int  # the colour in force
    pending: int  # the draw pending
    opp_size: int  # the opponent's hand size
    deck_size: int
    my_size: int  # our hand size


class Resampling(NamedTuple):
    """When the rows are resampled: to ``target`` particles once the ESS is below ``threshold``."""

    target: int
    threshold: float


def _playable_masks() -> np.ndarray:
    """(colour, top rank, type) booleans: the types playable in each position (:data:`uno_env.cards.PLAYABLE`)."""
    masks = np.zeros((4, NUM_COLOURED_RANKS + 2, _T), np.bool_)
    for colour in range(4):
        for rank in range(NUM_COLOURED_RANKS + 2):
            masks[colour, rank, list(PLAYABLE[colour][rank])] = True
    return masks


_PLAYABLE_MASKS = _playable_masks()
_NO_CARDS = np.empty(0, np.int64)  # most views hold no draw of ours: no array to build


def encode_events(events: list[Event]) -> tuple[np.ndarray, np.ndarray] | None:
    """The events as :func:`apply_events` reads them (module docstring); ``None`` if one has an unknown kind (the
    Python replay then raises its error at that event, after the events before it)."""
    heads: list[int] = []
    cards: list[int] = []
    for kind, player, value, extra in events:
        if kind == PLAY:
            heads += (kind, player, value, extra)
        elif kind == DRAW:
            heads += (kind, player, value, len(cards))
            if player == 0:
                cards += extra
        elif kind == RESHUFFLE:
            heads += (kind, player, 0, 0)
        else:
            return None
    return np.array(heads, np.int64), np.array(cards, np.int64) if cards else _NO_CARDS


@njit(inline="always")
def _rank(card: int) -> int:
    """:func:`uno_env.cards.card_rank`, compiled."""
    return card % NUM_COLOURED_RANKS if card < WILD else (13 if card == WILD else 14)


@njit(cache=True)
def apply_events(rows_fields: tuple, tracked_fields: tuple, events_fields: tuple, first: int, public_fields: tuple,
                 stream: np.ndarray, resampling_fields: tuple, sets: np.ndarray,
                 features: np.ndarray) -> tuple[int, int, int, int, int, int, int]:
    """Replay events ``first, first + 1, ...`` of the :class:`Events` over the :class:`Public` state and the
    :class:`LazyRows`; returns how many events were applied in all (all of them, or the index of the first one no
    row explains: the rows and the public state then stand partly updated by it, and the caller recovers from its
    snapshot), then the public state after them (:class:`Public` order). The :class:`Tracked` arrays are updated
    in place. Each NamedTuple comes in as a plain tuple of its fields (``*_fields``): numba's dispatcher checks a
    NamedTuple argument on a slow path (docs/design.md, "Compiled kernels and their Python twin").

    Per event, what :meth:`ParticleBelief._step <uno_env.belief.filters.ParticleBelief>` does through the
    tracker's hooks: a play of the opponent resolves the played type; our draw weighs the rows card by card; the
    opponent's draw is constrained first when it was voluntary (no draw pending); a reshuffle resolves every row
    before the pool grows; after an event that reweighted, the rows are resampled to ``target`` particles if the
    ESS is below ``threshold``.

    If every event was applied and ``features`` is not empty, the belief features of the final position go into
    it (:func:`~uno_env.belief.lazy_answers.features_into` with ``sets[colour, top rank]``): the answer the
    caller asks for after each update, without a second call.
    """
    lazy, tracked, events = LazyRows(*rows_fields), Tracked(*tracked_fields), Events(*events_fields)
    public, resampling = Public(*public_fields), Resampling(*resampling_fields)
    rows, cnt, w, meta, dom = lazy.rows, lazy.cnt, lazy.w, lazy.meta, lazy.dom
    pool, hand, discard, heads, cards = tracked.pool, tracked.hand, tracked.discard, events.heads, events.cards
    # The public state changes as events apply: locals, returned at the end.
    top, colour, pending, opp_size = public.top, public.colour, public.pending, public.opp_size
    deck_size, my_size = public.deck_size, public.my_size
    n_events = heads.shape[0] // 4
    done = first
    ok = True
    while done < n_events and ok:
        kind, player, value, extra = heads[4 * done], heads[4 * done + 1], heads[4 * done + 2], heads[4 * done + 3]
        reweighted = False
        if kind == PLAY:
            card = value
            if player == 1:
                ok = play(rows, cnt, w, meta, dom, pool, card, True, True, stream)
                if not ok:
                    break
                reweighted = True
                pool[card] -= 1
                opp_size -= 1
            else:
                hand[card] -= 1
                my_size -= 1
            discard[card] += 1
            top, colour = card, extra
            pending = 2 if card < WILD and card % NUM_COLOURED_RANKS == DRAW2 else (4 if card == WILD_DRAW4 else 0)
        elif kind == DRAW:
            if player == 0:
                for i in range(value):
                    card = cards[extra + i]
                    ok = own_draw(rows, cnt, w, meta, dom, pool, card)
                    if not ok:
                        break
                    reweighted = True
                    pool[card] -= 1
                    hand[card] += 1
                    my_size += 1
                    deck_size -= 1
                if not ok:
                    break
            else:
                if pending == 0:
                    ok = constrain(rows, cnt, w, meta, dom, pool, _PLAYABLE_MASKS[colour, _rank(top)])
                    if not ok:
                        break
                    reweighted = True
                ok = draw(rows, cnt, w, meta, dom, pool, value, stream)
                if not ok:
                    break
                opp_size += value
                deck_size -= value
            pending = 0
        else:  # RESHUFFLE: the lazy subsets are uniform over the pool before it grows
            resolve_all(rows, cnt, w, meta, dom, pool, stream)
            for t in range(_T):
                added = discard[t] - (t == top)
                pool[t] += added
                deck_size += added
                discard[t] = 0
            discard[top] = 1
        if reweighted:
            resample_below(rows, cnt, w, meta, resampling.target, resampling.threshold, stream)
        done += 1
    if ok and features.shape[0] > 0:
        features_into(rows, cnt, w, meta, dom, pool, sets[colour, _rank(top)], features)
    return done, top, colour, pending, opp_size, deck_size, my_size
