"""Hostile or careless input to the env, its wrappers, the training config and the web table; a read-only install.

Each test is a case that went wrong before its fix: a float action taken as an illegal move, a class passed as
the opponent, a billion particles allocated at reset, numpy's IndexError for a float index, a bare KeyError for an
unknown agent, a duplicate YAML key kept silently, a YAML error pointing at "<unicode string>", a count of 1e30
games looping on shard bookkeeping, Python's digit-limit error (a 500 on the web table), a JSON string taken as
true, a web client trickling its headers for ever, and ``import uno_env`` failing on a read-only install.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import pwd
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import typing
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import uno_env
from agents.search import SearchPolicy
from train.cli.belief_quality import main as belief_quality_main
from train.cli.train import main as train_main
from train.config import ConfigError, TrainConfig, load_config, parse_config
from train.sweeps.config import load_sweep
from train.table import web
from train.table.web import make_server
from uno_env.belief import MAX_PARTICLES, ParticleBelief, TrajectoryBelief, make_belief
from uno_env.game import IllegalActionError
from uno_env.match import play_game
from uno_env.multiagent import env as aec_env
from uno_env.opponents import RandomPolicy, RulePolicy
from uno_env.policy import Needs
from uno_env.wrappers import IllegalMovePenalty

ROOT = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------------------------ a read-only install
@pytest.fixture
def read_only_package() -> Iterator[Path]:
    """A copy of uno_env in a folder every user may read and nobody but root may write."""
    folder = Path(tempfile.mkdtemp(prefix="uno-read-only-"))
    try:
        shutil.copytree(ROOT / "uno_env", folder / "uno_env", ignore=shutil.ignore_patterns("__pycache__"))
        for path in (folder, *folder.rglob("*")):
            path.chmod(0o555 if path.is_dir() else 0o444)
        yield folder
    finally:
        for path in (folder, *folder.rglob("*")):
            path.chmod(0o755)
        shutil.rmtree(folder)


@pytest.fixture
def shared_temporary() -> Iterator[Path]:
    """A temporary folder every user may write in, as /tmp is (sticky: each removes only its own files)."""
    folder = Path(tempfile.mkdtemp(prefix="uno-tmp-"))
    folder.chmod(0o1777)
    yield folder
    shutil.rmtree(folder)


def _unprivileged(command: list[str]) -> list[str]:
    """``command`` as run by a user without privileges: root drops to ``nobody``; anyone else already is one."""
    if os.geteuid() != 0:
        return command
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv (util-linux) to drop to an unprivileged user")
    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("no user 'nobody' to run as")
    return [setpriv, f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}", "--clear-groups", *command]


def test_a_read_only_install_imports_and_plays_as_an_unprivileged_user(read_only_package: Path,
                                                                       shared_temporary: Path):
    """numba had nowhere to write its cache (package read-only, no writable home): ``import uno_env`` raised."""
    home = read_only_package / "no-home"  # does not exist, and its parent cannot be written
    environment = {key: value for key, value in os.environ.items()
                   if not key.startswith(("NUMBA_", "XDG_", "PYTHON"))}
    environment.update(HOME=str(home), PYTHONPATH=str(read_only_package), PYTHONDONTWRITEBYTECODE="1",
                       TMPDIR=str(shared_temporary))
    reachable = subprocess.run(_unprivileged([sys.executable, "-c", "import gymnasium, numba"]), env=environment,
                               capture_output=True, text=True, timeout=120)
    if reachable.returncode != 0:  # e.g. a venv in a folder only its owner may enter
        pytest.skip(f"the unprivileged user cannot run this Python: {reachable.stderr.strip()[-300:]}")
    game = textwrap.dedent("""
        import os

        import gymnasium as gym
        import numba

        import uno_env

        env = gym.make("Uno-v0", opponent="rule")
        obs, info = env.reset(seed=3)
        done = False
        while not done:
            action = int(info["action_mask"].nonzero()[0][0])
            obs, reward, terminated, truncated, info = env.step(action)
            done = terminated or truncated
        cached = sum(len(files) for _, _, files in os.walk(numba.config.CACHE_DIR))
        print(uno_env.__file__, info["winner"], numba.config.CACHE_DIR, cached)
    """)
    result = subprocess.run(_unprivileged([sys.executable, "-c", game]), env=environment, capture_output=True,
                            text=True, timeout=600, cwd=read_only_package)
    assert result.returncode == 0, result.stderr[-3000:]
    where, winner, cache, cached = result.stdout.split()
    assert Path(where).is_relative_to(read_only_package) and winner in ("agent", "opponent", "draw")
    assert not home.exists() and not list(read_only_package.rglob("__pycache__"))
    # The kernels were cached in a private temporary folder, removed when the process ended.
    assert Path(cache).parent == shared_temporary and int(cached) > 0 and not list(shared_temporary.iterdir())


# ------------------------------------------------------------------------------------ the env and its wrappers
@pytest.mark.parametrize("action", [0.5, 22.5, 4.0, "3", np.float64(2.0)])
def test_the_penalty_wrapper_refuses_a_non_integer_action_as_the_env_does(action):
    """0.5 was taken as an illegal move (a penalty) while 22.5 raised: both are no action at all."""
    env = IllegalMovePenalty(gym.make("Uno-v0", opponent="rule"))
    env.reset(seed=0)
    with pytest.raises(TypeError, match=f"must be an integer in 0..60.*got {re.escape(repr(action))}"):
        env.step(action)
    assert env.illegal_moves == 0
    bare = gym.make("Uno-v0", opponent="rule")
    bare.reset(seed=0)
    with pytest.raises(TypeError, match="must be an integer in 0..60"):
        bare.step(action)


def test_the_penalty_wrapper_still_charges_an_integer_out_of_range():
    env = IllegalMovePenalty(gym.make("Uno-v0", opponent="rule"), penalty=-0.5)
    env.reset(seed=0)
    for action in (2**64 - 1, -1, 61):
        _, reward, terminated, _, info = env.step(action)
        assert reward == -0.5 and not terminated and info["illegal_action"]
    assert env.illegal_moves == 3


@pytest.mark.parametrize("opponent", [RandomPolicy, RulePolicy])
def test_a_policy_class_for_an_opponent_is_refused_at_construction(opponent: type):
    """A class passed the duck-typing check and failed at reset with AttributeError."""
    with pytest.raises(TypeError, match=rf"got the class {opponent.__name__}: pass {opponent.__name__}\(\)"):
        uno_env.UnoEnv(opponent=opponent)
    with pytest.raises(TypeError, match="pass an instance|instance or a registered name"):
        gym.make("Uno-v0", opponent=opponent)
    uno_env.UnoEnv(opponent=opponent()).reset(seed=0)  # an instance plays


def test_a_policy_class_is_refused_where_a_game_seats_it():
    """``play_game`` (what evaluation runs on) took a class and failed at the deal with AttributeError."""
    with pytest.raises(TypeError, match=r"got the class RandomPolicy: pass RandomPolicy\(\)"):
        play_game((RandomPolicy, RulePolicy()), 0)
    assert play_game((RandomPolicy(), RulePolicy()), 0).decisions > 0


@pytest.mark.parametrize("build", [
    lambda n: uno_env.UnoEnv(belief="particles", n_particles=n),
    lambda n: gym.make("Uno-v0", belief="particles", n_particles=n),
    lambda n: aec_env(belief="particles", n_particles=n),
    lambda n: Needs("particles", n),
    lambda n: SearchPolicy(simulations=8, belief="particles", n_particles=n),
    lambda n: make_belief("particles", n_particles=n, rng=np.random.default_rng(0)),
    lambda n: ParticleBelief(n, np.random.default_rng(0)),
    lambda n: TrajectoryBelief(n, np.random.default_rng(0)),
], ids=["UnoEnv", "gym.make", "uno_v0", "Needs", "SearchPolicy", "make_belief", "ParticleBelief", "TrajectoryBelief"])
def test_a_particle_count_beyond_the_bound_is_refused_where_it_is_given(build):
    """10**9 particles was accepted, and the first reset tried to allocate 102 GiB."""
    for count in (10**9, MAX_PARTICLES + 1, 0, 2.5, True):
        with pytest.raises(ValueError, match=f"n_particles must be an int in 1..{MAX_PARTICLES:,}, got {count!r}"):
            build(count)
    build(16)


@pytest.mark.parametrize("option", ["--particles", "--aware", "--plain", "--trajectory", "--learned"])
def test_the_belief_measurement_refuses_a_particle_count_beyond_the_bound_in_one_line(
        option: str, capsys: pytest.CaptureFixture[str]):
    """The filter's own check ended ``python -m train.cli.belief_quality`` in a traceback."""
    with pytest.raises(SystemExit) as stop:
        belief_quality_main([option, "1000000000", "--games", "1"])
    assert stop.value.code == 2
    assert f"argument {option}: at most 100,000 particles, got 1,000,000,000" in capsys.readouterr().err


