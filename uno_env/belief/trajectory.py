"""Trajectory particles with resample-move: the policy-aware particle filter (seed 001's ``pi_2`` term).

The lazy filter (:mod:`uno_env.belief.lazy`) keeps each hypothesis about the *current* hand. A policy-aware
likelihood reads the whole hand at every opponent play, which turns the lazy rows into full hands, and full
hands that only get reweighted and resampled die out (particle impoverishment). Here each particle is instead
a hypothesis about the opponent's whole hidden *trajectory*: the type of every card it was ever dealt or drew
(its *slots*, in the order they left the deck). Its hand at any moment follows from the slots and the public
plays, so a particle can be changed anywhere in its past and re-checked against the whole public history.
That makes Markov chain Monte Carlo moves possible after each resampling (resample-move, Gilks and Berzuini
2001), which restore diversity while leaving the posterior exactly unchanged.

**The posterior.** Every card drawn from the deck (by either seat) is a uniform draw among the physical cards
the deck then holds, so a slot sequence ``x_1..x_S`` of the opponent has posterior weight

    pi(x) ∝ prod_slots (U_e[x_i] - H_e[x_i]) * prod_our draws c (U_e[c] - H_e[c])
            * prod_opponent plays [H_e[z] >= 1] pi_2(action | H_e) * prod_voluntary draws [H_e holds no playable]

where at each event ``e`` the pool ``U_e`` (unseen cards: deck and opponent hand, public) and the opponent's
hand ``H_e`` just before the event are known from the slots, so ``U_e - H_e`` is the deck by type and each
factor is the chance of drawing that card type. Without a model ``pi_2 = 1``; the hand marginal of this is
the plain filter's posterior (docs/BELIEF.md). The deck size is public, so the draw normalizers are constant.

**Forward step** (one event): slots are drawn from the deck (``U_e - H_e``, exactly the prior), so only our
draws, plays and voluntary draws reweight. When the effective sample size falls below ``threshold * N`` the
particles are resampled (systematic) and each makes ``moves`` Metropolis-Hastings moves targeting ``pi`` over
all events so far:

* *replace*: a uniformly chosen slot ``i`` gets a new type ``b`` drawn from the deck at its time,
  ``U - H`` there (the prior conditional, so that factor cancels); accepted with probability
  ``min(1, prod of the changed later factors)`` (the hand differs by ``+b - a`` from slot ``i`` on);
* *swap*: two uniformly chosen slots ``i < j`` exchange types (a symmetric proposal); the hand differs by
  ``+b - a`` between them only.

Each move leaves ``pi`` invariant (detailed balance), so resample-move stays exact in law. If no particle
explains an event, the population (still distributed as the posterior before it) is rejuvenated by
``retries`` rounds of resample-move and the event retried (``rescues``); if that fails, the history is replayed
with fresh particles (``recoveries``); if that fails too, the filter restarts from card counting at the current
view (``fallbacks``).

Randomness: the kernels draw from a splitmix64 stream (:func:`uno_env.core.below`) seeded from the tracker's
``numpy`` generator at ``reset``: the same seed gives the same particles.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from uno_env.belief.filters import feature_sets_at
from uno_env.belief.learned import LEARNED_MODEL, LearnedOpponent
from uno_env.belief.models import PLAIN_MODEL, RANDOM_MODEL, OpponentModel, action_likelihood
from uno_env.belief.sampling import ess, seeded_stream, systematic_sources
from uno_env.belief.tracker import Decision, PublicTracker
from uno_env.cards import NUM_CARD_TYPES, NUM_COLOURS, PLAYABLE, card_rank
from uno_env.core import below, uniform
from uno_env.view import PublicView

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
    #: Per particle, ``log prod_plays pi_k / pi_mix`` (N x K): its importance weight under candidate ``k``.
    log_ratio: np.ndarray
    #: Scratch: a copy of ``log_ratio`` while resampling (N x K), and each candidate's likelihood (K,).
    ratio_buf: np.ndarray
    scratch: np.ndarray


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

    A play with a learned model is weighed with the run's prior mixture, logged with it, and adds to each
    particle's log ratios."""
    kind = log[e, KIND]
    learning = kind == PLAY_EVENT and lik.code == LEARNED_MODEL
    if learning:
        lik.mix[e] = lik.prior
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
def _ess(w: np.ndarray) -> float:
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
            if lik.code in (RANDOM_MODEL, LEARNED_MODEL):  # the others give 1 to every hand that explains the play
                ratio *= after / _play_likelihood(lik, log, e, old, legal)
            card = log[e, CARD]
            old[card] -= 1
            new[card] -= 1
        elif _PLAYABLE_TYPE[log[e, COLOUR], log[e, RANK], b]:  # the new hand holds a b there
            return 0.0
    return ratio


