"""Label shards (train.training.labelling) and the expert iteration that uses them: same seed, same labels, whatever
the workers and whatever stopped the run; Ctrl-C, kill -9 and damaged shards during a real ``uno-train``.

The runs are tiny: a few games labelled by a 20-simulation search, in shards of two games.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import signal
import struct
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import yaml
from uno_testlib import as_from_a_terminal

from agents.files import file_digest
from agents.ppo import load_network
from train.config import ConfigError, parse_config
from train.evaluation.matches import abandon
from train.training import labelling
from train.training.expert_iteration import run_expert_iteration
from train.training.labelling import LabelJob, Workers
from train.training.search_labels import SearchLabels
from uno_env.belief import LearnedOpponent
from uno_env.belief.learned import RULE_CANDIDATES

ROOT = Path(__file__).resolve().parents[1]
JOB = LabelJob(games=6, shard_games=2, seed=3, generation=1, belief="none", base="rule", search=SearchLabels(20))


def same_labels(a: tuple[np.ndarray, ...], b: tuple[np.ndarray, ...]) -> bool:
    return all(np.array_equal(x, y, equal_nan=True) for x, y in zip(a, b, strict=True))


def test_the_labels_depend_on_the_seed_alone_not_on_the_workers(tmp_path: Path):
    with Workers(1) as one, Workers(2) as two:
        alone, made = labelling.run(JOB, tmp_path / "one", one, progress=False)
        spread, _ = labelling.run(JOB, tmp_path / "two", two, progress=False)
    assert same_labels(alone, spread) and made == len(alone[2]) > 10
    assert sorted(p.name for p in (tmp_path / "two").iterdir()) == [
        "labels.json", "shard_00000.npz", "shard_00001.npz", "shard_00002.npz"]
    manifest = json.loads((tmp_path / "two" / "labels.json").read_text())
    assert sum(s["positions"] for s in manifest["shards"].values()) == len(alone[2])
    other, _ = labelling.run(LabelJob(**{**JOB.__dict__, "seed": 4}), tmp_path / "other", Workers(1), False)
    assert not same_labels(alone, other)


def test_a_second_run_reuses_the_shards_and_relabels_a_missing_or_damaged_one(tmp_path: Path,
                                                                             capsys: pytest.CaptureFixture[str]):
    folder = tmp_path / "generation_1"
    with Workers(2) as workers:
        first, _ = labelling.run(JOB, folder, workers, progress=False)
        again, made = labelling.run(JOB, folder, workers, progress=False)  # everything on disk: no worker starts
        assert same_labels(first, again) and made == 0
        (folder / "shard_00000.npz").unlink()
        torn = folder / "shard_00001.npz"
        torn.write_bytes(torn.read_bytes()[:200])  # a copy cut short
        (folder / ".shard_00002.123.tmp.npz").write_bytes(b"half a write")  # a kill during a write
        mended, made = labelling.run(JOB, folder, workers, progress=False)
    assert same_labels(first, mended) and 0 < made < len(first[2])
    assert (folder / "shard_00001.npz.broken").exists() and not list(folder.glob(".*tmp*"))
    assert "shard_00001.npz" in capsys.readouterr().err


def test_a_shard_of_another_job_is_set_aside_not_mixed_in(tmp_path: Path):
    folder = tmp_path / "generation_1"
    labelling.run(JOB, folder, Workers(1), progress=False)
    stranger = tmp_path / "stranger"
    labelling.run(LabelJob(**{**JOB.__dict__, "seed": 9}), stranger, Workers(1), progress=False)
    (stranger / "shard_00001.npz").replace(folder / "shard_00001.npz")
    (folder / "labels.json").unlink()  # so only the shard itself can tell
    labels, made = labelling.run(JOB, folder, Workers(1), progress=False)
    assert made > 0 and (folder / "shard_00001.npz.broken").exists()
    assert same_labels(labels, labelling.run(JOB, tmp_path / "fresh", Workers(1), progress=False)[0])


def test_a_worker_killed_mid_shard_is_replaced_and_its_shard_labelled_once(tmp_path: Path):
    # 100 shards: in a fresh clone both workers compile the kernels first, then the shards come quickly; the kill must
    # still find most of them ahead (with 20 shards, CI once saw half of them written before the first was seen).
    job = LabelJob(**{**JOB.__dict__, "games": 200})
    folder = tmp_path / "generation_1"
    killed = []

    def kill_a_worker() -> None:  # once labelling is under way, as the kernel's OOM killer would
        while not any(folder.glob("shard_*.npz")):
            time.sleep(0.01)
        # Only while shards are still being labelled: a worker killed after the last one, as the pool shuts down,
        # tests Python's pool (it can hang there), not the labelling.
        if len(list(folder.glob("shard_*.npz"))) < job.shards // 2:
            os.kill(multiprocessing.active_children()[0].pid, signal.SIGKILL)
            killed.append(True)

    killer = threading.Thread(target=kill_a_worker)
    killer.start()
    with Workers(2) as workers:
        labels, made = labelling.run(job, folder, workers, progress=False)
    killer.join()
    assert killed, "labelling ran through half its shards before the worker could be killed: make the job longer"
    reference, _ = labelling.run(job, tmp_path / "reference", Workers(2), progress=False)
    assert same_labels(labels, reference) and made == len(labels[2])
    manifest = json.loads((folder / "labels.json").read_text())["shards"]
    assert sorted(map(int, manifest)) == list(range(job.shards))


def test_a_worker_killed_while_it_sends_its_labels_is_replaced_not_waited_for(tmp_path: Path):
    # A worker killed in the middle of writing its result leaves the pool's manager thread waiting for the rest of the
    # message, so the pool never says it broke (CPython 3.11). The parent writes such half a message itself, holding
    # the pipe's lock as a worker would, and kills the workers: the generation must end, every shard labelled once.
    job = LabelJob(**{**JOB.__dict__, "games": 40})
    folder = tmp_path / "generation_1"
    workers = Workers(2)

    def jam() -> None:
        while not any(folder.glob("shard_*.npz")):
            time.sleep(0.01)
        results = workers._executor._result_queue
        with results._wlock:
            os.write(results._writer.fileno(), struct.pack("!i", 1 << 20) + b"\0")  # 1 byte of a 1 MiB message
            for child in multiprocessing.active_children():
                os.kill(child.pid, signal.SIGKILL)

    outcome = {}
    threading.Thread(target=jam, daemon=True).start()
    runner = threading.Thread(target=lambda: outcome.update(labels=labelling.run(job, folder, workers, False)),
                              daemon=True)
    runner.start()
    runner.join(timeout=120)  # a bound, not a speed claim: the generation takes seconds
    hung = runner.is_alive()
    if hung:  # let the stuck manager thread end, so that this process can
        abandon(workers._executor)
    workers.close(cancel=True)
    assert not hung, "the generation waited for ever on a pool whose worker died mid-message"
    labels, made = outcome["labels"]
    reference, _ = labelling.run(job, tmp_path / "reference", Workers(2), progress=False)
    assert same_labels(labels, reference) and made == len(labels[2])
    assert sorted(map(int, json.loads((folder / "labels.json").read_text())["shards"])) == list(range(job.shards))


@pytest.mark.parametrize(("change", "named"), [
    ({"search": SearchLabels(40)}, "expert_iteration.simulations"),
    ({"search": SearchLabels(20, "particles")}, "expert_iteration.belief"),
    ({"games": 8}, "expert_iteration.games"),
    ({"shard_games": 3}, "expert_iteration.shard_games"),
    ({"belief": "counting"}, "env.belief"),
    ({"seed": 5}, "seed"),
    ({"opponent": (("rule", 1.0), ("random", 1.0))}, "expert_iteration.opponent"),
])
def test_labels_made_with_other_settings_are_refused_by_name(change: dict, named: str, tmp_path: Path):
    labelling.run(JOB, tmp_path, Workers(1), progress=False)
    with pytest.raises(ConfigError, match=f"made with {named} = "):
        labelling.run(LabelJob(**{**JOB.__dict__, **change}), tmp_path, Workers(1), progress=False)


def test_labels_of_a_search_modelling_its_opponent_never_mix_with_labels_of_rule_rollouts(tmp_path: Path):
    rule = LabelJob(**{**JOB.__dict__, "games": 2, "search": SearchLabels(20, "learned")})
    modelled = LabelJob(**{**rule.__dict__, "search": SearchLabels(20, "learned", opponent_rollout="modelled")})
    # The default is not recorded, so labels made before the setting existed keep their settings and resume.
    assert "expert_iteration.opponent_rollout" not in rule.settings()
    labelling.run(rule, tmp_path, Workers(1), progress=False)
    with pytest.raises(ConfigError, match="made with expert_iteration.opponent_rollout = None, this run asks for "
                                          "'modelled'"):
        labelling.run(modelled, tmp_path, Workers(1), progress=False)
    with pytest.raises(ValueError, match="other settings"):  # the shard itself tells, without its manifest
        labelling._read_shard(labelling.shard_path(tmp_path, 0), 0, json.dumps(modelled.settings(), sort_keys=True))


def test_the_labelled_games_are_played_against_the_opponent_mix(tmp_path: Path):
    with Workers(2) as workers:
        def labels(**change) -> tuple[np.ndarray, ...]:
            job = LabelJob(**{**JOB.__dict__, **change})
            return labelling.run(job, tmp_path / str(len(list(tmp_path.iterdir()))), workers, progress=False)[0]
        against_rule = labels()
        assert same_labels(against_rule, labels(opponent=(("self", 1.0),), pool=("rule",)))  # the pool plays
        assert not same_labels(against_rule, labels(opponent=(("random", 1.0),)))
        assert not same_labels(against_rule, labels(opponent=(("self", 1.0),), pool=("random",)))


# ------------------------------------------------------------------------------------ expert iteration in uno-train
TINY_RUN = {
    "name": "tiny-labels", "seed": 0, "total_timesteps": 0, "progress_bar": False,
    "env": {"belief": "none"}, "policy": {"net_arch": [16]},
    "expert_iteration": {"start": "random", "games": 16, "shard_games": 2, "generations": 2,
                         "generation_net_arch": [8], "simulations": 20, "epochs": 2, "batch_size": 64},
    "eval": {"every": 0, "final_pairs": 0, "workers": 2, "belief_games": 0},
}


def start(args: list[str], **changes) -> subprocess.Popen:
    """``uno-train`` in a process group of its own (so a signal can reach it and its workers, as Ctrl-C does), with
    Python's fault handler on, so that :func:`ended_within` can show where a stuck one is."""
    return subprocess.Popen([sys.executable, "-m", "train", *args], cwd=ROOT, start_new_session=True,
                            preexec_fn=as_from_a_terminal, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONFAULTHANDLER="1"), **changes)


