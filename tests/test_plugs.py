"""The env plugged into other people's RL libraries: RLlib (joined to a Ray head started here) and TorchRL, for real.

Each learner trains on a tiny budget. At that budget neither actor beats ``random`` measurably: after 120k steps
(RLlib) and 200k steps (TorchRL) the trained actors won 47.5% and 53.0% against it, their untrained twins 51.0% on the
same 300 deal pairs, all within the noise (docs/results.md). So the tests hold what
a tiny run must get right and can get wrong:

* every move is legal: the training envs raise on an illegal action (``illegal_action="raise"``), so a mask that
  does not reach the sampler stops the run;
* the critic learns the outcome from the observations: it explains most of the variance of the value targets of the
  batches it is fitted to (RLlib's ``vf_explained_var``; the same formula for TorchRL), which fails when the
  observations or the rewards do not reach the learner (a constant input explains nothing);
* the run reports its steps and its evaluation on paired deals, and the scripts refuse bad arguments with status 2.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Token authentication on the head and its clients, as README's cluster commands set it. Ray reads the mode when it is
#: imported, so the clients are programs started with it (this process may have imported Ray for other tests). The
#: token is the fixture's own file (``RAY_AUTH_TOKEN_PATH``): a fresh machine has no ~/.ray/auth_token, and a head
#: started in token mode without one exits at once.
CLUSTER_ENV = {"RAY_AUTH_MODE": "token"}
#: The explained variance a critic must reach on its batches (a critic blind to the observations gets about 0).
FITTED = 0.3


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _reachable(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) == 0


class Cluster(NamedTuple):
    """A running Ray head: its address, and the environment its clients start with (its token's file)."""

    address: str
    env: dict[str, str]


@pytest.fixture(scope="module")
def ray_head(tmp_path_factory: pytest.TempPathFactory):
    """A Ray head in its own process group (``ray start --head --block``), as a user starts a cluster.

    Teardown stops that process group only (never ``ray stop``, which would stop every Ray on the machine).
    """
    pytest.importorskip("ray.rllib")
    token = tmp_path_factory.mktemp("ray") / "auth_token"
    token.write_text(secrets.token_hex(32))  # the form of `ray get-auth-token --generate`
    clients = {**os.environ, **CLUSTER_ENV, "RAY_AUTH_TOKEN_PATH": str(token)}
    port = free_port()
    # See tests/test_tune.py: niced workers starve next to other busy processes on 2 cores.
    env = {**clients, "RAY_worker_niceness": "0"}
    head = subprocess.Popen([sys.executable, "-m", "ray.scripts.scripts", "start", "--head", f"--port={port}",
                             "--num-cpus=2", "--include-dashboard=false", f"--ray-client-server-port={free_port()}",
                             "--block"], cwd=ROOT, env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not _reachable(port):
            if head.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the Ray head did not start (exit status {head.poll()})")
            time.sleep(1)
        yield Cluster(f"127.0.0.1:{port}", clients)
    finally:
        # The group may be gone already (seen once, in the full suite on two workers): ending it is all this wants.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(head.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            head.wait(timeout=5)
        with contextlib.suppress(ProcessLookupError):  # whatever of the group is still shutting down
            os.killpg(head.pid, signal.SIGKILL)
        head.wait()


def run_rllib(cluster: Cluster, out: Path, *options: str) -> dict:
    """``python -m train.integrations.rllib_ppo`` joined to the head of ``cluster``; its JSON report."""
    command = [sys.executable, "-m", "train.integrations.rllib_ppo", "--address", cluster.address, "--batch", "1000",
               "--minibatch", "200", "--eval-opponents", "random", "--pairs", "20", "--json", str(out), *options]
    done = subprocess.run(command, cwd=ROOT, env=cluster.env, capture_output=True, text=True, timeout=280)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(out.read_text())


def check_report(report: dict, iterations: int, agents: set[str]) -> None:
    assert report["steps"] >= iterations * 1000 and len(report["returns"]) == iterations
    assert min(report["explained_variance"]) > FITTED, report["explained_variance"]
    rows = {row["agent"]: row for row in report["results"]}
    assert set(rows) == agents and all(row["games"] == 40 for row in rows.values())


def test_rllib_masked_ppo_on_a_ray_head(ray_head: Cluster, tmp_path: Path):
    report = run_rllib(ray_head, tmp_path / "rllib.json", "--iterations", "4")
    check_report(report, 4, {"default_policy-untrained", "default_policy-rllib"})


def test_rllib_self_play_with_two_policies(ray_head: Cluster, tmp_path: Path):
    report = run_rllib(ray_head, tmp_path / "self-play.json", "--self-play", "--iterations", "3")
    check_report(report, 3, {f"player_{i}-{kind}" for i in (0, 1) for kind in ("untrained", "rllib")})


def test_rllib_unreachable_address_is_refused(capsys: pytest.CaptureFixture[str]):
    pytest.importorskip("ray.rllib")
    from train.integrations import rllib_ppo

    address = f"127.0.0.1:{free_port()}"
    assert rllib_ppo.main(["--address", address]) == 2
    assert f"--address {address}: no Ray cluster reachable there" in capsys.readouterr().err


def test_torchrl_masked_ppo():
    pytest.importorskip("torchrl")
    from train.evaluation.matches import evaluate
    from train.integrations import torchrl_ppo

    run = torchrl_ppo.train(torchrl_ppo.Settings(frames=4 * 2048))
    assert run.steps == 4 * 2048 and len(run.returns) == len(run.explained_variance) == 4
    assert min(run.explained_variance) > FITTED, run.explained_variance
    # The trained actor is what was trained: its weights moved, and it plays legal games through the project's harness.
    assert any((a != b).any() for a, b in zip(run.trained.actor.parameters(), run.untrained.actor.parameters(),
                                              strict=True))
    result = evaluate(run.trained, ["random"], pairs=10, seed=3, workers=1)[0]
    assert result.games == 20 and result.agent == "torchrl"


@pytest.mark.parametrize("module", ["rllib_ppo", "torchrl_ppo"])
def test_help_and_bad_arguments(module: str, capsys: pytest.CaptureFixture[str]):
    pytest.importorskip("ray.rllib" if module == "rllib_ppo" else "torchrl")
    script = importlib.import_module(f"train.integrations.{module}")
    for argv, status, stream, text in ((["--help"], 0, "out", "--seed"),
                                       (["--minibatch", "0"], 2, "err", "--minibatch must be at least 1, got 0"),
                                       (["--minibatch", "4096"], 2, "err", "--minibatch 4096 is larger than --batch"),
                                       (["--opponent", "rul"], 2, "err", "--opponent rul: not a policy name"),
                                       (["--eval-opponents", "random", "x.zip"], 2, "err", "--eval-opponents x.zip:")):
        with pytest.raises(SystemExit) as exited:
            script.main(argv)
        assert exited.value.code == status and text in getattr(capsys.readouterr(), stream)
