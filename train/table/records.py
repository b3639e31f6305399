"""Game records: one game as a small JSON file, and its re-simulation move by move.

A record holds what anyone at the table saw, plus, kept apart and marked as such, what nobody saw::

    {"format": "uno-rl game record", "version": 1,
     "seed": 5, "first_from_seed": false, "players": ["you", "rule"], "first_player": "agent", "winner": "opponent",
     "events": [{"player": "agent", "kind": "play", "card": "red:7", "colour": "red"},
                {"player": "opponent", "kind": "draw", "count": 1}, {"kind": "reshuffle"}, ...],
     "hidden": {"note": "...", "start": {RULES.md scenario of the deal}, "drawn": [["blue:3"], ...]}}

``events`` are the public events of RULES.md (:func:`uno_env.view.event_to_dict`) seen from seat 0, so
``"agent"`` is ``players[0]`` and ``"opponent"`` is ``players[1]``; no draw carries its cards there.
``hidden`` is for review after the game: ``start`` is the deal as a RULES.md scenario (both hands, the deck
in draw order, the starting card) and ``drawn`` the cards of each draw event, in order.

``seed`` is the game seed of :mod:`uno_env.seat` the game was played from (every program here seats its
players with :func:`uno_env.seat.start_game`): :func:`uno_env.seat.game_seeds` derives the deal, the
reshuffles and the players' seeds from it, so the same seed and the same players play the same game.
``first_from_seed`` says whether the first player was drawn from the seed too (``first_player`` given as
``None``) or chosen; :func:`seed_start` re-deals the start from them. The record replays without the seed.

:func:`positions` re-simulates a record on the engine (:class:`uno_env.game.Game`, the one implementation of
the rules) from the hidden start: each play event is that play, each draw event a draw, and the reshuffles
put the recorded draws on top of the deck. It checks every event the engine produces against the record, and the
written winner against the end the events reach, so a damaged, edited or cut record is refused with the event
where it goes wrong.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from agents.files import naming_errors, read_json
from train.output import printable
from uno_env.cards import (
    CARD_NAMES,
    COLOURS,
    DRAW_ACTION,
    action_colour,
    card_actions,
    card_id,
    colour_id,
    short_repr,
)
from uno_env.game import Game
from uno_env.match import GameResult, play_game
from uno_env.policy import Policy
from uno_env.seat import deal_game
from uno_env.view import DRAW, WINNER_NAMES, Event, PublicView, event_to_dict

FORMAT = "uno-rl game record"
VERSION = 1
HIDDEN_NOTE = ("Hidden from the players during the game (the deal, the deck order, the cards each draw took); "
               "kept for review after the game.")
_SEAT_NAMES = ("agent", "opponent")
#: Moves after which a harness stops a game and calls it drawn (:func:`uno_env.match.play_game`'s default, and the
#: tables' (:class:`train.table.session.TableGame`): a drawn record may end before the game does only there.
DECISION_LIMIT = 5000
_WINNERS = (*WINNER_NAMES.values(), None)
#: The largest game seed (that of ``uno-play --seed`` and of the web table).
MAX_SEED = 2**62 - 1


def start_scenario(game: Game) -> dict[str, Any]:
    """The position of ``game`` as a RULES.md scenario (seat 0 is ``"agent"``); call it right after the deal."""
    return {"agent_hand": _names(game.hands[0]), "opponent_hand": _names(game.hands[1]),
            "deck": [CARD_NAMES[card] for card in reversed(game.deck)],  # deck[-1] is drawn first
            "discard": [CARD_NAMES[card] for card in game.discard], "active_colour": COLOURS[game.active_colour],
            "to_move": _SEAT_NAMES[game.current], "pending_draw": game.pending_draw}


def public_event(event: Event) -> dict[str, Any]:
    """An engine event (absolute seats) as the RULES.md dict seen from seat 0, without the cards of a draw."""
    kind, player, value, extra = event
    # Seen from seat 0 the absolute seats are the relative ones; a draw's cards are hidden (record's "drawn").
    return event_to_dict((kind, player, value, None if kind == DRAW else extra))


def _names(counts: Sequence[int]) -> list[str]:
    return [name for name, count in zip(CARD_NAMES, counts, strict=True) for _ in range(count)]


@dataclass
class GameRecord:
    """One game: seed, player names, public events (from seat 0's side) and the hidden deal and draws."""

    seed: int | None
    players: tuple[str, str]
    start: dict[str, Any]
    events: list[dict[str, Any]] = field(default_factory=list)
    drawn: list[list[str]] = field(default_factory=list)
    winner: str | None = None
    first_from_seed: bool = False

    @classmethod
    def from_game(cls, start: dict[str, Any], game: Game, seed: int | None, players: Sequence[str],
                  winner: str | None = None, first_from_seed: bool = False) -> GameRecord:
        """The record of ``game`` so far; ``start`` is :func:`start_scenario` taken at its deal.

        ``winner`` overrides the engine's outcome (a harness that stopped a long game calls it drawn);
        ``first_from_seed``: the first player was drawn from ``seed`` (module docstring).
        """
        events, drawn = [], []
        for event in game.events:
            events.append(public_event(event))
            if event[0] == DRAW:
                drawn.append([CARD_NAMES[card] for card in event[3]])
        if winner is None and game.outcome is not None:
            winner = WINNER_NAMES[game.outcome]
        return cls(seed, (str(players[0]), str(players[1])), start, events, drawn, winner, first_from_seed)

    @property
    def first_player(self) -> str:
        """``"agent"`` (seat 0) or ``"opponent"`` (seat 1): who moved first."""
        return self.start["to_move"]

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (module docstring)."""
        return {"format": FORMAT, "version": VERSION, "seed": self.seed, "first_from_seed": self.first_from_seed,
                "players": list(self.players),
                "first_player": self.first_player, "winner": self.winner, "events": self.events,
                "hidden": {"note": HIDDEN_NOTE, "start": self.start, "drawn": self.drawn}}

    @classmethod
    def from_dict(cls, data: Any) -> GameRecord:
        """A record from its JSON form; ``ValueError`` says what is missing or wrong (nothing is trusted)."""
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError(f"not a game record: expected a JSON object with \"format\": \"{FORMAT}\"")
        if data.get("version") != VERSION:
            raise ValueError(f"unsupported game record version {data.get('version')!r} (this program reads "
                             f"version {VERSION})")
        players, hidden = data.get("players"), data.get("hidden")
        if not (isinstance(players, list) and len(players) == 2 and all(isinstance(p, str) for p in players)):
            raise ValueError("a game record needs \"players\": two names")
        if not isinstance(hidden, dict) or not isinstance(hidden.get("start"), dict):
            raise ValueError("a game record needs \"hidden\": {\"start\": the deal as a scenario, \"drawn\": [...]}")
        events, drawn = data.get("events"), hidden.get("drawn", [])
        if not (isinstance(events, list) and all(isinstance(e, dict) for e in events)):
            raise ValueError("a game record needs \"events\": a list of event objects")
        if not (isinstance(drawn, list) and all(isinstance(d, list) for d in drawn)):
            raise ValueError("\"hidden\".\"drawn\" must be a list of card-name lists")
        seed, winner, first_from_seed = data.get("seed"), data.get("winner"), data.get("first_from_seed", False)
        if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed <= MAX_SEED):
            raise ValueError(f"\"seed\" must be an integer in 0..{MAX_SEED} or null, got {short_repr(seed)}")
        if not isinstance(first_from_seed, bool):
            raise ValueError(f"\"first_from_seed\" must be true or false, got {first_from_seed!r}")
        if winner not in _WINNERS:
            raise ValueError(f"\"winner\" must be one of {_WINNERS}, got {winner!r}")
        # The names are shown in a terminal: escape sequences in them would act there (printable).
        names = (printable(players[0]), printable(players[1]))
        record = cls(seed, names, hidden["start"], events, drawn, winner, first_from_seed)
        positions(record)  # re-simulates: refuses a record the rules cannot produce
        return record

    def save(self, path: str | Path) -> Path:
        """Write the record as JSON to ``path``, or to ``STEM-2.json``, ``STEM-3.json``, ... when that name is taken:
        a record never replaces a file. Returns the path written (:func:`create_new`)."""
        return create_new(Path(path), _layout(self.to_dict()))


def create_new(path: Path, text: str) -> Path:
    """Write ``text`` to ``path``, or to the first free ``STEM-K.SUFFIX`` (K = 2, 3, ...); returns the path written.

    The file appears whole under a name no file had: it is written beside under a temporary name, then hard-linked
    to the name, which fails if the name exists, so two writers never take the same name and none replaces a
    file. Where the file system has no hard links the name is created exclusively and written in place.
    """
    temporary = path.with_name(f".{path.stem}-{secrets.token_hex(6)}.partial")  # open() gives it the umask's mode
    try:
        with naming_errors(path), open(temporary, "x") as file:
            file.write(text)
        candidate, number = path, 1
        while True:
            try:
                _claim(temporary, candidate, text)
                return candidate
            except FileExistsError:
                number += 1
                candidate = path.with_name(f"{path.stem}-{number}{path.suffix}")
    finally:
        temporary.unlink(missing_ok=True)


def _claim(temporary: Path, path: Path, text: str) -> None:
    """Give the written ``temporary`` the new name ``path`` (``FileExistsError`` if it is taken)."""
    try:
        os.link(temporary, path)
    except FileExistsError:
        raise
    except OSError:  # no hard links here (some network and FAT file systems): exclusive creation instead
        with open(path, "x") as file:
            file.write(text)


def _layout(data: dict[str, Any]) -> str:
    """Compact JSON that still reads well: one line per top-level key, one line per event."""
    lines = []
    for key, value in data.items():
        if key == "events" and value:
            text = "[\n  " + ",\n  ".join(json.dumps(event) for event in value) + "\n ]"
        else:
            text = json.dumps(value)
        lines.append(f" {json.dumps(key)}: {text}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def load_record(path: str | Path) -> GameRecord:
    """Read a record written by :meth:`GameRecord.save`; ``ValueError`` naming the file for a file that is not one
    (:func:`agents.files.read_json`: not even JSON, or crafted to be nested too deep or to hold huge numbers)."""
    path = Path(path)
    data = read_json(path)
    try:
        return GameRecord.from_dict(data)
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from None


def seed_start(record: GameRecord) -> dict[str, Any] | None:
    """The start the record's seed deals (:func:`uno_env.seat.deal_game`), as a scenario; ``None`` without a seed.

    For a game played through :mod:`uno_env.seat` from a dealt start it equals ``record.start``.
    """
    if record.seed is None:
        return None
    first = None if record.first_from_seed else _SEAT_NAMES.index(record.first_player)
    return start_scenario(deal_game(record.seed, first))


def record_match(policies: tuple[Policy, Policy], seed: int, first_player: int = 0,
                 names: Sequence[str] | None = None, **play_options: Any) -> tuple[GameResult, GameRecord]:
    """:func:`uno_env.match.play_game` (same arguments, same game), also returning the game's record.

    The record is taken through ``play_game``'s ``on_deal`` hook: the deal is captured before anyone moves,
    and the events once the game is over. An ``on_deal`` among ``play_options`` gets the dealt game too.
    """
    dealt: list[tuple[dict[str, Any], Game]] = []
    also = play_options.pop("on_deal", None)

    def on_deal(game: Game) -> None:
        dealt.append((start_scenario(game), game))
        if also is not None:
            also(game)

    result = play_game(policies, seed, first_player, on_deal=on_deal, **play_options)
    (start, game), = dealt
    names = names or [getattr(p, "name", type(p).__name__) for p in policies]
    winner = WINNER_NAMES[result.winner]
    return result, GameRecord.from_game(start, game, seed, names, winner)


# ------------------------------------------------------------------------------------ re-simulation
@dataclass(frozen=True)
class Position:
    """The table after ``index`` moves of a replay: each seat's view and the move that led here.

    ``views[seat]`` is that seat's public view (its own hand, the other hand's size, ...) with no events;
    ``events`` are the public events of the move (seat 0's side, as in the record); ``mover`` and
    ``action`` are ``None`` at the start.
    """

    index: int
    views: tuple[PublicView, PublicView]
    mover: int | None = None
    action: int | None = None
    events: tuple[dict[str, Any], ...] = ()


class _RecordedShuffles:
    """Stands in for the game's generator in a replay: each reshuffle puts the recorded draws on top.

    A replay needs the deck order after a reshuffle only as far as the draws before the next reshuffle
    take from it; those cards (``hidden.drawn``) go to the top in draw order, the rest below in card order.
    """

    def __init__(self, orders: list[list[int]]) -> None:
        self.orders = orders

    def shuffle(self, deck: list[int]) -> None:
        top = self.orders.pop(0)
        rest = list(deck)
        for card in top:
            if card not in rest:
                raise ValueError(f"the draws after a reshuffle take {CARD_NAMES[card]}, which the deck does not hold")
            rest.remove(card)
        deck[:] = sorted(rest) + top[::-1]  # deck[-1] is drawn first


def positions(record: GameRecord) -> list[Position]:
    """Every position of the game, from the deal (index 0) to the last move; ``ValueError`` if the record lies."""
    moves, reshuffle_orders = _moves(record)
    try:
        game = Game.from_scenario(record.start, np.random.default_rng(0))  # its generator is replaced just below
    except ValueError as error:
        raise ValueError(f"the record's hidden start is not a valid deal: {error}") from None
    game.rng = _RecordedShuffles(reshuffle_orders)  # type: ignore[assignment]
    out = [Position(0, _views(game))]
    drawn = iter(record.drawn)
    for index, (action, expected) in enumerate(moves, start=1):
        mover = game.current
        if not game.is_legal(action):
            raise ValueError(f"move {index} of the record is not legal: {game.illegal_reason(action)}")
        seen = len(game.events)
        game.step(action)
        events = []
        for event in game.events[seen:]:
            events.append(public_event(event))
            if event[0] == DRAW and [CARD_NAMES[card] for card in event[3]] != next(drawn, None):
                raise ValueError(f"move {index}: the draw does not take the recorded cards")
        if events != expected:
            raise ValueError(f"move {index}: the rules give the events {events}, the record says {expected}")
        out.append(Position(index, _views(game), mover, action, tuple(events)))
    if next(drawn, None) is not None:
        raise ValueError(f"\"hidden\".\"drawn\" holds more draws than the {len(record.events)} events make: the "
                         "events are cut short")
    _check_winner(record, game, len(moves))
    return out


def _check_winner(record: GameRecord, game: Game, moves: int) -> None:
    """Refuse a record whose written winner is not the end its events reach (``ValueError`` naming the last event).

    A game that goes on after the last event may be unfinished (no winner) or drawn by a harness that stopped it
    at :data:`DECISION_LIMIT` moves; any other winner means events are missing.
    """
    last = f"event {len(record.events)}" + (f" ({record.events[-1]})" if record.events else "")
    written = _ends(record, record.winner)
    if game.outcome is not None:
        reached = WINNER_NAMES[game.outcome]
        if record.winner != reached:
            raise ValueError(f"the events end the game at {last} with {_ends(record, reached)}, but the record says "
                             f"{written}")
    elif record.winner is not None and not (record.winner == "draw" and moves >= DECISION_LIMIT):
        raise ValueError(f"the record says {written}, but after its last event, {last}, the game goes on: events "
                         "are missing")


def _ends(record: GameRecord, winner: str | None) -> str:
    return {"agent": f"{record.players[0]} winning", "opponent": f"{record.players[1]} winning", "draw": "a draw",
            None: "no winner"}[winner]


def _views(game: Game) -> tuple[PublicView, PublicView]:
    return game.observe(0, consume_events=False), game.observe(1, consume_events=False)


def _moves(record: GameRecord) -> tuple[list[tuple[int, list[dict[str, Any]]]], list[list[int]]]:
    """The record's moves as (action, the events it made), and the recorded draws after each reshuffle.

    Each play event is one move and each draw event another; reshuffle events belong to the draw that
    needed them. Reshuffle events left over at the end are the last draw, which the deck could not supply
    (that ends the game: RULES.md, "Running out of cards").
    """
    moves: list[tuple[int, list[dict[str, Any]]]] = []
    orders: list[list[int]] = []
    pending: list[dict[str, Any]] = []
    drawn = iter(record.drawn)
    for number, event in enumerate(record.events, start=1):
        kind = event.get("kind")
        try:
            if kind == "reshuffle":
                orders.append([])
                pending.append(event)
            elif kind == "play":
                if pending:
                    raise ValueError("a reshuffle must come right before a draw")
                card, colour = card_id(event["card"]), colour_id(event["colour"])
                action = next((a for a in card_actions(card) if action_colour(a) == colour), None)
                if action is None:
                    raise ValueError(f"{event['card']} cannot leave {event['colour']} in force")
                moves.append((action, [event]))
            elif kind == "draw":
                cards = [card_id(name) for name in next(drawn)]
                if orders:
                    orders[-1].extend(cards)
                moves.append((DRAW_ACTION, [*pending, event]))
                pending = []
            else:
                raise ValueError(f"unknown event kind {kind!r}")
        except (KeyError, TypeError, StopIteration, ValueError) as error:
            reason = "more draw events than hidden draws" if isinstance(error, StopIteration) else error
            raise ValueError(f"event {number} of the record ({event}) is not valid: {reason}") from None
    if pending:
        moves.append((DRAW_ACTION, pending))
    return moves, orders