def ended_within(process: subprocess.Popen, seconds: float) -> int:
    """The process's exit status once it ends; if it is still running after ``seconds`` (a bound, not a speed claim),
    fail with every thread's stack, which SIGABRT makes the fault handler print."""
    try:
        return process.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        os.kill(process.pid, signal.SIGABRT)
        process.wait()
        pytest.fail(f"still running {seconds:g} s later; its stacks and output:\n{process.stderr.read()}")


def config_file(folder: Path, **settings) -> Path:
    data = json.loads(json.dumps(TINY_RUN))
    data["expert_iteration"].update(settings)
    path = folder / "tiny.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def all_labels(run: Path) -> list[tuple[np.ndarray, ...]]:
    """Each generation's labels as its shards hold them, in order."""
    return [shards(folder) for folder in sorted((run / "expert_iteration").glob("generation_*/"))]


def shards(folder: Path) -> tuple[np.ndarray, ...]:
    parts = []
    for path in sorted(folder.glob("shard_*.npz")):
        with np.load(path) as data:
            parts.append((data["observations"], data["values"], data["moves"]))
    return tuple(np.concatenate(arrays) for arrays in zip(*parts, strict=True))


def weights(path: Path) -> list[np.ndarray]:
    return [t.detach().numpy().copy() for t in load_network(path).state_dict().values()]


