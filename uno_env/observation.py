"""Encoding one seat's public view (plus optional belief features) as arrays.

The flat observation is the concatenation of these channels, in this order (all float32):

============================  ====  ==========================================================
channel                       size  meaning
============================  ====  ==========================================================
``hand``                        54  copies of each card type in the seat's hand (0-4)
``legal``                       61  1 where the action is legal now (the action mask)
``top``                         54  one-hot of the top card's type
``active_colour``                4  one-hot of the colour in force (red, green, blue, yellow)
``pending_draw``                 2  [a +2 is pending, a +4 is pending] against this seat
``opponent_cards``               7  one-hot of the opponent's hand size: 1, 2, ..., 6, 7 or more
``sizes``                        4  own hand, opponent hand, deck, discard pile sizes, each / 108
``discard``                     54  copies of each card type in the discard pile
``unseen``                      54  copies of each type neither in the hand nor in the discard pile
                                    (they are in the deck or the opponent's hand: card counting)
``belief``                       B  only with a belief tracker: see :mod:`uno_env.belief`
============================  ====  ==========================================================

``opponent_cards`` exists because "the opponent has one card left" changes what a good player does,
and a scaled size alone makes that a tiny difference in one input.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from numba import njit

from uno_env import core
from uno_env.belief import (
    BELIEF_FEATURES,
    BELIEF_KINDS,
    BeliefKind,
    check_particles,
    counting_features_into,
    make_belief,
)
from uno_env.cards import COPIES, DECK_SIZE, DRAW_ACTION, NUM_ACTIONS, NUM_CARD_TYPES
from uno_env.game import Game
from uno_env.view import PublicView

_COPIES = np.array(COPIES, dtype=np.float32)
_COPY_COUNTS = np.array(COPIES, dtype=np.int32)
_ONES = np.ones

#: (name, size, upper bound per entry) of every channel without beliefs, in flat order.
BASE_CHANNELS: tuple[tuple[str, int, np.ndarray], ...] = (
    ("hand", NUM_CARD_TYPES, _COPIES),
    ("legal", NUM_ACTIONS, _ONES(NUM_ACTIONS, np.float32)),
    ("top", NUM_CARD_TYPES, _ONES(NUM_CARD_TYPES, np.float32)),
    ("active_colour", 4, _ONES(4, np.float32)),
    ("pending_draw", 2, _ONES(2, np.float32)),
    ("opponent_cards", 7, _ONES(7, np.float32)),
    ("sizes", 4, _ONES(4, np.float32)),
    ("discard", NUM_CARD_TYPES, _COPIES),
    ("unseen", NUM_CARD_TYPES, _COPIES),
)
BASE_SIZE = sum(size for _, size, _ in BASE_CHANNELS)
_OFFSET = {}
_start = 0
for _name, _size, _ in BASE_CHANNELS:
    _OFFSET[_name] = _start
    _start += _size
del _start, _name, _size
_LEGAL, _TOP, _COLOUR, _PENDING = _OFFSET["legal"], _OFFSET["top"], _OFFSET["active_colour"], _OFFSET["pending_draw"]
_OPPONENT_CARDS, _SIZES = _OFFSET["opponent_cards"], _OFFSET["sizes"]
_DISCARD, _UNSEEN = _OFFSET["discard"], _OFFSET["unseen"]
#: Where the ``legal`` channel sits in the flat encoding: the action mask as 0/1 floats (draw alone outside the turn).
LEGAL_CHANNEL = slice(_LEGAL, _LEGAL + NUM_ACTIONS)


class Scalars(NamedTuple):
    """The numbers of a seat's view that :func:`encode_into` encodes (what :class:`PublicView` calls them)."""

    top: int  # the top card's id
    colour: int  # the colour in force
    pending_draw: int  # 0, 2 or 4
    hand_size: int
    opponent_hand_size: int
    deck_size: int
    discard_size: int


