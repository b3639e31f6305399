"""Pictures of the table from one seat's side: RGB arrays for videos, SVG/PNG/PDF files for docs, a window.

The picture shows exactly what the seat may see (RULES.md): its own hand (cards it may play now are
raised and outlined), the opponent's card backs and count, the deck and discard pile sizes, the top
card, the colour in force, a pending draw, the last public events and, once the game is over, the result.

Drawn with matplotlib's object-oriented API on an Agg canvas (no pyplot state, so it works in
subprocess workers and headless machines). matplotlib rather than Pillow: the same drawing gives
raster frames (:func:`table_rgb`) and vector files (:func:`save_table`, by the file's suffix), text is
laid out with a bundled font, and ``render_mode="human"`` gets a window without another dependency.

    from uno_env.render import table_rgb
    frame = env.render()                      # with gym.make("Uno-v0", render_mode="rgb_array")
    env.unwrapped.save_picture("table.svg")   # the same picture as a vector file
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Circle, FancyBboxPatch

from uno_env.cards import COLOURS, WILD, card_actions, card_colour, card_rank
from uno_env.view import DRAWN, LOSS, WIN, PublicView

#: Picture size in pixels (width, height); both divisible by 16, which video codecs want.
WIDTH, HEIGHT = 720, 480
_DPI = 80
# Drawing units: the axes span 12 x 8 units, 60 pixels each.
_UNITS_X, _UNITS_Y = 12.0, 8.0
_CARD_W, _CARD_H = 0.9, 1.35
_FACE = {0: "#d62718", 1: "#2f9a2b", 2: "#1f5fc4", 3: "#f2cf1d", -1: "#1b1b1b"}
_INK = {0: "white", 1: "white", 2: "white", 3: "black", -1: "white"}
_TABLE = "#0f5132"
_RANK_LABELS = ("0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "skip", "rev", "+2", "wild", "+4")
_MAX_BACKS = 20  # the opponent's card backs drawn before a "+k" note takes over
_MAX_EVENTS = 9
_OUTCOME_TEXT = {WIN: "You won", LOSS: "You lost", DRAWN: "Drawn game"}


def table_figure(view: PublicView, events: Sequence[dict[str, Any]] = ()) -> Figure:
    """A matplotlib Figure of the table seen by ``view``'s seat.

    ``events`` are recent public events as RULES.md ``info["events"]`` dictionaries, oldest first
    (the last few are listed). The figure has an Agg canvas; save it or read its pixels.
    """
    figure = Figure(figsize=(WIDTH / _DPI, HEIGHT / _DPI), dpi=_DPI, facecolor=_TABLE)
    FigureCanvasAgg(figure)
    ax = figure.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, _UNITS_X)
    ax.set_ylim(0, _UNITS_Y)
    ax.set_facecolor(_TABLE)
    ax.axis("off")
    _draw_opponent(ax, view.opponent_hand_size)
    _draw_centre(ax, view)
    _draw_hand(ax, view)
    _draw_events(ax, events, view.outcome)
    return figure


def table_rgb(view: PublicView, events: Sequence[dict[str, Any]] = ()) -> np.ndarray:
    """The picture of :func:`table_figure` as a ``uint8`` array of shape ``(HEIGHT, WIDTH, 3)``."""
    figure = table_figure(view, events)
    figure.canvas.draw()
    return np.asarray(figure.canvas.buffer_rgba())[..., :3].copy()


def save_table(view: PublicView, events: Sequence[dict[str, Any]], path: str | Path) -> Path:
    """Write the picture to ``path``; the suffix picks the format (``.svg``, ``.png``, ``.pdf``)."""
    path = Path(path)
    if path.suffix.lower() not in (".svg", ".png", ".pdf"):
        raise ValueError(f"cannot write a table picture as {path.suffix or 'a file without suffix'!r}: "
                         "use .svg, .png or .pdf")
    table_figure(view, events).savefig(path, facecolor=_TABLE)
    return path


class TableWindow:
    """A window showing table pictures (``render_mode="human"``); opened on first :meth:`show`."""

    def __init__(self, title: str = "UNO") -> None:
        self.title = title
        self._figure: Any = None
        self._image: Any = None

    def show(self, frame: np.ndarray, seconds: float = 0.05) -> None:
        """Show ``frame`` (an RGB array) and let the window's event loop run for ``seconds``."""
        # pyplot only here: it picks an interactive backend and owns windows, which the Agg drawing must not need.
        from matplotlib import pyplot

        if self._figure is None or not pyplot.fignum_exists(self._figure.number):
            pyplot.ion()
            self._figure = pyplot.figure(self.title, figsize=(WIDTH / _DPI, HEIGHT / _DPI), dpi=_DPI)
            axes = self._figure.add_axes((0, 0, 1, 1))
            axes.axis("off")
            self._image = axes.imshow(frame)
        else:
            self._image.set_data(frame)
        pyplot.pause(seconds)

    def close(self) -> None:
        """Close the window if it is open."""
        if self._figure is not None:
            from matplotlib import pyplot

            pyplot.close(self._figure)
            self._figure = None


