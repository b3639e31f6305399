"""The browser table (``uno-play --web``): its JSON API directly, and the page in a real headless Chromium.

The browser test drives Debian's ``chromium`` (``/usr/bin/chromium``) with Playwright. Where either is missing
it is skipped with the reason, except under ``UNO_REQUIRE_BROWSER=1`` (set by ``.ci/run``), where it fails: CI
installs both, so a skip there would hide a table nobody tested.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from train.table import web
from train.table.records import GameRecord, load_record, positions, record_match
from train.table.web import make_server
from uno_env.opponents import RandomPolicy, RulePolicy

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    """A running server on a free port (games saved under tmp_path/games); its base URL."""
    httpd = make_server(port=0, save_dir=tmp_path / "games", quiet=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()
    thread.join(timeout=10)


def call(url: str, method: str = "GET", body: object = None, raw: bytes | None = None,
         kind: str = "application/json") -> tuple[int, dict]:
    """One request; (status, decoded JSON answer), also for 4xx answers."""
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": kind})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_a_whole_game_through_the_api_and_its_record(server, tmp_path):
    status, options = call(f"{server}/api/options")
    assert status == 200 and {"random", "rule"} <= set(options["opponents"])
    status, game = call(f"{server}/api/games", "POST", {"opponent": "random", "seed": 4, "first": "agent",
                                                        "belief": True})
    assert status == 201 and game["players"] == ["you", "random"] and game["legal"]
    assert len(game["belief"]) == 54 and abs(sum(game["belief"]) - game["opponent_hand_size"]) < 1e-3
    moves = 0
    while game["winner"] is None:
        assert game["legal"], "the game waits for the person only when a move is possible"
        status, game = call(f"{server}/api/games/{game['id']}/moves", "POST", {"action": game["legal"][0]["action"]})
        assert status == 200
        moves += 1
        assert moves < 1000
    status, again = call(f"{server}/api/games/{game['id']}")
    assert status == 200 and again == game
    status, record = call(f"{server}/api/games/{game['id']}/record")
    assert status == 200 and record["winner"] == game["winner"] and record["seed"] == 4
    saved = load_record(tmp_path / "games" / "uno-web-4.json")
    assert saved.to_dict() == record and len(positions(saved)) > moves


def test_a_full_disk_keeps_the_finished_game_and_says_its_record_was_not_saved(server, monkeypatch, capfd):
    """Saving the record raised into the move's answer: a 500, and the game's end never shown."""
    def full(record, path):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(GameRecord, "save", full)
    _, game = call(f"{server}/api/games", "POST", {"opponent": "random", "seed": 4, "first": "agent"})
    while game["winner"] is None:
        status, game = call(f"{server}/api/games/{game['id']}/moves", "POST", {"action": game["legal"][0]["action"]})
        assert status == 200
    assert game["save_error"].startswith("disk full writing")
    status, record = call(f"{server}/api/games/{game['id']}/record")
    assert status == 200 and record["winner"] == game["winner"]
    assert "the game's record was not saved: disk full" in capfd.readouterr().err


def test_bad_requests_get_a_clear_4xx_and_leave_the_game_as_it_was(server):
    _, game = call(f"{server}/api/games", "POST", {"opponent": "rule", "seed": 8, "first": "agent"})
    url = f"{server}/api/games/{game['id']}"
    illegal = next(a for a in range(61) if a not in {m["action"] for m in game["legal"]})
    cases = [
        (call(f"{url}/moves", "POST", {"action": illegal}), 409, "not a legal move now"),
        (call(f"{url}/moves", "POST", {"action": "red:7"}), 400, "must be an integer action id"),
        (call(f"{url}/moves", "POST", {"action": True}), 400, "must be an integer action id"),
        (call(f"{url}/moves", "POST", raw=b"{broken"), 400, "the body is not JSON"),
        (call(f"{url}/moves", "POST", [1, 2]), 400, "must be a JSON object"),
        (call(f"{url}/moves", "POST", {"action": 1}, kind="text/plain"), 415, "application/json"),
        (call(f"{server}/api/games/0123456789abcdef/moves", "POST", {"action": 1}), 404, "start a new game"),
        (call(f"{server}/api/games/stale"), 404, "no game 'stale'"),
        (call(f"{server}/api/games", "POST", {"opponent": "os:system"}), 400, "unknown opponent 'os:system'"),
        (call(f"{server}/api/games", "POST", {"seed": -1}), 400, "seed must be an integer"),
        (call(f"{server}/api/games", "POST", {"first": "me"}), 400, "first must be agent, opponent or random"),
        (call(f"{server}/api/replays", "POST", {"format": "nope"}), 400, "not a valid game record"),
        (call(f"{server}/api/nothing"), 404, "nothing at /api/nothing"),
    ]
    for (status, answer), expected_status, message in cases:
        assert status == expected_status and message in answer["error"], (status, answer)
    status, after = call(url)
    assert status == 200 and after == game, "the game in progress is unchanged"
    status, moved = call(f"{url}/moves", "POST", {"action": game["legal"][0]["action"]})
    assert status == 200 and moved["events"] != game["events"], "and it still plays"


def test_replays_are_served_position_by_position(server):
    _, record = record_match((RulePolicy(), RandomPolicy()), 6, 1, names=["rule", "random"])
    status, answer = call(f"{server}/api/replays", "POST", record.to_dict())
    assert status == 200 and answer["players"] == ["rule", "random"]
    expected = positions(record)
    assert len(answer["positions"]) == len(expected)
    for sent, position in zip(answer["positions"], expected, strict=True):
        assert sum(c["count"] for c in sent["hand"]) == position.views[0].hand_size
        assert sum(c["count"] for c in sent["other_hand"]) == position.views[1].hand_size
        assert sent["events"] == list(position.events) and len(sent["belief"]) == 2


@pytest.mark.parametrize(("damage", "message"), [
    (lambda d: d.update(winner={"agent": "opponent", "opponent": "agent"}[d["winner"]]), "but the record says"),
    (lambda d: d.update(events=d["events"][:-1]), "the game goes on: events are missing"),
])
def test_a_replay_its_events_do_not_reproduce_is_refused(server, damage, message):
    _, record = record_match((RulePolicy(), RandomPolicy()), 6, 1, names=["rule", "random"])
    data = record.to_dict()
    damage(data)
    status, answer = call(f"{server}/api/replays", "POST", data)
    assert status == 400 and message in answer["error"] and "event" in answer["error"], answer


def play_out(server: str, opponent: str, seed: int) -> dict:
    """A whole game against ``opponent`` through the API, always the first legal move; the finished game."""
    status, game = call(f"{server}/api/games", "POST", {"opponent": opponent, "seed": seed})
    while status in (200, 201) and game["winner"] is None:
        status, game = call(f"{server}/api/games/{game['id']}/moves", "POST", {"action": game["legal"][0]["action"]})
    assert status in (200, 201), game
    return game


def test_two_games_of_one_seed_are_saved_as_two_records(server, tmp_path):
    games = [play_out(server, opponent, 5) for opponent in ("rule", "random")]
    saved = sorted((tmp_path / "games").iterdir())
    assert [path.name for path in saved] == ["uno-web-5-2.json", "uno-web-5.json"]
    assert [load_record(path).players for path in reversed(saved)] == [tuple(game["players"]) for game in games]


def browser_or_skip():
    """Playwright's sync API, or a skip (a failure under UNO_REQUIRE_BROWSER=1) saying what is missing."""
    missing = []
    if not (os.path.exists(CHROMIUM) or shutil.which("chromium")):
        missing.append(f"chromium ({CHROMIUM}; apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing.append("playwright (pip install playwright, in the dev extra)")
    if missing:
        reason = "the browser test needs " + " and ".join(missing)
        if os.environ.get("UNO_REQUIRE_BROWSER") == "1":
            pytest.fail(reason + " (UNO_REQUIRE_BROWSER=1: CI must run it)")
        pytest.skip(reason)
    return sync_playwright


def test_a_person_plays_a_whole_game_by_clicks_in_chromium(server, tmp_path):
    sync_playwright = browser_or_skip()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM if os.path.exists(CHROMIUM)
                                             else shutil.which("chromium"), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1100, "height": 1000})
            errors: list[str] = []
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.goto(server + "/")
            page.wait_for_selector("#opponent option[value='random']", state="attached")
            page.select_option("#opponent", "random")
            page.select_option("#first", "agent")
            page.check("#belief")
            page.click("#new-game")
            page.wait_for_selector("body[data-busy='0'] #hand .card")
            assert page.locator("#heat-map td").count() == 54, "the belief heat map has a cell per card type"
            assert page.text_content("#opponent-label") == "random: 7 cards"
            clicks = wilds = 0
            while page.locator("#result").is_hidden():
                assert clicks < 400 and not errors, errors
                if page.locator("#deck.drawable").count():
                    page.click("#deck")
                else:
                    card = page.locator("#hand button.playable").first
                    is_wild = (card.get_attribute("data-card") or "").startswith("wild")
                    card.click()
                    if is_wild:  # the colour picker opens
                        wilds += 1
                        page.click("#colour-picker button[data-colour='yellow']")
                page.wait_for_selector("body[data-busy='0']")
                assert page.text_content("#message") == "", page.text_content("#message")
                clicks += 1
            assert page.text_content("#result") in ("You won", "You lost", "Drawn game")
            assert page.locator("#hand button.playable").count() == 0 and clicks > 3
            saved = sorted((tmp_path / "games").glob("uno-web-*.json"))
            assert len(saved) == 1, "the finished game was saved"
            own_wilds = [e for e in load_record(saved[0]).events
                         if e.get("player") == "agent" and e["kind"] == "play" and e["card"].startswith("wild")]
            assert len(own_wilds) == wilds and all(e["colour"] == "yellow" for e in own_wilds)
            # Load that record as a replay and step through it.
            page.set_input_files("#replay-file", str(saved[0]))
            page.wait_for_selector("#replay-controls:not([hidden])")
            last = len(positions(load_record(saved[0]))) - 1
            assert page.text_content("#replay-at") == f"move 0 of {last}"
            page.click("#replay-next")
            page.click("#replay-next")
            page.click("#replay-back")
            assert page.text_content("#replay-at") == f"move 1 of {last}"
            assert page.locator("#opponent-cards .card:not(.back)").count() > 0, "a replay shows both hands"
            page.click("#replay-end")
            assert page.text_content("#replay-at") == f"move {last} of {last}"
            assert not page.locator("#result").is_hidden()
            # A record cut short is refused, the message naming the file and what is wrong.
            cut = load_record(saved[0]).to_dict()
            cut["events"] = cut["events"][:-1]
            (tmp_path / "cut.json").write_text(json.dumps(cut))
            page.set_input_files("#replay-file", str(tmp_path / "cut.json"))
            page.wait_for_function("document.querySelector('#message').textContent !== ''")
            message = page.text_content("#message")
            assert message.startswith("cut.json: not a valid game record: ") and "events are missing" in message
            assert not errors, errors
        finally:
            browser.close()


