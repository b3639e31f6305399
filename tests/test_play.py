"""The ``uno-play`` terminal game: typed as a person types it, in a pseudo-terminal and in process."""

from __future__ import annotations

import io
import json
import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rich.console import Console

from train.cli import play
from train.table.console import card_label
from train.table.moves import menu
from train.table.records import load_record, positions
from train.table.session import TableGame
from train.table.terminal import TerminalGame
from uno_env.cards import WILD
from uno_env.opponents import RandomPolicy, RulePolicy

ROOT = Path(__file__).resolve().parent.parent
#: A policy object for the ``module:attribute`` form (this file is importable as ``test_play``).
SHARED_POLICY = RandomPolicy()
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
MOVE_PROMPT = "Your move (a card or 1-"


def first_turn_menu(seed: int) -> list[int]:
    """The menu of the person's first turn in game 0 of a match dealt from ``seed``, the person moving first."""
    table = TableGame([None, RandomPolicy()], ["you", "random"], seed, 0)
    return menu(table.view(0))


def seed_with_wild() -> int:
    """A seed whose first turn offers a wild (found by dealing, so the test does not depend on one deal)."""
    return next(seed for seed in range(200) if any(card >= WILD for card in first_turn_menu(seed)))


class Terminal:
    """``uno-play`` in a pseudo-terminal: wait for text on the screen, type lines."""

    def __init__(self, args: list[str], tmp_path: Path) -> None:
        self.master, slave = pty.openpty()
        env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "50"}
        env.pop("NO_COLOR", None)
        self.process = subprocess.Popen([sys.executable, "-m", "train.cli.play", *args], stdin=slave, stdout=slave,
                                        stderr=slave, cwd=ROOT, env=env, close_fds=True)
        os.close(slave)
        self.raw = ""
        self.seen = 0  # how much of the screen text earlier waits consumed

    @property
    def text(self) -> str:
        return ANSI.sub("", self.raw).replace("\r", "")

    def wait(self, *patterns: str, timeout: float = 60) -> str:
        """Read until one of ``patterns`` appears after what earlier waits consumed; returns the pattern."""
        deadline = time.monotonic() + timeout
        while True:
            fresh = self.text[self.seen:]
            hits = [(fresh.find(p), p) for p in patterns if p in fresh]
            if hits:
                position, pattern = min(hits)
                self.seen += position + len(pattern)
                return pattern
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"none of {patterns} within {timeout}s; the screen ends with:\n{fresh[-2000:]}"
            ready, _, _ = select.select([self.master], [], [], min(remaining, 1.0))
            if ready:
                try:
                    self.raw += os.read(self.master, 65536).decode(errors="replace")
                except OSError:  # the program ended and closed the terminal
                    assert self.process.poll() is not None
                    raise AssertionError(f"the program ended; none of {patterns} seen in:\n{fresh[-2000:]}") from None

    def type(self, line: str) -> None:
        os.write(self.master, (line + "\n").encode())

    def close(self) -> int:
        status = self.process.wait(timeout=60)
        try:
            while select.select([self.master], [], [], 0.2)[0]:
                self.raw += os.read(self.master, 65536).decode(errors="replace")
        except OSError:
            pass
        os.close(self.master)
        return status