# ------------------------------------------------------------------------------------------ pieces
def _card(ax: Any, x: float, y: float, card: int | None, highlight: bool = False, count: int = 1) -> None:
    """One card with its lower-left corner at (x, y); ``card=None`` draws a card back."""
    if card is None:
        face, ink, label = "#7a1010", "#f2cf1d", "UNO"
    else:
        colour = card_colour(card)
        face, ink = _FACE[colour], _INK[colour]
        label = _RANK_LABELS[card_rank(card)]
    edge, width = ("#ffe14d", 3.0) if highlight else ("white", 1.2)
    ax.add_patch(FancyBboxPatch((x, y), _CARD_W, _CARD_H, boxstyle="round,pad=0,rounding_size=0.1",
                                facecolor=face, edgecolor=edge, linewidth=width))
    if card is not None and card >= WILD:  # a wild shows the four colours it may declare
        for i in range(4):
            ax.add_patch(Circle((x + 0.27 + 0.36 * (i % 2), y + 0.42 + 0.36 * (i // 2)), 0.13,
                                facecolor=_FACE[i], edgecolor="none"))
    size = 8 if card is None else (11 if len(label) > 2 else 14)
    ax.text(x + 0.08, y + _CARD_H - 0.1, label, color=ink, fontsize=size, fontweight="bold",
            ha="left", va="top")
    if count > 1:
        ax.text(x + _CARD_W - 0.06, y + 0.06, f"x{count}", color=ink, fontsize=9, fontweight="bold",
                ha="right", va="bottom")


def _row_step(n: int, width: float) -> float:
    """Distance between neighbouring cards so that ``n`` cards fit in ``width`` units (they overlap if needed)."""
    return 1.0 if n <= 1 else min(1.0, (width - _CARD_W) / (n - 1))


def _draw_opponent(ax: Any, count: int) -> None:
    shown = min(count, _MAX_BACKS)
    step = _row_step(shown, 7.4)
    for i in range(shown):
        _card(ax, 0.3 + i * step, 6.3, None)
    extra = f" (+{count - shown} not drawn)" if count > shown else ""
    ax.text(0.3, 7.85, f"Opponent: {count} card{'s' if count != 1 else ''}{extra}", color="white",
            fontsize=12, va="top")


def _draw_centre(ax: Any, view: PublicView) -> None:
    _card(ax, 0.6, 3.3, None)
    ax.text(0.6 + _CARD_W / 2, 3.15, f"deck {view.deck_size}", color="white", fontsize=11, ha="center", va="top")
    _card(ax, 2.0, 3.3, view.top)
    ax.text(2.0 + _CARD_W / 2, 3.15, f"pile {view.discard_size}", color="white", fontsize=11, ha="center",
            va="top")
    colour = view.active_colour
    ax.add_patch(Circle((4.0, 3.95), 0.42, facecolor=_FACE[colour], edgecolor="white", linewidth=1.5))
    ax.text(4.55, 4.15, "colour in force", color="white", fontsize=10, va="center")
    ax.text(4.55, 3.75, COLOURS[colour], color="white", fontsize=13, fontweight="bold", va="center")
    if view.pending_draw:
        ax.text(4.55, 3.3, f"you must draw {view.pending_draw}", color="#ffb3b3", fontsize=12,
                fontweight="bold", va="center")


def _draw_hand(ax: Any, view: PublicView) -> None:
    legal = set(view.legal_actions)
    cards = [card for card, count in enumerate(view.hand) if count]
    step = _row_step(len(cards), 7.4)
    for i, card in enumerate(cards):
        playable = any(action in legal for action in card_actions(card))
        _card(ax, 0.3 + i * step, 0.45 + (0.25 if playable else 0.0), card, playable, view.hand[card])
    turn = "your turn" if view.to_move else "waiting"
    ax.text(0.3, 2.4, f"Your hand: {view.hand_size} card{'s' if view.hand_size != 1 else ''} ({turn}; "
            "playable cards raised)", color="white", fontsize=12, va="center")


def _draw_events(ax: Any, events: Sequence[dict[str, Any]], outcome: int | None) -> None:
    ax.add_patch(FancyBboxPatch((8.15, 0.3), 3.6, 7.4, boxstyle="round,pad=0,rounding_size=0.15",
                                facecolor="#0b3d26", edgecolor="#6fa88a", linewidth=1.0))
    ax.text(8.35, 7.5, "Last events (newest last)", color="white", fontsize=12, fontweight="bold", va="top")
    lines = [_event_line(event) for event in events][-_MAX_EVENTS:]
    for i, line in enumerate(lines):
        ax.text(8.35, 6.95 - i * 0.62, line, color="white", fontsize=10, va="top")
    if outcome is not None:
        ax.text(4.0, 5.35, _OUTCOME_TEXT[outcome], color="white", fontsize=26, fontweight="bold",
                ha="center", va="center",
                bbox={"boxstyle": "round", "facecolor": "#000000", "alpha": 0.6, "edgecolor": "none"})


def _event_line(event: dict[str, Any]) -> str:
    """One event in a few words: 'you: red 7', 'opp: wild -> blue', 'opp: drew 2', 'reshuffle'."""
    if event["kind"] == "reshuffle":
        return "pile reshuffled into deck"
    who = "you" if event["player"] == "agent" else "opponent"
    if event["kind"] == "play":
        card = event["card"]
        if ":" in card:
            return f"{who}: {card.replace(':', ' ')}"
        return f"{who}: {card} -> {event['colour']}"
    return f"{who}: drew {event['count']}"


__all__ = ["HEIGHT", "WIDTH", "TableWindow", "save_table", "table_figure", "table_rgb"]