@njit(cache=True)
def _move(log: np.ndarray, n_events: int, slot_events: np.ndarray, n_slots: int, slots: np.ndarray,
          hand: np.ndarray, lik: Likelihood, stream: np.ndarray, old: np.ndarray, new: np.ndarray,
          legal: np.ndarray) -> bool:
    """One Metropolis-Hastings move of one particle (``slots``, current ``hand``): replace or swap (module doc)."""
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
def _move_all(log: np.ndarray, n_events: int, slot_events: np.ndarray, n_slots: int, slots: np.ndarray,
              hands: np.ndarray, lik: Likelihood, moves: int, stream: np.ndarray, old: np.ndarray,
              new: np.ndarray,
              legal: np.ndarray, stats: np.ndarray) -> None:
    """``moves`` moves of every particle targeting the posterior of events ``0..n_events-1``."""
    if n_slots == 0:
        return
    for p in range(len(hands)):
        moved = 0
        for _ in range(moves):
            moved += _move(log, n_events, slot_events, n_slots, slots[p], hands[p], lik, stream, old, new, legal)
        if moved and lik.code == LEARNED_MODEL:
            _log_ratios(log, n_events, slots[p], lik, p, old, legal)
        stats[ACCEPTED] += moved
        stats[PROPOSED] += moves


@njit(cache=True)
def _rejuvenate(log: np.ndarray, n_events: int, slot_events: np.ndarray, n_slots: int, slots: np.ndarray,
                hands: np.ndarray, w: np.ndarray, lik: Likelihood, moves: int, stream: np.ndarray,
                slots_buf: np.ndarray,
                hands_buf: np.ndarray, old: np.ndarray, new: np.ndarray, legal: np.ndarray,
                stats: np.ndarray) -> None:
    """Resample, then :func:`_move_all`."""
    _resample(w, slots, hands, n_slots, slots_buf, hands_buf, lik, stream)
    stats[RESAMPLES] += 1
    _move_all(log, n_events, slot_events, n_slots, slots, hands, lik, moves, stream, old, new, legal, stats)


@njit(cache=True)
def _advance(log: np.ndarray, start: int, stop: int, slot_events: np.ndarray, slots: np.ndarray,
             hands: np.ndarray, w: np.ndarray, lik: Likelihood, moves: int, threshold: float, retries: int,
             stream: np.ndarray, w_before: np.ndarray, slots_buf: np.ndarray, hands_buf: np.ndarray,
             old: np.ndarray, new: np.ndarray, legal: np.ndarray, stats: np.ndarray, evidence: np.ndarray) -> int:
    """Filter events ``start..stop-1``; returns -1, or the event no particle explains (weights as before it).

    ``evidence[0]`` accumulates the log of each event's mean likelihood (the sequential Monte Carlo estimate of
    the log-likelihood of the public history under the model, up to terms the same for every model)."""
    n = len(w)
    n_slots = 0
    for e in range(start):
        n_slots += log[e, KIND] == SLOT_EVENT
    for e in range(start, stop):
        w_before[:] = w
        total = _apply(log, e, slots, hands, w, lik, stream, legal)
        tries = 0
        while total == 0.0:
            w[:] = w_before
            if tries == retries:
                return e
            # The population still represents the posterior before e: moves diversify it, then e is retried.
            _rejuvenate(log, e, slot_events, n_slots, slots, hands, w, lik, moves, stream, slots_buf, hands_buf,
                        old, new, legal, stats)
            stats[RESCUES] += 1
            total = _apply(log, e, slots, hands, w, lik, stream, legal)
            tries += 1
        w /= total
        evidence[0] += np.log(total)
        if lik.code == LEARNED_MODEL and log[e, KIND] == PLAY_EVENT:
            _learn(lik, w)
        n_slots += log[e, KIND] == SLOT_EVENT
        if _ess(w) < threshold * n:
            _rejuvenate(log, e + 1, slot_events, n_slots, slots, hands, w, lik, moves, stream, slots_buf,
                        hands_buf, old, new, legal, stats)
    return -1