def group_gone(pgid: int, within: float = 10.0) -> bool:
    """Whether every process of the group has ended (waiting up to ``within`` seconds)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


def labelling_run(config: Path, run: Path) -> subprocess.Popen:
    """``uno-train config --run-dir run``, once its first label shard is on disk (labelling has begun)."""
    process = start([str(config), "--run-dir", str(run)])
    deadline = time.monotonic() + 120
    while not list((run / "expert_iteration" / "generation_1").glob("shard_*.npz")):
        assert time.monotonic() < deadline and process.poll() is None, process.stderr.read()
        time.sleep(0.2)
    return process


def finished_run(tmp_path: Path) -> Path:
    """A finished one-generation tiny run's folder."""
    run = tmp_path / "run"
    done = start([str(config_file(tmp_path, generations=1)), "--run-dir", str(run)])
    assert done.wait(timeout=240) == 0, done.stderr.read()
    return run


@pytest.mark.slow  # real uno-train processes
def test_kill_9_at_random_moments_then_resume_gives_the_same_labels_and_model(tmp_path: Path):
    config = config_file(tmp_path)
    whole = tmp_path / "whole"
    done = start([str(config), "--run-dir", str(whole)])
    assert done.wait(timeout=240) == 0, done.stderr.read()
    killed = tmp_path / "killed"
    moments = random.Random(7)
    process = start([str(config), "--run-dir", str(killed)])
    for _ in range(3):  # kill -9 of the whole group, then resume, three times; then let it finish
        try:
            process.wait(timeout=moments.uniform(3.0, 9.0))
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        assert group_gone(process.pid)
        began = (killed / "config.yaml").exists()  # else killed before the run began: its first command again
        process = start(["--resume", str(killed)] if began else [str(config), "--run-dir", str(killed)])
    assert process.wait(timeout=240) == 0, process.stderr.read()
    for a, b in zip(all_labels(whole), all_labels(killed), strict=True):
        assert same_labels(a, b)
    assert len(all_labels(whole)) == 2
    for a, b in zip(weights(whole / "checkpoints" / "step_000000000.zip"),
                    weights(killed / "checkpoints" / "step_000000000.zip"), strict=True):
        assert np.array_equal(a, b)