def test_a_vector_env_scenario_index_that_is_no_int_is_refused_by_name():
    """``scenario(1.5)`` ended in numpy's IndexError."""
    envs = gym.make_vec("Uno-v0", num_envs=2, vectorization_mode="vector_entry_point", opponent="rule")
    envs.reset(seed=0)
    for index in (1.5, "0", None, True, 2, -1):
        with pytest.raises(ValueError, match=rf"index must be an int in 0..1, got {index!r}"):
            envs.scenario(index)
    assert envs.scenario(np.int64(1))["to_move"] == "agent"
    with pytest.raises(ValueError, match="unknown reset option.*scenario"):
        envs.reset(options={"scenario": 1.5})


@pytest.mark.parametrize("huge", [2**64 - 1, 2**64, 2**63])
def test_a_vector_action_beyond_int64_is_out_of_range_not_a_non_integer(huge: int):
    """``[2**64 - 1, 0]`` (numpy holds it as float64) was refused as "actions must be integers"."""
    raising = gym.make_vec("Uno-v0", num_envs=2, vectorization_mode="vector_entry_point", illegal_action="raise")
    _, info = raising.reset(seed=0)
    legal = int(np.flatnonzero(info["action_mask"][1])[0])
    with pytest.raises(IllegalActionError, match=rf"sub-env 0: action {huge} \(outside 0..60\)"):
        raising.step([huge, legal])
    if huge < 2**64:
        with pytest.raises(IllegalActionError, match=rf"sub-env 0: action {huge} \(outside 0..60\)"):
            raising.step(np.array([huge, legal], dtype=np.uint64))
    losing = gym.make_vec("Uno-v0", num_envs=2, vectorization_mode="vector_entry_point")
    _, info = losing.reset(seed=0)
    _, rewards, terminated, _, info = losing.step([huge, int(np.flatnonzero(info["action_mask"][1])[0])])
    assert rewards[0] == -1.0 and terminated[0] and info["illegal_action"].tolist() == [True, False]
    with pytest.raises(TypeError, match="actions must be integers"):
        losing.step([2.5, 0])


