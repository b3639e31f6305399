"""Cards, card types, names and the 61-action layout of RULES.md.

A *card type* is an int in ``0..53``:

* ``colour * 13 + rank`` for the 52 coloured types, with colours ordered
  red, green, blue, yellow (0-3) and ranks 0-9, skip (10), reverse (11), draw2 (12);
* ``52`` for ``wild`` and ``53`` for ``wild_draw4``.

An *action* is an int in ``0..60`` (the RLCard layout):

* ``colour * 15 + rank`` for ``rank`` in 0-12 plays that coloured card;
* ``colour * 15 + 13`` / ``colour * 15 + 14`` plays a wild / wild draw four and declares ``colour``;
* ``60`` draws.

Everything here is a constant or a pure function; the engine and the encoders share it.
"""

from __future__ import annotations

import operator
import reprlib

COLOURS: tuple[str, ...] = ("red", "green", "blue", "yellow")
RANKS: tuple[str, ...] = ("0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "skip", "reverse", "draw2", "wild",
                          "wild_draw4")

NUM_COLOURS = 4
NUM_COLOURED_RANKS = 13
NUM_CARD_TYPES = 54
NUM_ACTIONS = 61
DECK_SIZE = 108
HAND_SIZE = 7

SKIP, REVERSE, DRAW2 = 10, 11, 12
WILD, WILD_DRAW4 = 52, 53  # card types
DRAW_ACTION = 60
#: Action ids per colour in the layout: the 13 coloured ranks, then a wild and a wild draw four declaring it.
ACTIONS_PER_COLOUR = 15

#: How many copies of each card type the deck holds (index = card type).
COPIES: tuple[int, ...] = tuple(
    [1 if rank == 0 else 2 for _colour in range(4) for rank in range(13)] + [4, 4]
)


def card_colour(card: int) -> int:
    """Colour index 0-3 of a coloured card type, or -1 for the two wild types."""
    return card // NUM_COLOURED_RANKS if card < WILD else -1


def card_rank(card: int) -> int:
    """Rank index 0-14 of a card type (13 = wild, 14 = wild_draw4)."""
    if card < WILD:
        return card % NUM_COLOURED_RANKS
    return 13 if card == WILD else 14


def card_name(card: int) -> str:
    """The RULES.md name of a card type, e.g. ``red:7`` or ``wild_draw4``."""
    if not 0 <= card < NUM_CARD_TYPES:
        raise ValueError(f"card type must be in 0..53, got {card!r}")
    return CARD_NAMES[card]


CARD_NAMES: tuple[str, ...] = tuple(
    [f"{COLOURS[c]}:{RANKS[r]}" for c in range(4) for r in range(13)] + ["wild", "wild_draw4"]
)
CARD_IDS: dict[str, int] = {name: i for i, name in enumerate(CARD_NAMES)}
COLOUR_IDS: dict[str, int] = {name: i for i, name in enumerate(COLOURS)}


def card_id(name: str) -> int:
    """The card type of a RULES.md card name; ``ValueError`` names the bad input."""
    try:
        return CARD_IDS[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown card name {name!r} (expected e.g. 'red:7', 'blue:skip', 'wild')") from None


def colour_id(name: str) -> int:
    """The colour index of ``red|green|blue|yellow``; ``ValueError`` names the bad input."""
    try:
        return COLOUR_IDS[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown colour {name!r} (expected one of {', '.join(COLOURS)})") from None


def action_card(action: int) -> int:
    """The card type an action plays (-1 for the draw action)."""
    if action == DRAW_ACTION:
        return -1
    colour, rank = divmod(action, ACTIONS_PER_COLOUR)
    if rank == 13:
        return WILD
    if rank == 14:
        return WILD_DRAW4
    return colour * NUM_COLOURED_RANKS + rank


def action_colour(action: int) -> int:
    """The colour an action leaves in force (-1 for the draw action)."""
    return -1 if action == DRAW_ACTION else action // ACTIONS_PER_COLOUR


def play_action(card: int, colour: int) -> int:
    """The action id that plays ``card`` leaving ``colour`` in force (a coloured card's own colour)."""
    return colour * ACTIONS_PER_COLOUR + card_rank(card)


def card_actions(card: int) -> tuple[int, ...]:
    """The action ids that play a card type: one for a coloured card, four (one per colour) for a wild."""
    if card < WILD:
        return (play_action(card, card_colour(card)),)
    return tuple(play_action(card, colour) for colour in range(NUM_COLOURS))


_SHORT = reprlib.Repr()  # Python 3.11's Repr takes no keyword arguments
_SHORT.maxstring = _SHORT.maxother = 60


def short_repr(value: object) -> str:
    """``repr(value)`` cut to about 60 characters, for error messages that name a bad value."""
    return _SHORT.repr(value)


def as_action(action: object) -> int:
    """``action`` as a Python int if it is an integer: a Python or numpy integer, or a 0-d integer array.

    Anything else (a float, even 4.0, a string, bytes, a bool, None, an array of another shape) raises
    ``TypeError`` naming the value: ``int(4.3)`` or ``int("4")`` would silently play action 4.
    The value is not range-checked here: an integer that is not a legal action is the env's business.
    """
    # operator.index is Python's own "is this an integer" protocol: it takes numpy integers and 0-d integer
    # arrays and refuses floats, strings and bool arrays; a Python bool is an int to it, so it is refused first.
    if not isinstance(action, bool):
        try:
            return operator.index(action)
        except TypeError:
            pass
    raise TypeError(f"an action must be an integer in 0..{NUM_ACTIONS - 1} (a Python or numpy int, "
                    f"or a 0-d integer array), got {short_repr(action)} of type {type(action).__name__}")


def action_name(action: int) -> str:
    """A readable name for an action id, e.g. ``play red:7``, ``play wild -> blue`` or ``draw``."""
    if not 0 <= action < NUM_ACTIONS:
        raise ValueError(f"action must be in 0..60, got {action!r}")
    if action == DRAW_ACTION:
        return "draw"
    card = action_card(action)
    if card >= WILD:
        return f"play {CARD_NAMES[card]} -> {COLOURS[action_colour(action)]}"
    return f"play {CARD_NAMES[card]}"


def full_deck() -> list[int]:
    """The 108 cards as a list of card types, in type order (shuffle it with a Generator)."""
    return [card for card in range(NUM_CARD_TYPES) for _ in range(COPIES[card])]


def playable_types(active_colour: int, top_rank: int) -> tuple[int, ...]:
    """Card types that may be played on a top card of rank ``top_rank`` with ``active_colour`` in force.

    A card is playable if it is a wild, or shares the active colour, or shares the top card's rank.
    """
    same_colour = [active_colour * NUM_COLOURED_RANKS + r for r in range(NUM_COLOURED_RANKS)]
    same_rank = (
        [c * NUM_COLOURED_RANKS + top_rank for c in range(4) if c != active_colour]
        if top_rank < NUM_COLOURED_RANKS
        else []
    )
    return tuple(same_colour + same_rank + [WILD, WILD_DRAW4])


#: ``PLAYABLE[active_colour][top_rank]``: precomputed :func:`playable_types` for the engine's hot path.
PLAYABLE: tuple[tuple[tuple[int, ...], ...], ...] = tuple(
    tuple(playable_types(colour, rank) for rank in range(15)) for colour in range(4)
)
