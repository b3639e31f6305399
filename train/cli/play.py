"""Play two-player UNO in the terminal against a built-in opponent or any Policy.

    uno-play                                    # against the rule-based player
    uno-play --opponent random --seed 7 --first agent
    uno-play --opponent mypackage.players:MyPolicy --show-belief
    python -m train.cli.play --help

You sit in the ``"agent"`` seat of RULES.md. At each of your turns the table is shown (the top card,
the colour in force, your hand, what happened since your last turn) with your legal moves numbered
1..k: type a number and press Enter, or ``q`` to leave. When you have no playable card, or must take
a +2/+4, the draw happens by itself. ``--seed`` replays the same deal and the same opponent; without
it a seed is picked and printed, so any game can be replayed.

``--opponent`` takes any player spec of :mod:`train.policies` (the same as ``uno-evaluate``): a registered
name (``random``, ``rule``, and what the ``agents`` package registers, such as ``search``), a MaskablePPO
checkpoint (a ``.zip``, a run folder, or a shipped agent under ``models/``), or ``module:attribute`` naming a
Policy object, class or factory.

``--show-belief`` prints, at each of your turns, what a card-counting belief tracker on the
opponent's seat (:mod:`uno_env.belief`, fed exactly the opponent's public view) expects your hand to
hold, next to what you really hold.
"""

from __future__ import annotations

import argparse
import copy
import sys
from collections.abc import Callable, Sequence

import numpy as np

from train.policies import resolve_policy
from uno_env.ansi import render_table
from uno_env.cards import CARD_NAMES, DRAW_ACTION, action_card, action_colour, action_name
from uno_env.game import Game
from uno_env.observation import SeatObserver
from uno_env.policy import Policy, policy_names
from uno_env.seat import Seat, game_seeds, start_game
from uno_env.view import PublicView, event_to_dict

HUMAN, OPPONENT = 0, 1
FIRST_CHOICES = ("agent", "opponent", "random")
QUIT_WORDS = ("q", "quit", "exit")


class BeliefWatch:
    """What the opponent's seat could infer about the human's hand: a card-counting tracker fed every opponent view.

    The tracker lives in a :class:`~uno_env.observation.SeatObserver` of the opponent's seat. It must see
    every view the opponent's seat is given (:meth:`update`); to show the belief at the human's turn it
    also needs the events since the opponent's last view, which it learns on a copy (:meth:`expected_hand`),
    so the real tracker still receives each event exactly once.
    """

    #: Hands drawn from the belief to estimate the expected counts (the same ``sample_hands`` call the search
    #: player determinizes with); enough for two decimals to be meaningful at a glance.
    SAMPLES = 400

    def __init__(self, game: Game, rng: np.random.Generator) -> None:
        self.observer = SeatObserver(belief="counting")
        self.observer.start(game, OPPONENT, rng)
        self.rng = rng

    def update(self, view: PublicView) -> None:
        """Learn from a view of the opponent's seat (call for every one of them, in order)."""
        self.observer.tracker.update(view)

    def expected_hand(self, game: Game) -> np.ndarray:
        """Expected copies of each card type in the human's hand, given the opponent's public view now."""
        tracker = copy.deepcopy(self.observer.tracker)
        tracker.update(game.observe(OPPONENT, consume_events=False))
        return np.asarray(tracker.sample_hands(self.SAMPLES, self.rng), dtype=float).mean(axis=0)

    def describe(self, game: Game, hand: Sequence[int], top: int = 6) -> list[str]:
        """Lines for the terminal: the ``top`` card types the opponent most expects you to hold."""
        expected = self.expected_hand(game)
        order = sorted(range(len(expected)), key=lambda card: (-expected[card], card))[:top]
        lines = [f"The opponent's card counting expects you to hold (top {top} card types):"]
        lines += [f"  {CARD_NAMES[card]:<18} {expected[card]:5.2f} expected   you hold {hand[card]}"
                  for card in order]
        return lines