def test_observing_an_unknown_agent_names_it_and_the_agents():
    """``observe("player_7")`` raised a bare ``KeyError: 'player_7'``."""
    env = aec_env()
    env.reset(seed=0)
    for call in (env.observe, env.observation_space, env.action_space):
        with pytest.raises(KeyError, match="unknown agent 'player_7'; the agents are 'player_0', 'player_1'"):
            call("player_7")
    with pytest.raises(KeyError, match="unknown agent"):
        env.observe(["player_0"])
    assert env.observe("player_1")["action_mask"].shape == (61,)


# ------------------------------------------------------------------------------------ the training config
def _train_error(capsys: pytest.CaptureFixture[str], tmp_path: Path, *argv: str) -> str:
    """``uno-train`` on ``argv``: it must exit 2 with one line on standard error, and leave no run folder."""
    assert train_main([*argv, "--run-dir", str(tmp_path / "run"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.startswith("uno-train: config error: "), err
    assert not (tmp_path / "run").exists()
    return err


def test_a_duplicate_key_is_refused_naming_it_the_file_and_the_lines(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]):
    """PyYAML kept the last of the two silently."""
    config = tmp_path / "twice.yaml"
    config.write_text("total_timesteps: 1000\nexpert_iteration:\n  games: 10\n  start: rule\n  games: 20\n")
    err = _train_error(capsys, tmp_path, str(config))
    assert f"{config} is not valid YAML: line 5, column 3: key 'games' is given twice (first on line 3)" in err
    for text in ("total_timesteps: 1\ntotal_timesteps: 2\n", "total_timesteps: 1\n1: a\n'1': b\n1: c\n"):
        config.write_text(text)
        with pytest.raises(ConfigError, match="is given twice"):
            load_config(config)
    # A merge key's values may be overridden in the mapping that merges them: YAML means that.
    config.write_text("total_timesteps: 1000\nbase: &ppo {n_steps: 64, batch_size: 64}\n")
    with pytest.raises(ConfigError, match="unknown key 'base'"):  # parsed: the schema speaks, not the YAML
        load_config(config)
    config.write_text("total_timesteps: 1000\nppo:\n  <<: {n_steps: 64, batch_size: 64}\n  batch_size: 32\n")
    assert load_config(config).ppo.batch_size == 32
    with pytest.raises(ConfigError, match="override 'ppo={a: 1, a: 2}' is not valid YAML: .*key 'a' is given twice"):
        load_config(config, ["ppo={a: 1, a: 2}"])


def test_a_sweep_file_with_a_duplicate_key_is_refused_naming_it(tmp_path: Path):
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text("base: configs/default.yaml\ntrials: 2\nspace:\n  ppo.n_epochs: {choice: [1, 2]}\ntrials: 8\n")
    with pytest.raises(ConfigError, match=re.escape(f"{sweep} is not valid YAML: line 5, column 1: key 'trials' is "
                                                    "given twice (first on line 2)")):
        load_sweep(sweep)


@pytest.mark.parametrize(("text", "problem"), [
    ("total_timesteps: 1000\nppo:\n  n_steps: [1\n  batch_size: 8\n",
     "line 4, column 13: expected ',' or ']', but got ':' (while parsing a flow sequence)"),
    ("total_timesteps: 1000\nname: 2024-13-45\n", "line 2, column 7: month must be in 1..12"),
    ("total_timesteps: 1000\nname: a\x01b\n", "line 2: special characters are not allowed (found U+0001)"),
    ("total_timesteps: " + "9" * 5000 + "\n", "line 1, column 18: an integer of 5,000 digits (at most 100 are read)"),
])
def test_a_yaml_error_is_one_line_naming_the_file_the_line_and_the_problem(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, problem: str):
    """PyYAML's message was 7 lines pointing at "<unicode string>" (a 5,000-digit integer: Python's digit limit)."""
    config = tmp_path / "broken.yaml"
    config.write_text(text)
    err = _train_error(capsys, tmp_path, str(config))
    assert f"{config} is not valid YAML: {problem}" in err and "<unicode string>" not in err


def _count_fields(cls: Any = TrainConfig, prefix: str = "") -> list[str]:
    """The config path of every integer field of the schema (``int`` or ``int | None``)."""
    paths = []
    hints = typing.get_type_hints(cls)
    for spec in dataclasses.fields(cls):
        kind = hints[spec.name]
        if dataclasses.is_dataclass(kind):
            paths += _count_fields(kind, f"{prefix}{spec.name}.")
        elif int in (kind, *typing.get_args(kind)) and typing.get_origin(kind) is not list:  # lists: _validate's
            paths.append(f"{prefix}{spec.name}")
    return paths


# A worker count is clamped to the machine's cores where its pool is made, rather than refused.
COUNTS = [path for path in _count_fields() if path != "eval.workers"]


@pytest.mark.parametrize("path", COUNTS)
def test_every_count_of_the_config_has_a_maximum_named_with_the_value(path: str):
    """Counts were only checked to be positive: 1e30 games looped on shard bookkeeping, a billion generations
    started labelling."""
    *sections, key = path.split(".")
    for value in (10**30, "1e30"):
        data: dict[str, Any] = {"total_timesteps": 1000, "ppo": {"batch_size": 8}}
        node = data
        for section in sections:
            node = node.setdefault(section, {})
        node[key] = value
        with pytest.raises(ConfigError, match=rf"^{re.escape(path)} must be at most [0-9,]+, got {value!r}$"):
            parse_config(data)


@pytest.mark.parametrize(("override", "message"), [
    ("expert_iteration.games=1e30", "expert_iteration.games must be at most 1,000,000, got '1e30'"),
    ("expert_iteration.generations=1000000000", "expert_iteration.generations must be at most 1,000, got 1000000000"),
    ("seed=" + "1" * 5000, "line 1, column 1: an integer of 5,000 digits (at most 100 are read)"),
])
def test_uno_train_refuses_a_huge_count_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    override: str, message: str):
    assert message in _train_error(capsys, tmp_path, "--set", override)


# ------------------------------------------------------------------------------------ the web table
@pytest.fixture
def table(tmp_path: Path) -> Iterator[tuple[str, int]]:
    """A running web table on a free port: its (host, port)."""
    server = make_server(port=0, save_dir=tmp_path, quiet=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[:2]
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)


def _post(address: tuple[str, int], path: str, body: bytes) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(f"http://{address[0]}:{address[1]}{path}", data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


@pytest.mark.parametrize("belief", ["no", "false", 0, 1, None, [], {}])
def test_a_json_value_of_the_wrong_type_for_belief_is_a_400_naming_it(table: tuple[str, int], belief: Any):
    """``{"belief": "no"}`` turned the heat map on."""
    status, answer = _post(table, "/api/games", json.dumps({"opponent": "rule", "belief": belief}).encode())
    assert status == 400 and answer["error"] == f"belief must be true or false, got {belief!r}"
    for flag in (True, False):
        status, answer = _post(table, "/api/games", json.dumps({"opponent": "rule", "belief": flag}).encode())
        assert status == 201 and ("belief" in answer) is flag


@pytest.mark.parametrize(("route", "body"), [
    ("/api/games", b'{"opponent": "rule", "seed": ' + b"7" * 5000 + b"}"),
    ("/api/games", b'{"opponent": "rule", "seed": -' + b"7" * 5000 + b"}"),
    ("/api/replays", b'{"seed": ' + b"1" * 5000 + b"}"),
])
def test_a_5000_digit_integer_in_a_body_is_a_400_not_a_500(table: tuple[str, int], route: str, body: bytes):
    """Python's digit limit ended the request with a 500."""
    status, answer = _post(table, route, body)
    assert status == 400 and answer["error"] == \
        "the body is not JSON this program reads: it holds an integer of 5,000 digits (at most 40 are read)"
    status, answer = _post(table, "/api/games", b'{"opponent": "rule", "seed": ' + b"7" * 40 + b"}")
    assert status == 400 and answer["error"].startswith("seed must be an integer in 0..")  # its own check, named


def _trickle(address: tuple[str, int], lines: int, pause: float) -> tuple[float, bytes]:
    """Send a request one header line per ``pause`` seconds; (seconds until the server closed, what it sent)."""
    started = time.monotonic()
    answer = b""
    with socket.create_connection(address, timeout=30) as connection:
        connection.sendall(f"GET /api/options HTTP/1.1\r\nHost: {address[0]}:{address[1]}\r\n".encode())
        with contextlib.suppress(OSError):  # a reset once the server has closed
            for line in range(lines):
                time.sleep(pause)
                connection.sendall(f"X-Trickle-{line}: 1\r\n".encode())
            connection.sendall(b"\r\n")
        with contextlib.suppress(OSError):
            while chunk := connection.recv(65536):
                answer += chunk
    return time.monotonic() - started, answer


def test_a_client_trickling_its_headers_is_dropped_at_the_request_deadline(
        table: tuple[str, int], monkeypatch: pytest.MonkeyPatch):
    """A header line every 5 s for 30 s was answered: 150 such connections held 150 threads, never dropped."""
    deadline = getattr(web, "REQUEST_DEADLINE", None)
    monkeypatch.setattr(web, "REQUEST_DEADLINE", 1.0, raising=False)  # shortened: the trickle's pace is 1/10 of it
    results: list[tuple[float, bytes]] = []
    clients = [threading.Thread(target=lambda: results.append(_trickle(table, 40, 0.1))) for _ in range(8)]
    for client in clients:
        client.start()
    for client in clients:
        client.join(timeout=60)
    assert len(results) == 8
    for seconds, answer in results:
        assert seconds < 3.5 and answer == b"", (seconds, answer[:80])  # dropped unanswered, well before 4 s
    seconds, answer = _trickle(table, 3, 0.1)  # a request that arrives within the deadline is answered
    assert answer.startswith(b"HTTP/1.1 200")
    assert web.READ_TIMEOUT < deadline < 30  # the real one drops the 30 s trickle, and outlasts one stall