# Inlined into each kernel that encodes (numba's inline="always"), as are mask_into and encode_seat_into: the
# compiled envs encode at every step, and a call costs there.
@njit(inline="always")
def encode_into(counts: np.ndarray, hand_at: int, discard_at: int, legal: np.ndarray, n_legal: int, view: Scalars,
                out: np.ndarray) -> None:
    """Write the flat encoding (without belief features, see the module table) into ``out[:BASE_SIZE]`` (float32).

    The one definition of the encoding: :func:`encode_base` calls it for a :class:`PublicView`, and
    :func:`encode_state_into` for the kernels' packed state. ``counts[hand_at:hand_at + 54]`` and
    ``counts[discard_at:discard_at + 54]`` are the hand's and the discard pile's counts (offsets, not slices: a slice
    is an array view, whose reference count numba updates with atomic instructions, which cost the vector env about
    a tenth of its step), ``legal[:n_legal]`` the legal actions (``n_legal`` 0 outside the seat's turn). Only kernels
    call it, so it takes the :class:`Scalars` NamedTuple itself.
    """
    # The count channels are written whole; only the channels between them, set sparsely, are cleared first.
    out[NUM_CARD_TYPES:_DISCARD] = 0.0
    for card in range(NUM_CARD_TYPES):
        # Counts are 0..4, so through int32: the conversion to float32 is the same number, and twice as fast as
        # from int64 (the vector env encodes every game at every step).
        held, discarded = np.int32(counts[hand_at + card]), np.int32(counts[discard_at + card])
        out[card] = held
        out[_DISCARD + card] = discarded
        out[_UNSEEN + card] = np.int32(_COPY_COUNTS[card] - held - discarded)  # numba's int32 sums are int64
    # The action mask is never all zero, so neither is this channel: draw stands in outside the seat's turn.
    if n_legal == 0:
        out[_LEGAL + DRAW_ACTION] = 1.0
    for i in range(n_legal):
        out[_LEGAL + legal[i]] = 1.0
    out[_TOP + view.top] = 1.0
    out[_COLOUR + view.colour] = 1.0
    if view.pending_draw:
        out[_PENDING + (view.pending_draw >> 2)] = 1.0  # 2 -> index 0, 4 -> index 1
    if view.opponent_hand_size:
        out[_OPPONENT_CARDS + min(view.opponent_hand_size, 7) - 1] = 1.0
    out[_SIZES] = view.hand_size / DECK_SIZE
    out[_SIZES + 1] = view.opponent_hand_size / DECK_SIZE
    out[_SIZES + 2] = view.deck_size / DECK_SIZE
    out[_SIZES + 3] = view.discard_size / DECK_SIZE


# Where encode_base's packed bytes (_encode_packed) hold each part: the two count vectors, the scalars, the legal ids.
_PACKED_DISCARD = NUM_CARD_TYPES
_PACKED_SCALARS = 2 * NUM_CARD_TYPES
_PACKED_LEGAL = _PACKED_SCALARS + 7


def encode_base(view: PublicView) -> np.ndarray:
    """The flat float32 encoding of a public view, without belief features (see the module table)."""
    obs = np.empty(BASE_SIZE, dtype=np.float32)
    # Every value the encoding reads fits a byte (counts at most 4, sizes at most 108, ids at most 60), and
    # bytes() turns a list of small ints into a buffer several times faster than np.array makes an int64 array:
    # one conversion and a two-argument call instead of three conversions and every value its own argument (an env
    # step encodes every time, so this is on its hot path).
    packed = bytes(view.hand + view.discard + [view.top, view.active_colour, view.pending_draw, view.hand_size,
                                               view.opponent_hand_size, view.deck_size, view.discard_size]
                   + view.legal_actions)
    _encode_packed(np.frombuffer(packed, dtype=np.uint8), obs)
    return obs


@njit(cache=True)
def _encode_packed(packed: np.ndarray, out: np.ndarray) -> None:
    """:func:`encode_into` on :func:`encode_base`'s bytes: hand, discard, then top, colour, pending draw, the four
    sizes, then the legal actions."""
    s = _PACKED_SCALARS
    scalars = Scalars(packed[s], packed[s + 1], packed[s + 2], packed[s + 3], packed[s + 4], packed[s + 5],
                      packed[s + 6])
    encode_into(packed, 0, _PACKED_DISCARD, packed[_PACKED_LEGAL:], len(packed) - _PACKED_LEGAL, scalars, out)


@njit(inline="always")
def mask_into(legal: np.ndarray, n_legal: int, mask: np.ndarray) -> None:
    """The int8 action mask of ``legal[:n_legal]`` written into ``mask``: the ``legal`` channel's values, so "draw"
    alone outside the seat's turn (after the game), and never all zero. The native vector env hands it out as
    ``info["action_mask"]``."""
    mask[:] = 0
    for k in range(n_legal):
        mask[legal[k]] = 1
    if n_legal == 0:
        mask[DRAW_ACTION] = 1


@njit(cache=True)
def encode_state_into(state: np.ndarray, legal: np.ndarray, n_legal: int, out: np.ndarray) -> None:
    """:func:`encode_into` for the seat to move of a kernel state (:mod:`uno_env.core`), ``legal[:n_legal]`` its
    legal actions: what :func:`encode_base` gives for that seat's view of the same game."""
    encode_seat_into(state, state[core.CURRENT], legal, n_legal, out)


