"""Play UNO against any player, watch two players, replay a saved game, or open the browser table (uno-play).

examples:
  uno-play                                    # a match of 3 games against the rule-based player
  uno-play --opponent search-q-ensemble --games 5 --show-belief --save-games games/
  uno-play --replay games/uno-play-5.json --show-belief
  uno-play --watch rule search --pace 0.5 [--hide-hands]
  uno-play --web [--port 8000]                # the table in your browser, at http://127.0.0.1:8000/

A player (--opponent, --watch) is named as in uno-evaluate: a policy name (random, rule, search, ...), a
checkpoint (a .zip, a run folder, a shipped agent such as search-q-ensemble), or module:attribute naming a
Policy object, class or factory (a function annotated to return a Policy class; nothing is called to check it).
--seed replays the same deals; without it a seed is picked and printed. A saved game never replaces another
file: a second game of the same name is saved as NAME-2.json, and so on.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from train.cli.destinations import folder_problem
from train.output import file_error, printable
from train.policies import resolve_policy
from train.specs import label, validate_spec
from train.table.records import MAX_SEED, load_record
from train.table.replay import replay
from train.table.terminal import TerminalGame
from train.table.watch import watch
from train.table.web import make_server, serve
from uno_env.policy import Policy, policy_names

FIRST_CHOICES = ("agent", "opponent", "random")
#: The most games of a match (--games): a day of the fastest players' games.
MAX_GAMES = 1_000_000
#: The longest --pace (an hour between moves): time.sleep refuses NaN and overflows on huge values.
MAX_PACE = 3600.0


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``uno-play``."""
    description, epilog = __doc__.split("\n\n", 1)
    parser = argparse.ArgumentParser(prog="uno-play", description=description, epilog=epilog,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    player_help = ("a registered name (" + ", ".join(policy_names()) + ", ...), a checkpoint .zip or run folder, "
                   "or module:attribute naming a Policy object, a Policy class, or a function annotated to return one")
    modes = parser.add_mutually_exclusive_group()
    modes.add_argument("--watch", nargs=2, metavar=("A", "B"), help="watch player A against player B: " + player_help)
    modes.add_argument("--replay", type=Path, metavar="FILE", help="step through a saved game record")
    modes.add_argument("--web", action="store_true", help="serve the table as a local web page")
    parser.add_argument("--opponent", default="rule", help=player_help + " (default: rule)")
    parser.add_argument("--seed", type=int, default=None, help="seed of the first game (default: random)")
    parser.add_argument("--first", choices=FIRST_CHOICES, default="random",
                        help="who moves first in the first game, then alternating; random: drawn for each game")
    parser.add_argument("--games", type=int, default=None,
                        help="games in a match (default: 3 when you play, 1 when you watch)")
    parser.add_argument("--show-belief", action="store_true",
                        help="show what card counting infers about the hidden hand(s)")
    parser.add_argument("--save-games", type=Path, metavar="DIR", help="save each game's record (JSON) in DIR")
    parser.add_argument("--pace", type=float, default=1.0, help="--watch: seconds between moves (default 1)")
    parser.add_argument("--hide-hands", action="store_true", help="--watch: show card counts, not the hands")
    parser.add_argument("--host", default="127.0.0.1", help="--web: address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="--web: port (default 8000; 0 picks a free one)")
    return parser


def _player(parser: argparse.ArgumentParser, option: str, spec: str) -> Policy:
    problem = validate_spec(spec)
    if problem:
        parser.error(f"{option} {spec}: {problem}")
    try:
        return resolve_policy(spec)
    except (ValueError, TypeError) as err:
        parser.error(f"{option} {spec}: {err}")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``uno-play`` and ``python -m train.cli.play``; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.seed is not None and not 0 <= args.seed <= MAX_SEED:
        parser.error(f"--seed must be in 0..{MAX_SEED}, got {args.seed}")
    if args.games is not None and args.games < 1:
        parser.error(f"--games must be at least 1, got {args.games}")
    if args.games is not None and args.games > MAX_GAMES:
        parser.error(f"--games must be at most {MAX_GAMES}, got {args.games}")
    if not 0 <= args.pace <= MAX_PACE:  # NaN fails the comparison too
        parser.error(f"--pace must be at least 0 and at most {MAX_PACE:g} seconds, got {args.pace}")
    if not 0 <= args.port < 65536:
        parser.error(f"--port must be in 0..65535, got {args.port}")
    if args.save_games is not None:
        problem = folder_problem(args.save_games)
        if problem:
            parser.error(f"--save-games {args.save_games}: {problem}")
    seed = args.seed if args.seed is not None else int(np.random.default_rng().integers(1_000_000))
    try:
        if args.replay is not None:
            try:
                record = load_record(args.replay)
            except OSError as err:
                parser.error(f"--replay {printable(str(args.replay))}: {err.strerror or err}")
            except ValueError as err:
                parser.error(f"--replay: {printable(str(err))}")  # it quotes the file
            replay(record, show_belief=args.show_belief)
        elif args.watch is not None:
            players = [_player(parser, "--watch", spec) for spec in args.watch]
            watch(players, [label(spec) for spec in args.watch], seed, games=args.games or 1, pace=args.pace,
                  show_hands=not args.hide_hands, save_dir=args.save_games)
        elif args.web:
            _player(parser, "--opponent", args.opponent)  # a bad default opponent is refused before serving
            try:
                server = make_server(args.host, args.port, default_opponent=args.opponent, save_dir=args.save_games)
            except ValueError as err:
                parser.error(f"--host/--port: {err}")
            serve(server)
        else:
            opponent = _player(parser, "--opponent", args.opponent)
            TerminalGame(opponent, label(args.opponent), seed, games=args.games or 3, first=args.first,
                         show_belief=args.show_belief, save_dir=args.save_games).run()
    except KeyboardInterrupt:
        print("\nInterrupted: leaving.")
        return 130
    except OSError as error:  # --save-games on a full disk, or a folder it may not write after all
        problem = file_error(error)
        if problem is None:
            raise
        print(f"uno-play: error: {problem}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
