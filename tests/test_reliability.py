"""A run folder no fault breaks, checkpoints that load without running code, interrupts.

Each test reproduces a failure once seen (it fails on the code before the fix): a save cut short,
torn files in a run folder, crafted checkpoint zips, the run-folder lock's release race, Ctrl-C and
SIGTERM during training, resuming a finished run, and kill -9 at random moments of a tiny run.
"""

from __future__ import annotations

import base64
import copy
import errno
import fcntl
import json
import multiprocessing
import os
import pickle
import random
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from concurrent.futures import ProcessPoolExecutor
from contextlib import suppress
from pathlib import Path
from typing import Any

import cloudpickle
import pytest
import torch
import yaml
from sb3_contrib import MaskablePPO
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

import train.training.run_folder as run_folder
import train.training.trainer as trainer
from agents.files import atomic_path
from agents.ppo import TRUST_VARIABLE, PPOPolicy, load_network, read_settings, save_model
from agents.shipped import MODEL_FILE, MODELS_DIR, shipped_names
from train.cli.train import main
from train.config import ConfigError, parse_config
from uno_env.env import UnoEnv

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = {"belief": "none", "steps": 0, "config": "test"}
TINY: dict[str, Any] = {
    "name": "tiny", "seed": 0, "total_timesteps": 256, "n_envs": 2, "vec_env": "dummy", "checkpoint_every": 128,
    "progress_bar": False, "ppo": {"n_steps": 64, "batch_size": 64, "n_epochs": 1}, "policy": {"net_arch": [16]},
    "opponents": [{"mix": {"random": 1}}],
    "eval": {"every": 128, "pairs": 2, "final_pairs": 2, "opponents": ["random"], "workers": 1, "belief_games": 0},
}


def tiny(**changes: Any) -> dict[str, Any]:
    """A tiny config (a few hundred steps of a 16-unit network), top-level keys replaced, sections merged."""
    data = copy.deepcopy(TINY)
    for key, value in changes.items():
        if isinstance(value, dict):
            data[key].update(value)
        else:
            data[key] = value
    return data


