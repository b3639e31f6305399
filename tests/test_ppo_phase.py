"""A training run's PPO phase (train.training.ppo_phase): run after expert iteration, checkpointed and evaluated like
the run's other networks, resumed after a kill from its own last checkpoint, and refused with a message when the
config asks for what the native vector env cannot play.

The runs are tiny (a 16-unit network fitted on one generation of 20 games, a few updates of 256 steps): they check what
the trainer does with the phase, not that it learns (docs/results.md measures that).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

import train.integrations.cleanrl_ppo as cleanrl_ppo
from agents.afterstate import AfterstatePolicy
from agents.ppo import load_network, read_settings
from train.config import ConfigError, parse_config
from train.training.run_folder import read_evaluations
from train.training.trainer import TrainingInterrupted, train

PHASE_RUN: dict[str, Any] = {
    "name": "phase", "seed": 0, "total_timesteps": 0, "progress_bar": False,
    "policy": {"net_arch": [16]},
    "expert_iteration": {"start": "rule", "games": 20, "simulations": 20, "epochs": 1},
    "ppo_phase": {"steps": 2048, "num_envs": 16, "num_steps": 16, "eval_every": 2},
    "eval": {"every": 0, "pairs": 2, "final_pairs": 2, "opponents": ["random"], "workers": 1, "belief_games": 0},
}


def phase_run(**sections: dict[str, Any]) -> dict[str, Any]:
    data = copy.deepcopy(PHASE_RUN)
    for key, changes in sections.items():
        data[key] = {**data[key], **changes} if isinstance(data.get(key), dict) else changes
    return data


def weights(path: Path) -> dict[str, torch.Tensor]:
    return load_network(path).state_dict()


def same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return all(torch.equal(a[key], b[key]) for key in a)


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("phase") / "run"
    train(parse_config(phase_run()), folder, quiet=True)
    return folder


def test_the_phase_starts_from_the_fitted_network_and_its_network_becomes_the_runs(finished: Path):
    phase = finished / "ppo_phase"
    assert read_settings(phase / "latest.zip")["steps"] == 2048
    fitted = finished / "checkpoints" / "step_000000000.zip"
    after = finished / "checkpoints" / "step_000002048.zip"
    assert fitted.is_file() and after.is_file()
    assert same(weights(phase / "start.zip"), weights(fitted))  # pi_0 is expert iteration's network
    assert not same(weights(after), weights(fitted))  # PPO moved it
    assert same(weights(after), weights(phase / "latest.zip"))  # and the run's checkpoint is the phase's network
    assert read_settings(finished / "best_model.zip")["steps"] == 2048  # eval.every 0: the last network is kept
    assert (finished / "final_eval.json").is_file()


def test_an_afterstate_actor_goes_through_the_phase(tmp_path: Path):
    folder = tmp_path / "run"
    train(parse_config(phase_run(policy={"net_arch": [16], "actor": "afterstate"}, ppo_phase={"steps": 512})),
          folder, quiet=True)
    start, after = (load_network(folder / "ppo_phase" / name) for name in ("start.zip", "latest.zip"))
    assert isinstance(after, AfterstatePolicy) and after.head_arch == [16]
    assert not same(after.state_dict(), start.state_dict())
    assert same(load_network(folder / "best_model.zip").state_dict(), after.state_dict())


def test_the_phase_writes_its_curves_into_the_runs_tensorboard(finished: Path):
    events = EventAccumulator(str(finished / "tb" / "ppo_phase"), size_guidance={"scalars": 0})
    events.Reload()
    tags = set(events.Tags()["scalars"])
    assert {"losses/kl_to_start", "eval/rule", "eval/random", "charts/samples_per_second"} <= tags
    assert [event.step for event in events.Scalars("eval/rule")] == [512, 1024, 1536, 2048]


def test_with_evaluations_the_phase_competes_with_the_fitted_network_for_the_best_model(tmp_path: Path):
    folder = tmp_path / "run"
    train(parse_config(phase_run(ppo_phase={"steps": 512}, eval={"every": 1})), folder, quiet=True)
    records = read_evaluations(folder / "evaluations.jsonl")
    assert [record["step"] for record in records] == [0, 512]
    best = max(records, key=lambda record: record["mean_win_rate"])  # the first of equals stays best
    assert read_settings(folder / "best_model.zip")["steps"] == best["step"]


def test_a_run_killed_in_the_phase_resumes_it_from_its_last_checkpoint(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch):
    folder = tmp_path / "run"
    config = parse_config(phase_run())
    real = cleanrl_ppo.evaluation
    calls: list[int] = []

    def killed_at_the_second(path: Path, args: cleanrl_ppo.Args) -> dict[str, float]:
        calls.append(read_settings(path)["steps"])
        if len(calls) == 2:  # update 4 of 8: its checkpoint and state.pt are written, then the kill
            raise KeyboardInterrupt
        return real(path, args)

    monkeypatch.setattr(cleanrl_ppo, "evaluation", killed_at_the_second)
    with pytest.raises(TrainingInterrupted, match="in the PPO phase.*--resume"):
        train(config, folder, quiet=True)
    assert read_settings(folder / "ppo_phase" / "latest.zip")["steps"] == 1024
    start = weights(folder / "ppo_phase" / "start.zip")

    calls.clear()
    monkeypatch.setattr(cleanrl_ppo, "evaluation", lambda path, args: calls.append(read_settings(path)["steps"])
                        or real(path, args))
    train(config, folder, resume=True, quiet=True)
    assert calls == [1536, 2048]  # updates 5 to 8 only: nothing before the kill's checkpoint is done again
    assert read_settings(folder / "best_model.zip")["steps"] == 2048
    assert same(weights(folder / "ppo_phase" / "start.zip"), start)
    state = torch.load(folder / "ppo_phase" / "state.pt", weights_only=True)
    anchor = {key.replace("0.", "mlp_extractor.policy_net.", 1) if key.startswith("0.") else
              key.replace("1.", "action_net.", 1): value for key, value in state["reference"].items()}
    assert all(torch.equal(value, start[key]) for key, value in anchor.items())  # the KL anchor is still pi_0


@pytest.mark.parametrize(("sections", "named"), [
    ({"ppo_phase": {"steps": 512}, "total_timesteps": 1000}, "total_timesteps"),
    ({"ppo_phase": {"steps": 512}, "env": {"belief": "counting"}}, "env.belief"),
    ({"ppo_phase": {"steps": 512, "opponent": {"self": 1.0}}}, "ppo_phase.opponent.self"),
    ({"ppo_phase": {"steps": 512, "opponent": {"rule": 0.0}}}, "ppo_phase.opponent"),
    ({"ppo_phase": {"steps": 512, "opponent": {"rule": -1.0}}}, "ppo_phase.opponent.rule"),
    ({"ppo_phase": {"steps": 512, "num_envs": 3, "num_steps": 3}}, "ppo_phase.num_envs"),
    ({"ppo_phase": {"steps": -5}}, "ppo_phase.steps"),
    ({"ppo_phase": {"steps": 512, "kl_coef": -0.1}}, "ppo_phase.kl_coef"),
])
def test_a_phase_the_native_env_cannot_play_is_refused_naming_the_key(sections: dict[str, Any], named: str):
    data = phase_run(**{key: value for key, value in sections.items() if isinstance(value, dict)})
    data.update({key: value for key, value in sections.items() if not isinstance(value, dict)})
    with pytest.raises(ConfigError, match=named.replace(".", r"\.")):
        parse_config(data)