def test_a_person_plays_in_a_terminal_by_card_names_help_a_wild_and_a_rematch(tmp_path):
    seed = seed_with_wild()
    options = first_turn_menu(seed)
    terminal = Terminal(["--opponent", "random", "--seed", str(seed), "--first", "agent", "--games", "1",
                         "--save-games", str(tmp_path)], tmp_path)
    try:
        terminal.wait(MOVE_PROMPT)
        assert "\x1b[" in terminal.raw, "cards are drawn in colour on a terminal"
        terminal.type("help")
        terminal.wait("How to play")
        terminal.wait(MOVE_PROMPT)
        terminal.type("purple 12")
        terminal.wait("I do not know")
        terminal.wait(MOVE_PROMPT)
        wild = card_label(next(card for card in options if card >= WILD))
        terminal.type(wild)  # a wild by name, its colour asked for, and a colour misspelt
        terminal.wait("Which colour for your")
        terminal.type("blu")
        terminal.wait(f"you played  {wild}  and chose blue")
        # Play on: a card typed by its name as shown, or Enter for a draw, until the game ends.
        for _ in range(500):  # a game has far fewer turns
            screen = terminal.wait(MOVE_PROMPT, "Press Enter:", "Rematch? [y/N]:")
            if screen == "Rematch? [y/N]:":
                break
            if screen == "Press Enter:":
                terminal.type("")
                continue
            turn = terminal.text[:terminal.seen].rsplit("Top card", 1)[1]
            listed = re.findall(r"^  1\)\s+(.+?)\s*(?:\(you choose the colour\))?$", turn, re.M)
            assert "I do not know" not in turn and "Which card?" not in turn
            terminal.type(listed[0])
            if listed and listed[0].startswith("wild"):
                terminal.wait("Colour (")
                terminal.type("r")
        screen = terminal.text
        assert re.search(r"Match over: you [01] - [01] random", screen)
        assert "Saved the game record to" in screen and "I do not know" in screen
        terminal.type("y")  # a rematch: the next game is dealt from the next seed
        terminal.wait(f"Seed {seed + 1}; random moves first.")  # the first mover alternates game by game
        terminal.wait(MOVE_PROMPT, "Press Enter:")
        terminal.type("q")
        terminal.wait("You left the game.")
        assert terminal.close() == 0
    finally:
        if terminal.process.poll() is None:
            terminal.process.kill()
    finished = load_record(tmp_path / f"uno-play-{seed}.json")
    assert finished.players == ("you", "random") and finished.winner in ("agent", "opponent", "draw")
    assert finished.events[0]["kind"] == "play" and finished.events[0]["card"].startswith("wild")
    assert finished.events[0]["colour"] == "blue"
    assert load_record(tmp_path / f"uno-play-{seed + 1}.json").winner is None  # left unfinished


def scripted(answers: list[str], prompts: list[str]):
    """An ``ask`` that answers ``answers`` in order, remembers the prompts, and ends the input after them."""
    pending = list(answers)

    def ask(prompt: str) -> str:
        prompts.append(prompt)
        if not pending:
            raise EOFError
        return pending.pop(0)
    return ask


def run_game(answers: list[str], seed: int = 3, **options) -> tuple[str, list[str]]:
    """Run a TerminalGame in process against the rule player; (its output, the prompts it asked)."""
    out = io.StringIO()
    prompts: list[str] = []
    game = TerminalGame(options.pop("opponent", RulePolicy()), "rule", seed, first="agent",
                        console=Console(file=out, width=120, color_system=None), ask=scripted(answers, prompts),
                        **options)
    game.run()
    return out.getvalue(), prompts


def test_forgiving_inputs_and_clear_answers_in_process():
    seed = seed_with_wild()
    options = first_turn_menu(seed)
    wild = next(card for card in options if card >= WILD)
    out, prompts = run_game(["abc", "0", "99", "draw", "", f"{card_label(wild)}", "purple", "gren"], seed=seed)
    assert "I do not know 'abc'" in out
    assert "There is no move 0" in out and "There is no move 99" in out
    assert "you must play one" in out  # a draw is refused while a card fits
    assert "Type a card" in out  # an empty line with several moves
    assert "Please type one of red, green, blue, yellow" in out
    assert f"you played  {card_label(wild)}  and chose green" in out
    assert "Input ended: leaving the game." in out
    assert prompts.count("Colour (1 red, 2 green, 3 blue, 4 yellow; or r/g/b/y): ") == 2


def test_same_seed_and_answers_replay_the_same_match():
    answers = ["1"] * 40
    first, _ = run_game(answers, seed=11, opponent=RandomPolicy())
    again, _ = run_game(answers, seed=11, opponent=RandomPolicy())
    other, _ = run_game(answers, seed=12, opponent=RandomPolicy())
    assert first == again
    assert first != other


def test_a_match_keeps_the_score_and_alternates_the_first_mover():
    out, prompts = run_game(["1"] * 3000, seed=5, opponent=RandomPolicy(), games=2)  # "1": a wild's colour too
    assert "Seed 5; you move first." in out and "Seed 6; rule moves first." in out
    assert prompts.count("Press Enter for game 2 of 2 (q to stop): ") == 1
    assert re.search(r"Score: you \d - \d rule", out) and re.search(r"Match over: you \d - \d rule", out)
    assert "Rematch? [y/N]: " in prompts and "Thanks for playing." in out


def test_show_belief_shows_what_the_opponent_expects_of_your_hand():
    out, _ = run_game(["q"], show_belief=True)
    assert "What rule's card counting expects you to hold" in out
    assert "expected" in out and "really held" in out


def test_end_of_input_ends_cleanly():
    status, out = run_main(["--seed", "3", "--first", "agent"], "")
    assert status == 0
    assert "Input ended: leaving the game." in out


