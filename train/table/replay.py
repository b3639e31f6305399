"""Step through a saved game in the terminal, forward and back.

    uno-play --replay games/uno-play-5.json --show-belief

A replay shows the game as a reviewer sees it: both hands (hidden during the game, so marked as such), the
top card, the colour in force and the move that led to each position. With ``show_belief`` it also shows,
at every position, what each seat's card counting expects the other seat to hold next to what it really
held; the belief is recomputed from the seat's public view, i.e. from the public events (counting needs no
more than the view: :func:`train.table.session.expected_opponent_hand`).

Commands: Enter or ``n`` next move, ``b`` back, a number jumps to that move, ``s``/``e`` start/end,
``help``, ``q`` quit.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console
from rich.text import Text

from train.table.console import belief_table, event_text, line_reader, table_lines
from train.table.records import GameRecord, Position, positions
from train.table.session import expected_opponent_hand

HELP = "Enter or n: next move   b: back   a number: go to that move   s: start   e: end   q: quit"


def show_position(record: GameRecord, position: Position, last: int, console: Console, show_belief: bool) -> None:
    """Print one position of a replay (module docstring)."""
    names = record.players
    console.rule(f"Move {position.index} of {last}")
    if position.mover is None:
        console.print(Text(f"The deal: {names[0]} against {names[1]}; {names[_seat(record.first_player)]} moves "
                           "first."))
    for event in position.events:
        console.print("  ", event_text(event, names))
    for line in table_lines(position.views[0], names[0], names[1], position.views[1].hand):
        console.print(line)
    console.print(Text("(both hands shown: during the game each player saw only its own)", style="dim italic"))
    if position.index == last and record.winner is not None:
        console.print(Text({"agent": f"{names[0]} won.", "opponent": f"{names[1]} won.",
                            "draw": "The game was drawn."}[record.winner], style="bold"))
    if show_belief:
        for seat in (0, 1):
            view = position.views[seat]
            console.print(belief_table(expected_opponent_hand(view), position.views[1 - seat].hand,
                                       f"{names[seat]}'s card counting: {names[1 - seat]}'s hand"))


def _seat(name: str) -> int:
    return 0 if name == "agent" else 1


def replay(record: GameRecord, *, show_belief: bool = False, console: Console | None = None,
           ask: Callable[[str], str] | None = None) -> None:
    """Step through ``record`` interactively until ``q`` or the end of input."""
    console = console or Console(highlight=False)
    ask = ask or line_reader(console)
    steps = positions(record)
    last = len(steps) - 1
    at = 0
    console.print(Text(f"Replay of {record.players[0]} against {record.players[1]} (seed {record.seed}): "
                       f"{last} moves. {HELP}"))
    while True:
        show_position(record, steps[at], last, console, show_belief)
        while True:
            try:
                answer = ask(f"[{at}/{last}] n/b/number/s/e/q: ").strip().lower()
            except EOFError:
                return
            target = _target(answer, at, last)
            if target == "quit":
                return
            if isinstance(target, int):
                break
            console.print(f"[yellow]{target}[/yellow]")
        at = target


def _target(answer: str, at: int, last: int) -> int | str:
    """The position a command goes to, ``"quit"``, or a message for a command that goes nowhere."""
    if answer in ("q", "quit", "exit"):
        return "quit"
    moves = {"": at + 1, "n": at + 1, "next": at + 1, "b": at - 1, "back": at - 1, "p": at - 1, "s": 0,
             "start": 0, "e": last, "end": last}
    if answer in moves:
        target = moves[answer]
    elif answer.isdigit():
        target = int(answer)
        if target > last:
            return f"The game has {last} moves: choose 0 to {last}."
    else:
        return HELP
    if target > last:
        return "That was the last move (b goes back, q quits)."
    if target < 0:
        return "This is the deal, before the first move (n goes forward)."
    return target
