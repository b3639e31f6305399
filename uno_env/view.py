"""What one seat may see of a game: :class:`PublicView`, and public events.

A view is a snapshot built by :meth:`uno_env.game.Game.observe`. It holds only what RULES.md lets that
seat see (own hand, sizes, the discard multiset, top card, colour, pending draw, public events), so
anything that consumes views (policies, belief trackers, encoders) cannot read hidden state by
construction: there is no reference back to the game.

Events are tuples, oldest first, with seats given relative to the viewer (0 = the viewer, 1 = the
other seat):

* ``(PLAY, player, card_type, colour_in_force_after)``
* ``(DRAW, player, count, cards)``: ``cards`` is the tuple of card types drawn, in draw order, when
  ``player`` is the viewer, and ``None`` for the other seat's draws;
* ``(RESHUFFLE, -1, 0, None)``: the discard pile except its top card went back into the deck.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from uno_env.cards import CARD_NAMES, COLOURS, DRAW_ACTION, NUM_ACTIONS

PLAY, DRAW, RESHUFFLE = 0, 1, 2
Event = tuple[int, int, int, Any]

#: Outcome codes, relative to the viewer: the viewer won, the other seat won, a drawn game.
WIN, LOSS, DRAWN = 0, 1, -1
_PLAYER_NAMES = ("agent", "opponent")
_WINNER_NAMES = {WIN: "agent", LOSS: "opponent", DRAWN: "draw"}


@dataclass(slots=True)
class PublicView:
    """One seat's public view of the game at one moment (RULES.md, "What each player sees").

    Card quantities are lists of 54 counts indexed by card type. ``legal_actions`` is empty unless
    it is this seat's turn in a running game. ``outcome`` is ``None`` while the game runs, else
    :data:`WIN`, :data:`LOSS` or :data:`DRAWN` from this seat's side.

    ``observation`` is the seat's encoded observation; it is computed on first access by the
    encoder the owner of the view attached, so policies that do not need it pay nothing.
    """

    hand: list[int]
    hand_size: int
    opponent_hand_size: int
    deck_size: int
    discard: list[int]
    discard_size: int
    top: int
    active_colour: int
    pending_draw: int
    to_move: bool
    legal_actions: list[int]
    events: list[Event]
    outcome: int | None
    encoder: Callable[[PublicView], Any] | None = field(default=None, repr=False)
    _observation: Any = field(default=None, repr=False)

    @property
    def observation(self) -> Any:
        """The seat's encoded observation (needs an encoder attached by the env)."""
        if self._observation is None:
            if self.encoder is None:
                raise RuntimeError("this view has no encoder attached, so it has no encoded observation")
            self._observation = self.encoder(self)
        return self._observation

    @property
    def action_mask(self) -> np.ndarray:
        """int8 mask over the 61 actions. Never all zero: outside this seat's turn only draw (60) is set."""
        mask = np.zeros(NUM_ACTIONS, dtype=np.int8)
        if self.legal_actions:
            mask[self.legal_actions] = 1
        else:
            mask[DRAW_ACTION] = 1
        return mask

    @property
    def hand_names(self) -> list[str]:
        """The seat's cards as RULES.md names, grouped by card type."""
        return [name for name, count in zip(CARD_NAMES, self.hand, strict=True) if count for _ in range(count)]

    def to_info(self) -> dict[str, Any]:
        """The RULES.md ``info`` dictionary (card names, ``"agent"`` meaning this seat)."""
        info: dict[str, Any] = {
            "action_mask": self.action_mask,
            "hand": self.hand_names,
            "top": CARD_NAMES[self.top],
            "active_colour": COLOURS[self.active_colour],
            "opponent_hand_size": self.opponent_hand_size,
            "deck_size": self.deck_size,
            "discard_size": self.discard_size,
            "pending_draw": self.pending_draw,
            "events": [event_to_dict(event) for event in self.events],
        }
        if self.outcome is not None:
            info["winner"] = _WINNER_NAMES[self.outcome]
            info["is_success"] = self.outcome == WIN
        return info


def event_to_dict(event: Event) -> dict[str, Any]:
    """A public event as the RULES.md ``info["events"]`` dictionary."""
    kind, player, value, extra = event
    if kind == PLAY:
        return {"player": _PLAYER_NAMES[player], "kind": "play", "card": CARD_NAMES[value],
                "colour": COLOURS[extra]}
    if kind == DRAW:
        out: dict[str, Any] = {"player": _PLAYER_NAMES[player], "kind": "draw", "count": value}
        if extra is not None:
            out["cards"] = [CARD_NAMES[card] for card in extra]
        return out
    return {"kind": "reshuffle"}
