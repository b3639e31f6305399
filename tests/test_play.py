"""The ``uno-play`` terminal game, driven through standard input."""

from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from train.cli import play
from uno_env import observation
from uno_env.opponents import RandomPolicy
from uno_env.view import PLAY

ROOT = Path(__file__).resolve().parent.parent
#: A policy object for the ``module:attribute`` form (this file is importable as ``test_play``).
SHARED_POLICY = RandomPolicy()
MENU_LINE = re.compile(r"^  (\d+)\) play (\S+)(?: -> (\w+))?$")  # drawing is never a choice: it happens by itself
RESULT_LINES = ("You won.", "You lost.", "The game is drawn.")


def run_main(monkeypatch, capsys, argv: list[str], stdin: str) -> tuple[int, str]:
    """Call ``play.main`` with ``stdin`` as standard input; (exit status, everything printed)."""
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    status = play.main(argv)
    return status, capsys.readouterr().out


def turns(output: str) -> list[str]:
    """The text of each of the human's turns and of the final table, in order."""
    return re.split(r"^== (?:Your turn|Game over) ==$", output, flags=re.MULTILINE)[1:]


def menu(turn: str) -> list[tuple[str, str | None]]:
    """The numbered moves of a turn as (card, declared colour) pairs, in menu order."""
    moves = []
    for line in turn.splitlines():
        match = MENU_LINE.match(line)
        if match:
            assert int(match.group(1)) == len(moves) + 1, "moves are numbered 1..k"
            moves.append((match.group(2), match.group(3)))
    return moves


def first_own_play(turn: str) -> tuple[str, str] | None:
    """(card, colour now) of the first "you played" event listed at a turn."""
    match = re.search(r"^  - you played (\S+) \(colour now (\w+)\)$", turn, flags=re.MULTILINE)
    return (match.group(1), match.group(2)) if match else None


def test_full_game_against_random_applies_the_numbered_moves(monkeypatch, capsys):
    status, out = run_main(monkeypatch, capsys, ["--opponent", "random", "--seed", "5", "--first", "agent"],
                           "1\n" * 500)
    assert status == 0
    assert "You play against RandomPolicy; seed 5; you move first." in out
    assert "== Game over ==" in out
    assert out.rstrip().splitlines()[-1] in RESULT_LINES
    assert "Input ended" not in out and "is not a number" not in out
    blocks = turns(out)
    checked = 0
    for turn, following in zip(blocks, blocks[1:], strict=False):
        moves = menu(turn)
        if not moves:
            continue  # a turn where the draw happened by itself
        card, colour = moves[0]
        played = first_own_play(following)
        assert played is not None and played[0] == card
        if colour is not None:
            assert played[1] == colour
        checked += 1
    assert checked >= 5


def test_the_chosen_number_picks_that_move(monkeypatch, capsys):
    _, out = run_main(monkeypatch, capsys, ["--opponent", "rule", "--seed", "3", "--first", "agent"], "3\nq\n")
    first, second = turns(out)[:2]
    moves = menu(first)
    assert len(moves) >= 3
    assert first_own_play(second)[0] == moves[2][0]
    assert "You left the game." in out


def test_bad_inputs_are_answered_and_the_prompt_repeats(monkeypatch, capsys):
    status, out = run_main(monkeypatch, capsys, ["--seed", "3", "--first", "agent"], "abc\n0\n99\n\n-1\nq\n")
    assert status == 0
    assert "'abc' is not a number" in out
    assert "There is no move 0" in out
    assert "There is no move 99" in out
    assert "There is no move -1" in out
    assert "Please type the number of a move" in out
    assert out.count("Your move [") == 6
    assert "You left the game." in out
    assert "Traceback" not in out


def test_end_of_input_ends_the_game_cleanly(monkeypatch, capsys):
    status, out = run_main(monkeypatch, capsys, ["--seed", "3", "--first", "agent"], "")
    assert status == 0
    assert "Input ended: leaving the game." in out


