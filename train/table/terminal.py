"""The terminal game: you against any player, a match of several games with a running score and rematches.

At each of your turns the table is shown (what happened since your last turn, the other player's card count,
the top card and the colour in force, your hand in colour) with your playable cards numbered. Type a card
(``r7``, ``red 7``, ``blue skip``, ``g+2``, ``wild blue``, ``+4 red``: :mod:`train.table.moves`), its number,
``help``, or ``q`` to leave. A wild without a colour asks for one. When nothing fits (or a +2/+4 is pending),
Enter draws. After each game the score is shown; after the last game of a match you are offered a rematch.

Game ``k`` (counting from 0 across rematches) is dealt from seed ``seed + k``, and who moves first alternates
from ``first`` (or is drawn from the game's seed with ``first="random"``), so ``--seed`` replays a match.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from train.table.console import belief_table, card_text, colour_text, event_text, line_reader, plural, table_lines
from train.table.moves import EXAMPLES, Move, Reply, menu, parse_colour, parse_move
from train.table.session import TableGame, expected_opponent_hand
from uno_env.cards import COLOURS, NUM_COLOURED_RANKS, WILD, card_actions
from uno_env.policy import Policy
from uno_env.view import PublicView

YOU, THEM = 0, 1
QUIT_WORDS = ("q", "quit", "exit")
HELP_WORDS = ("h", "help", "?")
HELP = f"""[bold]How to play[/bold]
  Play a card that matches the top card's colour (the colour in force) or its number or action, or a wild.
  Skip and reverse give you another turn; +2 and +4 make the other player draw and miss a turn.
  If nothing fits you draw one card and your turn ends. First to empty their hand wins.
