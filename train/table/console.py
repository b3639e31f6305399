"""Cards, tables, events and beliefs drawn in the terminal with rich.

Cards are shown in their own colours (white on red, green and blue, black on yellow, wilds on black), named
for people (``red 7``, ``blue skip``, ``green +2``, ``wild +4``); rich drops the colours by itself where
the output is not a terminal or ``NO_COLOR`` is set, so the same text reads well in a log.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from rich.console import Console, Group
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from uno_env.cards import COLOURS, RANKS, WILD, WILD_DRAW4, card_colour, card_id, card_rank
from uno_env.view import PublicView

# The colours of uno_env.render's picture, as terminal styles.
_STYLE = {0: "bold white on red3", 1: "bold white on green4", 2: "bold white on dodger_blue3",
          3: "bold black on gold1", -1: "bold white on grey15"}
_COLOUR_STYLE = {0: "bold red3", 1: "bold green4", 2: "bold dodger_blue2", 3: "bold gold1"}
_RANK_LABELS = {"draw2": "+2"}


def line_reader(console: Console) -> Callable[[str], str]:
    """Read a line after showing a prompt as plain text (``console.input`` alone would read "[y/N]" as markup)."""
    return lambda prompt: console.input(escape(prompt))


def card_label(card: int) -> str:
    """A card for people: ``red 7``, ``blue skip``, ``green +2``, ``wild``, ``wild +4``."""
    if card == WILD:
        return "wild"
    if card == WILD_DRAW4:
        return "wild +4"
    rank = RANKS[card_rank(card)]
    return f"{COLOURS[card_colour(card)]} {_RANK_LABELS.get(rank, rank)}"


def card_text(card: int) -> Text:
    """One card as a coloured chip."""
    return Text(f" {card_label(card)} ", style=_STYLE[card_colour(card)])


def colour_text(colour: int) -> Text:
    """A colour's name in that colour."""
    return Text(COLOURS[colour], style=_COLOUR_STYLE[colour])


def hand_text(counts: Sequence[int]) -> Text:
    """A hand (54 counts) as chips in card order, each copy shown."""
    chips = [card_text(card) for card, count in enumerate(counts) for _ in range(count)]
    return Text(" ").join(chips) if chips else Text("(no cards)")


def plural(count: int, word: str) -> str:
    """``1 card``, ``2 cards``."""
    return f"{count} {word}{'' if count == 1 else 's'}"


def event_text(event: dict[str, Any], names: Sequence[str]) -> Text:
    """A public event (RULES.md dict, ``"agent"`` meaning ``names[0]``) as a sentence."""
    if event["kind"] == "reshuffle":
        return Text("The discard pile was shuffled back into the deck.", style="italic")
    who = names[0] if event["player"] == "agent" else names[1]
    if event["kind"] == "draw":
        text = Text(f"{who} drew {plural(event['count'], 'card')}")
        if "cards" in event:
            text.append(": ").append_text(Text(" ").join(card_text(card_id(name)) for name in event["cards"]))
        return text
    card = card_id(event["card"])
    text = Text(f"{who} played ").append_text(card_text(card))
    if card >= WILD:
        text.append(" and chose ").append_text(colour_text(COLOURS.index(event["colour"])))
    return text


def table_lines(view: PublicView, own: str, other: str, other_hand: Sequence[int] | None = None,
                show_own: bool = True) -> list[Text]:
    """The table as ``view``'s seat (named ``own``) sees it; ``other_hand`` shows the other seat's cards too."""
    lines = []
    for name, size, hand in ((other, view.opponent_hand_size, other_hand),
                             (own, view.hand_size, view.hand if show_own else None)):
        line = Text(f"{name}: {plural(size, 'card')}", style="bold")
        if hand is not None:
            line.append("  ").append_text(hand_text(hand))
        lines.append(line)
    top = Text("Top card ").append_text(card_text(view.top)).append("   colour in force: ").append_text(
        colour_text(view.active_colour))
    if view.pending_draw:
        top.append(f"   {own} must draw {view.pending_draw}", style="bold red")
    piles = Text(f"Deck {plural(view.deck_size, 'card')}, discard pile {plural(view.discard_size, 'card')}",
                 style="dim")
    return [lines[0], piles, top, lines[1]]


def belief_table(expected: np.ndarray, actual: Sequence[int], title: str, rows: int = 6) -> Group:
    """The ``rows`` card types a belief expects most, next to how many are really held, under ``title``."""
    table = Table(show_edge=False, pad_edge=False)
    table.add_column("card")
    table.add_column("expected", justify="right")
    table.add_column("really held", justify="right")
    for card in sorted(range(len(expected)), key=lambda c: (-expected[c], c))[:rows]:
        table.add_row(card_text(card), f"{expected[card]:.2f}", str(actual[card]))
    return Group(Text(title, style="bold"), table)
