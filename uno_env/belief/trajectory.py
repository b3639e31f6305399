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
the plain filter's posterior (docs/beliefs.md). The deck size is public, so the draw normalizers are constant.

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

from collections.abc import Callable

import numpy as np

from uno_env.belief.filters import ParticleBelief, check_particles, feature_sets_at
from uno_env.belief.learned import LearnedOpponent
from uno_env.belief.models import PLAIN_MODEL, OpponentModel
from uno_env.belief.sampling import seeded_stream
from uno_env.belief.tracker import Decision, PublicTracker
from uno_env.belief.trajectory_kernels import (
    ACTION,
    CARD,
    COLOUR,
    HAND,
    KIND,
    LOG_WIDTH,
    NO_PLAYABLE,
    OPP,
    OWN_DRAW,
    PLAY_EVENT,
    POOL,
    RANK,
    SLOT,
    SLOT_EVENT,
    Likelihood,
    advance,
    hand_marginals,
    particle_ess,
    summaries,
)
from uno_env.cards import NUM_CARD_TYPES, card_rank
from uno_env.view import PublicView


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
        self.n_particles = check_particles(n_particles)
        self.rng = rng
        self.model = model
        self.model_code = PLAIN_MODEL if model is None else model.code
        learned = isinstance(model, LearnedOpponent)
        self._codes = model.codes if learned else np.zeros(0, np.int64)
        self._prior = model.prior if learned else np.zeros(0)
        self._share = model.share if learned else 0.0
        self._adaptive = learned and model.proposal == "learned"
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
        #: The plain filter answering for the uniform candidate of a learned model with ``catch_all="plain"``.
        self._plain = ParticleBelief(n_particles, rng) if learned and model.catch_all == "plain" else None

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
        if self._plain is not None:
            self._plain.reset(view)

    def update(self, view: PublicView) -> None:
        """Apply the view's events (everything public since the previous call)."""
        for event in view.events:
            self._apply(event)
        self._verify(view)
        self._filter()
        self._features = None
        if self._plain is not None:
            self._plain.update(view)

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
        # The kernel takes its NamedTuples as plain tuples of their fields (trajectory_kernels' docstring).
        failed = advance((self._log, self._slot_events), self._done, self._events, self._particles_fields(),
                         tuple(self.likelihood), (self.moves, self.ess_threshold, self.retries), self._stream,
                         self._buffers_fields(), self._stats, self._evidence)
        self._done = self._events
        return failed

    def _particles_fields(self) -> tuple:
        """The fields of the kernels' :class:`~uno_env.belief.trajectory_kernels.Particles` (the slots grow)."""
        return self._slots, self._hands, self._w

    def _buffers_fields(self) -> tuple:
        """The fields of the kernels' :class:`~uno_env.belief.trajectory_kernels.Buffers`."""
        return self._w_before, self._slots_buf, self._hands_buf, self._old, self._new, self._legal

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
                          self._adaptive, self._log_ratio, self._ratio_buf, self._scratch)

    def _answer_weights(self) -> np.ndarray:
        """The particles' normalized weights in the answers. With a learned model, the Bayesian model average:
        particle ``p`` gets ``sum_k W_k v_k(p)``, ``v_k`` the self-normalized importance weights of candidate
        ``k``'s posterior (``w_p R_k(p)``; the particles target the mixtures logged with the plays), over the
        candidates the particles answer for (not the uniform one under ``catch_all="plain"``: :meth:`plain_share`)."""
        w = self._w / self._w.sum()
        usable = self._particle_candidates()
        if usable is None or not usable.any():
            return w
        with np.errstate(divide="ignore"):
            log_v = np.log(w)[:, None] + self._log_ratio[:, usable]
        v = np.exp(log_v - log_v.max(axis=0))
        v /= v.sum(axis=0)
        mixed = v @ (self._weights[usable] / self._weights[usable].sum())
        return mixed / mixed.sum()

    def _particle_candidates(self) -> np.ndarray | None:
        """Which candidates of a learned model the particles answer for (``None`` without a learned model): those
        some particle explains (a candidate none explains has weight s / K at most), less the uniform one when the
        plain filter answers for it."""
        if not isinstance(self.model, LearnedOpponent):
            return None
        usable = np.isfinite(np.where(self._w[:, None] > 0, self._log_ratio, -np.inf).max(axis=0))
        if self._plain is not None:
            usable[self.model.uniform] = False
        return usable

    def plain_share(self) -> float:
        """The weight of the plain filter's answer in this belief's answers: under a learned model with
        ``catch_all="plain"``, the uniform candidate's learned weight among the candidates the answers use (1 when
        the particles answer for none), else 0."""
        usable = self._particle_candidates()
        if self._plain is None or usable is None:
            return 0.0
        uniform = self._weights[self.model.uniform]
        return float(uniform / (uniform + self._weights[usable].sum()))

    def _mixed(self, particles: np.ndarray, plain: Callable[[], np.ndarray]) -> np.ndarray:
        """An answer linear in the belief: the particles' (``particles``) mixed with the plain filter's (``plain()``,
        asked only when it has weight) by :meth:`plain_share`."""
        share = self.plain_share()
        return particles if share == 0.0 else (1.0 - share) * particles + share * plain()

    def same_opponent_again(self) -> None:
        """Start the next game (:meth:`reset`) from the candidates' weights learned so far instead of the prior: the
        filter meets the same opponent again (a match of several games), so what the earlier games' plays said
        about how it chooses carries over (Bayes' rule across games, the hands of each game being new). Without a
        learned model there is nothing to carry."""
        if isinstance(self.model, LearnedOpponent):
            self._prior = self._weights.copy()

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
        return float(particle_ess(self._w))

    def hands(self) -> tuple[np.ndarray, np.ndarray]:
        """The particles' current hands (N x 54) and their normalized weights in the answers (read-only views); under
        a learned model with ``catch_all="plain"`` the answers also hold the plain filter's, by :meth:`plain_share`."""
        return self._hands, self._answer_weights()

    def features(self) -> np.ndarray:
        """The belief features (float32, :data:`~uno_env.belief.filters.FEATURE_NAMES` order): expected counts,
        then ``P(holds a card of the set)`` of each probability channel."""
        if self._features is None:
            sets = feature_sets_at(self.top, self.colour).astype(np.bool_)
            expected, none = np.zeros(NUM_CARD_TYPES), np.zeros(sets.shape[1])
            summaries(self._hands, self._answer_weights(), sets, expected, none)
            particles = np.concatenate((expected, np.clip(1.0 - none, 0.0, 1.0)))
            self._features = self._mixed(particles, lambda: self._plain.features()).astype(np.float32)
        return self._features.copy()

    def expected_counts(self) -> np.ndarray:
        """``E[count of each card type in the opponent's hand]``, float64 (54,)."""
        expected, none = np.zeros(NUM_CARD_TYPES), np.zeros(0)
        summaries(self._hands, self._answer_weights(), np.zeros((NUM_CARD_TYPES, 0), np.bool_), expected,
                   none)
        return self._mixed(expected, lambda: self._plain.expected_counts())

    def prob_none(self, sets: np.ndarray) -> np.ndarray:
        """``P(the hand holds no card of set k)`` for each column of the (54 x K) boolean ``sets``."""
        expected, none = np.zeros(NUM_CARD_TYPES), np.zeros(sets.shape[1])
        sets = np.ascontiguousarray(sets, dtype=np.bool_)
        summaries(self._hands, self._answer_weights(), sets, expected, none)
        return self._mixed(none, lambda: self._plain.states.prob_none(self._plain.pool, sets))

    def marginals(self) -> np.ndarray:
        """``P(count of type t = x)``, (54, 5) for x = 0..4."""
        return self._mixed(hand_marginals(self._hands, self._answer_weights()), lambda: self._plain.marginals())

    def log_prob(self, hand: np.ndarray) -> float:
        """``log P(opponent hand = hand)`` (54 counts): the weight of the particles holding exactly it."""
        match = (self._hands == np.asarray(hand)).all(axis=1)
        mass = self._mixed(self._answer_weights()[match].sum(), lambda: np.exp(self._plain.log_prob(hand)))
        return float(np.log(mass)) if mass > 0 else -np.inf

    def sample_hands(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` opponent hands (int64 rows of 54 counts) drawn from the particles by weight."""
        hands = self._hands[rng.choice(self.n_particles, size=n, p=self._answer_weights())]
        share = self.plain_share()
        if share > 0.0:  # each hand from the plain filter with its share's probability
            plain = rng.random(n) < share
            hands[plain] = self._plain.sample_hands(int(plain.sum()), rng)
        return hands
