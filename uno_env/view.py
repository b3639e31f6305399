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
from itertools import chain, compress
from operator import getitem
from typing import Any

import numpy as np

from uno_env.cards import CARD_NAMES, COLOURS, COPIES, DRAW_ACTION, NUM_ACTIONS

PLAY, DRAW, RESHUFFLE = 0, 1, 2
Event = tuple[int, int, int, Any]

#: The seats of an env's game: the learner (the agent) is seat 0, its opponent seat 1 (every env, the records).
AGENT, OPPONENT = 0, 1
#: Outcome codes, relative to the viewer: the viewer won, the other seat won, a drawn game.
WIN, LOSS, DRAWN = 0, 1, -1
_PLAYER_NAMES = ("agent", "opponent")
#: ``info["winner"]`` and a game record's winner for each outcome code: the one table of the outcome's names.
WINNER_NAMES = {WIN: "agent", LOSS: "opponent", DRAWN: "draw"}
#: What each winner scores the agent in a win rate: a drawn game counts half, as in the evaluations' pair scores.
WINNER_SCORES = {WINNER_NAMES[WIN]: 1.0, WINNER_NAMES[LOSS]: 0.0, WINNER_NAMES[DRAWN]: 0.5}
# _NAMES_BY_COUNT[card][k]: the card's name k times, so a hand's names take one lookup per card type held (the
# info dict is built at every env step).
_NAMES_BY_COUNT = tuple(tuple((name,) * count for count in range(max(COPIES) + 1)) for name in CARD_NAMES)
_DRAW_ONLY = (DRAW_ACTION,)


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
        return action_mask(self.legal_actions)

    @property
    def hand_names(self) -> list[str]:
        """The seat's cards as RULES.md names, grouped by card type."""
        return card_names(self.hand)

    def to_info(self) -> dict[str, Any]:
        """The RULES.md ``info`` dictionary (card names, ``"agent"`` meaning this seat)."""
        return public_info(self.action_mask, self.hand_names, self.top, self.active_colour, self.opponent_hand_size,
                           self.deck_size, self.discard_size, self.pending_draw, self.events, self.outcome)


def action_mask(legal_actions: list[int]) -> np.ndarray:
    """The int8 mask over the 61 actions of ``legal_actions``; only draw (60) when there are none."""
    # Set in a bytearray and viewed as int8: a few times cheaper than numpy's fancy indexing with a short list.
    mask = bytearray(NUM_ACTIONS)
    for action in legal_actions or _DRAW_ONLY:
        mask[action] = 1
    return np.frombuffer(mask, dtype=np.int8)


def card_names(counts: list[int]) -> list[str]:
    """The cards of 54 counts as RULES.md names, grouped by card type."""
    # The held types' name tuples (compress) at their counts (the non-zero counts, in the same order), joined:
    # all in C loops, a few times cheaper than a comprehension over the 54 types at every env step.
    return list(chain.from_iterable(map(getitem, compress(_NAMES_BY_COUNT, counts), filter(None, counts))))


def public_info(mask: np.ndarray, hand_names: list[str], top: int, active_colour: int, opponent_hand_size: int,
                deck_size: int, discard_size: int, pending_draw: int, events: list[Event],
                outcome: int | None) -> dict[str, Any]:
    """The RULES.md ``info`` dictionary of one seat's public view, from its fields (:meth:`PublicView.to_info`; the
    single env's compiled path, :mod:`uno_env.single`, which has the same fields without building a view)."""
    info: dict[str, Any] = {
        "action_mask": mask,
        "hand": hand_names,
        "top": CARD_NAMES[top],
        "active_colour": COLOURS[active_colour],
        "opponent_hand_size": opponent_hand_size,
        "deck_size": deck_size,
        "discard_size": discard_size,
        "pending_draw": pending_draw,
        "events": [event_to_dict(event) for event in events],
    }
    if outcome is not None:
        info["winner"] = WINNER_NAMES[outcome]
        info["is_success"] = outcome == WIN
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