@pytest.mark.slow  # real uno-train processes
def test_ctrl_c_while_labelling_stops_within_seconds_keeps_the_shards_and_leaves_no_process(tmp_path: Path):
    config = config_file(tmp_path, games=400, generations=1, simulations=200)
    run = tmp_path / "run"
    process = labelling_run(config, run)
    os.killpg(process.pid, signal.SIGINT)  # what a terminal's Ctrl-C sends: the whole group
    sent = time.monotonic()
    assert process.wait(timeout=10) == 130
    assert time.monotonic() - sent < 10
    err = process.stderr.read()
    assert f"uno-train --resume {run}" in err and "label shards are kept" in err
    assert group_gone(process.pid)
    kept = list((run / "expert_iteration" / "generation_1").glob("shard_*.npz"))
    manifest = json.loads((run / "expert_iteration" / "generation_1" / "labels.json").read_text())
    assert kept and len(manifest["shards"]) >= len(kept)


@pytest.mark.slow  # real uno-train processes
def test_sigterm_while_labelling_stops_the_same_way(tmp_path: Path):
    config = config_file(tmp_path, games=400, generations=1, simulations=200)
    run = tmp_path / "run"
    process = labelling_run(config, run)
    os.kill(process.pid, signal.SIGTERM)  # the main process alone, as a job scheduler does
    # In the full suite beside a Ray cluster on the other core, 10 s was once too short; 60 s once too, in a fresh
    # clone's suite with two more busy processes on the two cores.
    assert ended_within(process, 120) == 130
    assert "--resume" in process.stderr.read() and group_gone(process.pid)


@pytest.mark.slow  # real uno-train processes
def test_resume_with_another_labelling_setting_is_refused_by_name(tmp_path: Path):
    config = config_file(tmp_path, games=400, generations=1)  # 200 shards: the kill comes while labelling
    run = tmp_path / "run"
    process = labelling_run(config, run)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    assert not (run / "checkpoints").is_dir() or not any((run / "checkpoints").iterdir())
    before = (run / "config.yaml").read_text()
    refused = start(["--resume", str(run), "--set", "expert_iteration.simulations=30"])
    assert refused.wait(timeout=120) == 2
    assert "made with expert_iteration.simulations = 20" in refused.stderr.read()
    assert (run / "config.yaml").read_text() == before  # the refused command changed nothing


@pytest.mark.slow  # real uno-train processes
def test_resume_past_expert_iteration_refuses_a_setting_it_could_no_longer_use(tmp_path: Path):
    run = finished_run(tmp_path)
    before = (run / "config.yaml").read_text()
    refused = start(["--resume", str(run), "--set", "expert_iteration.simulations=30"])
    assert refused.wait(timeout=120) == 2
    err = refused.stderr.read()
    assert "expert_iteration.simulations = 30" in err and "ran with expert_iteration.simulations = 20" in err
    assert (run / "config.yaml").read_text() == before
    same = start(["--resume", str(run), "--set", "expert_iteration.simulations=20"])  # unchanged: allowed
    assert same.wait(timeout=120) == 0, same.stderr.read()