def test_same_seed_and_inputs_replay_the_same_game(monkeypatch, capsys):
    args = ["--opponent", "random", "--seed", "11"]
    _, first = run_main(monkeypatch, capsys, args, "1\n" * 30)
    _, again = run_main(monkeypatch, capsys, args, "1\n" * 30)
    _, other = run_main(monkeypatch, capsys, ["--opponent", "random", "--seed", "12"], "1\n" * 30)
    assert first == again
    assert first != other


def test_opponent_first_moves_before_the_human(monkeypatch, capsys):
    _, out = run_main(monkeypatch, capsys, ["--seed", "4", "--first", "opponent"], "q\n")
    assert "the opponent moves first" in out
    assert re.search(r"^  - opponent (played|drew)", turns(out)[0], flags=re.MULTILINE)


def test_show_belief_prints_the_opponents_expectation(monkeypatch, capsys):
    _, out = run_main(monkeypatch, capsys, ["--seed", "3", "--first", "agent", "--show-belief"], "q\n")
    assert "The opponent's card counting expects you to hold" in out


@pytest.mark.parametrize(("spec", "shown"), [
    ("random", "RandomPolicy"),
    ("uno_env.opponents:RulePolicy", "RulePolicy"),  # a class
    ("test_play:SHARED_POLICY", "RandomPolicy"),  # an object
])
def test_opponent_specs(monkeypatch, capsys, spec, shown):
    status, out = run_main(monkeypatch, capsys, ["--opponent", spec, "--seed", "1"], "q\n")
    assert status == 0
    assert f"You play against {shown}; seed 1;" in out


@pytest.mark.parametrize("spec", ["nobody", "no_such_module_here:Player", "uno_env.opponents:NoSuchPolicy"])
def test_bad_opponent_is_a_usage_error(capsys, spec):
    with pytest.raises(SystemExit) as exit_info:
        play.main(["--opponent", spec])
    assert exit_info.value.code == 2
    assert f"--opponent {spec}:" in capsys.readouterr().err


def test_python_dash_m_runs_the_game():
    result = subprocess.run([sys.executable, "-m", "train.cli.play", "--seed", "1", "--first", "agent"], input="x\nq\n",
                            capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "'x' is not a number" in result.stdout
    assert "You left the game." in result.stdout


class RecordingTracker:
    """A stand-in belief tracker: remembers every event it learns, and reports what it knew when asked."""

    snapshots: list[list[tuple]] = []

    def __init__(self) -> None:
        self.events: list[tuple] = []

    def reset(self, view) -> None:
        self.events = list(view.events)

    def update(self, view) -> None:
        self.events += view.events

    def features(self) -> np.ndarray:
        return np.zeros(3, dtype=np.float32)

    def sample_hands(self, count: int, rng: np.random.Generator) -> np.ndarray:
        RecordingTracker.snapshots.append(list(self.events))
        hands = np.zeros((count, 54))
        hands[:, 0] = len(self.events)  # shown as the expected count of red:0
        return hands


def test_belief_watch_learns_every_opponent_event_exactly_once(monkeypatch):
    monkeypatch.setattr(observation, "make_belief", lambda kind, n_particles, rng: RecordingTracker())
    monkeypatch.setattr(RecordingTracker, "snapshots", [])
    lines: list[str] = []
    result = play.play(RandomPolicy(), seed=5, first="agent", show_belief=True, read=lambda prompt: "1",
                       write=lines.append)
    assert result in ("agent", "opponent", "draw")
    snapshots = RecordingTracker.snapshots
    assert len(snapshots) == sum(line.startswith("The opponent's card counting expects") for line in lines) > 5
    # What the opponent's seat knew at each of the human's turns only ever grows: no event lost or repeated.
    for before, after in zip(snapshots, snapshots[1:], strict=False):
        assert after[:len(before)] == before and len(after) > len(before)
    assert any(kind == PLAY and player == 1 for kind, player, *_ in snapshots[-1])  # the human's plays
    shown = [line for line in lines if line.lstrip().startswith("red:0 ")]
    assert [float(line.split()[1]) for line in shown] == [float(len(s)) for s in snapshots]
