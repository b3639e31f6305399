"""The trajectory filter's kernels (:mod:`uno_env.belief.trajectory`, whose docstring gives the posterior and the
moves): the event log's layout, the opponent model as the kernels take it (:class:`Likelihood`), the forward step,
resampling, the Metropolis-Hastings moves and the answers over full hands.

:func:`advance` is the one kernel called from Python on each update: it takes each NamedTuple of state
(:class:`History`, :class:`Particles`, :class:`Likelihood`, :class:`Schedule`, :class:`Buffers`) as a plain tuple of
its fields and names it on its first line, because numba's dispatcher checks a NamedTuple argument on a slow path
(docs/design.md, "Compiled kernels and their Python twin"); the kernels it calls take the NamedTuples themselves.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from uno_env.belief.learned import LEARNED_MODEL
from uno_env.belief.models import PLAIN_MODEL, RULE_MODEL, action_likelihood
from uno_env.belief.sampling import ess, systematic_sources
from uno_env.cards import NUM_CARD_TYPES, NUM_COLOURS, PLAYABLE
from uno_env.core import below, uniform

# Event log: one int64 row per event; the pool just before the event fills the last 54 columns.
# HAND is the opponent's hand size before the event (where a restart from counting begins), OPP ours.
KIND, CARD, ACTION, COLOUR, RANK, OPP, HAND, SLOT, POOL = range(9)
LOG_WIDTH = POOL + NUM_CARD_TYPES
#: Event kinds of the log: the opponent gets one card from the deck (a slot), we draw a known card, the
#: opponent plays, the opponent draws voluntarily (it held no playable card).
SLOT_EVENT, OWN_DRAW, PLAY_EVENT, NO_PLAYABLE = 0, 1, 2, 3
# Stats counters of the kernels.
RESAMPLES, RESCUES, PROPOSED, ACCEPTED = range(4)


def _playable_type_table() -> np.ndarray:
    table = np.zeros((NUM_COLOURS, 15, NUM_CARD_TYPES), np.bool_)
    for colour in range(NUM_COLOURS):
        for rank in range(15):
            table[colour, rank, list(PLAYABLE[colour][rank])] = True
    return table


_PLAYABLE_TYPE = _playable_type_table()


class Likelihood(NamedTuple):
    """The opponent model of the kernels: a code of :func:`~uno_env.belief.models.action_likelihood`, or
    :data:`~uno_env.belief.learned.LEARNED_MODEL` with the learned mixture's state (empty arrays otherwise)."""

    code: int
    #: The candidates' likelihood codes (K,).
    codes: np.ndarray
    #: The candidates' weights in force at each logged event (events capacity x K; set at the plays).
    mix: np.ndarray
    #: The current weights (K,), updated in place after each play.
    weights: np.ndarray
    #: The fixed share spread evenly after each update.
    share: float
    #: The candidates' prior weights (K,) of the current run.
    prior: np.ndarray
    #: Whether a play is weighed with the mean of ``prior`` and the weights learned so far (``True``) or ``prior``.
    adaptive: bool
    #: Per particle, ``log prod_plays pi_k / pi_mix`` (N x K): its importance weight under candidate ``k``.
    log_ratio: np.ndarray
    #: Scratch: a copy of ``log_ratio`` while resampling (N x K), and each candidate's likelihood (K,).
    ratio_buf: np.ndarray
    scratch: np.ndarray


class History(NamedTuple):
    """The public history the particles explain."""

    #: The event log (events capacity x :data:`LOG_WIDTH`, int64; a row per event, the columns ``KIND``...).
    log: np.ndarray
    #: The event of each slot (slots capacity,): where slot ``i`` was drawn.
    slot_events: np.ndarray


class Particles(NamedTuple):
    """The N trajectory particles."""

    #: The card type of each particle's slots (N x slots capacity, int8).
    slots: np.ndarray
    #: Each particle's opponent hand after the events filtered so far (N x 54 counts).
    hands: np.ndarray
    #: The particles' weights (N,), normalized after each event.
    w: np.ndarray


class Schedule(NamedTuple):
    """When and how much the particles are moved (:class:`~uno_env.belief.trajectory.TrajectoryBelief`'s args)."""

    moves: int  # Metropolis-Hastings moves per particle after each resampling
    threshold: float  # resample when the ESS is below threshold * N
    retries: int  # rounds of resample-move before an event no particle explains is given up