@pytest.mark.slow  # real uno-train processes
def test_more_generations_on_a_finished_run_equal_a_run_that_had_them_from_the_start_even_if_killed(tmp_path: Path):
    config = config_file(tmp_path, generation_net_arch=None)  # every generation refits the run's network
    whole = tmp_path / "whole"
    done = start([str(config), "--run-dir", str(whole)])  # two generations at once
    assert done.wait(timeout=240) == 0, done.stderr.read()
    grown = tmp_path / "grown"
    first = start([str(config), "--run-dir", str(grown), "--set", "expert_iteration.generations=1"])
    assert first.wait(timeout=240) == 0, first.stderr.read()
    one = weights(grown / "best_model.zip")
    finished = start(["--resume", str(grown)])
    assert finished.wait(timeout=120) == 0
    assert "--set expert_iteration.generations=N with N > 1" in finished.stdout.read()  # what to ask for more
    more = start(["--resume", str(grown), "--set", "expert_iteration.generations=2"])
    deadline = time.monotonic() + 120
    while not list((grown / "expert_iteration" / "generation_2").glob("shard_*.npz")):
        assert time.monotonic() < deadline and more.poll() is None, more.stderr.read()
        time.sleep(0.2)
    os.killpg(more.pid, signal.SIGKILL)  # mid-generation: the resume needs no --set, the folder says what was asked
    more.wait()
    resumed = start(["--resume", str(grown)])
    assert resumed.wait(timeout=240) == 0, resumed.stderr.read()
    labels = all_labels(grown)
    assert len(labels) == 2
    for a, b in zip(all_labels(whole), labels, strict=True):
        assert same_labels(a, b)
    for path in ("checkpoints/step_000000000.zip", "best_model.zip"):
        for a, b in zip(weights(whole / path), weights(grown / path), strict=True):
            assert np.array_equal(a, b)
    assert any(not np.array_equal(a, b) for a, b in zip(one, weights(grown / "best_model.zip"), strict=True))
    for a, b in zip(one, weights(grown / "expert_iteration" / "generation_1.zip"), strict=True):  # generation 1 is kept
        assert np.array_equal(a, b)


@pytest.mark.slow  # a real uno-train process
def test_self_in_the_opponent_mix_plays_the_start_and_every_generation_kept(tmp_path: Path):
    run = tmp_path / "run"
    config = config_file(tmp_path, opponent={"self": 1.0, "rule": 1.0}, generations=3)
    done = start([str(config), "--run-dir", str(run)])
    assert done.wait(timeout=240) == 0, done.stderr.read()
    pools = [json.loads((run / "expert_iteration" / f"generation_{k}" / "labels.json").read_text())["settings"]
             ["self-play pool"]
             for k in (1, 2, 3)]
    generations = [file_digest(run / "expert_iteration" / f"generation_{k}.zip") for k in (1, 2)]
    assert pools == [["random"], ["random", generations[0]], ["random", *generations]]


def test_an_opponent_that_needs_belief_features_is_refused_by_name_before_any_label(tmp_path: Path):
    """The labelled games give their opponent no belief features, so a checkpoint fitted with them cannot be one."""
    data = json.loads(json.dumps(TINY_RUN))
    data["expert_iteration"]["opponent"] = {"rule": 1.0, "search-q-particles": 1.0}
    with pytest.raises(ConfigError, match=r"expert_iteration\.opponent\.search-q-particles: .* belief 'particles'"):
        run_expert_iteration(None, parse_config(data), seed=0, workdir=tmp_path)
    assert not any(tmp_path.iterdir())


@pytest.mark.slow  # real uno-train processes
def test_more_generations_with_another_setting_are_refused_by_name_and_change_nothing(tmp_path: Path):
    run = finished_run(tmp_path)
    before = {path: path.read_bytes() for path in run.rglob("*") if path.is_file()}
    refused = start(["--resume", str(run), "--set", "expert_iteration.generations=2", "--set",
                     "expert_iteration.epochs=3"])
    assert refused.wait(timeout=120) == 2
    err = refused.stderr.read()
    assert "cannot add generations" in err and "expert_iteration.epochs = 3" in err
    assert "ran with expert_iteration.epochs = 2" in err
    assert {path: path.read_bytes() for path in run.rglob("*") if path.is_file()} == before


