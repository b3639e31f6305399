"""Reading a person's move: card names with forgiving spelling, menu numbers, colours for a wild.

:func:`parse_move` understands what people type at a card table, e.g. ``r7``, ``red 7``, ``Red:7``,
``blue skip``, ``b rev``, ``g+2``, ``green draw two``, ``wild blue``, ``w b``, ``+4 red``, ``wild draw4``,
``draw``, a number from the menu, and spellings one or two letters off (``yelow 5``, ``gren skip``).
It answers with a :class:`Move` (an action, or a wild still waiting for its colour) or a :class:`Reply`
saying plainly what is wrong: a card you do not hold, a card that does not fit the top card, a draw while a
card can be played (RULES.md: drawing is never voluntary).

The menu lists each playable card once; a wild is one entry and asks for its colour (:func:`parse_colour`).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from uno_env.cards import (
    CARD_NAMES,
    COLOURS,
    DRAW2,
    DRAW_ACTION,
    NUM_COLOURED_RANKS,
    REVERSE,
    SKIP,
    WILD,
    WILD_DRAW4,
    action_card,
    card_actions,
)
from uno_env.view import PublicView

_RANK_WORDS = {
    **{str(d): d for d in range(10)},
    **{word: d for d, word in enumerate(("zero", "one", "two", "three", "four", "five", "six", "seven", "eight",
                                         "nine"))},
    "skip": SKIP, "s": SKIP, "sk": SKIP,
    "reverse": REVERSE, "rev": REVERSE, "rv": REVERSE,
    "draw2": DRAW2, "d2": DRAW2, "dt": DRAW2,
}
_WILD_WORDS = {"wild": WILD, "w": WILD, "draw4": WILD_DRAW4, "wd4": WILD_DRAW4, "w4": WILD_DRAW4, "wd": WILD_DRAW4}
_DRAW_WORDS = ("draw", "d", "pass")
# Words long enough to be misspelled; shorter ones must be typed exactly (an "r" could be anything).
_SPELLED = [*COLOURS, "skip", "reverse", "wild", "draw", "draw2", "draw4", "zero", "one", "two", "three", "four",
            "five", "six", "seven", "eight", "nine"]

EXAMPLES = "r7, red 7, blue skip, g+2, wild blue, +4 red, draw"


@dataclass(frozen=True)
class Move:
    """A legal move: ``action`` to play, or a wild ``card`` whose colour must still be asked (``action`` None)."""

    action: int | None
    card: int | None = None


@dataclass(frozen=True)
class Reply:
    """Input that is not a legal move, with the sentence to show the person."""

    message: str


def menu(view: PublicView) -> list[int]:
    """The menu of a turn: each playable card type once (hand order), or only the draw when it is all there is.

    An entry is a card type (0-53), or -1 for the draw.
    """
    legal = set(view.legal_actions)
    if legal == {DRAW_ACTION}:
        return [-1]
    return sorted({action_card(action) for action in legal})


def parse_colour(text: str) -> int | None:
    """A colour index from ``r``/``red``/``Red``/``yelow``/``1``-``4``..., or ``None`` if the text names no colour."""
    word = _spell(text.strip().lower())
    if word in ("1", "2", "3", "4"):
        return int(word) - 1
    for index, colour in enumerate(COLOURS):
        if word and colour.startswith(word):
            return index
    return None


def parse_move(text: str, view: PublicView) -> Move | Reply:
    """What ``text`` asks for at this turn (module docstring): a :class:`Move` or a :class:`Reply`."""
    options = menu(view)
    answer = text.strip().lower()
    if not answer and len(options) == 1:
        return _entry_move(options[0], view)
    if answer.isdigit():
        number = int(answer)
        if not 1 <= number <= len(options):
            return Reply(f"There is no move {number}: choose a number from 1 to {len(options)}.")
        return _entry_move(options[number - 1], view)
    if not answer:
        return Reply(f"Type a card (e.g. {EXAMPLES}) or a number from 1 to {len(options)}; 'help' explains more.")
    words = _words(answer)
    if words in (["draw"], ["d"], ["pass"]):
        if options == [-1]:
            return Move(DRAW_ACTION)
        return Reply("You have a card you can play, so you must play one (drawing is only for when nothing fits).")
    parsed = _card_and_colour(words)
    if isinstance(parsed, Reply):
        return parsed
    card, colour = parsed
    return _check(card, colour, view)


def _entry_move(entry: int, view: PublicView) -> Move:
    if entry == -1:
        return Move(DRAW_ACTION)
    if entry >= WILD:
        return Move(None, entry)
    return Move(card_actions(entry)[0])


def _words(answer: str) -> list[str]:
    """Split input into words, spelling out the short forms of +2/+4 and splitting "r7" into "r", "7"."""
    text = answer.replace("+2", " draw2 ").replace("+4", " draw4 ")
    text = re.sub(r"draw\s*(2|two)\b", " draw2 ", text)
    text = re.sub(r"draw\s*(4|four)\b", " draw4 ", text)
    words = []
    for word in re.split(r"[^a-z0-9]+", text):
        if not word:
            continue
        if word in _RANK_WORDS or word in _WILD_WORDS or word in _DRAW_WORDS:
            words.append(word)
            continue
        glued = re.fullmatch(r"([a-z]+)(\d)", word)  # r7, yel5, wd4 was handled above
        words.extend(glued.groups() if glued else [_spell(word)])
    return words


def _spell(word: str) -> str:
    """``word``, or the known word it is a near miss of (three letters or more)."""
    if len(word) < 3 or word in _SPELLED or any(c.startswith(word) for c in COLOURS):
        return word
    close = difflib.get_close_matches(word, _SPELLED, n=1, cutoff=0.7)
    return close[0] if close else word


def _card_and_colour(words: Sequence[str]) -> tuple[int, int | None] | Reply:
    """The card type and colour named by ``words`` (colour: a coloured card's own, or a wild's declared one)."""
    colour: int | None = None
    rank: int | None = None
    wild: int | None = None
    for word in words:
        colour_here = parse_colour(word) if word not in _RANK_WORDS and word not in _WILD_WORDS else None
        if colour_here is not None and colour is None:
            colour = colour_here
        elif word in _WILD_WORDS:
            # "wild draw4" / "wild +4": a draw four; "wild" alone: a plain wild.
            wild = WILD_DRAW4 if WILD_DRAW4 in (wild, _WILD_WORDS[word]) else WILD
        elif word in _RANK_WORDS and rank is None:
            rank = _RANK_WORDS[word]
        else:
            return Reply(f"I do not know {word!r} here: type a card like {EXAMPLES}, a move number, 'help' or 'q'.")
    if wild is not None:
        if rank is not None:
            return Reply("A wild has no number or action: type 'wild blue' or '+4 red'.")
        return wild, colour
    if rank is None:
        return Reply(f"Which card? Name its colour and number or action, e.g. {EXAMPLES}.")
    if colour is None:
        return Reply(f"Which colour? e.g. 'red {rank}' or 'r{rank}'." if rank < 10 else
                     "Which colour? e.g. 'blue skip', 'g rev' or 'y+2'.")
    return colour * NUM_COLOURED_RANKS + rank, colour


def _check(card: int, colour: int | None, view: PublicView) -> Move | Reply:
    """The move that plays ``card`` (declaring ``colour`` for a wild), or why it cannot be played now."""
    name = CARD_NAMES[card]
    if not view.hand[card]:
        other = WILD + WILD_DRAW4 - card  # "wild" when the hand only has the +4, or the other way round
        if card >= WILD and view.hand[other]:
            return Reply(f"You have no {name} in your hand, but a {CARD_NAMES[other]}: type "
                         + ("'+4' and a colour." if other == WILD_DRAW4 else "'wild' and a colour."))
        return Reply(f"You have no {name} in your hand.")
    actions = [a for a in card_actions(card) if a in view.legal_actions]
    if not actions:
        if view.pending_draw:
            return Reply(f"You must draw {view.pending_draw} first: nothing can be played on a pending draw.")
        return Reply(f"{name} does not fit: play a {COLOURS[view.active_colour]} card, a card of the top card's "
                     "rank, or a wild.")
    if card >= WILD:
        return Move(None, card) if colour is None else Move(card_actions(card)[colour])
    return Move(actions[0])
