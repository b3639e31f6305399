"""The rules engine: two-player UNO exactly as RULES.md states it, with no Gymnasium in sight.

:class:`Game` holds the hidden state (both hands, the deck order, the discard pile), applies actions
of the seat to move, records public events, and hands each seat its :class:`~uno_env.view.PublicView`.
Seats are 0 and 1; environments put the learner on seat 0. The only randomness is the
``numpy.random.Generator`` given at construction (deals and reshuffles), so a seeded generator
replays the same game.

Hot-path choices: hands are lists of 54 counts, the deck is a list drawn from its end, and the
playable card types for each (colour, rank) on top are precomputed, so a step allocates almost nothing.
What a play or a draw does to the turn, the pending draw and the outcome is decided by the rule functions of
:mod:`uno_env.core`, whose compiled twins drive the kernels (search rollouts): one definition of each rule.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from uno_env.cards import (
    CARD_NAMES,
    COPIES,
    DECK_SIZE,
    DRAW2,
    DRAW_ACTION,
    HAND_SIZE,
    NUM_ACTIONS,
    NUM_CARD_TYPES,
    PLAYABLE,
    WILD,
    WILD_DRAW4,
    action_card,
    action_colour,
    action_name,
    card_actions,
    card_colour,
    card_id,
    card_rank,
    colour_id,
    full_deck,
)
from uno_env.core import RUNNING, after_play, draw_impossible_outcome, draw_plan
from uno_env.view import DRAW, DRAWN, PLAY, RESHUFFLE, Event, PublicView

_FULL_DECK_ARRAY = np.array(full_deck(), dtype=np.int64)
_CARD_ACTIONS = tuple(card_actions(card) for card in range(NUM_CARD_TYPES))
_RANK = tuple(card_rank(card) for card in range(NUM_CARD_TYPES))


class IllegalActionError(ValueError):
    """An action that is not legal for the seat to move (see RULES.md, "A turn")."""


class Game:
    """Hidden state and transitions of one two-player UNO game.

    Build one with :meth:`deal` (a fresh shuffled game) or :meth:`from_scenario` (a given position).
    ``outcome`` is ``None`` while the game runs, then the winning seat (0 or 1) or ``-1`` for a draw.
    """

    __slots__ = (
        "hands", "hand_sizes", "deck", "discard", "discard_counts", "active_colour", "top_rank",
        "pending_draw", "current", "outcome", "events", "_cursors", "rng",
    )

    def __init__(
        self,
        hands: Sequence[Sequence[int]],
        deck_top_last: list[int],
        discard: list[int],
        active_colour: int,
        to_move: int,
        pending_draw: int,
        rng: np.random.Generator,
    ) -> None:
        self.hands = [list(hands[0]), list(hands[1])]
        self.hand_sizes = [sum(self.hands[0]), sum(self.hands[1])]
        self.deck = deck_top_last  # deck[-1] is the next card drawn
        self.discard = discard  # discard[-1] is the top card
        self.discard_counts = [0] * NUM_CARD_TYPES
        for card in discard:
            self.discard_counts[card] += 1
        self.active_colour = active_colour
        self.top_rank = _RANK[discard[-1]]
        self.pending_draw = pending_draw
        self.current = to_move
        self.outcome: int | None = None
        self.events: list[tuple[int, int, int, Any]] = []  # seats absolute here
        self._cursors = [0, 0]
        self.rng = rng

    # ------------------------------------------------------------------ construction
    @classmethod
    def deal(cls, rng: np.random.Generator, first_player: int = 0) -> Game:
        """Shuffle, deal 7 cards each, turn up a non-wild starting card (RULES.md, "Set-up")."""
        deck = _FULL_DECK_ARRAY[rng.permutation(DECK_SIZE)].tolist()  # one gather, Python ints for the hot path
        hands = [[0] * NUM_CARD_TYPES, [0] * NUM_CARD_TYPES]
        for _ in range(HAND_SIZE):
            for seat in (0, 1):
                hands[seat][deck.pop()] += 1
        while deck[-1] >= WILD:  # a wild may not start the pile: put it back, reshuffle, turn again
            rng.shuffle(deck)
        top = deck.pop()
        return cls(hands, deck, [top], card_colour(top), first_player, 0, rng)

    @classmethod
    def from_scenario(cls, scenario: Mapping[str, Any], rng: np.random.Generator) -> Game:
        """Start from a RULES.md scenario; seat 0 is ``"agent"``. Raises ``ValueError`` naming the problem."""
        return cls(*_parse_scenario(scenario), rng=rng)

    # ------------------------------------------------------------------ queries
    @property
    def done(self) -> bool:
        """True once the game is over."""
        return self.outcome is not None

    @property
    def top(self) -> int:
        """The top card type of the discard pile."""
        return self.discard[-1]

    def legal_actions(self) -> list[int]:
        """Legal action ids of the seat to move, ascending; empty once the game is over."""
        if self.outcome is not None:
            return []
        if self.pending_draw:
            return [DRAW_ACTION]
        hand = self.hands[self.current]
        actions = [a for card in PLAYABLE[self.active_colour][self.top_rank] if hand[card]
                   for a in _CARD_ACTIONS[card]]
        if not actions:
            return [DRAW_ACTION]
        actions.sort()
        return actions

    def is_legal(self, action: int) -> bool:
        """Whether ``action`` is legal for the seat to move, without building the legal list."""
        if self.outcome is not None or not 0 <= action < NUM_ACTIONS:
            return False
        if action == DRAW_ACTION:
            return self.pending_draw > 0 or self.legal_actions() == [DRAW_ACTION]
        card = action_card(action)
        if self.pending_draw or not self.hands[self.current][card]:
            return False
        return card in PLAYABLE[self.active_colour][self.top_rank]

    def observe(self, seat: int, *, consume_events: bool = True) -> PublicView:
        """The public view of ``seat``; by default its event cursor moves past the events returned."""
        other = 1 - seat
        start = self._cursors[seat]
        events: list[Event] = []
        for kind, player, value, extra in self.events[start:]:
            if kind == DRAW and player != seat:
                extra = None
            events.append((kind, 0 if player == seat else (1 if player == other else -1), value, extra))
        if consume_events:
            self._cursors[seat] = len(self.events)
        outcome = self.outcome
        if outcome is not None and outcome != DRAWN:
            outcome = 0 if outcome == seat else 1
        to_move = self.current == seat and self.outcome is None
        return PublicView(
            hand=list(self.hands[seat]),
            hand_size=self.hand_sizes[seat],
            opponent_hand_size=self.hand_sizes[other],
            deck_size=len(self.deck),
            discard=list(self.discard_counts),
            discard_size=len(self.discard),
            top=self.discard[-1],
            active_colour=self.active_colour,
            pending_draw=self.pending_draw,
            to_move=to_move,
            legal_actions=self.legal_actions() if to_move else [],
            events=events,
            outcome=outcome,
        )

    # ------------------------------------------------------------------ transitions
    def step(self, action: int) -> None:
        """Apply ``action`` for the seat to move. Raises :class:`IllegalActionError` if it is not legal."""
        if not self.is_legal(action):
            raise IllegalActionError(self.illegal_reason(action))
        self.apply(action)

    def apply(self, action: int) -> None:
        """Apply ``action`` for the seat to move, which the caller has already found legal (:meth:`is_legal`, or a
        member of :meth:`legal_actions`): :meth:`step` without checking it a second time on the env's hot path.
        An illegal action here corrupts the game; anything unchecked goes through :meth:`step`."""
        seat = self.current
        if action == DRAW_ACTION:
            if self._draw(seat):
                # After a voluntary draw the turn passes; after a forced draw it returns to the player
                # who played the +2/+4. In two-player UNO both mean: the other seat moves.
                self.current = 1 - seat
            return
        card = action_card(action)
        colour = action_colour(action)
        self.hands[seat][card] -= 1
        self.hand_sizes[seat] -= 1
        self.discard.append(card)
        self.discard_counts[card] += 1
        self.active_colour = colour
        self.top_rank = _RANK[card]
        self.events.append((PLAY, seat, card, colour))
        self.current, self.pending_draw, outcome = after_play(card, seat, self.hand_sizes[seat])
        if outcome != RUNNING:
            self.outcome = outcome

    def _draw(self, seat: int) -> bool:
        """``seat`` draws 1 card or the pending 2/4 (:func:`~uno_env.core.draw_plan`); False if the game ended."""
        deck = self.deck
        count, reshuffle, possible = draw_plan(self.pending_draw, len(deck), len(self.discard))
        self.pending_draw = 0
        if reshuffle:
            self._reshuffle()
        if not possible:
            self.outcome = draw_impossible_outcome(seat, self.hand_sizes[seat], self.hand_sizes[1 - seat])
            return False
        drawn = deck[-count:]
        del deck[-count:]
        hand = self.hands[seat]
        for card in drawn:
            hand[card] += 1
        self.hand_sizes[seat] += count
        drawn.reverse()  # draw order: the card that was on top of the deck first
        self.events.append((DRAW, seat, count, tuple(drawn)))
        return True

    def _reshuffle(self) -> None:
        """Shuffle the discard pile except its top card together with the deck (RULES.md)."""
        top = self.discard.pop()
        self.deck.extend(self.discard)
        self.rng.shuffle(self.deck)
        self.discard = [top]
        self.discard_counts = [0] * NUM_CARD_TYPES
        self.discard_counts[top] = 1
        self.events.append((RESHUFFLE, -1, 0, None))

    def forfeit(self, seat: int) -> None:
        """End the game as a loss for ``seat`` (how environments punish an illegal action)."""
        self.outcome = 1 - seat

    def illegal_reason(self, action: object) -> str:
        """Why ``action`` is not legal now, listing the legal actions (for error messages)."""
        if self.outcome is not None:
            return "the game is over; call reset() before stepping again"
        if not isinstance(action, int | np.integer) or not 0 <= action < NUM_ACTIONS:
            return f"action must be an int in 0..60, got {action!r}"
        legal = ", ".join(f"{a} ({action_name(a)})" for a in self.legal_actions())
        return f"action {action} ({action_name(action)}) is not legal here; legal actions: {legal}"

    def card_count(self) -> int:
        """Cards in hands, deck and discard pile; always 108 (an invariant the tests check)."""
        return sum(self.hand_sizes) + len(self.deck) + len(self.discard)


# ---------------------------------------------------------------------- scenarios
_SCENARIO_KEYS = {"agent_hand", "opponent_hand", "deck", "discard", "active_colour", "to_move", "pending_draw"}
_REQUIRED_KEYS = _SCENARIO_KEYS - {"active_colour"}


def _parse_scenario(scenario: Mapping[str, Any]) -> tuple:
    """Validate a RULES.md scenario and turn it into :class:`Game` constructor arguments."""
    if not isinstance(scenario, Mapping):
        raise ValueError(f"scenario must be a dict, got {type(scenario).__name__}")
    missing = sorted(_REQUIRED_KEYS - scenario.keys())
    if missing:
        raise ValueError(f"scenario is missing field(s): {', '.join(missing)}")
    unknown = sorted(set(scenario) - _SCENARIO_KEYS)
    if unknown:
        raise ValueError(f"scenario has unknown field(s): {', '.join(map(str, unknown))}")

    def cards(key: str) -> list[int]:
        value = scenario[key]
        if isinstance(value, str) or not isinstance(value, Sequence):
            raise ValueError(f"scenario[{key!r}] must be a list of card names, got {value!r}")
        try:
            return [card_id(name) for name in value]
        except ValueError as err:
            raise ValueError(f"scenario[{key!r}]: {err}") from None

    agent, opponent, deck, discard = (cards(k) for k in ("agent_hand", "opponent_hand", "deck", "discard"))
    if not agent or not opponent:
        raise ValueError("scenario hands must not be empty (a player with no cards has already won)")
    if not discard:
        raise ValueError("scenario['discard'] must hold at least the top card")
    counts = [0] * NUM_CARD_TYPES
    for card in agent + opponent + deck + discard:
        counts[card] += 1
    wrong = [f"{CARD_NAMES[card]}: {counts[card]} (expected {COPIES[card]})"
             for card in range(NUM_CARD_TYPES) if counts[card] != COPIES[card]]
    if wrong:
        raise ValueError("scenario cards must be exactly the 108 of the deck; wrong counts: " + "; ".join(wrong))

    top = discard[-1]
    colour = scenario.get("active_colour")
    if top >= WILD:
        if colour is None:
            raise ValueError("scenario['active_colour'] is required when the top card is a wild")
        active = colour_id(colour)
    else:
        active = card_colour(top)
        if colour is not None and colour_id(colour) != active:
            raise ValueError(f"scenario['active_colour'] is {colour!r} but the top card {CARD_NAMES[top]} "
                             "sets the colour")
    to_move = scenario["to_move"]
    if to_move not in ("agent", "opponent"):
        raise ValueError(f"scenario['to_move'] must be 'agent' or 'opponent', got {to_move!r}")
    pending = scenario["pending_draw"]
    # A float such as 2.0 compares equal to 2 but later breaks the deck slicing, so the type is checked too.
    if isinstance(pending, bool) or not isinstance(pending, int | np.integer) or pending not in (0, 2, 4):
        raise ValueError(f"scenario['pending_draw'] must be 0, 2 or 4, got {pending!r}")
    pending = int(pending)
    if pending and _RANK[top] != (DRAW2 if pending == 2 else _RANK[WILD_DRAW4]):
        needed = "a draw2" if pending == 2 else "wild_draw4"
        raise ValueError(f"scenario['pending_draw'] is {pending} but the top card is {CARD_NAMES[top]}, "
                         f"not {needed}")
    hands = [[0] * NUM_CARD_TYPES, [0] * NUM_CARD_TYPES]
    for seat, held in enumerate((agent, opponent)):
        for card in held:
            hands[seat][card] += 1
    return hands, deck[::-1], discard, active, 0 if to_move == "agent" else 1, pending