class Buffers(NamedTuple):
    """The kernels' scratch arrays, allocated once per filter."""

    w_before: np.ndarray  # (N,) the weights before an event, restored if no particle explains it
    slots_buf: np.ndarray  # (N x slots capacity) and
    hands_buf: np.ndarray  # (N x 54): resampling's copies
    old: np.ndarray  # (54,) a particle's hand before a move and
    new: np.ndarray  # (54,) after it
    legal: np.ndarray  # (60,) the legal actions a model's likelihood lists


@njit(cache=True)
def _play_likelihood(lik: Likelihood, log: np.ndarray, e: int, hand: np.ndarray, legal: np.ndarray) -> float:
    """``pi_2`` of the play of event ``e`` given ``hand``: the model's, or the learned mixture with the weights
    logged at ``e`` (each candidate's likelihood is left in ``lik.scratch``)."""
    if lik.code != LEARNED_MODEL:
        return action_likelihood(lik.code, hand, log[e, ACTION], log[e, COLOUR], log[e, RANK], log[e, OPP], legal)
    like = 0.0
    for k in range(len(lik.codes)):
        lik.scratch[k] = action_likelihood(lik.codes[k], hand, log[e, ACTION], log[e, COLOUR], log[e, RANK],
                                           log[e, OPP], legal)
        like += lik.mix[e, k] * lik.scratch[k]
    return like


@njit(cache=True)
def _add_log_ratios(lik: Likelihood, p: int, like: float) -> None:
    """Add one play's ``log pi_k - log pi_mix`` (``lik.scratch``, ``like``) to particle ``p``'s log ratios."""
    for k in range(len(lik.codes)):
        lik.log_ratio[p, k] += np.log(lik.scratch[k]) - np.log(like) if lik.scratch[k] > 0.0 else -np.inf


@njit(cache=True)
def _log_ratios(log: np.ndarray, n_events: int, slots: np.ndarray, lik: Likelihood, p: int, hand: np.ndarray,
                legal: np.ndarray) -> None:
    """Particle ``p``'s log ratios over events ``0..n_events-1`` from its ``slots`` (after a move changed them)."""
    lik.log_ratio[p] = 0.0
    hand[:] = 0
    for e in range(n_events):
        kind = log[e, KIND]
        if kind == SLOT_EVENT:
            hand[slots[log[e, SLOT]]] += 1
        elif kind == PLAY_EVENT:
            _add_log_ratios(lik, p, _play_likelihood(lik, log, e, hand, legal))
            hand[log[e, CARD]] -= 1


@njit(cache=True)
def _learn(lik: Likelihood, w: np.ndarray) -> None:
    """The candidates' posterior weights given the plays so far, then the fixed share.

    The particles (normalized weights ``w``) target the posterior under the logged mixtures, so the evidence of
    candidate ``k`` relative to it is the mean of the importance weights ``prod_plays pi_k / pi_mix``:
    ``W_k ∝ prior_k sum_p w_p exp(log_ratio[p, k])`` (a log-sum-exp per candidate)."""
    k = len(lik.codes)
    for i in range(k):
        top = -np.inf
        for p in range(len(w)):
            if w[p] > 0.0 and lik.log_ratio[p, i] > top:
                top = lik.log_ratio[p, i]
        total = 0.0
        if top > -np.inf:
            for p in range(len(w)):
                if w[p] > 0.0:
                    total += w[p] * np.exp(lik.log_ratio[p, i] - top)
        lik.scratch[i] = np.log(lik.prior[i] * total) + top if total > 0.0 else -np.inf
    top = lik.scratch[:k].max()
    norm = 0.0
    for i in range(k):
        lik.weights[i] = np.exp(lik.scratch[i] - top)
        norm += lik.weights[i]
    for i in range(k):
        lik.weights[i] = (1.0 - lik.share) * lik.weights[i] / norm + lik.share / k


