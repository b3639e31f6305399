"""``uno-evaluate --checkpoint DIR`` (train/evaluation/pair_store.py): a stopped evaluation goes on where it stopped.

Whatever stops it (an exception, Ctrl-C, SIGTERM, kill -9), the same call again plays only the deal pairs that no
chunk file holds, and returns exactly what an uninterrupted call returns. A folder that holds another evaluation is
refused with the field that differs.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import threading
import time
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import numpy as np
import pytest

import train.evaluation.matches as matches
from train.evaluation.matches import CHECKPOINT_CHUNK, run_matches
from train.evaluation.pair_store import MANIFEST
from train.evaluation.tournament import round_robin

ROOT = Path(__file__).resolve().parent.parent
MATCHUPS = [("rule", "random"), ("random", "rule")]


def _same(a: list, b: list) -> bool:
    return all(x.agent == y.agent and x.opponent == y.opponent and np.array_equal(x.pair_scores, y.pair_scores)
               and np.array_equal(x.lengths, y.lengths) for x, y in zip(a, b, strict=True))


def _chunk_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("matchup*.npz"))


def _pairs(ranges: list[tuple[str, int, int]], agent: str) -> list[int]:
    """The deal pairs ``agent``'s matchup played, in order."""
    return sorted(pair for who, lo, hi in ranges if who == agent for pair in range(lo, hi))


@pytest.fixture
def played_ranges(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int, int]]:
    """(agent, first deal pair, one past the last) of every chunk played in this process from now on."""
    ranges: list[tuple[str, int, int]] = []
    play = matches._play_chunk

    def recording(agent, opponent, seeds, firsts, *args):
        ranges.append((agent, args[-1], args[-1] + len(seeds)))
        return play(agent, opponent, seeds, firsts, *args)

    monkeypatch.setattr(matches, "_play_chunk", recording)
    return ranges


def test_a_checkpointed_evaluation_is_the_same_and_a_second_call_plays_nothing(tmp_path: Path, played_ranges):
    plain = run_matches(MATCHUPS, pairs=50, seed=3, workers=1)
    played_ranges.clear()
    kept = run_matches(MATCHUPS, pairs=50, seed=3, workers=1, checkpoint=tmp_path / "kept")
    assert _same(kept, plain)
    assert all(hi - lo <= CHECKPOINT_CHUNK for _, lo, hi in played_ranges)
    assert len(_chunk_files(tmp_path / "kept")) == len(played_ranges)
    played_ranges.clear()
    assert _same(run_matches(MATCHUPS, pairs=50, seed=3, workers=1, checkpoint=tmp_path / "kept"), plain)
    assert played_ranges == []


def test_a_stopped_evaluation_plays_only_its_missing_pairs(tmp_path: Path, played_ranges,
                                                           monkeypatch: pytest.MonkeyPatch):
    plain = run_matches(MATCHUPS, pairs=60, seed=4, workers=1)
    play = matches._play_chunk
    calls = []

    def stopping(*args):  # the third chunk is interrupted
        calls.append(args)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return play(*args)

    monkeypatch.setattr(matches, "_play_chunk", stopping)
    with pytest.raises(KeyboardInterrupt):
        run_matches(MATCHUPS, pairs=60, seed=4, workers=1, checkpoint=tmp_path / "kept")
    kept = _chunk_files(tmp_path / "kept")
    assert [path.name for path in kept] == ["matchup0-pairs000000-000006.npz", "matchup0-pairs000006-000012.npz"]
    monkeypatch.setattr(matches, "_play_chunk", play)
    played_ranges.clear()
    assert _same(run_matches(MATCHUPS, pairs=60, seed=4, workers=1, checkpoint=tmp_path / "kept"), plain)
    assert _pairs(played_ranges, "rule") == list(range(12, 60)) and _pairs(played_ranges, "random") == list(range(60))
    # A hole in the middle, filled by a pool of two processes that cuts its chunks otherwise.
    (tmp_path / "kept" / "matchup1-pairs000030-000036.npz").unlink()
    monkeypatch.undo()  # the workers play the real chunks
    assert _same(run_matches(MATCHUPS, pairs=60, seed=4, workers=2, checkpoint=tmp_path / "kept"), plain)