def test_a_long_hand_fits_its_row_and_every_card_can_be_clicked(server):
    """A hand of many card types shrinks to the hand's row instead of running under the events panel.

    Cards past the row's width used to slide under the panel, which then took their clicks: a real player could not
    play them (and the whole-game test above failed whenever its random hand grew long).
    """
    sync_playwright = browser_or_skip()
    hand = [{"card": f"{colour}:{rank}", "colour": colour, "count": 1}
            for colour in ("red", "green") for rank in ("0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "skip")]
    hand += [{"card": "wild", "colour": "wild", "count": 2}, {"card": "wild_draw4", "colour": "wild", "count": 1}]
    legal = [{"card": card["card"], "action": i} for i, card in enumerate(hand)]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM if os.path.exists(CHROMIUM)
                                             else shutil.which("chromium"), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1100, "height": 1000})
            page.goto(server + "/")
            page.wait_for_selector("body[data-busy='0'] #hand .card")  # the page's own first game, drawn
            page.evaluate("""([hand, legal]) => drawTable(
                {hand, top: {card: "red:5", colour: "red"}, opponent_hand_size: 7, deck_size: 40, discard_size: 5,
                 active_colour: "red", pending_draw: 0}, {names: ["you", "random"], legal})""", [hand, legal])
            assert page.locator("#hand button.playable").count() == len(hand)
            # The element at each card's centre (where a click lands) must be that card, and no card may reach
            # under the events panel.
            blocked = page.evaluate("""() => {
                const panel = document.querySelector("#events-panel").getBoundingClientRect();
                return [...document.querySelectorAll("#hand .card")].filter((card) => {
                    const box = card.getBoundingClientRect();
                    const hit = document.elementFromPoint(box.left + box.width / 2, box.top + box.height / 2);
                    return !card.contains(hit) || box.right > panel.left;
                }).map((card) => card.dataset.card);
            }""")
            assert blocked == []
        finally:
            browser.close()