@njit(cache=True)
def _deck_draw(log: np.ndarray, e: int, hand: np.ndarray, stream: np.ndarray) -> int:
    """A card type drawn uniformly from the deck at event ``e`` given the opponent's hand there."""
    total = 0
    for t in range(NUM_CARD_TYPES):
        total += log[e, POOL + t] - hand[t]
    r = below(stream, total)
    for t in range(NUM_CARD_TYPES):
        r -= log[e, POOL + t] - hand[t]
        if r < 0:
            return t
    return NUM_CARD_TYPES - 1  # unreachable: r < total


@njit(cache=True)
def _holds_playable(hand: np.ndarray, colour: int, rank: int) -> bool:
    for t in range(NUM_CARD_TYPES):  # noqa: SIM110 (numba compiles the loop, not any() over a generator)
        if hand[t] > 0 and _PLAYABLE_TYPE[colour, rank, t]:
            return True
    return False


@njit(cache=True)
def _hand_before(log: np.ndarray, slots: np.ndarray, stop: int, hand: np.ndarray) -> None:
    """The opponent's hand just before event ``stop`` under one particle's ``slots``."""
    hand[:] = 0
    for e in range(stop):
        kind = log[e, KIND]
        if kind == SLOT_EVENT:
            hand[slots[log[e, SLOT]]] += 1
        elif kind == PLAY_EVENT:
            hand[log[e, CARD]] -= 1


@njit(cache=True)
def _apply(log: np.ndarray, e: int, slots: np.ndarray, hands: np.ndarray, w: np.ndarray, lik: Likelihood,
           stream: np.ndarray, legal: np.ndarray) -> float:
    """Event ``e`` for every live particle: draw its slot, or reweight it. Returns the total weight.

    A play with a learned model is weighed with the mixture of the prior and the weights learned so far, half and
    half (of the prior alone unless ``lik.adaptive``), logged with it, and adds to each particle's log ratios."""
    kind = log[e, KIND]
    learning = kind == PLAY_EVENT and lik.code == LEARNED_MODEL
    if learning:
        # Half the prior stays in the mixture (a defensive mixture): every candidate keeps particles on the
        # histories it explains, so one that gained weight early cannot starve the others of evidence.
        for k in range(len(lik.codes)):  # in place: no array made per play
            lik.mix[e, k] = 0.5 * (lik.prior[k] + lik.weights[k]) if lik.adaptive else lik.prior[k]
    total = 0.0
    for p in range(len(w)):
        if w[p] == 0.0:
            continue
        hand = hands[p]
        if kind == SLOT_EVENT:
            t = _deck_draw(log, e, hand, stream)
            slots[p, log[e, SLOT]] = t
            hand[t] += 1
        elif kind == OWN_DRAW:
            card = log[e, CARD]
            w[p] *= log[e, POOL + card] - hand[card]
        elif kind == PLAY_EVENT:
            like = _play_likelihood(lik, log, e, hand, legal)
            w[p] *= like
            if like > 0.0:
                hand[log[e, CARD]] -= 1
                if learning:
                    _add_log_ratios(lik, p, like)
        elif _holds_playable(hand, log[e, COLOUR], log[e, RANK]):
            w[p] = 0.0
        total += w[p]
    return total


@njit(cache=True)
def particle_ess(w: np.ndarray) -> float:
    """The effective sample size of single particles: the rows' formula with one particle a row."""
    return ess(np.ones(len(w), np.int64), w, len(w))


@njit(cache=True)
def _resample(w: np.ndarray, slots: np.ndarray, hands: np.ndarray, n_slots: int, slots_buf: np.ndarray,
              hands_buf: np.ndarray, lik: Likelihood, stream: np.ndarray) -> None:
    """Systematic resampling to N equally weighted particles (in place, through the buffers; the log ratios of
    a learned model go with their particles)."""
    n = len(w)
    sources = np.empty(n, np.int64)
    systematic_sources(w, uniform(stream), sources)
    for k in range(n):
        slots_buf[k, :n_slots] = slots[sources[k], :n_slots]
        hands_buf[k] = hands[sources[k]]
    slots[:, :n_slots] = slots_buf[:, :n_slots]
    hands[:] = hands_buf
    if lik.code == LEARNED_MODEL:
        for k in range(n):
            lik.ratio_buf[k] = lik.log_ratio[sources[k]]
        lik.log_ratio[:] = lik.ratio_buf
    w[:] = 1.0 / n


