"""The table as text: ``render_mode="ansi"`` of both envs, and the terminal game (``uno-play``).

Kept apart from :mod:`uno_env.render` (the picture), which loads matplotlib.
"""

from __future__ import annotations

from typing import Any

from uno_env.cards import CARD_NAMES, COLOURS, action_name
from uno_env.view import DRAWN, LOSS, WIN, PublicView


def render_table(view: PublicView, recent_events: list[dict[str, Any]]) -> str:
    """A text picture of the table from the viewing seat's side."""
    lines = [
        f"Opponent: {view.opponent_hand_size} cards    Deck: {view.deck_size}    Discard pile: {view.discard_size}",
        f"Top card: {CARD_NAMES[view.top]}    Colour in force: {COLOURS[view.active_colour]}"
        + (f"    You must draw {view.pending_draw}" if view.pending_draw else ""),
        f"Your hand ({view.hand_size}): {' '.join(view.hand_names)}",
    ]
    for event in recent_events:
        if event["kind"] == "reshuffle":
            lines.append("  - the discard pile was reshuffled into the deck")
        elif event["kind"] == "play":
            lines.append(f"  - {event['player']} played {event['card']} (colour now {event['colour']})")
        else:
            cards = f": {', '.join(event['cards'])}" if "cards" in event else ""
            lines.append(f"  - {event['player']} drew {event['count']}{cards}")
    if view.outcome is not None:
        lines.append({WIN: "You won.", LOSS: "You lost.", DRAWN: "The game is drawn."}[view.outcome])
    else:
        lines.append("Legal: " + ", ".join(f"{a}={action_name(a)}" for a in view.legal_actions))
    return "\n".join(lines)
