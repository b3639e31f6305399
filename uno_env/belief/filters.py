"""The belief trackers: no belief, card counting, and the particle filter.

All three implement the :class:`Belief` interface the environment and the planner use: ``reset`` with the
seat's view right after the deal, ``update`` with each later view of that seat, then ``features``,
``expected_counts``, ``sample_hands`` (and ``marginals`` / ``log_prob`` for the quality measure).
"""

from __future__ import annotations

import math
from typing import Any, Protocol

import numpy as np
from numba import njit

from uno_env.belief.combinatorics import K_OFFSET, LOG_COMB
from uno_env.belief.lazy import Depleted, HandStates, seeded_stream
from uno_env.belief.lazy_events import apply_events, encode_events
from uno_env.belief.tracker import Decision, PublicTracker, pool_of
from uno_env.cards import (
    COLOURS,
    COPIES,
    NUM_CARD_TYPES,
    NUM_COLOURED_RANKS,
    PLAYABLE,
    WILD,
    WILD_DRAW4,
    card_name,
    card_rank,
    short_repr,
)
from uno_env.view import Event, PublicView


def _feature_sets() -> np.ndarray:
    """(54 x 5) card-type sets of the fixed probability channels: each colour plus the wilds, and the wilds."""
    sets = np.zeros((NUM_CARD_TYPES, 5), dtype=bool)
    for colour in range(4):
        sets[colour * NUM_COLOURED_RANKS:(colour + 1) * NUM_COLOURED_RANKS, colour] = True
    sets[[WILD, WILD_DRAW4], :] = True
    return sets


_FIXED_SETS = _feature_sets()


def _position_sets() -> dict[tuple[int, int], np.ndarray]:
    """Per (colour in force, top rank): the (54 x 6) float sets of the probability channels, the playable types last."""
    out = {}
    for colour in range(4):
        for rank in range(NUM_COLOURED_RANKS + 2):
            sets = np.zeros((NUM_CARD_TYPES, 6))
            sets[:, :5] = _FIXED_SETS
            sets[list(PLAYABLE[colour][rank]), 5] = 1.0
            out[colour, rank] = sets
    return out


_POSITION_SETS = _position_sets()


# The same sets as one dense bool array (colour, top rank, type, set) that compiled code can index.
_SETS_TABLE = np.array([[_POSITION_SETS[colour, rank] > 0 for rank in range(NUM_COLOURED_RANKS + 2)]
                        for colour in range(4)])
_COPIES = np.array(COPIES, dtype=np.int64)
# No features wanted from a compiled update (ParticleBelief._replay_compiled).
_NO_FEATURES = np.empty(0, np.float32)


@njit(cache=True)
def counting_features_into(hand: np.ndarray, discard: np.ndarray, opponent_hand_size: int, colour: int,
                           top_rank: int, out: np.ndarray) -> None:
    """Card counting's features (:data:`FEATURE_NAMES` order) into ``out`` (float32, 60), compiled.

    The unseen pool is ``COPIES - hand - discard`` (54 counts each); the opponent's ``n`` cards are a uniform
    subset of it, so ``E[count of t] = n * U_t / |U|`` and ``P(no card of set S) = C(|U| - U_S, n) / C(|U|, n)``.
    The one definition: :class:`CountingBelief` and the native vector env
    (:func:`uno_env.observation.counting_state_features_into`) both call it.
    """
    sets = _SETS_TABLE[colour, top_rank]
    n = opponent_hand_size
    total = 0
    for card in range(NUM_CARD_TYPES):
        total += _COPIES[card] - hand[card] - discard[card]
    log_all = LOG_COMB[total, n + K_OFFSET]
    for s in range(sets.shape[1]):
        outside = total
        for card in range(NUM_CARD_TYPES):
            if sets[card, s]:
                outside -= _COPIES[card] - hand[card] - discard[card]
        out[NUM_CARD_TYPES + s] = min(max(1.0 - math.exp(LOG_COMB[outside, n + K_OFFSET] - log_all), 0.0), 1.0)
    for card in range(NUM_CARD_TYPES):
        out[card] = n * (_COPIES[card] - hand[card] - discard[card]) / total if total else 0.0


def feature_sets_at(top: int, colour: int) -> np.ndarray:
    """(54 x 6) card-type sets of the probability channels in a position (read-only, shared)."""
    return _POSITION_SETS[colour, card_rank(top)]


#: Names of the belief feature channels, in order (see :data:`BELIEF_FEATURES` and docs/beliefs.md).
FEATURE_NAMES: tuple[str, ...] = (
    tuple(f"expected_count[{card_name(t)}]" for t in range(NUM_CARD_TYPES))
    + tuple(f"can_play[{colour}]" for colour in COLOURS)
    + ("holds_wild", "can_play_top")
)
#: Length of :meth:`Belief.features` for ``"counting"`` and ``"particles"``.
BELIEF_FEATURES = len(FEATURE_NAMES)