@njit(cache=True)
def _changed_factors(log: np.ndarray, start: int, stop: int, slots: np.ndarray, a: int, b: int, old: np.ndarray,
                     new: np.ndarray, lik: Likelihood, legal: np.ndarray) -> float:
    """Ratio of the posterior factors of events ``start..stop-1`` with hand ``new = old + b - a`` to ``old``.

    Both hands are advanced through the events; 0 as soon as the new hand contradicts an event.
    """
    ratio = 1.0
    for e in range(start, stop):
        kind = log[e, KIND]
        if kind in (SLOT_EVENT, OWN_DRAW):
            x = np.int64(slots[log[e, SLOT]]) if kind == SLOT_EVENT else log[e, CARD]
            if x in (a, b):
                after = log[e, POOL + x] - new[x]
                if after <= 0:
                    return 0.0
                ratio *= after / (log[e, POOL + x] - old[x])
            if kind == SLOT_EVENT:
                old[x] += 1
                new[x] += 1
        elif kind == PLAY_EVENT:
            after = _play_likelihood(lik, log, e, new, legal)
            if after == 0.0:
                return 0.0
            if lik.code not in (PLAIN_MODEL, RULE_MODEL):  # those give 1 to every hand that explains the play
                ratio *= after / _play_likelihood(lik, log, e, old, legal)
            card = log[e, CARD]
            old[card] -= 1
            new[card] -= 1
        elif _PLAYABLE_TYPE[log[e, COLOUR], log[e, RANK], b]:  # the new hand holds a b there
            return 0.0
    return ratio


@njit(cache=True)
def _move(history: History, n_events: int, n_slots: int, slots: np.ndarray, hand: np.ndarray, lik: Likelihood,
          stream: np.ndarray, buffers: Buffers) -> bool:
    """One Metropolis-Hastings move of one particle (``slots``, current ``hand``): replace or swap (the filter's
    module docstring)."""
    log, slot_events, old, new, legal = history.log, history.slot_events, buffers.old, buffers.new, buffers.legal
    if n_slots < 2 or uniform(stream) < 0.5:
        i = below(stream, n_slots)
        a = np.int64(slots[i])
        e_i = slot_events[i]
        _hand_before(log, slots, e_i, old)
        b = _deck_draw(log, e_i, old, stream)
        if b == a:
            return False
        new[:] = old
        old[a] += 1
        new[b] += 1
        ratio = _changed_factors(log, e_i + 1, n_events, slots, a, b, old, new, lik, legal)
        if ratio == 0.0 or (ratio < 1.0 and uniform(stream) >= ratio):
            return False
        slots[i] = b
        hand[:] = new
        return True
    i = below(stream, n_slots)
    j = below(stream, n_slots - 1)
    j += j >= i
    if j < i:
        i, j = j, i
    a, b = np.int64(slots[i]), np.int64(slots[j])
    if a == b:
        return False
    e_i, e_j = slot_events[i], slot_events[j]
    _hand_before(log, slots, e_i, old)
    if log[e_i, POOL + b] - old[b] <= 0:
        return False
    ratio = (log[e_i, POOL + b] - old[b]) / (log[e_i, POOL + a] - old[a])
    new[:] = old
    old[a] += 1
    new[b] += 1
    ratio *= _changed_factors(log, e_i + 1, e_j, slots, a, b, old, new, lik, legal)
    if ratio == 0.0:
        return False
    after = log[e_j, POOL + a] - new[a]
    if after <= 0:
        return False
    ratio *= after / (log[e_j, POOL + b] - old[b])
    if ratio < 1.0 and uniform(stream) >= ratio:
        return False
    slots[i], slots[j] = b, a
    return True


@njit(cache=True)
def move_all(history: History, n_events: int, n_slots: int, particles: Particles, lik: Likelihood, moves: int,
             stream: np.ndarray, buffers: Buffers, stats: np.ndarray) -> None:
    """``moves`` moves of every particle targeting the posterior of events ``0..n_events-1``."""
    if n_slots == 0:
        return
    slots, hands = particles.slots, particles.hands
    for p in range(len(hands)):
        moved = 0
        for _ in range(moves):
            moved += _move(history, n_events, n_slots, slots[p], hands[p], lik, stream, buffers)
        if moved and lik.code == LEARNED_MODEL:
            _log_ratios(history.log, n_events, slots[p], lik, p, buffers.old, buffers.legal)
        stats[ACCEPTED] += moved
        stats[PROPOSED] += moves