@njit(inline="always")
def encode_seat_into(state: np.ndarray, seat: int, legal: np.ndarray, n_legal: int, out: np.ndarray) -> None:
    """:func:`encode_into` for ``seat`` of a kernel state, to move or not (``n_legal`` 0 outside its turn, as
    after the game): what :func:`encode_base` gives for that seat's view of the same game."""
    hand = core.HANDS + NUM_CARD_TYPES * seat
    view = Scalars(top=state[core.DISCARD + state[core.DISCARD_LEN] - 1], colour=state[core.COLOUR],
                   pending_draw=state[core.PENDING], hand_size=state[core.HAND_SIZES + seat],
                   opponent_hand_size=state[core.HAND_SIZES + 1 - seat], deck_size=state[core.DECK_LEN],
                   discard_size=state[core.DISCARD_LEN])
    encode_into(state, hand, core.COUNTS, legal, n_legal, view, out)


@njit(cache=True)
def counting_state_features_into(state: np.ndarray, seat: int, out: np.ndarray) -> None:
    """The ``belief="counting"`` features of ``seat``'s view of a kernel state, written into ``out`` (float32, 60):
    :func:`uno_env.belief.counting_features_into` (the one definition) on the state's counts."""
    hand = core.HANDS + NUM_CARD_TYPES * seat
    counting_features_into(state[hand:hand + NUM_CARD_TYPES], state[core.COUNTS:core.COUNTS + NUM_CARD_TYPES],
                           state[core.HAND_SIZES + 1 - seat], state[core.COLOUR], state[core.TOP_RANK], out)


class SeatObserver:
    """Follows one seat through a game: hands out its views and encodes them, keeping its belief tracker.

    Every view of the seat must pass through :meth:`observe` (once per decision of the seat, and once
    at the end of the game), because the belief tracker learns from the events each view carries.

    Args:
        belief: ``"none"``, ``"counting"`` or ``"particles"`` (see :mod:`uno_env.belief`).
        n_particles: particle count for ``belief="particles"``.
        dict_obs: encode as a dict of named 1-D channels instead of one flat vector.
    """

    def __init__(self, belief: BeliefKind = "none", n_particles: int = 1000, dict_obs: bool = False) -> None:
        if belief not in BELIEF_KINDS:
            raise ValueError(f"belief must be 'none', 'counting' or 'particles', got {belief!r}")
        self.belief_kind = belief
        self.n_particles = check_particles(n_particles)
        self.dict_obs = dict_obs
        self.tracker: Any = None
        self.belief_size = 0 if belief == "none" else BELIEF_FEATURES
        #: Set by a game that computes counting's features from its own state (the single env's compiled path,
        #: :class:`uno_env.single.CompiledGame`): :meth:`start` then builds no tracker, which nothing would feed.
        self.reads_state = False

    def channels(self) -> list[tuple[str, int, np.ndarray]]:
        """(name, size, upper bound) of every channel this observer emits, in flat order."""
        channels = list(BASE_CHANNELS)
        if self.belief_size:
            # Belief features are expected counts (at most 4 copies of a type) and probabilities.
            channels.append(("belief", self.belief_size, np.full(self.belief_size, 4.0, np.float32)))
        return channels

    def start(self, game: Game, seat: int, rng: np.random.Generator) -> None:
        """Begin a game: call right after the deal, before anyone moved."""
        if self.belief_kind == "none" or self.reads_state:
            return
        # No opponent model: a learner's features must not depend on who it plays, and the policy-aware filter
        # costs tens of milliseconds per view (docs/benchmarks.md, "Belief cost"), far beyond an env step.
        self.tracker = make_belief(self.belief_kind, n_particles=self.n_particles, rng=rng)
        self.tracker.reset(game.observe(seat))

    def observe(self, game: Game, seat: int) -> PublicView:
        """The seat's next view, with this observer's encoder attached and the belief updated."""
        view = game.observe(seat)
        self.update(view)
        view.encoder = self.encode
        return view

    def update(self, view: PublicView) -> None:
        """Feed the belief tracker the seat's next view (:meth:`observe` does; the single env's compiled path, which
        has no :class:`~uno_env.game.Game` to observe, builds the view from its kernel state and calls this)."""
        if self.tracker is not None:
            self.tracker.update(view)

    def encode(self, view: PublicView) -> np.ndarray | dict[str, np.ndarray]:
        """Encode a view (flat vector or dict of channels, as configured)."""
        return self.arrange(encode_base(view), self.belief_features())

    def belief_features(self) -> np.ndarray | None:
        """The tracker's features after the last view observed (float32), ``None`` without belief features."""
        return self.tracker.features().astype(np.float32) if self.tracker is not None else None

    def arrange(self, base: np.ndarray, belief: np.ndarray | None = None) -> np.ndarray | dict[str, np.ndarray]:
        """The observation of a base encoding and belief features: flat, or a dict of views into them by channel."""
        if not self.dict_obs:
            return base if belief is None else np.concatenate((base, belief))
        out = {name: base[_OFFSET[name]:_OFFSET[name] + size] for name, size, _ in BASE_CHANNELS}
        if belief is not None:
            out["belief"] = belief
        return out