class Payload:
    """Unpickling this creates the file ``marker``: what a crafted checkpoint could do instead."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        return open, (self.marker, "w")


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    model = MaskablePPO("MlpPolicy", UnoEnv(), n_steps=32, batch_size=32, policy_kwargs={"net_arch": [8]},
                        device="cpu", seed=0)
    return save_model(model, tmp_path_factory.mktemp("ckpt") / "tiny.zip", SETTINGS)


def rewrite(source: Path, target: Path, **members: bytes | None) -> Path:
    """A copy of the zip ``source`` with members replaced (bytes) or removed (None)."""
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w") as new:
        for name in old.namelist():
            if name not in members:
                new.writestr(name, old.read(name))
        for name, content in members.items():
            if content is not None:
                new.writestr(name, content)
    return target


def member(path: Path, name: str) -> bytes:
    with zipfile.ZipFile(path) as archive:
        return archive.read(name)


# ------------------------------------------------------------------------------------ atomic writes
def test_a_save_cut_short_leaves_no_torn_file(checkpoint: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    model = MaskablePPO("MlpPolicy", UnoEnv(), n_steps=32, batch_size=32, policy_kwargs={"net_arch": [8]},
                        device="cpu")
    target = tmp_path / "step.zip"

    def full_disk(path: Any) -> None:
        Path(path).write_bytes(b"PK\x03\x04 half a zip")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(model, "save", full_disk)
    with pytest.raises(OSError):
        save_model(model, target, SETTINGS)
    assert list(tmp_path.iterdir()) == []  # neither a torn step.zip nor a temporary file
    shutil.copyfile(checkpoint, target)
    with pytest.raises(OSError):
        save_model(model, target, SETTINGS)
    assert target.read_bytes() == checkpoint.read_bytes() and len(list(tmp_path.iterdir())) == 1


def test_atomic_path_replaces_only_on_success(tmp_path: Path):
    target = tmp_path / "run_info.json"
    target.write_text("old")
    with pytest.raises(RuntimeError), atomic_path(target) as temporary:
        temporary.write_text("new but")
        raise RuntimeError("killed")
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["run_info.json"]
    with atomic_path(target) as temporary:
        temporary.write_text("new")
    assert target.read_text() == "new"


# ------------------------------------------------------------------------------------ safe loading
def test_a_crafted_pickle_in_data_does_not_run(checkpoint: Path, tmp_path: Path):
    marker = tmp_path / "pwned"
    data = json.loads(member(checkpoint, "data"))
    data["lr_schedule"][":serialized:"] = base64.b64encode(pickle.dumps(Payload(marker))).decode()
    crafted = rewrite(checkpoint, tmp_path / "crafted.zip", data=json.dumps(data).encode())
    policy = PPOPolicy.load(crafted)  # rebuilt from uno_env.json: data's pickles are never touched
    assert not marker.exists() and policy.observation_size == 294
    with suppress(Exception):  # whatever SB3 makes of the payload's result, the payload has run
        MaskablePPO.load(crafted, device="cpu")
    assert marker.exists()  # what the old loader (MaskablePPO.load) did


def test_a_pickle_in_policy_pth_is_refused(checkpoint: Path, tmp_path: Path):
    marker = tmp_path / "pwned"
    crafted = tmp_path / "crafted.zip"
    with open(tmp_path / "evil.pth", "wb") as out:
        torch.save({"weights": Payload(marker)}, out)
    rewrite(checkpoint, crafted, **{"policy.pth": (tmp_path / "evil.pth").read_bytes()})
    with pytest.raises(ValueError, match="policy.pth does not load") as raised:
        PPOPolicy.load(crafted)
    assert not marker.exists() and str(crafted) in str(raised.value)


def test_shipped_and_older_checkpoints_load_without_unpickling(checkpoint: Path, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch):
    # A checkpoint saved before uno_env.json recorded the network: the plain JSON fields of SB3's data suffice.
    settings = json.loads(member(checkpoint, "uno_env.json"))
    del settings["policy"]
    older = rewrite(checkpoint, tmp_path / "older.zip", **{"uno_env.json": json.dumps(settings).encode()})
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("unpickled")

    monkeypatch.setattr(cloudpickle, "loads", refuse)
    monkeypatch.setattr(pickle, "loads", refuse)
    shipped = [MODELS_DIR / name / MODEL_FILE for name in shipped_names()]
    assert shipped, f"no shipped agent in {MODELS_DIR}"
    for path in (older, *shipped):
        network = PPOPolicy.load(path).network
        actor = getattr(network, "head_arch", None) or network.net_arch["pi"]  # an afterstate actor has no body
        assert actor and network.optimizer is None


def test_a_zip_that_needs_unpickling_is_refused_unless_trusted(checkpoint: Path, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch):
    settings = json.loads(member(checkpoint, "uno_env.json"))
    del settings["policy"]
    data = json.loads(member(checkpoint, "data"))
    data["policy_class"]["__module__"] = "thirdparty.policies"  # a policy class we do not know how to rebuild
    custom = rewrite(checkpoint, tmp_path / "custom.zip", data=json.dumps(data).encode(),
                     **{"uno_env.json": json.dumps(settings).encode()})
    with pytest.raises(ValueError, match=f"cannot be loaded safely.*{TRUST_VARIABLE}=1"):
        PPOPolicy.load(custom)
    assert PPOPolicy.load(custom, trusted=True).observation_size == 294
    plain = rewrite(checkpoint, tmp_path / "plain.zip", **{"uno_env.json": None})  # a third-party SB3 zip
    with pytest.raises(ValueError, match=f"has no uno_env.json.*{TRUST_VARIABLE}=1"):
        PPOPolicy.load(plain)
    monkeypatch.setenv(TRUST_VARIABLE, "1")
    assert PPOPolicy.load(plain).belief == "none"


@pytest.mark.parametrize("members, message", [
    ({"policy.pth": None}, "has no policy.pth"),
    ({"uno_env.json": None}, "has no uno_env.json"),
    ({"uno_env.json": b"{}"}, "belief must be one of"),
    ({"uno_env.json": b"[]"}, "not an object"),
    ({"uno_env.json": b"\xff\xfe garbage"}, "not JSON"),
    ({"uno_env.json": b"[" * 100_000}, "not JSON"),
    ({"uno_env.json": json.dumps({"belief": "none", "observation_size": 10**12}).encode()}, "observation_size"),
    ({"uno_env.json": json.dumps({"belief": "none", "observation_size": 294, "privileged_size": 540}).encode()},
     "privileged critic"),
    ({"policy.pth": b"garbage"}, "policy.pth does not load"),
    ({"policy.pth": b"{}"}, "policy.pth does not load"),
], ids=lambda v: str(v)[:40])
def test_crafted_zips_are_refused_with_a_message(checkpoint: Path, tmp_path: Path, members: dict, message: str):
    crafted = rewrite(checkpoint, tmp_path / "crafted.zip", **members)
    with pytest.raises(ValueError, match=message) as raised:
        PPOPolicy.load(crafted)
    assert str(crafted) in str(raised.value) and len(str(raised.value)) < 600


def test_crafted_architectures_are_bounded(checkpoint: Path, tmp_path: Path):
    settings = json.loads(member(checkpoint, "uno_env.json"))
    for change in ({"net_arch": {"pi": [10**9], "vf": [8]}}, {"activation": "os.system"}, {"class": "Evil"}):
        crafted = rewrite(checkpoint, tmp_path / "crafted.zip", **{
            "uno_env.json": json.dumps(dict(settings, policy=dict(settings["policy"], **change))).encode()})
        with pytest.raises(ValueError, match="cannot be loaded safely"):
            load_network(crafted)


# ------------------------------------------------------------------------------------ the run folder
@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("runs") / "tiny"
    trainer.train(parse_config(tiny()), folder, quiet=True)
    return folder


def test_resume_skips_a_torn_checkpoint_and_repairs_the_logs(finished: Path, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture):
    run = tmp_path / "tiny"
    shutil.copytree(finished, run)
    (run / "checkpoints" / "step_000000256.zip").write_bytes(b"")  # a kill during an old-style save
    with open(run / "evaluations.jsonl", "a") as out:
        out.write('{"step": 384, "mean_win')  # a torn last line
    (run / "run_info.json").write_text((run / "run_info.json").read_text()[:40])  # truncated
    best = run / "best_model.zip"
    best.write_bytes(best.read_bytes()[:1000])  # truncated by a full disk
    assert main(["--resume", str(run), "--set", "total_timesteps=384", "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "skipped" in err and "step_000000256.zip" in err and "not a valid checkpoint" in err
    assert (run / "checkpoints" / "step_000000256.zip.broken").exists()
    steps = [json.loads(line)["step"] for line in (run / "evaluations.jsonl").read_text().splitlines()]
    assert steps == [128, 256, 384]  # no torn line, no duplicate
    events = EventAccumulator(str(run / "tb"), size_guidance={"scalars": 0})
    events.Reload()
    for tag in events.Tags()["scalars"]:  # TensorBoard hides what the first session logged after step 128
        logged = [e.step for e in events.Scalars(tag)]
        assert logged == sorted(set(logged)), (tag, logged)
    assert read_settings(run / "checkpoints" / "step_000000384.zip")["steps"] == 384
    PPOPolicy.load(best)
    assert json.loads((run / "final_eval.json").read_text())["model"] == "best_model.zip"


def _damage(path: Path, name: str) -> None:
    """Flip bytes in the middle of one member's stored data: the zip still opens, that member fails its CRC."""
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo(name)
    raw = bytearray(path.read_bytes())
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra) + info.compress_size // 2
    raw[start:start + 8] = bytes(b ^ 0xFF for b in raw[start:start + 8])
    path.write_bytes(bytes(raw))


