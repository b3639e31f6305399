"""The CleanRL-style masked PPO (train.integrations.cleanrl_ppo): its flags, its seeds, its KL anchor, its resume."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
import torch
from sb3_contrib import MaskablePPO
from uno_testlib import as_from_a_terminal

from agents.afterstate import AfterstatePolicy
from agents.ppo import PPOPolicy, save_model
from train.integrations import cleanrl_ppo
from uno_env.env import UnoEnv

ROOT = Path(__file__).resolve().parents[1]
TINY = ["--num-envs", "16", "--num-steps", "16", "--num-minibatches", "2", "--update-epochs", "2",
        "--net-arch", "32", "32", "--eval-pairs", "1"]


def run(tmp_path, name, *flags, resume=False, log=lambda line: None):
    """A tiny run in ``tmp_path/name``; its final metrics."""
    args, _ = cleanrl_ppo.parse_args([*TINY, "--out", str(tmp_path / name), *flags])
    return cleanrl_ppo.train(args, resume=resume, log=log)


def weights(tmp_path, name):
    return torch.load(tmp_path / name / "state.pt", weights_only=True)["policy"]


@pytest.mark.parametrize(("flags", "named"), [
    (["--num-envs", "0"], "--num-envs"),
    (["--num-minibatches", "3"], "--num-minibatches"),
    (["--gamma", "1.5"], "--gamma"),
    (["--learning-rate", "nan"], "--learning-rate"),
    (["--opponent", "search"], "--opponent"),
    (["--opponent", "rule=x"], "--opponent"),
    (["--activation", "sigmoid"], "--activation"),
    (["--init", str(ROOT / "models" / "search-q-particles" / "model.zip")], "belief 'particles'"),
    (["--init", "no/such/file.zip"], "--init"),
])
def test_a_bad_flag_exits_2_naming_it(flags, named, capsys):
    with pytest.raises(SystemExit) as stop:
        cleanrl_ppo.parse_args(flags)
    assert stop.value.code == 2
    assert named in capsys.readouterr().err


def test_a_seed_gives_the_same_run_and_another_seed_another(tmp_path):
    for name, seed in (("a", "3"), ("b", "3"), ("c", "4")):
        run(tmp_path, name, "--total-steps", "512", "--seed", seed)
    first, again, other = (weights(tmp_path, name) for name in "abc")
    assert all(torch.equal(first[key], again[key]) for key in first)
    assert not all(torch.equal(first[key], other[key]) for key in first)


def test_the_kl_penalty_holds_the_policy_near_where_it_started(tmp_path):
    run(tmp_path, "start", "--total-steps", "256")
    start = str(tmp_path / "start" / "latest.zip")
    free = run(tmp_path, "free", "--init", start, "--total-steps", "1024", "--learning-rate", "0.01",
               "--kl-coef", "0", "--ent-coef", "0", "--no-anneal-lr")
    held = run(tmp_path, "held", "--init", start, "--total-steps", "1024", "--learning-rate", "0.01",
               "--kl-coef", "20", "--ent-coef", "0", "--no-anneal-lr")
    assert held["losses/kl_to_start"] < free["losses/kl_to_start"] / 3


def test_init_starts_from_the_checkpoint_and_writes_one_that_evaluates(tmp_path):
    run(tmp_path, "start", "--total-steps", "256", "--net-arch", "24")
    run(tmp_path, "next", "--init", str(tmp_path / "start" / "latest.zip"), "--total-steps", "256")
    with zipfile.ZipFile(tmp_path / "next" / "latest.zip") as archive:
        settings = json.loads(archive.read("uno_env.json"))
    assert settings["belief"] == "none" and settings["policy"]["net_arch"]["pi"] == [24]  # the init's, not --net-arch


def test_init_from_an_afterstate_checkpoint_trains_its_scorer(tmp_path):
    start = MaskablePPO(AfterstatePolicy, UnoEnv(belief="none"), seed=0, device="cpu",
                        policy_kwargs={"head_arch": [16, 8], "net_arch": [12]})
    path = save_model(start, tmp_path / "afterstate.zip", {"belief": "none", "config": "test", "steps": 0})
    run(tmp_path, "next", "--init", str(path), "--total-steps", "512", "--learning-rate", "0.01")
    trained = PPOPolicy.load(tmp_path / "next" / "latest.zip").network
    assert isinstance(trained, AfterstatePolicy) and trained.head_arch == [16, 8]
    before, after = start.policy.state_dict(), trained.state_dict()
    assert before.keys() == after.keys()
    assert not torch.equal(before["action_net.scorer.0.weight"], after["action_net.scorer.0.weight"])


def test_resume_continues_from_the_last_checkpoint(tmp_path):
    run(tmp_path, "r", "--total-steps", "1024", "--eval-every", "2")  # 4 updates of 256
    assert torch.load(tmp_path / "r" / "state.pt", weights_only=True)["update"] == 4
    before = weights(tmp_path, "r")
    lines = []
    run(tmp_path, "r", "--total-steps", "1536", "--eval-every", "1", resume=True, log=lines.append)  # 2 more
    assert [line.split()[1] for line in lines] == ["5/6", "6/6"]
    assert torch.load(tmp_path / "r" / "state.pt", weights_only=True)["update"] == 6
    with zipfile.ZipFile(tmp_path / "r" / "latest.zip") as archive:
        assert json.loads(archive.read("uno_env.json"))["steps"] == 1536
    assert not all(torch.equal(before[key], weights(tmp_path, "r")[key]) for key in before)


def test_resume_without_a_checkpoint_says_so(tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        cleanrl_ppo.main(["--out", str(tmp_path / "empty"), "--resume"])
    assert stop.value.code == 2
    assert "no state.pt" in capsys.readouterr().err




@pytest.mark.slow  # a real process, stopped mid-run
@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_or_sigterm_stops_with_130_and_the_resume_command(tmp_path, stop):
    out = tmp_path / "stopped"
    process = subprocess.Popen([sys.executable, "-m", "train.integrations.cleanrl_ppo", *TINY, "--out", str(out),
                                "--total-steps", "100000000", "--eval-every", "1"], cwd=ROOT,
                               stderr=subprocess.PIPE, text=True, start_new_session=True,
                               preexec_fn=as_from_a_terminal)
    deadline = time.monotonic() + 120
    while not (out / "state.pt").exists() and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.1)
    process.send_signal(stop)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130 and err.strip().endswith("--resume"), err
    assert torch.load(out / "state.pt", weights_only=True)["update"] >= 1