def belief_features(states: HandStates, pool: np.ndarray, top: int, colour: int) -> np.ndarray:
    """The feature vector (float32, :data:`FEATURE_NAMES` order) of a set of hypotheses in a position.

    * 0-53 ``expected_count[card]``: expected number of copies of the type in the opponent's hand (0-4);
    * 54-57 ``can_play[colour]``: probability that the opponent holds a card of that colour or a wild,
      i.e. could play if that colour were in force (and no rank matched);
    * 58 ``holds_wild``: probability that it holds a wild or a wild draw four;
    * 59 ``can_play_top``: probability that it holds a card playable on the current top card and colour.
    """
    out = np.empty(BELIEF_FEATURES, np.float32)
    states.features_into(pool, _SETS_TABLE[colour, card_rank(top)], out)
    return out


#: The most particles a filter keeps: a filter holds about 110 bytes per particle, so this bound is some tens of
#: megabytes, far past where more particles help (docs/beliefs.md), while a mistyped count could ask for gigabytes.
MAX_PARTICLES = 100_000


def check_particles(n_particles: Any) -> int:
    """``n_particles`` as an int, if it is one in 1..:data:`MAX_PARTICLES`; else ``ValueError`` naming it and the range.

    The one check of a particle count: the filters make it as they are built, and so do the places that take a count
    for the trackers they build later (an env, a seat's observer, a policy's ``needs``, the search player), so a bad
    one is refused before the first reset.
    """
    if not isinstance(n_particles, int | np.integer) or isinstance(n_particles, bool) \
            or not 1 <= n_particles <= MAX_PARTICLES:
        raise ValueError(f"n_particles must be an int in 1..{MAX_PARTICLES:,}, got {short_repr(n_particles)}")
    return int(n_particles)


class Belief(Protocol):
    """The interface of every belief tracker (see the package docstring)."""

    def reset(self, view: PublicView) -> None: ...

    def update(self, view: PublicView) -> None: ...

    def features(self) -> np.ndarray: ...

    def expected_counts(self) -> np.ndarray: ...

    def sample_hands(self, n: int, rng: np.random.Generator) -> np.ndarray: ...