def test_resume_sets_aside_a_damaged_data_member_and_records_of_the_wrong_shape(finished: Path, tmp_path: Path,
                                                                              capsys: pytest.CaptureFixture):
    """A newest checkpoint whose ``data`` is damaged blocked --resume; valid JSON of the wrong shape in
    evaluations.jsonl or run_info.json stopped it with a KeyError."""
    run = tmp_path / "tiny"
    shutil.copytree(finished, run)
    newest = run / "checkpoints" / "step_000000256.zip"
    _damage(newest, "data")
    PPOPolicy.load(newest)  # a player still loads it: only what resuming reads is damaged
    with open(run / "evaluations.jsonl", "a") as out:
        out.write('{"step": 100}\n[1, 2]\n{"step": 50, "mean_win_rate": "high"}\n')
    (run / "run_info.json").write_text(json.dumps({"sessions": [1, {"to_step": 3}]}))
    assert main(["--resume", str(run), "--set", "total_timesteps=384", "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "step_000000256.zip" in err and "run_info.json" in err
    assert (run / "checkpoints" / "step_000000256.zip.broken").exists()
    assert json.loads((run / "run_info.json.broken").read_text()) == {"sessions": [1, {"to_step": 3}]}
    sessions = json.loads((run / "run_info.json").read_text())["sessions"]
    assert len(sessions) == 1 and sessions[0]["from_step"] == 128 and sessions[0]["finished"]
    steps = [json.loads(line)["step"] for line in (run / "evaluations.jsonl").read_text().splitlines()]
    assert steps == [128, 256, 384]
    assert '{"step": 100}' in (run / "evaluations.jsonl.broken").read_text()  # the lines left out are kept


def test_resuming_a_finished_run_says_so(finished: Path, tmp_path: Path, capsys: pytest.CaptureFixture):
    run = tmp_path / "tiny"
    shutil.copytree(finished, run)
    before = {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()}
    assert main(["--resume", str(run), "--quiet"]) == 0
    assert "is finished" in capsys.readouterr().out
    assert {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()} == before  # nothing evaluated again


def test_ctrl_c_saves_a_checkpoint_and_prints_the_resume_command(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                               monkeypatch: pytest.MonkeyPatch):
    run = tmp_path / "tiny"
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump(tiny(checkpoint_every=1000, eval={"every": 0})))
    learn = MaskablePPO.learn

    def interrupted_learn(self: Any, *args: Any, **kwargs: Any) -> None:
        kwargs["total_timesteps"], args = 128, ()
        learn(self, *args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(MaskablePPO, "learn", interrupted_learn)
    assert main([str(config), "--run-dir", str(run), "--quiet"]) == 130
    err = capsys.readouterr().err
    assert f"uno-train --resume {run}" in err and "training interrupted at step 128" in err
    assert [p.name for p in (run / "checkpoints").glob("step_*.zip")] == ["step_000000128.zip"]
    assert not (run / ".lock").exists()
    monkeypatch.setattr(MaskablePPO, "learn", learn)
    assert main(["--resume", str(run), "--quiet"]) == 0
    assert json.loads((run / "run_info.json").read_text())["sessions"][-1]["finished"]


def test_the_lock_has_no_release_race(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """B opened .lock just before A released (and deleted) it, and C locked a new .lock: B must not run too."""
    folder = tmp_path / "run"
    folder.mkdir()
    lock = folder / ".lock"
    holder_a = open(lock, "a")  # noqa: SIM115  (closed inside the race)
    fcntl.flock(holder_a, fcntl.LOCK_EX)
    real_flock = fcntl.flock
    holders: list[Any] = []

    def race(handle: Any, flags: int) -> None:
        if not holders:  # the first call is B's, on A's file: A releases now and C takes a new file
            lock.unlink()
            holder_a.close()
            holders.append(open(lock, "a"))  # noqa: SIM115  (closed at the end)
            real_flock(holders[0], fcntl.LOCK_EX)
        real_flock(handle, flags)

    monkeypatch.setattr(run_folder.fcntl, "flock", race)
    with pytest.raises(ConfigError, match="in use"), run_folder.run_lock(folder):
        pass
    holders[0].close()


def test_a_run_dir_that_is_a_file_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture):
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump(tiny()))
    (tmp_path / "file").write_text("x")
    assert main([str(config), "--run-dir", str(tmp_path / "file"), "--quiet"]) == 2
    assert "is a file" in capsys.readouterr().err
    unwritable = Path("/sys/uno-run") if os.geteuid() == 0 else Path("/proc/uno-run")  # even root cannot write there
    for run_dir in (tmp_path / "file" / "run", unwritable):
        assert main([str(config), "--run-dir", str(run_dir), "--quiet"]) == 2
        err = capsys.readouterr().err
        assert err.startswith("uno-train: config error: cannot write the run folder") and len(err.splitlines()) == 1


@pytest.mark.parametrize("key", ["expert_iteration.start", "opponents", "eval.opponents"])
def test_a_broken_checkpoint_player_is_a_config_error(checkpoint: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture, key: str):
    broken = rewrite(checkpoint, tmp_path / "broken.zip", **{"policy.pth": b"not torch"})
    value = {"expert_iteration.start": str(broken), "opponents": f"[{{mix: {{'{broken}': 1}}}}]",
             "eval.opponents": f"['{broken}']"}[key]
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump(tiny()))
    assert main([str(config), "--run-dir", str(tmp_path / "run"), "--set", f"{key}={value}", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"uno-train: config error: {key}") and "policy.pth" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "run").exists()