# ------------------------------------------------------------------------------------ hostile clients
def _raw(url: str, request: bytes, wait: float = 30.0) -> bytes:
    """Send raw bytes to the server; everything it answers until it closes the connection (or ``wait`` passes)."""
    address = urllib.parse.urlsplit(url)
    with socket.create_connection((address.hostname, address.port), timeout=wait) as connection:
        connection.sendall(request)
        answer = b""
        with contextlib.suppress(TimeoutError):
            while chunk := connection.recv(65536):
                answer += chunk
    return answer


def test_many_simultaneous_connections_wait_instead_of_being_reset(tmp_path: Path):
    """Connections wait in the listen backlog while the server is busy (it held 5: the 6th and later were lost)."""
    httpd = make_server(port=0, save_dir=tmp_path, quiet=True)  # bound and listening, not yet accepting
    try:
        waiting = [socket.create_connection(httpd.server_address[:2], timeout=3) for _ in range(40)]
        for connection in waiting:
            connection.close()
    finally:
        httpd.server_close()


def test_a_client_that_stalls_mid_body_is_dropped(server: str, monkeypatch: pytest.MonkeyPatch):
    assert 0 < web._Handler.timeout <= 60  # connections time out (there was no limit)
    monkeypatch.setattr(web._Handler, "timeout", 0.5)  # shortened for the test
    started = time.monotonic()
    host = urllib.parse.urlsplit(server).netloc
    answer = _raw(server, f"POST /api/games HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                          "Content-Length: 100\r\n\r\n{".encode(), wait=20)
    assert time.monotonic() - started < 10, "the server held the connection"
    assert answer.startswith(b"HTTP/1.1 408") and b"did not arrive" in answer


def test_the_host_header_must_name_this_server(server: str):
    port = urllib.parse.urlsplit(server).port
    for host, allowed in ((f"127.0.0.1:{port}", True), (f"localhost:{port}", True), (f"[::1]:{port}", True),
                          (f"evil.example:{port}", False), ("127.0.0.1", False), (f"localhost.evil.example:{port}",
                                                                                   False), ("", False)):
        answer = _raw(server, f"GET /api/options HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        assert answer.startswith(b"HTTP/1.1 200" if allowed else b"HTTP/1.1 403"), (host, answer[:80])


def test_a_deeply_nested_body_is_a_400(server: str):
    status, answer = call(f"{server}/api/games", "POST", raw=b"[" * 200_000 + b"]" * 200_000)
    assert status == 400 and "nested too deep" in answer["error"]
