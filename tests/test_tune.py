"""Sweeps on Ray Tune (train.sweeps, uno-tune) and evaluation on Ray (train.evaluation.distributed).

The sweeps run for real, on one local Ray session shared by the module (2 CPUs): the smoke sweep
(tests/smoke_sweep.yaml: Optuna, ASHA, 2 tiny trials) end to end through the command line, and a grid sweep
in which one trial crashes. Bad sweep files are refused before Ray starts.
"""

from __future__ import annotations

import fcntl
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.slow  # one local Ray session, sweeps of real trials

from train.cli.evaluate import main as evaluate_main  # noqa: E402
from train.cli.tune import main  # noqa: E402
from train.config import load_config  # noqa: E402
from train.evaluation.distributed import RayExecutor  # noqa: E402
from train.evaluation.matches import evaluate  # noqa: E402
from train.sweeps.config import load_sweep  # noqa: E402
from train.sweeps.report import TrialSummary, comparison_table  # noqa: E402
from train.training import labelling  # noqa: E402
from train.training.labelling import LabelJob, Workers  # noqa: E402
from train.training.search_labels import SearchLabels  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / "tests" / "smoke_sweep.yaml"
#: The smoke sweep's tiny training budget, for the sweeps the tests write themselves.
TINY = yaml.safe_load(SMOKE.read_text())["set"]


@pytest.fixture(scope="module")
def ray_session():
    """One local Ray for the module (its start-up takes seconds); the programs under test join it.

    Ray lowers its workers' priority (niceness 15) by default; next to the other test worker's busy processes
    the trials would then wait for idle cores, and these tests for their time limit.
    """
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAY_worker_niceness", "0")
        ray.init(address="local", num_cpus=2, include_dashboard=False)  # its own, even beside another Ray
        yield ray.get_runtime_context().gcs_address
        ray.shutdown()


def write_sweep(path: Path, **keys) -> Path:
    """A sweep file over the smoke sweep's tiny base (``keys`` replace or add top-level keys)."""
    data = {"base": "configs/default.yaml", "set": TINY, "space": {"ppo.n_epochs": {"choice": [1, 2]}},
            "search": "optuna", "scheduler": "none", "trials": 2, **keys}
    path.write_text(yaml.safe_dump(data))
    return path


