"""Hostile input: specs that ran code, crafted and damaged checkpoints, and command lines that ended in a traceback.

Each test fails on the code before the fix: a ``module:attribute`` spec was called while being validated
(``uno-evaluate sys:exit`` exited 0), a crafted checkpoint allocated gigabytes, a NaN checkpoint played silently,
and the command lines below ended in a traceback, a wrong status, or results lost after the work was done.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from sb3_contrib import MaskablePPO

from agents.ppo import PPOPolicy, load_network, parameter_count, save_model
from train.cli.evaluate import main as evaluate_main
from train.cli.play import main as play_main
from train.config import ConfigError, parse_config
from train.policies import resolve_policy
from train.specs import validate_spec
from uno_env.env import UnoEnv
from uno_env.opponents import RulePolicy

ROOT = Path(__file__).resolve().parents[1]
CALLS: list[str] = []


def record_call() -> None:
    """A callable that is not a Policy factory: validating its spec must not call it."""
    CALLS.append("called")


def make_rule() -> RulePolicy:
    """A factory, declared by its return annotation: accepted without being called while validated."""
    CALLS.append("factory")
    return RulePolicy()


class NotAPlayer:
    """A class without reset/act: refused without being instantiated."""

    def __init__(self) -> None:
        CALLS.append("instantiated")


# ------------------------------------------------------------------------------------ specs that ran code
def test_specs_are_validated_without_being_called():
    CALLS.clear()
    for spec in ("test_bad_input:record_call", "test_bad_input:NotAPlayer", "builtins:print"):
        problem = validate_spec(spec)
        assert problem is not None and "not" in problem, spec
    assert CALLS == []
    assert validate_spec("test_bad_input:make_rule") is None and CALLS == []  # a factory: accepted, not called
    assert validate_spec("uno_env.opponents:RulePolicy") is None
    assert isinstance(resolve_policy("test_bad_input:make_rule"), RulePolicy) and CALLS == ["factory"]
    with pytest.raises(ConfigError, match="record_call"):
        parse_config({"total_timesteps": 64, "eval": {"opponents": ["test_bad_input:record_call"]}})
    assert CALLS == ["factory"]


@pytest.mark.parametrize("spec", ["sys:exit", "os:abort", "builtins:quit"])
def test_a_spec_that_would_end_the_program_is_refused_with_status_2(spec: str):
    result = subprocess.run([sys.executable, "-m", "train.cli.evaluate", spec, "--pairs", "2", "--workers", "1",
                             "--no-progress"], cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)),
                            capture_output=True, text=True, timeout=240)
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert len(result.stderr.splitlines()) == 1 and "it was not called" in result.stderr


# ------------------------------------------------------------------------------------ crafted checkpoints
@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    model = MaskablePPO("MlpPolicy", UnoEnv(), n_steps=32, batch_size=32, policy_kwargs={"net_arch": [8]},
                        device="cpu", seed=0)
    return save_model(model, tmp_path_factory.mktemp("ckpt") / "tiny.zip", {"belief": "none", "steps": 0})


def _replaced(source: Path, target: Path, **members: bytes) -> Path:
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w") as new:
        for name in old.namelist():
            new.writestr(name, members.get(name, old.read(name)))
    return target


def test_the_parameter_count_is_bounded_before_anything_is_built(checkpoint: Path, tmp_path: Path):
    """Every dimension within its own bound, the whole network far beyond any player's (70 million parameters)."""
    with zipfile.ZipFile(checkpoint) as archive:
        settings = json.loads(archive.read("uno_env.json"))
    arch = {"pi": [8192, 8192], "vf": [8]}
    crafted = _replaced(checkpoint, tmp_path / "big.zip", **{"uno_env.json": json.dumps(
        dict(settings, policy=dict(settings["policy"], net_arch=arch))).encode()})
    assert parameter_count(settings["observation_size"], arch) > 50_000_000
    with pytest.raises(ValueError, match="parameters"):
        load_network(crafted)
    network = load_network(checkpoint)  # the count is exact for a real network
    assert parameter_count(settings["observation_size"], {"pi": [8], "vf": [8]}) == \
        sum(p.numel() for p in network.parameters())


