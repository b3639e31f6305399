"""The browser table: ``uno-play --web`` serves a page on which a person plays against any agent.

    uno-play --web                      # http://127.0.0.1:8000/
    uno-play --web --port 8080 --opponent search-q-ensemble --save-games games/

The page (``static/``) draws the table as :mod:`uno_env.render`'s picture does (the same colours and layout:
the other player's card backs on top, deck, pile and colour in force in the middle, your hand below with the
playable cards raised and outlined, the last events on the right); a click on a playable card plays it (a wild
asks for its colour), a click on the deck draws when nothing fits. It can show what card counting infers
about the other player's hand as a heat map, and load a game record (``--save-games``) to step through.

The server is the standard library's :class:`http.server.ThreadingHTTPServer`: the page needs a handful of
JSON routes for one person on one machine, which it handles well, and no web framework becomes a dependency.
Each request runs in its own thread; every game has a lock, so two requests on one game are applied one after
the other. It listens on 127.0.0.1 unless told otherwise.

JSON API (every answer is JSON; errors are ``{"error": message}`` with a 4xx status, and leave every game as
it was):

* ``GET /api/options``: the opponents the page offers;
* ``POST /api/games`` ``{"opponent": name, "seed": int?, "first": "agent"|"opponent"|"random"?,
  "belief": bool?}``: a new game (201), the opponent moving first if it does;
* ``GET /api/games/ID``: the game as the person sees it (``"legal"``: the moves, ``"belief"`` if asked);
* ``POST /api/games/ID/moves`` ``{"action": 0..60}``: the person's move, then the opponent's replies;
  409 if the move is not legal now (the reason names the legal ones);
* ``GET /api/games/ID/record``: the game record (:mod:`train.table.records`);
* ``POST /api/replays`` ``{a game record}``: every position of the game, both hands shown.

Only opponents from :data:`OPTIONS` (the built-in names, the shipped agents and ``--opponent``) can be chosen:
a request never names a module to import or a file to load. POST bodies must be ``application/json``, which a
page of another site cannot send here without the browser asking first (CORS), and that is never allowed.
Unknown game ids (a finished session, a restarted server) get a 404 that says so. The ``Host`` header must name the
server by an IP address, ``localhost`` or the ``--host`` it was given, with its port (403 otherwise): a page of
another site whose name was pointed at this machine (DNS rebinding) names that site. A client that stalls for
:data:`READ_TIMEOUT` seconds in the middle of a request, or has not sent the whole of it :data:`REQUEST_DEADLINE`
seconds after it began, is dropped; a body nested too deeply, or holding an integer of more than
:data:`agents.files.MAX_JSON_DIGITS` digits, is a 400, and so is a value of the wrong type (``"belief": "no"``),
named.
"""

from __future__ import annotations

import io
import ipaddress
import json
import math
import secrets
import socket
import sys
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from agents.files import parse_json
from train.output import file_error
from train.policies import resolve_policy
from train.shipped import MODELS_DIR
from train.specs import label
from train.table.console import card_label
from train.table.records import GameRecord, Position, positions
from train.table.session import TableGame, expected_opponent_hand
from uno_env.cards import CARD_NAMES, COLOURS, action_card, action_colour, card_colour, short_repr
from uno_env.game import IllegalActionError
from uno_env.policy import policy_names
from uno_env.view import PublicView

#: Games kept at once; the oldest is dropped beyond this (its id then answers 404).
MAX_GAMES = 64
#: Largest request body accepted (a long game record is some tens of kilobytes).
MAX_BODY = 1_000_000
#: Seconds a connection may stall in the middle of a request (a promised body that never comes) before it is dropped.
READ_TIMEOUT = 10.0
#: Seconds to receive a whole request (its line, headers and body): a client trickling a header line now and then
#: never stalls for READ_TIMEOUT, and would otherwise hold its connection and thread for as long as it likes.
REQUEST_DEADLINE = 20.0
#: Connections waiting to be accepted: a page opening several games at once must not be reset.
LISTEN_BACKLOG = 128
_STATIC = {"/": ("index.html", "text/html; charset=utf-8"), "/app.js": ("app.js", "text/javascript; charset=utf-8"),
           "/style.css": ("style.css", "text/css; charset=utf-8")}
_FIRST = {"agent": 0, "opponent": 1}


class RequestError(Exception):
    """A request the server refuses: the HTTP status and the message for the page."""

    def __init__(self, status: HTTPStatus, message: str) -> None:
        super().__init__(message)
        self.status = status


def default_options(extra: str | None = None) -> list[str]:
    """The opponents offered: the registered names, the shipped agents, and ``extra`` (``--opponent``)."""
    names = list(policy_names())
    if MODELS_DIR.is_dir():
        names += sorted(p.name for p in MODELS_DIR.iterdir() if (p / "model.zip").is_file())
    if extra and extra not in names:
        names.append(extra)
    return names