def test_a_worker_that_died_mid_message_stops_the_evaluation_instead_of_hanging_it():
    # A worker killed while it writes its result leaves the pool's manager thread waiting for the rest of the message
    # (CPython 3.11), so the pool never says it broke. Here the pipe holds 1 byte of a 1 MiB message before the games
    # start, and the workers are killed once they are up.
    pool = matches.make_executor(2)
    os.write(pool._result_queue._writer.fileno(), struct.pack("!i", 1 << 20) + b"\0")
    outcome = {}

    def evaluate() -> None:
        try:
            run_matches(MATCHUPS, pairs=200, seed=3, executor=pool)
        except BaseException as error:  # what stopped it is the subject
            outcome["error"] = error

    runner = threading.Thread(target=evaluate, daemon=True)
    runner.start()
    while not getattr(pool, "_processes", None):
        time.sleep(0.01)
    for pid in list(pool._processes):
        os.kill(pid, signal.SIGKILL)
    runner.join(timeout=60)  # a bound, not a speed claim
    hung = runner.is_alive()
    matches.abandon(pool)  # ends the stuck manager thread either way
    assert not hung, "the evaluation waited for ever on a pool whose workers died"
    assert isinstance(outcome.get("error"), BrokenProcessPool), outcome


def test_a_folder_of_another_evaluation_is_refused_by_the_field_that_differs(tmp_path: Path):
    folder = tmp_path / "kept"
    run_matches(MATCHUPS, pairs=2, seed=5, workers=1, checkpoint=folder)
    with pytest.raises(ValueError, match="holds another evaluation: its seed is 5, this one's 6"):
        run_matches(MATCHUPS, pairs=2, seed=6, workers=1, checkpoint=folder)
    with pytest.raises(ValueError, match="its pairs is 2, this one's 3"):
        run_matches(MATCHUPS, pairs=3, seed=5, workers=1, checkpoint=folder)
    with pytest.raises(ValueError, match="its matchups is"):
        run_matches(MATCHUPS[:1], pairs=2, seed=5, workers=1, checkpoint=folder)
    other = tmp_path / "notes"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match=f"holds no {MANIFEST}"):
        run_matches(MATCHUPS, pairs=2, seed=5, workers=1, checkpoint=other)
    assert (other / "notes.txt").read_text() == "mine" and len(list(other.iterdir())) == 1


def test_a_retrained_checkpoint_is_not_scored_with_the_old_ones_games(tmp_path: Path):
    network = tmp_path / "net.zip"
    shutil.copyfile(ROOT / "models" / "search-q-none" / "model.zip", network)
    run_matches([(str(network), "random")], pairs=1, seed=0, workers=1, checkpoint=tmp_path / "kept")
    shutil.copyfile(ROOT / "models" / "search-q-particles" / "model.zip", network)
    with pytest.raises(ValueError, match="its matchups is .*net .sha256:"):
        run_matches([(str(network), "random")], pairs=1, seed=0, workers=1, checkpoint=tmp_path / "kept")


def test_a_tournament_resumes_too(tmp_path: Path, played_ranges):
    first = round_robin(["random", "rule", "search-q-none"], pairs=3, seed=1, workers=1, bootstrap=0,
                        checkpoint=tmp_path / "kept")
    played_ranges.clear()
    again = round_robin(["random", "rule", "search-q-none"], pairs=3, seed=1, workers=1, bootstrap=0,
                        checkpoint=tmp_path / "kept")
    assert played_ranges == [] and np.array_equal(first.ratings, again.ratings)
    assert np.array_equal(first.rating_ci[:, 0], first.ratings)  # no bootstrap: the intervals are the ratings


# ------------------------------------------------------------------------------------ the command, stopped for real
def _command(folder: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "train.cli.evaluate", "rule", "--opponents", "random", "rule", "--pairs", "600",
            "--seed", "9", "--workers", "2", "--no-progress", "--no-control-variates", "--checkpoint", str(folder),
            "--json", str(out)]


def _start(folder: Path, out: Path) -> subprocess.Popen:
    return subprocess.Popen(_command(folder, out), cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def _wait_for_a_chunk(folder: Path, process: subprocess.Popen) -> None:
    """Until the first chunk file exists or the process ended (polling, no time limit)."""
    while process.poll() is None and not _chunk_files(folder):
        time.sleep(0.02)


def _expected(tmp_path: Path) -> list:
    return [r.to_dict() for r in matches.evaluate("rule", ["random", "rule"], pairs=600, seed=9, workers=1)]


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGKILL])
def test_the_command_stopped_by_a_signal_goes_on_and_prints_what_an_unstopped_run_would(tmp_path: Path, stop):
    folder, out = tmp_path / "kept", tmp_path / "out.json"
    process = _start(folder, out)
    _wait_for_a_chunk(folder, process)
    process.send_signal(stop)
    _, err = process.communicate()
    assert not out.exists(), "the evaluation finished before the signal: nothing was tested"
    if stop == signal.SIGTERM:
        assert process.returncode == 130 and "Traceback" not in err, err
        assert f"interrupted; the finished deal pairs are kept in {folder}" in err
    kept = len(_chunk_files(folder))
    assert 0 < kept < 2 * 600 // CHECKPOINT_CHUNK
    resumed = subprocess.run(_command(folder, out), cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)),
                             capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(out.read_text()) == json.loads(json.dumps(_expected(tmp_path)))