def test_close_terminates_workers_whose_pool_does_not_shut_down(monkeypatch: pytest.MonkeyPatch):
    """A pool that never finishes shutting down (here: a task that would run an hour; in CPython 3.11 also a
    worker killed as the pool closes) is ended by its workers' termination after the bounded wait, not waited for."""
    monkeypatch.setattr(labelling, "CLOSE_TIMEOUT", 1.0)
    workers = Workers(1)
    workers.get().submit(time.sleep, 3600)
    time.sleep(0.5)  # the worker has taken the task
    started = time.monotonic()
    workers.close()
    assert time.monotonic() - started < 30
    assert not multiprocessing.active_children()


class _Threads:
    """Workers that label in a thread of this process, so a test can replace what a shard's labelling does."""

    def __init__(self) -> None:
        self.pool = ThreadPoolExecutor(1)

    def get(self) -> ThreadPoolExecutor:
        return self.pool

    def close(self, cancel: bool = False) -> None:
        self.pool.shutdown(cancel_futures=cancel)


def test_a_ctrl_c_as_a_shard_is_saved_leaves_the_shard_in_the_manifest(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch):
    """Ctrl-C arriving the moment a shard's file is written still finds the shard recorded in ``labels.json``
    before the run stops (the end-to-end Ctrl-C test above hit that moment now and then)."""
    n = 3
    labels = (np.zeros((n, 8), np.float32), np.zeros((n, 61), np.float32), np.zeros(n, np.int64))
    monkeypatch.setattr(labelling, "label_shard", lambda job, shard: labels)
    write = labelling._write_shard

    def write_then_ctrl_c(*args: object) -> None:
        write(*args)
        os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(labelling, "_write_shard", write_then_ctrl_c)
    # pytest-xdist's workers ignore SIGINT; a terminal's process does not.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            labelling.run(LabelJob(4, 1, 0, 1, "none", "rule", SearchLabels(20)), tmp_path, _Threads(), progress=False)
    finally:
        signal.signal(signal.SIGINT, previous)
    on_disk = {path.name for path in tmp_path.glob("shard_*.npz")}
    recorded = {labelling.shard_path(tmp_path, int(shard)).name
                for shard in json.loads((tmp_path / "labels.json").read_text())["shards"]}
    assert on_disk and recorded == on_disk


def test_labelling_off_a_terminal_prints_plain_progress_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]):
    """Without a terminal (a log file, a pipe: pytest's capture here) the progress is plain lines on stdout, not a
    bar that draws nothing: the generation, games, positions and positions a second."""
    monkeypatch.setattr(labelling, "PROGRESS_SECONDS", 0.0)  # a line at every chance
    with Workers(1) as workers:
        labels, _ = labelling.run(JOB, tmp_path / "generation_1", workers, progress=True)
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("labelling generation 1: ")]
    assert lines and f"6/6 games, {len(labels[2]):,} positions" in lines[-1] and lines[-1].endswith(" s")
    assert "positions/s" in lines[-1]
    with Workers(1) as workers:
        labelling.run(JOB, tmp_path / "quiet", workers, progress=False)
    assert "labelling generation" not in capsys.readouterr().out


def test_labels_of_a_learned_belief_name_its_candidates_and_refuse_other_ones(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch):
    """The learned model's defaults changed once (other candidates, another weighing): labels made with other ones
    are not resumed onto, and labels of another belief do not record it."""
    learned = LabelJob(**{**JOB.__dict__, "games": 2, "search": SearchLabels(20, "learned")})
    assert learned.settings()["learned opponent model"] == repr(LearnedOpponent())
    assert "learned opponent model" not in JOB.settings()
    labelling.run(learned, tmp_path, Workers(1), progress=False)
    monkeypatch.setattr(labelling, "LearnedOpponent", lambda: LearnedOpponent(RULE_CANDIDATES, proposal="prior"))
    with pytest.raises(ConfigError, match="made with learned opponent model = "):
        labelling.run(learned, tmp_path, Workers(1), progress=False)