class NoBelief:
    """``belief="none"``: tracks nothing; its feature vector is empty."""

    def reset(self, view: PublicView) -> None:
        """Nothing to track."""

    def update(self, view: PublicView) -> None:
        """Nothing to track."""

    def features(self) -> np.ndarray:
        """An empty float32 vector."""
        return np.zeros(0, dtype=np.float32)

    def expected_counts(self) -> np.ndarray:
        """Not available without a belief."""
        raise RuntimeError("belief='none' tracks nothing; use 'counting' or 'particles' for expected counts")

    def sample_hands(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """Not available without a belief."""
        raise RuntimeError("belief='none' tracks nothing; use 'counting' or 'particles' to sample hands")


class _StatesBelief:
    """What card counting and the particle filter share: answers read from ``self.states``."""

    states: HandStates
    pool: np.ndarray
    top: int
    colour: int
    _features: np.ndarray | None

    def features(self) -> np.ndarray:
        """The belief feature vector (float32, :data:`BELIEF_FEATURES`), documented in :func:`belief_features`."""
        if self._features is None:
            self._features = belief_features(self.states, self.pool, self.top, self.colour)
        return self._features.copy()

    def expected_counts(self) -> np.ndarray:
        """``E[count of each card type in the opponent's hand]``, float64 (54,)."""
        return self.states.expected_counts(self.pool)

    def marginals(self) -> np.ndarray:
        """``P(count of type t = x)``, (54, 5) for x = 0..4."""
        return self.states.marginals(self.pool)

    def log_prob(self, hand: np.ndarray) -> float:
        """``log P(opponent hand = hand)`` (54 counts)."""
        return self.states.log_prob(self.pool, hand)

    def sample_hands(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` opponent hands (int64 rows of 54 counts) drawn from the belief."""
        return self.states.sample(self.pool, n, rng)


class CountingBelief(_StatesBelief):
    """Exact card counting: the opponent's hand is a uniformly random subset of the unseen cards.

    The unseen pool is every card in neither our hand nor the discard pile (deck and opponent hand);
    marginals are hypergeometric: ``E[count of t] = n * U_t / |U|`` and
    ``P(no card of set S) = C(|U| - U_S, n) / C(|U|, n)``. It ignores what the opponent's actions reveal,
    which makes it the baseline every other belief must beat.
    """

    def __init__(self) -> None:
        self._features = None

    def reset(self, view: PublicView) -> None:
        """Start from the view after the deal."""
        self.update(view)

    def update(self, view: PublicView) -> None:
        """Recompute from the view (the belief depends only on the current public state)."""
        self.hand = np.asarray(view.hand, dtype=np.int64)
        self.discard = np.asarray(view.discard, dtype=np.int64)
        self.pool = pool_of(self.hand, self.discard)
        self.top, self.colour = view.top, view.active_colour
        self.hand_size = view.opponent_hand_size
        self._features = None

    @property
    def states(self) -> HandStates:
        """Counting's one hypothesis (built on demand: the features need only the closed forms)."""
        return HandStates.uniform(self.hand_size, 1)

    def features(self) -> np.ndarray:
        """The belief features (:func:`belief_features`) from the closed forms (:func:`counting_features_into`).

        The general :class:`HandStates` path gives the same numbers; the closed forms skip its per-row
        machinery, since counting is on every env step of a ``belief="counting"`` learner.
        """
        if self._features is None:
            self._features = np.empty(BELIEF_FEATURES, dtype=np.float32)
            counting_features_into(self.hand, self.discard, self.hand_size, self.colour, card_rank(self.top),
                                   self._features)
        return self._features.copy()


class ParticleBelief(PublicTracker, _StatesBelief):
    """The particle filter of the framework note, with Rao-Blackwellized (lazy) particles.

    Particles are hypotheses about the opponent's hand stored as :class:`~uno_env.belief.lazy.HandStates`
    (duplicate rows of the ``(N x 54)`` particle array merged). Every public event updates them exactly
    (see docs/beliefs.md for each case): opponent plays, voluntary draws (it held no playable card),
    forced draws, our own draws (the drawn card was in the deck), reshuffles. Weights are likelihoods;
    when the effective sample size falls below ``ess_threshold * N`` the particles are resampled
    (systematic resampling). If every particle becomes impossible, the filter re-runs the whole recorded
    event history with fresh particles (``recoveries``); if that fails too, it restarts from card counting
    at the current position and continues (``fallbacks``). It never raises for that reason nor yields NaN.

    Its likelihood is the plain one (a play says the hand held the card): a policy-aware likelihood reads
    whole hands, which the lazy rows cannot keep; that filter is :class:`~uno_env.belief.trajectory.TrajectoryBelief`.

    Randomness: the compiled updates draw from a splitmix64 stream seeded from ``rng`` at each ``reset``
    (:func:`~uno_env.belief.lazy.seeded_stream`): the same seed gives the same particles.

    Args:
        n_particles: N.
        rng: the generator its random stream is seeded from.
        lazy: ``False`` resolves every particle to a full hand after each event: the plain filter of the note
            (kept to measure what the lazy representation buys).
        ess_threshold: resample when ESS < ``ess_threshold * N``.
    """

    #: Replay a view's events in one compiled call (:mod:`uno_env.belief.lazy_events`), the same particles as the
    #: hooks make one event at a time; a subclass that overrides ``_apply`` or the hooks sets it False.
    _compiled_replay = True

    def __init__(self, n_particles: int, rng: np.random.Generator, lazy: bool = True,
                 ess_threshold: float = 0.5) -> None:
        self.n_particles = check_particles(n_particles)
        self.rng = rng
        self.lazy = lazy
        self.ess_threshold = ess_threshold
        self.recoveries = 0
        self.fallbacks = 0
        self._public_only = False
        self._features = None
        self._features_asked = False
        self._out = np.empty(BELIEF_FEATURES, np.float32)

    def reset(self, view: PublicView) -> None:
        """Start from the seat's view right after the deal (or a scenario's start)."""
        self._start(view)
        self._stream = seeded_stream(self.rng)
        self._initial = self._snapshot()
        self._history: list[Event] = []
        self._fresh_particles(self.n_particles)
        self._features = None

    def update(self, view: PublicView) -> None:
        """Apply the view's events (everything public since the previous call)."""
        events = view.events
        encoded = encode_events(events) if self._compiled_replay and self.lazy else None
        self._features = None
        if encoded is None:
            for event in events:
                self._replay(event)
        else:
            self._replay_compiled(events, *encoded)
        self._verify(view)

    def features(self) -> np.ndarray:
        """The belief feature vector (float32, :data:`BELIEF_FEATURES`), documented in :func:`belief_features`.

        A caller that asks for them after an update (the env, at every step) gets the next update's computed in
        its compiled call (:meth:`_replay_compiled`); one that never asks (a planner) never pays for them.
        """
        self._features_asked = True
        return super().features()

    def _replay(self, event: Event) -> None:
        """One event through the hooks, recovering if it kills every particle."""
        try:
            self._step(event)
        except Depleted:
            self._recover(event)
        self._history.append(event)

    def _replay_compiled(self, events: list[Event], heads: np.ndarray, cards: np.ndarray) -> None:
        """:meth:`_replay` of every event, in one compiled call (:func:`~uno_env.belief.lazy_events.apply_events`)
        until an event kills every particle; that one recovers through the hooks, then the call goes on."""
        out = self._out if self._features_asked else _NO_FEATURES
        self._features_asked = False
        done = 0
        while True:
            if self._target > len(self.states.cnt_buf):  # a resampling would need more room: the hooks make it
                for event in events[done:]:
                    self._replay(event)
                return
            stop = self._apply_compiled(heads, cards, done, out)
            self._history += events[done:stop]
            if stop == len(events):
                if len(out):
                    self._features = out
                return
            self._recover(events[stop])  # the event that killed every particle, as in _replay
            self._history.append(events[stop])
            done = stop + 1

    @property
    def ess(self) -> float:
        """Current effective sample size."""
        return self.states.ess()

    # ------------------------------------------------------------------ filtering
    def _fresh_particles(self, particles: int) -> None:
        self._target = particles
        self.states = HandStates.uniform(self.opp_size, particles, self._stream)
        if not self.lazy:
            self.states.resolve(self.pool)

    def _step(self, event: Event) -> None:
        self._reweighted = False
        self._apply(event)
        if not self.lazy:
            self.states.resolve(self.pool)
        # Only a reweighting lowers the ESS (splits, resolutions and merges keep every particle's weight), and
        # after each check it is at least the threshold: an event that reweighted nothing needs no check.
        if self._reweighted:
            self.states.resample_below(self._target, self.ess_threshold * self._target)

    def _own_draw(self, card: int) -> None:
        if not self._public_only:
            self.states.own_draw(self.pool, card)
            self._reweighted = True

    def _opp_play(self, card: int, action: int, decision: Decision) -> None:
        if self._public_only:
            return
        self.states.resolve_type(self.pool, card, require=True, remove=True)
        self._reweighted = True

    def _opp_draw(self, count: int, playable: tuple[int, ...] | None) -> None:
        if self._public_only:
            return
        if playable is not None:
            self.states.constrain(self.pool, playable)
            self._reweighted = True
        self.states.draw(self.pool, count)

    def _reshuffle(self, added: np.ndarray) -> None:
        # The lazy subsets are uniform over the unseen copies before the reshuffle, not over the cards the
        # discard pile adds, so they are resolved first; afterwards every domain is empty and merges into one.
        if not self._public_only:
            self.states.resolve(self.pool)

    # ------------------------------------------------------------------ recovery
    def _recover(self, failed: Event) -> None:
        """Every particle died at ``failed``: re-run the history with fresh particles, else restart from counting."""
        events = [*self._history, failed]
        for particles in (self.n_particles, 4 * self.n_particles):
            self._restore(self._initial)
            self._fresh_particles(particles)
            if not self._rerun(events):
                continue
            if particles != self.n_particles:
                self._target = self.n_particles
                self.states.resample(self.n_particles)
            self.recoveries += 1
            return
        self.fallbacks += 1
        self._restore(self._initial)
        self._replay_public(self._history)
        self._fresh_particles(self.n_particles)
        before = self._snapshot()
        try:
            self._step(failed)
        except Depleted:  # inconsistent input: take counting's belief after the event
            self._restore(before)
            self._replay_public([failed])
            self._fresh_particles(self.n_particles)

    def _rerun(self, events: list[Event]) -> bool:
        """Apply ``events`` to the fresh particles of a recovery, without recovering; False if one kills them all.

        In one compiled call when the update would make it (a long history replayed event by event spent as long
        in the calls as in the kernels), else through the hooks."""
        encoded = encode_events(events) if self._compiled_replay and self.lazy else None
        if encoded is None:
            try:
                for event in events:
                    self._step(event)
            except Depleted:
                return False
            return True
        return self._apply_compiled(*encoded, 0, _NO_FEATURES) == len(events)

    def _apply_compiled(self, heads: np.ndarray, cards: np.ndarray, first: int, out: np.ndarray) -> int:
        """:func:`~uno_env.belief.lazy_events.apply_events` on this filter from event ``first``: the public state
        taken back, the number of events applied in all returned."""
        states = self.states
        # The fields of lazy_events' LazyRows, Tracked, Events, Public and Resampling, as plain tuples.
        stop, self.top, self.colour, self.pending, self.opp_size, self.deck_size, self.my_size = apply_events(
            states._args, (self.pool, self.my_hand, self.discard), (heads, cards), first,
            (self.top, self.colour, self.pending, self.opp_size, self.deck_size, self.my_size), states.stream,
            (self._target, self.ess_threshold * self._target), _SETS_TABLE, out)
        return stop

    def _replay_public(self, events: list[Event]) -> None:
        """Replay events into the public state only, leaving the particles alone."""
        self._public_only = True
        try:
            for event in events:
                self._apply(event)
        finally:
            self._public_only = False
