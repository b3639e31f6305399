"""Replaying one seat's public event stream: the public quantities every belief needs.

A belief tracker is fed only :class:`~uno_env.view.PublicView` objects of its own seat: the views carry no
reference to the game, so hidden state cannot leak in. :class:`PublicTracker` replays the view's events
one by one, keeping the state they imply at each moment (the top card and colour in force when the
opponent drew, the pool of unseen cards when we drew), and calls one hook per belief-relevant event:

* ``_own_draw(card)``: we drew ``card`` (the pool still holds it);
* ``_opp_play(card, action, decision)``: the opponent played ``card`` (the pool still holds it);
* ``_opp_draw(count, playable)``: the opponent drew ``count`` unseen cards; ``playable`` is the tuple of
  card types it was shown not to hold (a voluntary draw means no playable card), ``None`` for a forced draw;
* ``_reshuffle(added)``: the discard pile except its top card (``added``, 54 counts) joins the deck.

A turn skipped by a Skip/Reverse/+2/+4 of ours produces no opponent event and needs no hook. After the
events, the replayed state is checked against the view, so a skipped ``update`` call raises instead of
silently corrupting the belief.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from uno_env.cards import COPIES, DRAW2, NUM_CARD_TYPES, PLAYABLE, WILD, WILD_DRAW4, card_rank, play_action
from uno_env.view import DRAW, PLAY, RESHUFFLE, Event, PublicView

_COPIES = np.array(COPIES, dtype=np.int64)


def pool_of(hand: np.ndarray, discard: np.ndarray) -> np.ndarray:
    """The unseen cards (deck and opponent hand together) of a seat holding ``hand`` over the ``discard`` pile, 54
    counts each."""
    return _COPIES - hand - discard


@dataclass(frozen=True, slots=True)
class Decision:
    """The public side of an opponent decision, as the opponent saw it (its hand is the unknown).

    ``opponent_hand_size`` is the tracking seat's hand size (the opponent's opponent).
    """

    top: int
    active_colour: int
    hand_size: int
    opponent_hand_size: int
    deck_size: int

    @property
    def playable(self) -> tuple[int, ...]:
        """Card types playable in this position."""
        return PLAYABLE[self.active_colour][card_rank(self.top)]


class PublicTracker:
    """Base class of the belief trackers: replays public events and calls the hooks (module docstring)."""

    pool: np.ndarray
    my_hand: np.ndarray
    my_size: int
    discard: np.ndarray
    top: int
    colour: int
    pending: int
    opp_size: int
    deck_size: int

    def _start(self, view: PublicView) -> None:
        """Take the public state of a view (right after the deal or at a scenario's start)."""
        self.my_hand = np.asarray(view.hand, dtype=np.int64).copy()
        self.my_size = int(self.my_hand.sum())  # kept as an int: summing the array at every decision cost more
        self.discard = np.asarray(view.discard, dtype=np.int64).copy()
        self.pool = pool_of(self.my_hand, self.discard)
        self.top, self.colour, self.pending = view.top, view.active_colour, view.pending_draw
        self.opp_size, self.deck_size = view.opponent_hand_size, view.deck_size

    def _snapshot(self) -> tuple:
        return (self.my_hand.copy(), self.discard.copy(), self.pool.copy(), self.top, self.colour, self.pending,
                self.opp_size, self.deck_size)

    def _restore(self, snapshot: tuple) -> None:
        (my_hand, discard, pool, self.top, self.colour, self.pending, self.opp_size, self.deck_size) = snapshot
        self.my_hand, self.discard, self.pool = my_hand.copy(), discard.copy(), pool.copy()
        self.my_size = int(self.my_hand.sum())

    def _decision(self) -> Decision:
        return Decision(self.top, self.colour, self.opp_size, self.my_size, self.deck_size)

    def _apply(self, event: Event) -> None:
        """Replay one public event: call the hook, then update the public state."""
        kind, player, value, extra = event
        if kind == PLAY:
            card, colour = value, extra
            if player == 1:
                self._opp_play(card, play_action(card, colour), self._decision())
                self.pool[card] -= 1
                self.opp_size -= 1
            else:
                self.my_hand[card] -= 1
                self.my_size -= 1
            self.discard[card] += 1
            self.top, self.colour = card, colour
            self.pending = 2 if card < WILD and card % 13 == DRAW2 else (4 if card == WILD_DRAW4 else 0)
        elif kind == DRAW:
            if player == 0:
                for card in extra:
                    self._own_draw(card)
                    self.pool[card] -= 1
                    self.my_hand[card] += 1
                    self.my_size += 1
                    self.deck_size -= 1
            else:
                playable = None if self.pending else PLAYABLE[self.colour][card_rank(self.top)]
                self._opp_draw(value, playable)
                self.opp_size += value
                self.deck_size -= value
            self.pending = 0
        elif kind == RESHUFFLE:
            added = self.discard.copy()
            added[self.top] -= 1
            self._reshuffle(added)
            self.pool += added
            self.deck_size += int(added.sum())
            self.discard = np.zeros(NUM_CARD_TYPES, np.int64)
            self.discard[self.top] = 1
        else:
            raise ValueError(f"unknown event kind in {event!r}")

    def _verify(self, view: PublicView) -> None:
        """Raise ``ValueError`` if the replayed public state differs from the view's."""
        # Compared as lists: np.array_equal would first turn each 54-long list of the view into an array, which
        # cost a particle filter's env step more than some of its compiled updates.
        same = ((self.top, self.colour, self.opp_size, self.deck_size)
                == (view.top, view.active_colour, view.opponent_hand_size, view.deck_size)
                and self.my_hand.tolist() == list(view.hand) and self.discard.tolist() == list(view.discard))
        if not same:
            raise ValueError("belief tracker out of sync with the view: every view of the seat (each decision and "
                             "the game end) must be passed to update() exactly once, after reset() at the deal")

    # Hooks: no-ops here, so a tracker implements only the ones it needs.
    def _own_draw(self, card: int) -> None:
        """We drew ``card``."""

    def _opp_play(self, card: int, action: int, decision: Decision) -> None:
        """The opponent played ``card`` with ``action`` at ``decision``."""

    def _opp_draw(self, count: int, playable: tuple[int, ...] | None) -> None:
        """The opponent drew ``count`` cards; it held none of ``playable`` (``None``: forced draw)."""

    def _reshuffle(self, added: np.ndarray) -> None:
        """The discard pile except its top card, ``added``, joined the deck."""