@dataclass
class _Game:
    table: TableGame
    belief: bool
    lock: threading.Lock = field(default_factory=threading.Lock)
    save_error: str | None = None  # why its record could not be saved (a full disk, say): the game goes on


class WebTable:
    """The server's state: the games in play, by id. Safe to use from several threads."""

    def __init__(self, options: list[str], default_opponent: str = "rule", save_dir: Path | None = None) -> None:
        self.options = options
        self.default_opponent = default_opponent
        self.save_dir = save_dir
        self._games: OrderedDict[str, _Game] = OrderedDict()
        self._lock = threading.Lock()

    # ------------------------------------------------------------------------------ routes
    def new_game(self, body: Any) -> dict[str, Any]:
        """``POST /api/games``."""
        body = _object(body)
        spec = body.get("opponent", self.default_opponent)
        if spec not in self.options:
            raise RequestError(HTTPStatus.BAD_REQUEST, f"unknown opponent {spec!r}: choose one of "
                                                       f"{', '.join(self.options)}")
        seed = body.get("seed")
        if seed is None:
            seed = int(np.random.default_rng().integers(1_000_000))  # like uno-play without --seed: picked, shown
        if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**62:
            raise RequestError(HTTPStatus.BAD_REQUEST, f"seed must be an integer in 0..{2**62 - 1}, got {seed!r}")
        first = body.get("first", "random")
        if first not in ("agent", "opponent", "random"):
            raise RequestError(HTTPStatus.BAD_REQUEST, f"first must be agent, opponent or random, got {first!r}")
        first_seat = _FIRST.get(first)  # None for "random": drawn from the game's seed (uno_env.seat)
        try:
            opponent = resolve_policy(spec)
        except (ValueError, TypeError) as error:  # e.g. a checkpoint that became unreadable since the start
            raise RequestError(HTTPStatus.BAD_REQUEST, f"cannot seat {spec!r}: {error}") from None
        table = TableGame([None, opponent], ["you", label(spec)], seed, first_seat)
        belief = body.get("belief", False)
        if not isinstance(belief, bool):  # bool("no") is True
            raise RequestError(HTTPStatus.BAD_REQUEST, f"belief must be true or false, got {short_repr(belief)}")
        game = _Game(table, belief)
        game_id = secrets.token_hex(8)  # an id, not game randomness: unguessable, so pages cannot collide
        with self._lock:
            self._games[game_id] = game
            while len(self._games) > MAX_GAMES:
                self._games.popitem(last=False)
        with game.lock:
            table.advance()
            self._finish(game)
            return self._state(game_id, game)

    def get_game(self, game_id: str) -> dict[str, Any]:
        """``GET /api/games/ID``."""
        game = self._game(game_id)
        with game.lock:
            return self._state(game_id, game)

    def move(self, game_id: str, body: Any) -> dict[str, Any]:
        """``POST /api/games/ID/moves``: the person's move and the opponent's replies."""
        game = self._game(game_id)
        action = _object(body).get("action")
        if not isinstance(action, int) or isinstance(action, bool):
            raise RequestError(HTTPStatus.BAD_REQUEST, f"\"action\" must be an integer action id, got {action!r}")
        with game.lock:
            try:
                game.table.play(action)
            except IllegalActionError as error:
                raise RequestError(HTTPStatus.CONFLICT, f"not a legal move now: {error}") from None
            game.table.advance()
            self._finish(game)
            return self._state(game_id, game)

    def record(self, game_id: str) -> dict[str, Any]:
        """``GET /api/games/ID/record``."""
        game = self._game(game_id)
        with game.lock:
            return game.table.record().to_dict()

    def replay(self, body: Any) -> dict[str, Any]:
        """``POST /api/replays``: every position of a game record."""
        try:
            record = GameRecord.from_dict(body)
        except ValueError as error:
            raise RequestError(HTTPStatus.BAD_REQUEST, f"not a valid game record: {error}") from None
        return {"players": list(record.players), "winner": record.winner, "seed": record.seed,
                "positions": [_position(position) for position in positions(record)]}

    # ------------------------------------------------------------------------------ helpers
    def _game(self, game_id: str) -> _Game:
        with self._lock:
            game = self._games.get(game_id)
        if game is None:
            raise RequestError(HTTPStatus.NOT_FOUND, f"no game {game_id!r} here (it was dropped or the server "
                                                     "restarted): start a new game")
        return game

    def _finish(self, game: _Game) -> None:
        if game.table.done and self.save_dir is not None:
            try:
                self.save_dir.mkdir(parents=True, exist_ok=True)
                game.table.record().save(self.save_dir / f"uno-web-{game.table.seed}.json")
            except OSError as error:  # the finished game is still answered, and its record can still be fetched
                game.save_error = file_error(error) or f"{self.save_dir}: {error}"
                print(f"uno-play --web: the game's record was not saved: {game.save_error}", file=sys.stderr)

    def _state(self, game_id: str, game: _Game) -> dict[str, Any]:
        table = game.table
        view = table.view(0)
        state = {"id": game_id, "seed": table.seed, "players": list(table.names), "winner": table.winner,
                 **_table(view), "events": view.to_info()["events"],
                 "legal": [_move(action) for action in view.legal_actions]}
        if game.belief:
            state["belief"] = [round(float(x), 4) for x in expected_opponent_hand(view)]
        if game.save_error is not None:
            state["save_error"] = game.save_error
        return state


