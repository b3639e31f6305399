"""Hostile and careless files: evaluation folders, saved games, checkpoints, full disks and paths out of reach.

Each test fails on the code before the fix: a chunk added to a finished ``uno-evaluate --checkpoint`` folder was
counted, names from files were printed with their escape sequences, ``--workers 100000`` started a process per chunk,
huge counts ended in numpy's or Python's errors, and crafted folders, encrypted checkpoints, a full disk or a folder
this user may not enter ended in a traceback or in a message that named no file. Each command here must end with
status 2 and one line naming the option or the file.
"""

from __future__ import annotations

import builtins
import errno
import io
import json
import os
import shutil
import struct
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

import train.evaluation.matches as matches
import train.table.records as records
from train.cli.evaluate import main as evaluate_main
from train.cli.play import main as play_main
from train.cli.train import main as train_main
from train.table.records import record_match
from train.training.labelling import Workers
from uno_env.policy import make_policy

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "models" / "search-q-none" / "model.zip"
ESCAPES = "\x1b]0;pwned\x07\x1b[2J"  # sets the window title, clears the screen
EVALUATION = ["random", "--opponents", "random", "--pairs", "4", "--workers", "1", "--no-progress"]
TINY_RUN = {"name": "tiny", "total_timesteps": 64, "n_envs": 2, "vec_env": "dummy", "progress_bar": False,
            "ppo": {"n_steps": 32, "batch_size": 32, "n_epochs": 1}, "policy": {"net_arch": [8]},
            "opponents": [{"mix": {"random": 1}}],
            "eval": {"every": 64, "pairs": 1, "final_pairs": 1, "opponents": ["random"], "workers": 1,
                     "belief_games": 0}}


def _status_and_err(main: Callable[[list[str]], int], argv: list[str], capsys: pytest.CaptureFixture[str]) \
        -> tuple[int, str]:
    """A program's exit status (returned or raised by argparse) and its standard error."""
    try:
        status = main(argv)
    except SystemExit as exited:
        status = exited.code
    return status, capsys.readouterr().err


def _one_line_error(main: Callable[[list[str]], int], argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """Run a program's ``main``: it must end with status 2 and, argparse's usage aside, one line: that line."""
    status, err = _status_and_err(main, argv, capsys)
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith((" ", "usage:"))]
    assert status == 2 and "Traceback" not in err and len(lines) == 1, (status, err)
    assert "\x1b" not in lines[0], lines[0]
    return lines[0]


# ------------------------------------------------------------------------------------ evaluation folders
@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    """A finished ``--checkpoint`` folder of ``EVALUATION`` (a chunk per deal pair) and its results."""
    folder = tmp_path_factory.mktemp("evaluation") / "kept"
    out = folder.parent / "out.json"
    assert evaluate_main([*EVALUATION, "--checkpoint", str(folder), "--json", str(out)]) == 0
    assert len(list(folder.glob("matchup0-*.npz"))) == 4
    return folder, json.loads(out.read_text())


@pytest.fixture
def kept(finished: tuple[Path, list[dict[str, Any]]], tmp_path: Path) -> Path:
    """A copy of the finished folder, to damage."""
    return Path(shutil.copytree(finished[0], tmp_path / "kept"))


def _evaluate_again(folder: Path, capsys: pytest.CaptureFixture[str]) -> str:
    return _one_line_error(evaluate_main, [*EVALUATION, "--checkpoint", str(folder)], capsys)


def test_a_chunk_added_to_a_finished_evaluation_is_not_counted(finished, kept: Path, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]):
    added = kept / "matchup0-pairs000000-000002.npz"  # two deal pairs of wins, over the first two chunks
    np.savez(added, scores=np.ones((2, 2)), lengths=np.full((2, 2), 30))
    line = _evaluate_again(kept, capsys)
    assert added.name in line and "both hold deal pair" in line
    added.unlink()
    # A name the evaluation never gives its chunks is not one of them.
    np.savez(kept / "matchup0-pairs0-2.npz", scores=np.ones((2, 2)), lengths=np.full((2, 2), 30))
    out = tmp_path / "out.json"
    assert evaluate_main([*EVALUATION, "--checkpoint", str(kept), "--json", str(out)]) == 0
    assert json.loads(out.read_text()) == finished[1]


def _chunk(folder: Path) -> Path:
    return folder / "matchup0-pairs000001-000002.npz"