def run_main(argv: list[str], stdin: str) -> tuple[int, str]:
    """``uno-play`` in a subprocess with ``stdin`` typed (no terminal: no colours)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tests")}  # for the module:attribute test_play:SHARED_POLICY
    result = subprocess.run([sys.executable, "-m", "train.cli.play", *argv], input=stdin, capture_output=True,
                            text=True, cwd=ROOT, timeout=120, env=env)
    return result.returncode, result.stdout + result.stderr


@pytest.mark.parametrize("spec", ["random", "uno_env.opponents:RulePolicy", "test_play:SHARED_POLICY"])
def test_opponent_specs(spec):  # a name, a class, an object
    status, out = run_main(["--opponent", spec, "--seed", "1"], "q\n")
    assert status == 0, out
    assert f"Game 1 of 3: you against {spec}" in out
    assert "You left the game." in out


@pytest.mark.parametrize("spec", ["nobody", "no_such_module_here:Player", "uno_env.opponents:NoSuchPolicy"])
def test_bad_opponent_is_a_usage_error(capsys, spec):
    with pytest.raises(SystemExit) as exit_info:
        play.main(["--opponent", spec])
    assert exit_info.value.code == 2
    assert f"--opponent {spec}:" in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "message"), [
    (["--games", "0"], "--games must be at least 1"),
    (["--pace", "-1", "--watch", "rule", "random"], "--pace must be at least 0"),
    (["--port", "70000", "--web"], "--port must be in 0..65535"),
    (["--replay", "no-such-file.json"], "--replay no-such-file.json: No such file or directory"),
])
def test_bad_arguments_are_usage_errors(capsys, argv, message):
    with pytest.raises(SystemExit) as exit_info:
        play.main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_watch_shows_both_players_moves_and_saves_replayable_records(tmp_path):
    status, out = run_main(["--watch", "rule", "random", "--pace", "0", "--seed", "4", "--games", "2",
                            "--save-games", str(tmp_path)], "")
    assert status == 0, out
    assert out.count("Game 1 of 2: rule against random") == 1 and "Game 2 of 2" in out
    assert re.search(r"^ +\d+\.  (rule|random) played ", out, re.M)
    assert re.search(r"^ +random: \d+ cards? +\S", out, re.M), "both hands are shown"
    assert re.search(r"Score: rule \d - \d random", out)
    for seed in (4, 5):
        record = load_record(tmp_path / f"watch-{seed}.json")
        assert record.players == ("rule", "random") and record.seed == seed and record.winner is not None
        assert len(positions(record)) > 5
    hidden = run_main(["--watch", "rule", "random", "--pace", "0", "--seed", "4", "--hide-hands"], "")[1]
    assert not re.search(r"^ +random: \d+ cards? +\S", hidden, re.M)
    assert re.search(r"^ +random: \d+ cards?$", hidden, re.M)


def test_watching_a_seed_again_keeps_the_first_record(tmp_path):
    records = []
    for players in (["rule", "random"], ["random", "rule"]):
        status, out = run_main(["--watch", *players, "--pace", "0", "--seed", "5", "--save-games", str(tmp_path)], "")
        assert status == 0, out
        records.append(tmp_path / ("watch-5.json" if not records else "watch-5-2.json"))
        assert f"Saved the game record to {records[-1]}" in out.replace("\n", "")  # rich wraps a long path
    assert sorted(tmp_path.iterdir()) == sorted(records)
    assert [load_record(path).players for path in records] == [("rule", "random"), ("random", "rule")]


def test_a_terminal_game_of_a_seed_again_keeps_the_first_record(tmp_path):
    for _ in range(2):
        run_game(["q"], seed=9, save_dir=tmp_path)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["uno-play-9-2.json", "uno-play-9.json"]


def test_replaying_a_record_its_events_do_not_reproduce_is_a_usage_error(tmp_path, capsys):
    _, out = run_main(["--watch", "rule", "random", "--pace", "0", "--seed", "2", "--save-games", str(tmp_path)], "")
    data = json.loads((tmp_path / "watch-2.json").read_text())
    data["winner"] = {"agent": "opponent", "opponent": "agent"}[data["winner"]]
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(data))
    with pytest.raises(SystemExit) as exit_info:
        play.main(["--replay", str(edited)])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert f"--replay: {edited}: the events end the game at event {len(data['events'])} (" in err
    assert "but the record says" in err