def ask_move(legal: Sequence[int], read: Callable[[str], str], write: Callable[[str], None]) -> int | None:
    """Prompt until the human picks one of ``legal`` by its number; ``None`` when they quit or input ends."""
    for number, action in enumerate(legal, start=1):
        write(f"  {number}) {action_name(action)}")
    prompt = f"Your move [{'1' if len(legal) == 1 else f'1-{len(legal)}'}, q to quit]: "
    while True:
        try:
            answer = read(prompt).strip()
        except EOFError:
            write("\nInput ended: leaving the game.")
            return None
        if answer.lower() in QUIT_WORDS:
            write("You left the game.")
            return None
        if not answer:
            write(f"Please type the number of a move, from 1 to {len(legal)}.")
            continue
        try:
            number = int(answer)
        except ValueError:
            write(f"{answer!r} is not a number: type the number of a move, from 1 to {len(legal)}, or q to quit.")
            continue
        if not 1 <= number <= len(legal):
            write(f"There is no move {number}: choose a number from 1 to {len(legal)}.")
            continue
        return legal[number - 1]


def table_text(view: PublicView) -> str:
    """The table from the human's side (render_table), with "you" in the events and no action-id line."""
    events = []
    for event in view.events:
        entry = event_to_dict(event)
        if entry.get("player") == "agent":
            entry["player"] = "you"
        events.append(entry)
    text = render_table(view, events)
    if view.outcome is None:  # the last line lists action ids; the human gets a numbered list instead
        text = text.rsplit("\n", 1)[0]
    return text


def play(opponent: Policy, seed: int, first: str = "random", show_belief: bool = False,
         read: Callable[[str], str] = input, write: Callable[[str], None] = print) -> str:
    """Play one game between the human (via ``read``/``write``) and ``opponent``.

    Returns ``"agent"``, ``"opponent"`` or ``"draw"`` for a finished game, ``"abandoned"`` when the human
    quit or the input ended.
    """
    human, seat = Seat(HUMAN), Seat(OPPONENT, opponent)
    game = start_game((human, seat), seed, {"agent": HUMAN, "opponent": OPPONENT}.get(first))
    # The watch draws from the human seat's seed, which no policy uses: showing the belief changes nothing.
    watch = BeliefWatch(game, np.random.default_rng(game_seeds(seed).seats[HUMAN])) if show_belief else None
    write(f"You play against {getattr(opponent, 'name', type(opponent).__name__)}; seed {seed}; "
          f"{'you move' if game.current == HUMAN else 'the opponent moves'} first.")

    while not game.done:
        if game.current == OPPONENT:
            view = seat.observe(game)
            if watch is not None:
                watch.update(view)
            game.step(seat.act(game, view))
            continue
        view = human.observe(game)
        write("\n== Your turn ==")
        write(table_text(view))
        if watch is not None:
            for line in watch.describe(game, view.hand):
                write(line)
        if view.legal_actions == [DRAW_ACTION]:
            reason = f"You must draw {view.pending_draw}." if view.pending_draw else "No playable card: you draw."
            write(reason)
            game.step(DRAW_ACTION)
            continue
        # Numbered in hand order (card type, then declared colour) rather than by action id.
        moves = sorted(view.legal_actions, key=lambda a: (action_card(a), action_colour(a)))
        action = ask_move(moves, read, write)
        if action is None:
            return "abandoned"
        game.step(action)

    final = human.observe(game)
    write("\n== Game over ==")
    write(table_text(final))
    return final.to_info()["winner"]


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``uno-play``."""
    parser = argparse.ArgumentParser(
        prog="uno-play", description="Play two-player UNO in the terminal against an agent or a built-in opponent.")
    parser.add_argument("--opponent", default="rule",
                        help="a registered name (" + ", ".join(policy_names()) + ", ...), a checkpoint .zip or "
                             "run folder, or module:attribute naming a Policy object, class or factory "
                             "(default: rule)")
    parser.add_argument("--seed", type=int, default=None, help="seed of the deal and the opponent (default: random)")
    parser.add_argument("--first", choices=FIRST_CHOICES, default="random",
                        help="who moves first: agent (you), opponent, or random (default)")
    parser.add_argument("--show-belief", action="store_true",
                        help="show what the opponent's card counting expects your hand to hold")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``uno-play`` and ``python -m train.cli.play``; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.seed is not None and not 0 <= args.seed < 2**63:
        parser.error(f"--seed must be in 0..{2**63 - 1}, got {args.seed}")
    try:
        opponent = resolve_policy(args.opponent)
    except (ValueError, TypeError) as err:
        parser.error(f"--opponent {args.opponent}: {err}")
    seed = args.seed if args.seed is not None else int(np.random.default_rng().integers(1_000_000))
    try:
        play(opponent, seed, args.first, args.show_belief)
    except KeyboardInterrupt:
        print("\nInterrupted: leaving the game.")
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