def _truncate(folder: Path) -> None:
    data = _chunk(folder).read_bytes()
    _chunk(folder).write_bytes(data[:len(data) // 2])


def _folder_in_place(folder: Path) -> None:
    _chunk(folder).unlink()
    _chunk(folder).mkdir()


@pytest.mark.parametrize("damage, named, words", [
    (lambda f: (f / "evaluation.json").write_text("[1, 2]"), "evaluation.json", "not an evaluation's description"),
    (lambda f: (f / "evaluation.json").write_text("[" * 100_000), "evaluation.json", "nested too deep"),
    (lambda f: (f / "evaluation.json").write_bytes(b"\x80\x81{}"), "evaluation.json", "not UTF-8"),
    (_truncate, _chunk(Path()).name, "does not load"),
    (_folder_in_place, _chunk(Path()).name, "does not load"),
    (lambda f: np.savez(_chunk(f), lengths=np.full((1, 2), 30)), _chunk(Path()).name, "holds no scores"),
    (lambda f: np.savez(_chunk(f), scores=np.array([[1, 0]], dtype=object), lengths=np.full((1, 2), 30)),
     _chunk(Path()).name, "Object arrays"),
    (lambda f: np.savez(_chunk(f), scores=np.full((1, 2), 2.0), lengths=np.full((1, 2), 30)),
     _chunk(Path()).name, "not all 0, 0.5 or 1"),
    (lambda f: np.savez(_chunk(f), scores=np.ones((3, 2)), lengths=np.full((3, 2), 30)),
     _chunk(Path()).name, "not (1, 2)"),
    (lambda f: np.savez(_chunk(f), scores=np.ones((1, 2)), lengths=np.full((1, 2), -4)),
     _chunk(Path()).name, "lengths"),
    (lambda f: np.savez(_chunk(f), scores=np.ones((1, 2)), lengths=np.full((1, 2), 30), adjusted=np.ones((3, 2))),
     _chunk(Path()).name, "adjusted scores are not (1, 2)"),
], ids=["a-list", "nested", "not-utf8", "truncated", "a-folder", "no-scores", "objects", "score-2", "shape",
        "lengths", "adjusted"])
def test_a_crafted_evaluation_folder_is_refused_naming_the_file(kept: Path, damage: Callable[[Path], Any],
                                                                named: str, words: str,
                                                                capsys: pytest.CaptureFixture[str]):
    damage(kept)
    line = _evaluate_again(kept, capsys)
    assert line.startswith("uno-evaluate: error: checkpoint") and named in line and words in line, line


def test_a_field_name_from_an_evaluation_folder_is_shown_escaped(kept: Path, capsys: pytest.CaptureFixture[str]):
    manifest = kept / "evaluation.json"
    manifest.write_text(json.dumps({**json.loads(manifest.read_text()), ESCAPES: 1}))
    assert "\\x1b]0;pwned" in _evaluate_again(kept, capsys)


# ------------------------------------------------------------------------------------ saved games
@pytest.fixture(scope="module")
def game(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A saved game's JSON."""
    _, record = record_match((make_policy("rule"), make_policy("random")), 5, 0, ["rule", "random"])
    return json.loads(record.save(tmp_path_factory.mktemp("games") / "game.json").read_text())


def test_names_in_a_replayed_game_are_shown_with_their_control_characters_escaped(
        game: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    path = tmp_path / "names.json"
    path.write_text(json.dumps(dict(game, players=[ESCAPES + "[/bold]", "rule\x1b[31m"])))
    monkeypatch.setattr("sys.stdin", io.StringIO("e\nq\n"))  # to the end, where the winner is named; quit
    assert play_main(["--replay", str(path)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\\x1b]0;pwned\\x07\\x1b[2J[/bold]" in out and "won." in out


@pytest.mark.parametrize("digits, words", [(5000, "5,000 digits"), (4000, "4,000 digits"), (40, "\"seed\" must be")])
def test_a_replay_with_a_huge_seed_is_refused_naming_the_file(game: dict[str, Any], tmp_path: Path, digits: int,
                                                              words: str, monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]):
    path = tmp_path / "seed.json"
    path.write_text(json.dumps(dict(game, seed=0)).replace('"seed": 0', '"seed": ' + "9" * digits, 1))
    monkeypatch.setattr("sys.stdin", io.StringIO("q\n"))  # a replay that starts ends at once
    line = _one_line_error(play_main, ["--replay", str(path)], capsys)
    assert str(path) in line and words in line, line


def test_a_replay_nested_too_deep_is_refused_naming_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000)
    line = _one_line_error(play_main, ["--replay", str(path)], capsys)
    assert str(path) in line and "nested too deep" in line


# ------------------------------------------------------------------------------------ checkpoints
def test_a_checkpoint_file_name_is_shown_escaped(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    network = Path(shutil.copyfile(SHIPPED, tmp_path / f"net{ESCAPES}.zip"))
    assert evaluate_main([str(network), "--opponents", "random", "--pairs", "1", "--workers", "1",
                          "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "net\\x1b]0;pwned" in out


def test_a_checkpoint_name_like_markup_is_shown_as_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """rich reads "[bold]" in a string as a style: a file's name is text, never markup."""
    network = Path(shutil.copyfile(SHIPPED, tmp_path / "[bold]net[dim].zip"))
    assert play_main(["--watch", str(network), "rule", "--pace", "0", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "[bold]net[dim] against rule" in out and "Score: [bold]net[dim]" in out


def _with_encrypted_member(source: Path, target: Path, member: str) -> Path:
    """A copy of a zip whose ``member`` is marked encrypted (flag bit 0 in its local and central headers), as an
    archiver with a password writes it: zipfile then asks for the password."""
    data = bytearray(source.read_bytes())
    at = data.find(b"PK\x01\x02")
    while at >= 0:  # the central directory's entries
        length = struct.unpack_from("<H", data, at + 28)[0]
        if data[at + 46:at + 46 + length] == member.encode():
            data[at + 8] |= 1
            data[struct.unpack_from("<I", data, at + 42)[0] + 6] |= 1  # its local header
        at = data.find(b"PK\x01\x02", at + 4)
    target.write_bytes(bytes(data))
    return target


@pytest.fixture(scope="module")
def encrypted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _with_encrypted_member(SHIPPED, tmp_path_factory.mktemp("zip") / "locked.zip", "policy.pth")


def test_a_checkpoint_with_an_encrypted_member_is_refused(encrypted: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]):
    for main, argv in ((evaluate_main, [str(encrypted), "--opponents", "random", "--pairs", "1", "--workers", "1",
                                        "--no-progress"]),
                       (play_main, ["--opponent", str(encrypted)])):
        line = _one_line_error(main, argv, capsys)
        assert str(encrypted) in line and "policy.pth is encrypted" in line
    config = tmp_path / "init.yaml"
    config.write_text(yaml.safe_dump(dict(TINY_RUN, policy={"net_arch": [8], "init": str(encrypted)})))
    line = _one_line_error(train_main, [str(config), "--run-dir", str(tmp_path / "run"), "--quiet"], capsys)
    assert "policy.init" in line and "encrypted" in line


def test_a_checkpoint_with_a_huge_number_is_refused_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    crafted = tmp_path / "huge.zip"
    with zipfile.ZipFile(SHIPPED) as old, zipfile.ZipFile(crafted, "w") as new:
        for name in old.namelist():
            data = old.read(name)
            if name == "uno_env.json":
                settings = json.loads(data)
                data = json.dumps(settings).replace(f'"steps": {settings["steps"]}', '"steps": ' + "7" * 5000).encode()
            new.writestr(name, data)
    line = _one_line_error(evaluate_main, [str(crafted), "--opponents", "random", "--pairs", "1", "--workers", "1",
                                           "--no-progress"], capsys)
    assert str(crafted) in line and "uno_env.json" in line and "5,000 digits" in line, line


# ------------------------------------------------------------------------------------ counts and workers
def test_counts_are_bounded_by_name(capsys: pytest.CaptureFixture[str]):
    line = _one_line_error(evaluate_main, ["random", "--pairs", str(10**20), "--no-progress"], capsys)
    assert "--pairs must be at most 1000000" in line
    line = _one_line_error(play_main, ["--watch", "random", "rule", "--games", str(10**20)], capsys)
    assert "--games must be at most 1000000" in line


def test_every_process_pool_is_at_most_the_cores(capsys: pytest.CaptureFixture[str]):
    cores = matches.usable_cores()
    pool = matches.make_executor(100_000)  # no process starts before work is submitted
    assert pool._max_workers == cores
    pool.shutdown()
    err = capsys.readouterr().err
    assert err.splitlines() == [f"100000 worker processes asked for, but this machine gives {cores} cores: "
                                f"using {cores}"]
    matches.make_executor(100_000).shutdown()  # said once
    with Workers(100_001) as workers:  # expert iteration's labelling (and uno-train's eval.workers)
        assert workers.width == cores and workers.get()._max_workers == cores
    assert capsys.readouterr().err.count("asked for") == 1


def test_evaluate_says_it_uses_the_cores(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    out = tmp_path / "out.json"
    assert evaluate_main(["random", "--opponents", "random", "--pairs", "2", "--workers", "100002", "--no-progress",
                          "--json", str(out)]) == 0
    assert f"100002 worker processes asked for, but this machine gives {matches.usable_cores()} cores" in \
        capsys.readouterr().err
    assert json.loads(out.read_text())[0]["pairs"] == 2


# ------------------------------------------------------------------------------------ a full disk
@pytest.fixture
def full_disk_for(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], None]:
    """Make a file system full for files ending in the given suffix: an atomic write's sync, and a game record's
    write (to /dev/full, which answers every write so), fail with ENOSPC and no file name, as a real write does."""
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    fsync, real_open = os.fsync, builtins.open

    def full(suffix: str) -> None:
        def syncing(fd: int) -> None:
            if os.readlink(f"/proc/self/fd/{fd}").endswith(suffix):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            fsync(fd)

        def opening(path: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
            if mode == "x" and str(path).endswith(suffix):
                return real_open("/dev/full", "w")
            return real_open(path, mode, *args, **kwargs)

        monkeypatch.setattr(os, "fsync", syncing)
        monkeypatch.setattr(records, "open", opening, raising=False)

    return full


@pytest.mark.parametrize("option", ["--checkpoint", "--save-games", "--json"])
def test_a_full_disk_ends_evaluate_with_one_line(full_disk_for: Callable[[str], None], option: str, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]):
    if option == "--json":
        monkeypatch.setattr("train.cli.evaluate.file_problem", lambda path: None)  # root may write in /dev anyway
        line = _one_line_error(evaluate_main, [*EVALUATION, "--json", "/dev/full"], capsys)
        assert "--json /dev/full: cannot write it: No space left on device" in line
        return
    full_disk_for(".npz" if option == "--checkpoint" else ".partial")  # a chunk; a game record
    line = _one_line_error(evaluate_main, [*EVALUATION, option, str(tmp_path / "out")], capsys)
    written = "matchup0-" if option == "--checkpoint" else "random-vs-random-seed0-pair00000-a"
    assert line.startswith(f"uno-evaluate: error: disk full writing {tmp_path / 'out'}/{written}"), line


def test_a_full_disk_ends_play_with_one_line(full_disk_for: Callable[[str], None], tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]):
    full_disk_for(".partial")
    line = _one_line_error(play_main, ["--watch", "random", "rule", "--pace", "0", "--seed", "3",
                                       "--save-games", str(tmp_path / "games")], capsys)
    assert line.startswith(f"uno-play: error: disk full writing {tmp_path / 'games'}/watch-3.json"), line


# ------------------------------------------------------------------------------------ paths out of reach
@pytest.fixture
def locked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder this user may not enter. Root may enter any folder, so for root every look at or into a path inside
    it fails as it would for another user: ``stat`` (behind ``exists``, ``is_dir``, ``is_file``) and ``mkdir``."""
    folder = tmp_path / "locked"
    folder.mkdir()
    if os.geteuid() != 0:
        folder.chmod(0)
        yield folder
        folder.chmod(0o700)
        return
    stat, mkdir = Path.stat, Path.mkdir

    def check(path: Path) -> None:
        if folder in path.absolute().parents:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))

    def denied_stat(self: Path, **kwargs: Any) -> os.stat_result:
        check(self)
        return stat(self, **kwargs)

    def denied_mkdir(self: Path, *args: Any, **kwargs: Any) -> None:
        check(self)
        mkdir(self, *args, **kwargs)

    monkeypatch.setattr(Path, "stat", denied_stat)
    monkeypatch.setattr(Path, "mkdir", denied_mkdir)
    yield folder


@pytest.mark.parametrize("option", ["--json", "--save-games", "--checkpoint", "player"])
def test_evaluate_refuses_a_path_it_may_not_reach(locked: Path, option: str, capsys: pytest.CaptureFixture[str]):
    path = str(locked / ("model.zip" if option == "player" else "out"))
    argv = [path, "--opponents", "random", "--pairs", "1"] if option == "player" else [*EVALUATION, option, path]
    line = _one_line_error(evaluate_main, argv, capsys)
    assert path in line and "Permission denied" in line, line


@pytest.mark.parametrize("option", ["--run-dir", "--resume"])
def test_train_refuses_a_run_folder_it_may_not_reach(locked: Path, option: str, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]):
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump(TINY_RUN))
    run = locked / "run"
    argv = [str(config), "--run-dir", str(run), "--quiet"] if option == "--run-dir" else ["--resume", str(run)]
    line = _one_line_error(train_main, argv, capsys)
    assert line.startswith("uno-train:") and str(run) in line and "Permission denied" in line, line