# ------------------------------------------------------------------------------------ real processes
def _command(*args: str) -> list[str]:
    return [sys.executable, "-m", "train", *args, "--quiet"]


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")


def _wait_for(path_glob: tuple[Path, str], process: subprocess.Popen) -> None:
    """Until a file matching the glob exists or the process ended (no time limit: polling, not timing)."""
    folder, pattern = path_glob
    while process.poll() is None and not any(folder.glob(pattern)):
        time.sleep(0.05)


def _session_alive(session: int, grace: float = 30.0) -> list[int]:
    """Processes of a session (a killed run's workers would stay in its session) still alive after ``grace``
    seconds: helper processes (multiprocessing's fork server) end on their own just after the run does."""
    deadline = time.monotonic() + grace
    while (alive := _session_processes(session)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return alive


def _session_processes(session: int) -> list[int]:
    alive = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == session and fields[0] != "Z":
            alive.append(int(stat.parent.name))
    return alive


def test_a_worker_started_as_an_interrupt_lands_is_stopped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A signal between a pool worker's start and its registration in the pool (a window that opens on a
    loaded machine) leaves a worker the pool cannot stop; the run must still end without it."""
    def start_then_interrupt(executor: ProcessPoolExecutor) -> None:
        executor._mp_context.Process(target=time.sleep, args=(600,)).start()
        raise KeyboardInterrupt

    monkeypatch.setattr(ProcessPoolExecutor, "_spawn_process", start_then_interrupt)
    config = parse_config(tiny(eval={"workers": 2, "every": 128}))
    with pytest.raises(trainer.TrainingInterrupted):
        trainer.train(config, tmp_path / "run", quiet=True)
    assert multiprocessing.active_children() == []


def test_sigterm_checkpoints_and_leaves_no_workers(tmp_path: Path):
    run = tmp_path / "run"
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump(tiny(total_timesteps=100_000, eval={"workers": 2, "every": 64})))
    process = subprocess.Popen(_command(str(config), "--run-dir", str(run)), env=_env(), start_new_session=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for((run, "evaluations.jsonl"), process)  # the evaluation workers exist from the first evaluation
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate()
    assert process.returncode == 130, err
    assert f"--resume {run}" in err and "Traceback" not in err
    assert read_settings(sorted((run / "checkpoints").glob("step_*.zip"))[-1])["steps"] > 0
    assert _session_alive(process.pid) == []


def test_a_second_sigterm_does_not_cut_the_first_short(tmp_path: Path):
    """Two SIGTERMs (a service manager's, then an impatient user's) ended the run with -15 or no save."""
    run = tmp_path / "run"
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump(tiny(total_timesteps=100_000, eval={"workers": 2, "every": 64})))
    process = subprocess.Popen(_command(str(config), "--run-dir", str(run)), env=_env(), start_new_session=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for((run, "evaluations.jsonl"), process)
    for _ in range(3):
        process.send_signal(signal.SIGTERM)
        time.sleep(0.2)
    _, err = process.communicate()
    assert process.returncode == 130, err
    assert f"--resume {run}" in err and "Traceback" not in err
    PPOPolicy.load(sorted((run / "checkpoints").glob("step_*.zip"))[-1])
    assert _session_alive(process.pid) == []


def test_kill_9_at_random_moments_then_resume_finishes(tmp_path: Path):
    run = tmp_path / "run"
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump(tiny(total_timesteps=192, checkpoint_every=32,
                                          eval={"every": 64, "pairs": 1, "final_pairs": 1})))
    rng = random.Random()
    command = _command(str(config), "--run-dir", str(run))
    for _ in range(2):  # two kills at random moments: mostly during saves, as checkpoints come every 16 steps
        process = subprocess.Popen(command, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _wait_for((run / "checkpoints", "step_*.zip"), process)
        time.sleep(rng.uniform(0, 1.0))
        process.kill()
        process.wait()
        command = _command("--resume", str(run))
        if not list((run / "checkpoints").glob("step_*.zip")):
            shutil.rmtree(run)  # killed before its first checkpoint: a fresh start is the only way
            command = _command(str(config), "--run-dir", str(run))
    result = subprocess.run(command, env=_env(), capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    steps = [json.loads(line)["step"] for line in (run / "evaluations.jsonl").read_text().splitlines()]
    assert steps == sorted(set(steps)) and steps[-1] == 192
    for path in (run / "checkpoints").glob("step_*.zip"):
        PPOPolicy.load(path)
    assert json.loads((run / "final_eval.json").read_text())["model"] == "best_model.zip"


# ------------------------------------------------------------------------------------ clean command-line errors
@pytest.mark.parametrize("override, key", [
    ("seed=-1", "seed"), ("seed=1e20", "seed"), ("eval.seed=-2", "eval.seed"),
    ("torch_threads=100000", "torch_threads"),
    ("ppo.n_steps=10000000000", "ppo.n_steps"), ("policy.net_arch=[100000000]", "policy.net_arch"),
    ("eval.opponents=['..:x']", "eval.opponents"), ("eval.opponents=['os:system']", "eval.opponents"),
    ("eval.opponents=['json:JSONDecoder']", "eval.opponents"), ("name=" + "[" * 5000 + "]" * 5000, "name"),
    ("env.belief=" + "x" * 1_000_000, "env.belief"),
    ("env.n_particles=1e12", "env.n_particles"), ("ppo.learning_rate=1e300", "ppo.learning_rate"),
    ('name="a\\0b"', "name"), ("opponents=[{mix: {random: 1e308, rule: 1e308}}]", "opponents"),
    ("eval.opponents=['sys:exit']", "eval.opponents"), ("expert_iteration.start=sys:exit", "expert_iteration.start"),
])
def test_bad_config_values_exit_2_with_one_short_line(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                      override: str, key: str):
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump(tiny()))
    assert main([str(config), "--run-dir", str(tmp_path / "run"), "--set", override, "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("uno-train: config error:") and len(err.splitlines()) == 1 and len(err) < 400, err
    assert key.split(".")[0] in err or "YAML" in err
    assert not (tmp_path / "run").exists()


def test_deep_and_aliased_yaml_files_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture):
    deep = tmp_path / "deep.yaml"
    deep.write_text("name: " + "[" * 5000 + "]" * 5000 + "\n")
    aliases = tmp_path / "aliases.yaml"
    aliases.write_text("a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{b}: &{b} [{', '.join(['*' + a] * 10)}]\n" for a, b in zip("abcdef", "bcdefg", strict=True)) + "name: *g\n")
    for path in (deep, aliases):
        assert main([str(path), "--run-dir", str(tmp_path / "run"), "--quiet"]) == 2
        err = capsys.readouterr().err
        assert len(err.splitlines()) == 1 and len(err) < 400, err[:400]


def test_evaluate_checks_json_path_and_seed_first(tmp_path: Path, capsys: pytest.CaptureFixture):
    from train.cli.evaluate import main as evaluate_main
    from train.cli.play import main as play_main

    for argv in (["--json", str(tmp_path)], ["--json", str(tmp_path / "missing" / "x.json")], ["--seed", "-1"]):
        with pytest.raises(SystemExit) as exited:
            evaluate_main(["random", "--opponents", "random", "--pairs", "1", "--workers", "1", *argv])
        assert exited.value.code == 2
    with pytest.raises(SystemExit) as exited:
        play_main(["--seed", "-1"])
    assert exited.value.code == 2
    assert "Traceback" not in capsys.readouterr().err


def test_a_pools_workers_end_when_the_process_that_made_it_is_killed_outright(tmp_path: Path):
    """kill -9 of the process alone (not its group) runs no cleanup; its pool's workers, children of the forkserver,
    notice that it is gone and end instead of waiting for work forever."""
    script = ("import os, sys, time\n"
              "from train.evaluation.matches import make_executor\n"
              "pool = make_executor(2)\n"
              "pids = {pool.submit(os.getpid).result() for _ in range(8)} | set(pool._processes)\n"
              "print(' '.join(map(str, pids)), flush=True)\n"
              "time.sleep(600)\n")
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                               cwd=Path(__file__).resolve().parent.parent)
    workers = [int(pid) for pid in process.stdout.readline().split()]
    assert workers, "the pool started no worker"
    process.kill()
    process.wait()
    deadline = time.monotonic() + 20
    alive = workers
    while alive and time.monotonic() < deadline:
        time.sleep(0.2)
        alive = [pid for pid in workers if _running(pid)]
    assert not alive, f"workers {alive} outlived the process that made their pool"


def _running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie waiting for its parent to reap it counts as ended)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_an_abandoned_pool_with_half_a_result_in_its_pipe_lets_the_process_end():
    """A worker terminated while it writes its result leaves half a message in the pool's result pipe; the pool's
    manager thread then waits for the rest forever, and Python joins that thread at exit: a SIGTERM-stopped labelling
    run never ended. Here the half message is planted: a header announcing 1,000 bytes, then
    10 of them. ``abandon`` must end the manager thread."""
    from train.evaluation.matches import abandon, make_executor

    pool = make_executor(1)
    assert pool.submit(os.getpid).result() != os.getpid()  # the worker and the manager thread are running
    manager = pool._executor_manager_thread
    os.write(pool._result_queue._writer.fileno(), (1000).to_bytes(4, "big") + b"0123456789")
    time.sleep(0.5)  # the manager thread is now inside recv, waiting for 990 more bytes
    assert manager.is_alive()
    abandon(pool)
    manager.join(timeout=30)  # a bound, not a speed claim: it ends at once
    assert not manager.is_alive(), "the pool's manager thread is still waiting for the rest of the message"