def test_a_checkpoint_with_nan_weights_is_refused(checkpoint: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]):
    with zipfile.ZipFile(checkpoint) as archive:
        state = torch.load(archive.open("policy.pth"), weights_only=True)
    state = {name: torch.full_like(value, math.nan) if value.is_floating_point() else value
             for name, value in state.items()}
    buffer = tmp_path / "state.pth"
    torch.save(state, buffer)
    broken = _replaced(checkpoint, tmp_path / "nan.zip", **{"policy.pth": buffer.read_bytes()})
    with pytest.raises(ValueError, match="NaN"):
        PPOPolicy.load(broken)
    assert evaluate_main([str(broken), "--opponents", "random", "--pairs", "1", "--workers", "1",
                          "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "NaN" in err


# ------------------------------------------------------------------------------------ command lines
@pytest.fixture
def unwritable(tmp_path: Path) -> Path:
    """A folder this process cannot write in (root ignores permissions: then a read-only system folder)."""
    if os.geteuid() != 0:
        folder = tmp_path / "locked"
        folder.mkdir(mode=0o500)
        return folder
    try:
        with tempfile.TemporaryFile(dir="/sys"):
            pytest.skip("no unwritable folder on this machine")
    except OSError:
        return Path("/sys")


def _usage_error(main, argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """Run a program's ``main`` in process; it must end with status 2 and one line on standard error."""
    with pytest.raises(SystemExit) as exited:
        status = main(argv)
        raise SystemExit(status)
    err = capsys.readouterr().err
    assert exited.value.code == 2 and "Traceback" not in err, err
    assert err.strip().splitlines()[-1].startswith(("uno-evaluate: error:", "uno-play: error:")), err
    return err


def test_evaluate_checks_its_destinations_and_workers_before_playing(unwritable: Path, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch,
                                                                      capsys: pytest.CaptureFixture[str]):
    def no_evaluation(*args, **kwargs):
        raise AssertionError("the evaluation ran before its destinations were checked")

    monkeypatch.setattr("train.cli.evaluate.evaluate", no_evaluation)
    (tmp_path / "file").write_text("x")
    base = ["random", "--opponents", "random", "--pairs", "1", "--no-progress"]
    for argv, words in (([*base, "--json", str(unwritable / "out.json")], "--json"),
                        ([*base, "--save-games", str(unwritable / "games")], "--save-games"),
                        ([*base, "--save-games", str(tmp_path / "file" / "games")], "is a file"),
                        ([*base, "--workers", "0"], "--workers"),
                        ([*base, "--n-particles", str(10**12)], "--n-particles")):
        assert words in _usage_error(evaluate_main, argv, capsys)


@pytest.mark.parametrize("argv, words", [
    (["--watch", "random", "rule", "--pace", "nan"], "--pace"),
    (["--watch", "random", "rule", "--pace", "inf"], "--pace"),
    (["--web", "--host", "999.1.1.1", "--port", "0"], "cannot listen on 999.1.1.1"),
    (["--opponent", "sys:exit"], "it was not called"),
])
def test_play_refuses_bad_arguments_with_one_line(argv: list[str], words: str, capsys: pytest.CaptureFixture[str]):
    assert words in _usage_error(play_main, argv, capsys)


def test_play_checks_the_save_folder_first(unwritable: Path, capsys: pytest.CaptureFixture[str]):
    assert "cannot write" in _usage_error(play_main, ["--save-games", str(unwritable / "games")], capsys)


def test_bad_numbers_in_a_config_are_refused():
    base = {"total_timesteps": 64}
    for change, key in (({"env": {"n_particles": 10**12}}, "env.n_particles"),
                        ({"ppo": {"learning_rate": 1e300}}, "ppo.learning_rate"),
                        ({"expert_iteration": {"learning_rate": 50.0}}, "expert_iteration.learning_rate"),
                        ({"name": "a\0b"}, "name"), ({"name": "a/b"}, "name"),
                        ({"opponents": [{"mix": {"random": 1e308, "rule": 1e308}}]}, "mix.random")):
        with pytest.raises(ConfigError, match=key):
            parse_config({**base, **change})
    assert np.isfinite(parse_config({**base, "ppo": {"learning_rate": 1.0}}).ppo.learning_rate)