def _object(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise RequestError(HTTPStatus.BAD_REQUEST, "the request body must be a JSON object")
    return body


def _card(card: int) -> dict[str, Any]:
    colour = card_colour(card)
    return {"card": CARD_NAMES[card], "label": card_label(card), "colour": COLOURS[colour] if colour >= 0 else "wild"}


def _table(view: PublicView) -> dict[str, Any]:
    """What the page draws from one seat's view (card names as RULES.md, labels for people)."""
    return {"hand": [{**_card(card), "count": count} for card, count in enumerate(view.hand) if count],
            "top": _card(view.top), "active_colour": COLOURS[view.active_colour],
            "opponent_hand_size": view.opponent_hand_size, "deck_size": view.deck_size,
            "discard_size": view.discard_size, "pending_draw": view.pending_draw}


def _move(action: int) -> dict[str, Any]:
    card = action_card(action)
    return {"action": action, "card": CARD_NAMES[card] if card >= 0 else None,
            "colour": COLOURS[action_colour(action)] if card >= 0 else None}


def _position(position: Position) -> dict[str, Any]:
    return {"index": position.index, "mover": position.mover, "events": list(position.events),
            **_table(position.views[0]), "other_hand": _table(position.views[1])["hand"],
            "belief": [[round(float(x), 4) for x in expected_opponent_hand(view)] for view in position.views]}


class _Handler(BaseHTTPRequestHandler):
    """Routes requests to the :class:`WebTable` of the server."""

    server: _Server
    protocol_version = "HTTP/1.1"
    timeout = READ_TIMEOUT  # StreamRequestHandler sets it on the socket: every read waits at most this long

    def setup(self) -> None:
        """The connection's reader, bounded per request (:class:`_DeadlineReader`) instead of the socket's file."""
        super().setup()
        self.rfile.close()  # the socket's own file object: it would keep the socket open after the connection ends
        self._reader = _DeadlineReader(self.connection, self.timeout)
        self.rfile = io.BufferedReader(self._reader)

    def handle_one_request(self) -> None:
        """Read and answer one request within :data:`REQUEST_DEADLINE` seconds of starting to wait for it; the base
        class drops a connection whose read times out."""
        self._reader.deadline = time.monotonic() + REQUEST_DEADLINE
        super().handle_one_request()

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        if not self._host_allowed():
            return
        path = self.path.split("?", 1)[0]
        if path in _STATIC:
            name, kind = _STATIC[path]
            self._send(HTTPStatus.OK, resources.files("train.table").joinpath("static", name).read_bytes(), kind)
            return
        parts = path.strip("/").split("/")
        if parts == ["api", "options"]:
            table = self.server.table
            self._answer(lambda: {"opponents": table.options, "default_opponent": table.default_opponent})
        elif len(parts) == 3 and parts[:2] == ["api", "games"]:
            self._answer(lambda: self.server.table.get_game(parts[2]))
        elif len(parts) == 4 and parts[:2] == ["api", "games"] and parts[3] == "record":
            self._answer(lambda: self.server.table.record(parts[2]))
        else:
            self._error(HTTPStatus.NOT_FOUND, f"nothing at {path}")

    def do_POST(self) -> None:  # noqa: N802
        if not self._host_allowed():
            return
        parts = self.path.split("?", 1)[0].strip("/").split("/")
        table = self.server.table
        if parts == ["api", "games"]:
            self._answer(lambda: table.new_game(self._body()), HTTPStatus.CREATED)
        elif len(parts) == 4 and parts[:2] == ["api", "games"] and parts[3] == "moves":
            self._answer(lambda: table.move(parts[2], self._body()))
        elif parts == ["api", "replays"]:
            self._answer(lambda: table.replay(self._body()))
        else:
            self._error(HTTPStatus.NOT_FOUND, f"nothing to POST to at {self.path}")

    def _body(self) -> Any:
        kind = self.headers.get("Content-Type", "").split(";")[0].strip()
        if kind != "application/json":
            raise RequestError(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, "send the body as application/json")
        try:
            length = int(self.headers.get("Content-Length", ""))
        except ValueError:
            raise RequestError(HTTPStatus.LENGTH_REQUIRED, "a Content-Length header is needed") from None
        if not 0 <= length <= MAX_BODY:
            raise RequestError(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"the body may hold at most {MAX_BODY} bytes")
        try:
            data = self.rfile.read(length)
        except TimeoutError:
            self.close_connection = True
            raise RequestError(HTTPStatus.REQUEST_TIMEOUT, f"the body did not arrive within {READ_TIMEOUT:g} s") \
                from None
        try:  # the files' reader: not UTF-8, not JSON, nested too deep, an integer of thousands of digits
            return parse_json(data, "the body")
        except ValueError as error:
            raise RequestError(HTTPStatus.BAD_REQUEST, str(error)) from None

    def _host_allowed(self) -> bool:
        """Whether the ``Host`` header names this server (answered with 403 when not)."""
        bound_port = self.server.server_address[1]
        try:
            parts = urlsplit("//" + (self.headers.get("Host") or ""))
            name, port = parts.hostname or "", parts.port or 80
        except ValueError:  # a port that is no number
            name, port = "", 0
        if name and port == bound_port and (name in ("localhost", self.server.host.lower()) or _is_address(name)):
            return True
        self.close_connection = True
        self._error(HTTPStatus.FORBIDDEN, "the Host header must name this server (an IP address or localhost, "
                                          f"port {bound_port})")
        return False

    def _answer(self, compute: Any, status: HTTPStatus = HTTPStatus.OK) -> None:
        try:
            payload = compute()
        except RequestError as error:
            self._error(error.status, str(error))
            return
        except Exception as error:  # a bug (or a failing agent): answered with 500 and logged, the server goes on
            self.log_error("%s", repr(error))
            self._error(HTTPStatus.INTERNAL_SERVER_ERROR, f"the server failed: {error!r}")
            return
        self._send(status, json.dumps(payload).encode(), "application/json")

    def _error(self, status: HTTPStatus, message: str) -> None:
        self._send(status, json.dumps({"error": message}).encode(), "application/json")

    def _send(self, status: HTTPStatus, data: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base class's name)
        if not self.server.quiet:
            super().log_message(format, *args)


class _DeadlineReader(io.RawIOBase):
    """A connection's reads, each waiting at most ``timeout`` and all of one request ending by ``deadline``.

    The socket's own timeout bounds one wait, not a request: a client sending a byte every few seconds would keep
    a request open for ever. :class:`_Handler` sets ``deadline`` as it starts reading each request.
    """

    def __init__(self, connection: socket.socket, timeout: float) -> None:
        super().__init__()
        self.connection = connection
        self.timeout = timeout
        self.deadline = math.inf

    def readable(self) -> bool:
        """Always: this is a reader."""
        return True

    def readinto(self, buffer: Any) -> int:
        """Receive into ``buffer``; ``TimeoutError`` once the request's deadline has passed."""
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"the request did not arrive within {REQUEST_DEADLINE:g} s")
        self.connection.settimeout(min(left, self.timeout))
        try:
            return self.connection.recv_into(buffer)
        finally:  # the answer is written with the whole timeout, whatever was left of the request's time
            self.connection.settimeout(self.timeout)


def _is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # a stuck request does not keep the program from exiting
    request_queue_size = LISTEN_BACKLOG

    def __init__(self, address: tuple[str, int], table: WebTable, quiet: bool) -> None:
        super().__init__(address, _Handler)
        self.host = address[0]
        self.table = table
        self.quiet = quiet


def make_server(host: str = "127.0.0.1", port: int = 8000, default_opponent: str = "rule",
                save_dir: Path | None = None, quiet: bool = False) -> ThreadingHTTPServer:
    """The server, bound but not yet serving (``serve_forever()``; port 0 picks a free port).

    An address it cannot listen on (not an address of this machine, a port in use) raises ``ValueError``.
    """
    table = WebTable(default_options(default_opponent), default_opponent, save_dir)
    try:
        return _Server((host, port), table, quiet)
    except (OSError, OverflowError, UnicodeError) as error:
        raise ValueError(f"cannot listen on {host}:{port}: {getattr(error, 'strerror', None) or error}") from None


def serve(server: ThreadingHTTPServer) -> None:
    """Serve the browser table of ``server`` (:func:`make_server`) until interrupted."""
    bound_host, bound_port = server.server_address[:2]
    print(f"The UNO table is at http://{bound_host}:{bound_port}/ (Ctrl-C stops the server)", flush=True)
    try:
        server.serve_forever()
    finally:
        server.server_close()
