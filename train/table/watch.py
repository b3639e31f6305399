"""Watch two players play each other in the terminal, one move at a time, at a chosen pace.

    uno-play --watch rule search --pace 0.5            # both hands shown
    uno-play --watch search-q-ensemble rule --hide-hands --games 3

Each move is a line (who played what, or drew); below it the table: both players' card counts, and their
hands unless hidden, the top card and the colour in force. ``pace`` is the pause after each move in seconds
(0 runs as fast as the players think). Game ``k`` is dealt from seed ``seed + k`` and the first mover
alternates, so two games of a match deal the same cards only if the seeds repeat.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from train.table.console import event_text, table_lines
from train.table.records import public_event
from train.table.session import TableGame
from uno_env.policy import Policy


def watch(players: Sequence[Policy], names: Sequence[str], seed: int, *, games: int = 1, pace: float = 1.0,
          show_hands: bool = True, save_dir: Path | None = None, console: Console | None = None,
          sleep: Callable[[float], None] = time.sleep) -> list[str | None]:
    """Show ``games`` games between ``players[0]`` and ``players[1]``; the winners (``"agent"`` = players[0])."""
    if pace < 0:
        raise ValueError(f"pace must be at least 0 seconds, got {pace}")
    console = console or Console(highlight=False)
    wins = [0, 0, 0]
    winners: list[str | None] = []
    for index in range(games):
        table = TableGame(list(players), names, seed + index, first_player=index % 2)
        first, second = escape(names[0]), escape(names[1])
        console.rule(f"Game {index + 1} of {games}: {first} against {second} (seed {seed + index})")
        _show_table(table, console, show_hands)
        while not table.done:
            seen = len(table.game.events)
            seat = table.current
            table.step_policy()
            for event in table.game.events[seen:]:
                console.print(Text(f"{table.decisions:>4}. ", style="dim"), event_text(public_event(event), names))
            if seat != table.current or table.done:  # the turn passed: show where things stand
                _show_table(table, console, show_hands)
            sleep(pace)
        winner = table.winner
        winners.append(winner)
        wins[("agent", "opponent", "draw").index(winner or "draw")] += 1
        result = {"agent": f"{names[0]} won", "opponent": f"{names[1]} won"}.get(winner or "", "Drawn game")
        drawn = f", {wins[2]} drawn" if wins[2] else ""
        console.print(Text(f"{result}.  Score: {names[0]} {wins[0]} - {wins[1]} {names[1]}{drawn}", style="bold"))
        if save_dir is not None:
            save_dir.mkdir(parents=True, exist_ok=True)
            path = table.record().save(save_dir / f"watch-{table.seed}.json")
            console.print(f"Saved the game record to {path}")
    return winners


def _show_table(table: TableGame, console: Console, show_hands: bool) -> None:
    view = table.view(0)
    other = table.view(1).hand if show_hands else None
    for line in table_lines(view, table.names[0], table.names[1], other, show_own=show_hands):
        console.print("      ", line)