# ------------------------------------------------------------------------------------ bad input (no Ray)
@pytest.mark.parametrize(("keys", "named"), [
    ({"spce": {}}, "'spce'"),
    ({"space": {"ppo.learnig_rate": {"loguniform": [1e-5, 1e-3]}}}, "ppo.learnig_rate"),
    ({"space": {"ppo.learning_rate": {"lognormal": [1e-5, 1e-3]}}}, "space.ppo.learning_rate"),
    ({"space": {"ppo.learning_rate": {"loguniform": [0, 1e-3]}}}, "space.ppo.learning_rate.loguniform"),
    ({"space": {"ppo.learning_rate": {"uniform": [1e-3, 1e-5]}}}, "space.ppo.learning_rate.uniform"),
    ({"space": {"policy.net_arch": {"uniform": [1, 2]}}}, "space.policy.net_arch"),
    ({"space": {"ppo.n_epochs": {"choice": [4, 0]}}}, "ppo.n_epochs must be > 0"),
    ({"space": {"seed": {"grid": [0, 1]}}}, "space.seed: grid needs search: grid"),
    ({"space": {}}, "space must map"),
    ({"metric": "win_rate/search"}, "metric"),
    ({"scheduler": "hyperband"}, "scheduler"),
    ({"grace_period": 100}, "grace_period applies only to scheduler: asha"),
    ({"scheduler": "asha", "grace_period": 10**9}, "grace_period"),
    ({"base": "configs/nonexistent.yaml"}, "configs/nonexistent.yaml"),
    ({"set": ["eval.every=0"]}, "eval.every"),
    ({"trials": 0}, "trials"),
    ({"compare": "ppo.n_epochs"}, "compare"),
])
def test_bad_sweep_files_are_refused_naming_the_key(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     keys: dict, named: str):
    sweep = write_sweep(tmp_path / "bad.yaml", **keys)
    assert main([str(sweep), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("uno-tune: config error:") and named in err and err.count("\n") == 1
    assert not (tmp_path / "out").exists()  # refused before any trial, and before the sweep folder


def test_unwritable_destinations_are_refused_first(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    (tmp_path / "file").write_text("x")
    for option in ("--out", "--json"):
        with pytest.raises(SystemExit) as exited:
            main([str(SMOKE), option, str(tmp_path / "file" / "under")])
        assert exited.value.code == 2 and f"uno-tune: error: {option}" in capsys.readouterr().err


def test_unreachable_address_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                        monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(ray, "is_initialized", lambda: False)  # as in a fresh process, whatever ran before
    assert main([str(SMOKE), "--address", "127.0.0.1:9", "--out", str(tmp_path / "out")]) == 2
    assert "--address 127.0.0.1:9: no Ray cluster reachable" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_shipped_sweeps_are_valid():
    assert load_sweep(SMOKE).trials == 2
    shipped = sorted((ROOT / "configs" / "sweeps").glob("*.yaml"))
    assert [path.name for path in shipped] == ["default-seeds.yaml"]
    seeds = load_sweep(shipped[0])
    assert [d.values for d in seeds.space] == [[0, 1, 2]] and seeds.base == ROOT / "configs" / "default.yaml"
    assert seeds.base_config().name == "default" and seeds.base_config().expert_iteration.start == "rule"


def test_comparison_table_over_seeds(tmp_path: Path):
    """The ablation's table: mean and t-interval over the trials of each value, and the Welch lift."""
    sweep = load_sweep(write_sweep(tmp_path / "ablation.yaml", space={"env.belief": {"grid": ["none", "counting"]},
                                                                     "seed": {"grid": [0, 1]}},
                                   search="grid", scheduler="none", trials=1, compare="env.belief"))

    def trial(belief: str, seed: int, rate: float) -> TrialSummary:
        final = {"rule": {"win_rate": rate, "ci_low": rate - 0.02, "ci_high": rate + 0.02, "games": 4000}}
        return TrialSummary(f"{belief}{seed}", "finished", {"env.belief": belief, "seed": seed}, final=final)

    trials = [trial("none", 0, 0.50), trial("none", 1, 0.52), trial("counting", 0, 0.54), trial("counting", 1, 0.56),
              TrialSummary("x", "error", {"env.belief": "particles", "seed": 0}, error="boom")]
    text = comparison_table(sweep, trials)
    assert "| none | 50.0% 52.0% | 51.0% |" in text
    assert "| counting | 54.0% 56.0% | 55.0% |" in text and "particles" not in text  # no finished trial
    assert "| counting | +4.0% |" in text  # the lift over the first value
    assert "| 2.0% |" in text  # the mean evaluation CI half width


# ------------------------------------------------------------------------------------ sweeps on Ray
def test_smoke_sweep_end_to_end(ray_session: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    out, report = tmp_path / "smoke", tmp_path / "trials.json"
    assert main([str(SMOKE), "--out", str(out), "--json", str(report)]) == 0
    printed = capsys.readouterr().out
    assert "sweep smoke: 2 trials" in printed and f"best config: {out.resolve() / 'best.yaml'}" in printed
    trials = json.loads(report.read_text())
    assert trials["metric"] == "mean_win_rate" and len(trials["trials"]) == 2
    statuses = [t["status"] for t in trials["trials"]]
    assert "finished" in statuses and set(statuses) <= {"finished", "stopped"}  # ASHA may stop the trailing one
    for t in trials["trials"]:
        assert set(t["config"]) == {"ppo.learning_rate", "ppo.n_epochs"} and t["config"]["ppo.n_epochs"] in (1, 2)
        assert 1e-4 <= t["config"]["ppo.learning_rate"] <= 1e-3 and 0 <= t["metric"] <= 1
        run = Path(t["run_dir"])  # the project's own run folder
        assert (run / "config.yaml").is_file() and (run / "tb").is_dir() and list(run.glob("checkpoints/*.zip"))
        if t["status"] == "finished":
            assert t["step"] == 512 and set(t["final"]) == {"random", "rule"}
            assert t["final"]["rule"]["games"] == 8 and 0 <= t["final"]["rule"]["win_rate"] <= 1
    best = trials["trials"][0]
    assert trials["best_trial"] == best["trial"] and best["metric"] == max(t["metric"] for t in trials["trials"])
    config = load_config(trials["best_config"])  # a ready training config with the best trial's values
    assert config.ppo.n_epochs == best["config"]["ppo.n_epochs"]
    assert config.ppo.learning_rate == pytest.approx(best["config"]["ppo.learning_rate"])
    assert config.total_timesteps == 512 and config.expert_iteration.start is None


def test_crashing_trial_is_reported_and_the_sweep_resumes(ray_session: str, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]):
    # A checkpoint opponent and self-play must share one belief setting: uno-train refuses the env.belief
    # counting trial when it starts (not in the config's own checks), so that trial crashes.
    sweep = write_sweep(tmp_path / "grid.yaml", search="grid", trials=1,
                        set=[*TINY, "opponents=[{mix: {random: 1, self: 1, search-q-none: 1}}]"],
                        space={"env.belief": {"grid": ["none", "counting"]}})
    out = tmp_path / "grid"
    assert main([str(sweep), "--out", str(out)]) == 0
    assert "error: train.config.ConfigError: opponents: every checkpoint" in capsys.readouterr().out
    trials = {t["config"]["env.belief"]: t for t in json.loads((out / "trials.json").read_text())["trials"]}
    assert trials["none"]["status"] == "finished" and trials["counting"]["status"] == "error"
    assert "share one belief setting" in trials["counting"]["error"] and trials["counting"]["metric"] is None
    commands = (out / "runs" / trials["none"]["trial"] / "command.txt").read_text()

    assert main(["--resume", str(out)]) == 0  # the crashed trial is tried again; the finished one is kept
    again = {t["config"]["env.belief"]: t for t in json.loads((out / "trials.json").read_text())["trials"]}
    assert again["none"] == trials["none"] and again["counting"]["status"] == "error"
    assert (out / "runs" / trials["none"]["trial"] / "command.txt").read_text() == commands  # not retrained
    assert main([str(sweep), "--out", str(out)]) == 2  # a second sweep into the same folder is refused
    assert "--resume" in capsys.readouterr().err


def test_killed_sweep_resumes(ray_session: str, tmp_path: Path):
    """``kill -9`` of uno-tune (joined to a running cluster by --address) mid-trial; --resume finishes the trial."""
    steps = [*TINY, "total_timesteps=3072", "eval.every=512", "checkpoint_every=512"]
    sweep = write_sweep(tmp_path / "long.yaml", trials=1, set=steps)
    out = tmp_path / "long"
    process = subprocess.Popen([sys.executable, "-m", "train.cli.tune", str(sweep), "--out", str(out), "--address",
                                ray_session], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    try:  # kill it once the trial has reported its first evaluation to Tune
        while not any(path.stat().st_size for path in out.glob("*/result.json")):
            assert process.poll() is None and time.monotonic() < deadline, "the sweep ended or never reported"
            time.sleep(0.2)
    finally:
        process.kill()
        process.wait()
    assert not (out / "trials.json").exists()
    for lock in out.glob("runs/*/.lock"):  # Ray ends the dead driver's trial soon, not at once: wait for it
        with open(lock) as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)  # granted once the trainer holding the run folder is gone
    assert main(["--resume", str(out)]) == 0
    (trial,) = json.loads((out / "trials.json").read_text())["trials"]
    assert trial["status"] == "finished" and trial["step"] == 3072
    sessions = json.loads((Path(trial["run_dir"]) / "run_info.json").read_text())["sessions"]
    assert len(sessions) == 2 and sessions[1]["from_step"] > 0  # continued from its checkpoint, not restarted


def test_more_cpus_per_trial_than_the_cluster_has_is_refused(ray_session: str, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]):
    """Tune kept such a trial PENDING forever."""
    sweep = write_sweep(tmp_path / "greedy.yaml", cpus_per_trial=100000)
    assert main([str(sweep), "--out", str(tmp_path / "out"), "--address", ray_session]) == 2
    # Ray forwards its workers' log lines, "(run_trial pid=...) ...", to this process's stderr, late: earlier
    # tests' trials on the shared session can print here. They are Ray's, not the CLI's.
    err = [line for line in capsys.readouterr().err.strip().splitlines() if " pid=" not in line]
    assert len(err) == 1 and "cpus_per_trial 100000" in err[0]
    assert not (tmp_path / "out").exists()


def _trial_helpers() -> set[int]:
    """The multiprocessing processes (pool workers, fork servers) of the module's Ray workers: their environment
    names this test process's raylet."""
    raylets = [d.name for d in Path("/proc").glob("[0-9]*") if _read(d / "cmdline").find(b"raylet/raylet") >= 0
               and _read(d / "stat").rsplit(b")", 1)[-1].split()[1:2] == [str(os.getpid()).encode()]]
    marks = [f"RAY_RAYLET_PID={pid}\0".encode() for pid in raylets]
    return {int(d.name) for d in Path("/proc").glob("[0-9]*") if b"multiprocessing" in _read(d / "cmdline")
            and any(mark in _read(d / "environ") for mark in marks)}


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def test_sigterm_stops_the_sweep_and_leaves_no_workers(ray_session: str, tmp_path: Path):
    """SIGTERM aborted uno-tune (status -6), and its trials' worker processes could outlive it."""
    steps = [*TINY, "total_timesteps=30720", "eval.every=512", "checkpoint_every=512", "eval.workers=2",
             "vec_env=subproc"]
    sweep = write_sweep(tmp_path / "long.yaml", trials=1, set=steps)
    out = tmp_path / "long"
    process = subprocess.Popen([sys.executable, "-m", "train.cli.tune", str(sweep), "--out", str(out), "--address",
                                ray_session], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 200
    try:  # stop it once the trial has reported its first evaluation (its pools and env workers are running)
        while not any(path.stat().st_size for path in out.glob("*/result.json")):
            assert process.poll() is None and time.monotonic() < deadline, "the sweep ended or never reported"
            time.sleep(0.2)
        helpers = _trial_helpers()
        assert helpers, "the trial runs worker processes"
        for _ in range(2):  # a second SIGTERM while the first is handled changes nothing
            process.send_signal(signal.SIGTERM)
            time.sleep(0.3)
        _, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, err[-2000:]
    assert f"--resume {out}" in err
    for lock in out.glob("runs/*/.lock"):  # the trial's trainer released its run folder
        with open(lock) as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
    deadline = time.monotonic() + 30
    while (alive := helpers & _trial_helpers()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not alive, f"worker processes outlived the sweep: {sorted(alive)}"


# ------------------------------------------------------------------------------------ evaluation on Ray
def test_ray_evaluation_equals_the_local_pool(ray_session: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    local = evaluate("search-q-none", ["rule", "random"], pairs=12, seed=5, workers=2)
    executor = RayExecutor(ray_session)  # joins the running session, and leaves it running
    spread = evaluate("search-q-none", ["rule", "random"], pairs=12, seed=5, workers=executor.cpus, executor=executor)
    executor.shutdown()
    assert ray.is_initialized()
    for a, b in zip(local, spread, strict=True):
        assert (a.agent, a.opponent) == (b.agent, b.opponent)
        assert (a.pair_scores == b.pair_scores).all() and (a.lengths == b.lengths).all()
    args = ["rule", "--opponents", "random", "--pairs", "6", "--seed", "2", "--no-progress", "--json"]
    assert evaluate_main([*args, str(tmp_path / "local.json"), "--workers", "2"]) == 0
    assert evaluate_main([*args, str(tmp_path / "ray.json"), "--address", ray_session]) == 0
    assert (tmp_path / "local.json").read_text() == (tmp_path / "ray.json").read_text()


def test_evaluate_address_without_ray_says_what_to_install(monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]):
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *rest: None if name == "ray" else real_find_spec(name, *rest))
    with pytest.raises(SystemExit) as exited:
        evaluate_main(["random", "--opponents", "rule", "--pairs", "1", "--address", "local"])
    assert exited.value.code == 2 and "pip install 'uno-rl[tune]'" in capsys.readouterr().err


# ------------------------------------------------------------------------------------ label shards on Ray
def test_ray_labels_equal_the_local_pool(ray_session: str, tmp_path: Path):
    job = LabelJob(games=4, shard_games=2, seed=1, generation=1, belief="none", base="rule", search=SearchLabels(20))
    with Workers(2) as local:
        made_here, _ = labelling.run(job, tmp_path / "local", local, progress=False)
    with Workers(address=ray_session) as cluster:  # joins the running session, and leaves it running
        made_on_ray, _ = labelling.run(job, tmp_path / "ray", cluster, progress=False)
    assert ray.is_initialized()
    for a, b in zip(made_here, made_on_ray, strict=True):
        assert np.array_equal(a, b, equal_nan=True)
    written = [sorted(p.name for p in (tmp_path / where).iterdir()) for where in ("local", "ray")]
    assert written[0] == written[1]