[bold]What to type[/bold]
  a card: {EXAMPLES} (spelling may be a little off)
  a number from the list of playable cards;  Enter when only one move is possible (a draw)
  a wild without a colour asks for one;  help shows this;  q leaves the game"""

Ask = Callable[[str], str]


class Quit(Exception):
    """The person left (typed q, or the input ended)."""


@dataclass
class Score:
    """Games won by each side and drawn in the current match."""

    you: int = 0
    them: int = 0
    drawn: int = 0

    def add(self, winner: str | None) -> None:
        """Count one finished game (``winner`` from seat 0's side: agent = you)."""
        if winner == "agent":
            self.you += 1
        elif winner == "opponent":
            self.them += 1
        elif winner == "draw":
            self.drawn += 1


class TerminalGame:
    """Matches between a person (seat 0) and ``opponent`` in the terminal.

    ``ask(prompt)`` reads one line (``EOFError`` at the end of input); output goes to ``console``.
    """

    def __init__(self, opponent: Policy, opponent_name: str, seed: int, *, games: int = 3, first: str = "random",
                 show_belief: bool = False, save_dir: Path | None = None, console: Console | None = None,
                 ask: Ask | None = None) -> None:
        if games < 1:
            raise ValueError(f"a match has at least one game, got {games}")
        if first not in ("agent", "opponent", "random"):
            raise ValueError(f"first must be agent, opponent or random, got {first!r}")
        self.opponent, self.name = opponent, opponent_name
        self.seed, self.games, self.first = seed, games, first
        self.show_belief, self.save_dir = show_belief, save_dir
        self.console = console or Console(highlight=False)
        self.ask = ask or line_reader(self.console)
        self.played = 0  # games dealt so far, across rematches: game k uses seed + k

    def run(self) -> Score:
        """Play matches until the person declines a rematch or leaves; the score of the last match."""
        score = Score()
        try:
            while True:
                score = Score()
                for number in range(1, self.games + 1):
                    if number > 1:
                        self._read(f"Press Enter for game {number} of {self.games} (q to stop): ")
                    score.add(self.play_game(number))
                    self._show_score(score, final=number == self.games)
                answer = self._read("Rematch? [y/N]: ").strip().lower()
                if answer not in ("y", "yes"):
                    self.console.print("Thanks for playing.")
                    return score
        except Quit as leaving:
            self.console.print(str(leaving))
            self._show_score(score, final=True)
            return score

    def play_game(self, number: int) -> str | None:
        """One game; returns its winner from seat 0's side. Raises :class:`Quit` if the person leaves."""
        index = self.played
        self.played += 1
        seed = self.seed + index
        table = TableGame([None, self.opponent], ["you", self.name], seed, self._first_seat(index))
        self.console.rule(f"Game {number} of {self.games}: you against {self.name}")
        self.console.print(f"Seed {seed}; {'you move' if table.current == YOU else f'{self.name} moves'} first. "
                           "Type 'help' for how to play.")
        try:
            while True:
                table.advance()
                view = table.view(YOU, consume_events=True)
                self._show(view, table)
                if table.done:
                    break
                table.play(self._choose(view))
        finally:
            self._save(table)
        winner = table.winner
        self.console.print({"agent": "[bold green]You won![/bold green]",
                            "opponent": f"[bold red]{escape(self.name)} won.[/bold red]",
                            "draw": "[bold]The game is drawn.[/bold]"}[winner or "draw"])
        return winner

    def _first_seat(self, index: int) -> int | None:
        """Who moves first in game ``index``: alternating from ``first``, or ``None``: drawn from the game's seed."""
        if self.first == "random":
            return None
        start = YOU if self.first == "agent" else THEM
        return start if index % 2 == 0 else 1 - start

    def _show(self, view: PublicView, table: TableGame) -> None:
        names = ("you", self.name)
        self.console.print()
        for event in view.to_info()["events"]:
            self.console.print("  ", event_text(event, names))
        for line in table_lines(view, "You", self.name):
            self.console.print(line)
        if self.show_belief and not table.done:
            guess = expected_opponent_hand(table.view(THEM))
            self.console.print(belief_table(guess, view.hand,
                                            f"What {self.name}'s card counting expects you to hold"))

    def _choose(self, view: PublicView) -> int:
        """Ask until the person names a legal move; the action."""
        options = menu(view)
        if options == [-1]:
            reason = (f"You must draw {view.pending_draw}." if view.pending_draw
                      else "Nothing fits: you draw a card.")
            prompt = f"{reason} Press Enter: "
        else:
            for number, card in enumerate(options, start=1):
                extra = " (you choose the colour)" if card >= WILD else ""
                self.console.print(f"  {number}) ", card_text(card), extra, sep="")
            prompt = f"Your move (a card or 1-{len(options)}; help; q): "
        while True:
            answer = self._read(prompt)
            if answer.strip().lower() in HELP_WORDS:
                self.console.print(HELP)
                continue
            move = parse_move(answer, view)
            if isinstance(move, Reply):
                self.console.print(f"[yellow]{move.message}[/yellow]")
                continue
            return self._colour_for(move, view)

    def _colour_for(self, move: Move, view: PublicView) -> int:
        if move.action is not None:
            return move.action
        assert move.card is not None
        held = [sum(view.hand[c * NUM_COLOURED_RANKS:(c + 1) * NUM_COLOURED_RANKS]) for c in range(4)]
        self.console.print("Which colour for your ", card_text(move.card), "? You hold ",
                           *[part for c in range(4) for part in (colour_text(c), f" {held[c]}  ")], sep="")
        while True:
            colour = parse_colour(self._read("Colour (1 red, 2 green, 3 blue, 4 yellow; or r/g/b/y): "))
            if colour is not None:
                return card_actions(move.card)[colour]  # a wild's four actions, in colour order
            self.console.print(f"[yellow]Please type one of {', '.join(COLOURS)} (or its first letter).[/yellow]")

    def _read(self, prompt: str) -> str:
        try:
            answer = self.ask(prompt)
        except EOFError:
            raise Quit("\nInput ended: leaving the game.") from None
        if answer.strip().lower() in QUIT_WORDS:
            raise Quit("You left the game.")
        return answer

    def _show_score(self, score: Score, final: bool) -> None:
        drawn = f", {plural(score.drawn, 'drawn game')}" if score.drawn else ""
        title = "Match over" if final else "Score"
        self.console.print(Text(f"{title}: you {score.you} - {score.them} {self.name}{drawn}", style="bold"))

    def _save(self, table: TableGame) -> None:
        if self.save_dir is None:
            return
        self.save_dir.mkdir(parents=True, exist_ok=True)
        path = table.record().save(self.save_dir / f"uno-play-{table.seed}.json")
        self.console.print(f"Saved the game record to {path} (replay it with: uno-play --replay {path})")
