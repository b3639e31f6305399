"""Distillation in uno-train (train.training.distil): the label folders of finished generations in, the run's network
fitted on them, saved and evaluated like any run's; folders that are not labels, or labels of other features, are
refused by their distil.labels entry before anything is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from agents.afterstate import AfterstatePolicy
from agents.ppo import PPOPolicy
from train.config import ConfigError, parse_config
from train.training.labelling import LabelJob, Labels, Workers
from train.training.labelling import run as labelling_run
from train.training.search_labels import SearchLabels
from train.training.trainer import train


def labels(folder: Path, belief: str = "none") -> Labels:
    """A tiny generation of labels in ``folder``: 4 rule games, 2 shards."""
    job = LabelJob(games=4, shard_games=2, seed=3, generation=1, belief=belief, base="rule", search=SearchLabels(20))
    with Workers(1) as workers:
        made, _ = labelling_run(job, folder, workers, progress=False)
    return made


def distil_config(*folders: Path, **changes) -> dict:
    return {"name": "distil", "seed": 1, "total_timesteps": 0, "progress_bar": False,
            "policy": {"net_arch": [16], "actor": "afterstate"},
            "distil": {"labels": [str(folder) for folder in folders], "epochs": 2, "batch_size": 32},
            "eval": {"final_pairs": 2, "opponents": ["random"], "workers": 1, "belief_games": 0}, **changes}


def test_uno_train_distils_label_folders_into_the_runs_network(tmp_path: Path):
    first, second = labels(tmp_path / "a" / "generation_1"), labels(tmp_path / "b" / "generation_1")
    run = tmp_path / "run"
    train(parse_config(distil_config(tmp_path / "a" / "generation_1", tmp_path / "b" / "generation_1")), run,
          quiet=True)
    assert isinstance(PPOPolicy.load(run / "best_model.zip").network, AfterstatePolicy)
    assert [p.name for p in (run / "checkpoints").iterdir()] == ["step_000000000.zip"]
    metrics = json.loads((run / "run_info.json").read_text())["distil"]
    assert metrics["positions"] == len(first[2]) + len(second[2]) and 0 <= metrics["held_out_agreement"] <= 1
    assert json.loads((run / "final_eval.json").read_text())["results"][0]["opponent"] == "random"
    events = EventAccumulator(str(run / "tb" / "fit"), size_guidance={"scalars": 0})
    events.Reload()
    assert [e.step for e in events.Scalars("fit/actor_loss")] == [1, 2]  # one point an epoch


def test_folders_that_are_not_labels_are_refused_by_their_entry(tmp_path: Path):
    folder = tmp_path / "generation_1"
    labels(folder)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match=r"distil.labels\[1\]: .*empty is not a generation of labels"):
        train(parse_config(distil_config(folder, tmp_path / "empty")), tmp_path / "run", quiet=True)
    (folder / "shard_00001.npz").write_bytes(b"cut short")  # a shard that no longer loads
    with pytest.raises(ConfigError, match=r"distil.labels\[0\]: .*shard_00001.npz: it does not load"):
        train(parse_config(distil_config(folder)), tmp_path / "run", quiet=True)
    assert not (tmp_path / "run").exists()  # refused before anything was written


def test_labels_of_other_belief_features_are_refused(tmp_path: Path):
    labels(tmp_path / "counting", belief="counting")
    with pytest.raises(ConfigError, match=r"distil.labels\[0\]: .* channels, the run's network reads 294 \(env.belief"):
        train(parse_config(distil_config(tmp_path / "counting")), tmp_path / "run", quiet=True)