@njit(cache=True)
def _summaries(hands: np.ndarray, w: np.ndarray, sets: np.ndarray, expected: np.ndarray,
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
def _marginals(hands: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``P(count of type t = x)`` of full hands: each particle's weight on its own counts. Not the lazy rows'
    marginals (:func:`uno_env.belief.lazy_answers.marginals`), which mix a hypergeometric law per row."""
    out = np.zeros((NUM_CARD_TYPES, 5))
    total = w.sum()
    for p in range(len(w)):
        for t in range(NUM_CARD_TYPES):
            out[t, min(hands[p, t], 4)] += w[p] / total
    return out


class TrajectoryBelief(PublicTracker):
    """The policy-aware particle filter: N trajectory particles with resample-move (module docstring).

    Args:
        n_particles: N.
        rng: the generator the kernels' stream is seeded from at each ``reset``.
        model: the opponent model (``code`` of :mod:`uno_env.belief.models`), a
            :class:`~uno_env.belief.learned.LearnedOpponent` (a mixture over candidate models whose weights the
            filter learns from the opponent's plays; ``model_weights()``), or ``None`` for the plain likelihood
            (the hand held the card it played).
        moves: Metropolis-Hastings moves per particle after each resampling.
        ess_threshold: resample when ESS < ``ess_threshold * N``.
        retries: rounds of resample-move before an event no particle explains counts as a recovery.

    ``stats()`` gives the counts of resamplings, rescues, proposed and accepted moves; ``recoveries`` and
    ``fallbacks`` count the replays and the restarts from counting.
    """

    def __init__(self, n_particles: int, rng: np.random.Generator,
                 model: OpponentModel | LearnedOpponent | None = None, moves: int = 40, ess_threshold: float = 0.5,
                 retries: int = 3) -> None:
        self.n_particles = n_particles
        self.rng = rng
        self.model = model
        self.model_code = PLAIN_MODEL if model is None else model.code
        learned = isinstance(model, LearnedOpponent)
        self._codes = model.codes if learned else np.zeros(0, np.int64)
        self._prior = model.prior if learned else np.zeros(0)
        self._share = model.share if learned else 0.0
        self._weights = self._prior.copy()
        self._start_weights = self._prior
        self._log_ratio = np.zeros((n_particles, len(self._codes)))
        self._ratio_buf = np.zeros_like(self._log_ratio)
        self._scratch = np.zeros(len(self._codes))
        self.moves = moves
        self.ess_threshold = ess_threshold
        self.retries = retries
        self.recoveries = 0
        self.fallbacks = 0
        self._stats = np.zeros(4, np.int64)
        self._evidence = np.zeros(1)
        self._old = np.zeros(NUM_CARD_TYPES, np.int64)
        self._new = np.zeros(NUM_CARD_TYPES, np.int64)
        self._legal = np.zeros(60, np.int64)
        self._w_before = np.zeros(n_particles)
        self._hands_buf = np.zeros((n_particles, NUM_CARD_TYPES), np.int64)
        self._features: np.ndarray | None = None

    # ------------------------------------------------------------------ tracking
    def reset(self, view: PublicView) -> None:
        """Start from the seat's view right after the deal (or a scenario's start)."""
        self._start(view)
        self._stream = seeded_stream(self.rng)
        self._start_weights = self._prior
        self._restart()
        self._forgotten = 0.0  # log-evidence of the events a fallback forgot
        self._run(fresh=True)
        self._features = None

    def update(self, view: PublicView) -> None:
        """Apply the view's events (everything public since the previous call)."""
        for event in view.events:
            self._apply(event)
        self._verify(view)
        self._filter()
        self._features = None

    def _restart(self, keep_from: int | None = None) -> None:
        """Forget the history before event ``keep_from`` (``None``: all of it): the opponent's hand is then a
        uniform subset of the pool (card counting), and the kept events follow."""
        if keep_from is None or keep_from == self._events:
            kept, size, pool = np.zeros((0, LOG_WIDTH), np.int64), self.opp_size, self.pool
        else:
            kept = self._log[keep_from:self._events].copy()
            size, pool = kept[0, HAND], kept[0, POOL:]
        self._log = np.zeros((64, LOG_WIDTH), np.int64)
        self._mix = np.zeros((64, len(self._codes)))
        self._slot_events = np.zeros(16, np.int64)
        self._events = self._slots_used = 0
        self._slots = np.zeros((self.n_particles, 16), np.int8)
        self._slots_buf = np.zeros_like(self._slots)
        deal = np.zeros(LOG_WIDTH, np.int64)
        deal[KIND], deal[POOL:] = SLOT_EVENT, pool
        for i in range(size):
            deal[HAND] = i
            self._append(deal)
        self._deal_size = int(size)
        for row in kept:
            self._append(row)

    def _append(self, row: np.ndarray) -> None:
        """Add an event row to the log (a slot gets the next slot index)."""
        if self._events == len(self._log):
            self._log = np.vstack((self._log, np.zeros_like(self._log)))
            self._mix = np.vstack((self._mix, np.zeros_like(self._mix)))
        self._log[self._events] = row
        if row[KIND] == SLOT_EVENT:
            if self._slots_used == len(self._slot_events):
                self._slot_events = np.concatenate((self._slot_events, np.zeros_like(self._slot_events)))
                grown = np.zeros((self.n_particles, 2 * self._slots.shape[1]), np.int8)
                grown[:, :self._slots.shape[1]] = self._slots
                self._slots, self._slots_buf = grown, np.zeros_like(grown)
            self._log[self._events, SLOT] = self._slots_used
            self._slot_events[self._slots_used] = self._events
            self._slots_used += 1
        self._events += 1

    def _event(self, kind: int, card: int = 0, action: int = 0, decision: Decision | None = None,
               drawn: int = 0) -> None:
        """Log a public event at the current public state (``drawn``: cards of the same draw logged before)."""
        row = np.zeros(LOG_WIDTH, np.int64)
        row[KIND], row[CARD], row[ACTION] = kind, card, action
        row[COLOUR], row[RANK] = self.colour, card_rank(self.top)
        row[OPP] = 0 if decision is None else decision.opponent_hand_size
        row[HAND] = self.opp_size + drawn
        row[POOL:] = self.pool
        self._append(row)

    def _run(self, fresh: bool = False) -> int:
        """Filter the events not filtered yet (all of them with fresh particles); -1, or the index of the
        event no particle explains."""
        if fresh:
            self._hands = np.zeros((self.n_particles, NUM_CARD_TYPES), np.int64)
            self._w = np.ones(self.n_particles)
            self._done = 0
            self._evidence[0] = 0.0
            self._weights[:] = self._start_weights
            self._log_ratio[:] = 0.0
        failed = _advance(self._log, self._done, self._events, self._slot_events, self._slots, self._hands, self._w,
                          self.likelihood, self.moves, self.ess_threshold, self.retries, self._stream,
                          self._w_before, self._slots_buf, self._hands_buf, self._old, self._new, self._legal,
                          self._stats, self._evidence)
        self._done = self._events
        return failed

    def _filter(self) -> None:
        """Filter the new events; on depletion replay the history, else forget it (module docstring)."""
        if self._run() < 0:
            return
        failed = self._run(fresh=True)
        if failed < 0:
            self.recoveries += 1
            return
        self.fallbacks += 1
        while failed >= 0:
            # Card counting at the event no particle explains; an event that even counting cannot explain (input
            # that contradicts itself) is dropped.
            # The evidence keeps the events before the failed one; the failed event, which none of N particles
            # explained, is charged the Monte Carlo bound 1/N (its likelihood may be 0: a model that is wrong).
            self._forgotten += self._evidence[0] - np.log(self.n_particles)
            self._start_weights = self._weights.copy()  # what was learned of the opponent is kept
            self._restart(failed + 1 if failed == self._deal_size else failed)
            failed = self._run(fresh=True)

    # Hooks of PublicTracker: each public event becomes a row of the log (the pool is still before the event).
    def _own_draw(self, card: int) -> None:
        self._event(OWN_DRAW, card)

    def _opp_play(self, card: int, action: int, decision: Decision) -> None:
        self._event(PLAY_EVENT, card, action, decision)

    def _opp_draw(self, count: int, playable: tuple[int, ...] | None) -> None:
        if playable is not None:
            self._event(NO_PLAYABLE)
        for drawn in range(count):
            self._event(SLOT_EVENT, drawn=drawn)

    # ------------------------------------------------------------------ answers
    @property
    def likelihood(self) -> Likelihood:
        """The opponent model as the kernels take it (its arrays are the filter's own)."""
        return Likelihood(self.model_code, self._codes, self._mix, self._weights, self._share, self._start_weights,
                          self._log_ratio, self._ratio_buf, self._scratch)

    def _answer_weights(self) -> np.ndarray:
        """The particles' normalized weights in the answers. With a learned model, the Bayesian model average:
        particle ``p`` gets ``sum_k W_k v_k(p)``, ``v_k`` the self-normalized importance weights of candidate
        ``k``'s posterior (``w_p R_k(p)``; the particles target the prior mixture)."""
        w = self._w / self._w.sum()
        if not isinstance(self.model, LearnedOpponent):
            return w
        with np.errstate(divide="ignore"):
            log_v = np.log(w)[:, None] + self._log_ratio
        top = log_v.max(axis=0)
        usable = np.isfinite(top)  # a candidate no particle explains has weight s / K at most: dropped here
        v = np.exp(log_v[:, usable] - top[usable])
        v /= v.sum(axis=0)
        mixed = v @ (self._weights[usable] / self._weights[usable].sum())
        return mixed / mixed.sum()

    def model_weights(self) -> np.ndarray | None:
        """The learned weights of the candidate models (``model.candidates`` order) given the public history so far;
        ``None`` unless the model is a :class:`~uno_env.belief.learned.LearnedOpponent`."""
        return self._weights.copy() if isinstance(self.model, LearnedOpponent) else None

    def play_weights(self) -> np.ndarray | None:
        """The candidates' weights in force at each opponent play the filter remembers (plays x K, in order): the
        mixture each play was weighed with. ``None`` unless the model is learned. After a fallback, the plays before
        the restart are forgotten (``fallbacks``)."""
        if not isinstance(self.model, LearnedOpponent):
            return None
        plays = self._log[:self._done, KIND] == PLAY_EVENT
        return self._mix[:self._done][plays].copy()

    @property
    def log_evidence(self) -> float:
        """Estimated log-likelihood of the public history under the model (up to a model-free constant).

        After a fallback it is the estimate up to the event no particle explained, ``log(1/N)`` for that event
        (the resolution of N particles) and the estimate from the restart at card counting on."""
        return float(self._forgotten + self._evidence[0])

    def stats(self) -> dict[str, int]:
        """Resamplings, rescues (events retried after extra moves), proposed and accepted moves since creation."""
        return dict(zip(("resamples", "rescues", "proposed", "accepted"), self._stats.tolist(), strict=True))

    @property
    def ess(self) -> float:
        """Current effective sample size."""
        return float(_ess(self._w))

    def hands(self) -> tuple[np.ndarray, np.ndarray]:
        """The particles' current hands (N x 54) and normalized weights (read-only views)."""
        return self._hands, self._answer_weights()

    def features(self) -> np.ndarray:
        """The belief features (float32, :data:`~uno_env.belief.filters.FEATURE_NAMES` order): expected counts,
        then ``P(holds a card of the set)`` of each probability channel."""
        if self._features is None:
            sets = feature_sets_at(self.top, self.colour).astype(np.bool_)
            expected, none = np.zeros(NUM_CARD_TYPES), np.zeros(sets.shape[1])
            _summaries(self._hands, self._answer_weights(), sets, expected, none)
            self._features = np.concatenate((expected, np.clip(1.0 - none, 0.0, 1.0))).astype(np.float32)
        return self._features.copy()

    def expected_counts(self) -> np.ndarray:
        """``E[count of each card type in the opponent's hand]``, float64 (54,)."""
        expected, none = np.zeros(NUM_CARD_TYPES), np.zeros(0)
        _summaries(self._hands, self._answer_weights(), np.zeros((NUM_CARD_TYPES, 0), np.bool_), expected,
                   none)
        return expected

    def prob_none(self, sets: np.ndarray) -> np.ndarray:
        """``P(the hand holds no card of set k)`` for each column of the (54 x K) boolean ``sets``."""
        expected, none = np.zeros(NUM_CARD_TYPES), np.zeros(sets.shape[1])
        _summaries(self._hands, self._answer_weights(), np.ascontiguousarray(sets, dtype=np.bool_), expected,
                   none)
        return none

    def marginals(self) -> np.ndarray:
        """``P(count of type t = x)``, (54, 5) for x = 0..4."""
        return _marginals(self._hands, self._answer_weights())

    def log_prob(self, hand: np.ndarray) -> float:
        """``log P(opponent hand = hand)`` (54 counts): the weight of the particles holding exactly it."""
        match = (self._hands == np.asarray(hand)).all(axis=1)
        mass = self._answer_weights()[match].sum()
        return float(np.log(mass)) if mass > 0 else -np.inf

    def sample_hands(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` opponent hands (int64 rows of 54 counts) drawn from the particles by weight."""
        return self._hands[rng.choice(self.n_particles, size=n, p=self._answer_weights())].copy()