@njit(cache=True)
def _rejuvenate(history: History, n_events: int, n_slots: int, particles: Particles, lik: Likelihood, moves: int,
                stream: np.ndarray, buffers: Buffers, stats: np.ndarray) -> None:
    """Resample, then :func:`move_all`."""
    _resample(particles.w, particles.slots, particles.hands, n_slots, buffers.slots_buf, buffers.hands_buf, lik,
              stream)
    stats[RESAMPLES] += 1
    move_all(history, n_events, n_slots, particles, lik, moves, stream, buffers, stats)


@njit(cache=True)
def advance(history_fields: tuple, start: int, stop: int, particles_fields: tuple, lik_fields: tuple,
            schedule_fields: tuple, stream: np.ndarray, buffers_fields: tuple, stats: np.ndarray,
            evidence: np.ndarray) -> int:
    """Filter events ``start..stop-1``; returns -1, or the event no particle explains (weights as before it).

    ``evidence[0]`` accumulates the log of each event's mean likelihood (the sequential Monte Carlo estimate of
    the log-likelihood of the public history under the model, up to terms the same for every model). The
    ``*_fields`` are the fields of :class:`History`, :class:`Particles`, :class:`Likelihood`, :class:`Schedule` and
    :class:`Buffers` (module docstring)."""
    history, particles, lik = History(*history_fields), Particles(*particles_fields), Likelihood(*lik_fields)
    schedule, buffers = Schedule(*schedule_fields), Buffers(*buffers_fields)
    log, slots, hands, w, w_before = history.log, particles.slots, particles.hands, particles.w, buffers.w_before
    n = len(w)
    n_slots = 0
    for e in range(start):
        n_slots += log[e, KIND] == SLOT_EVENT
    for e in range(start, stop):
        w_before[:] = w
        total = _apply(log, e, slots, hands, w, lik, stream, buffers.legal)
        tries = 0
        while total == 0.0:
            w[:] = w_before
            if tries == schedule.retries:
                return e
            # The population still represents the posterior before e: moves diversify it, then e is retried.
            _rejuvenate(history, e, n_slots, particles, lik, schedule.moves, stream, buffers, stats)
            stats[RESCUES] += 1
            total = _apply(log, e, slots, hands, w, lik, stream, buffers.legal)
            tries += 1
        w /= total
        evidence[0] += np.log(total)
        if lik.code == LEARNED_MODEL and log[e, KIND] == PLAY_EVENT:
            _learn(lik, w)
        n_slots += log[e, KIND] == SLOT_EVENT
        if particle_ess(w) < schedule.threshold * n:
            _rejuvenate(history, e + 1, n_slots, particles, lik, schedule.moves, stream, buffers, stats)
    return -1


@njit(cache=True)
def summaries(hands: np.ndarray, w: np.ndarray, sets: np.ndarray, expected: np.ndarray,
               none: np.ndarray) -> None:
    """Weighted expected counts and ``P(holds no card of set k)`` for the (54 x K) boolean ``sets``."""
    expected[:] = 0.0
    none[:] = 0.0
    total = w.sum()
    for p in range(len(w)):
        if w[p] == 0.0:
            continue
        share = w[p] / total
        for t in range(NUM_CARD_TYPES):
            expected[t] += share * hands[p, t]
        for k in range(sets.shape[1]):
            held = False
            for t in range(NUM_CARD_TYPES):
                if sets[t, k] and hands[p, t] > 0:
                    held = True
                    break
            if not held:
                none[k] += share


@njit(cache=True)
def hand_marginals(hands: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``P(count of type t = x)`` of full hands: each particle's weight on its own counts. Not the lazy rows'
    marginals (:func:`uno_env.belief.lazy_answers.marginals`), which mix a hypergeometric law per row."""
    out = np.zeros((NUM_CARD_TYPES, 5))
    total = w.sum()
    for p in range(len(w)):
        for t in range(NUM_CARD_TYPES):
            out[t, min(hands[p, t], 4)] += w[p] / total
    return out
