"""How players are named and built from a spec (train.specs, train.policies, agents.shipped): the name a checkpoint
gets in tables, the file a folder stands for, and the shipped agents each built from their own folder."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from sb3_contrib import MaskablePPO

from agents.ppo import PPOPolicy, save_model
from agents.shipped import MODEL_FILE, MODELS_DIR, shipped_names, shipped_policies
from train.policies import resolve_policy
from train.specs import checkpoint_path, label
from uno_env.env import UnoEnv
from uno_env.policy import make_policy


@pytest.mark.parametrize(("spec", "name"), [
    ("runs/exp-3/best_model.zip", "exp-3"),  # a run's best model is the run
    ("models/search-q-none/model.zip", "search-q-none"),  # a shipped folder's model is the folder
    ("runs/exp-3/checkpoints/step_000000128.zip", "step_000000128"),  # a checkpoint is its step
    ("runs/exp-3", "exp-3"), ("runs/exp-3/", "exp-3"), ("search-q-none", "search-q-none"), ("rule", "rule"),
])
def test_a_spec_is_labelled_by_what_it_names(spec, name):
    assert label(spec) == name


def _checkpoint(path: Path, seed: int) -> Path:
    model = MaskablePPO("MlpPolicy", UnoEnv(), seed=seed, device="cpu", policy_kwargs={"net_arch": [8]})
    path.parent.mkdir(parents=True, exist_ok=True)
    return save_model(model, path, {"belief": "none", "config": "test", "steps": 0})


def test_a_folder_stands_for_its_model_before_its_best_model(tmp_path: Path):
    # A shipped folder holds model.zip; a run folder best_model.zip; a shipped copy of a run may hold both, and then
    # the shipped model is the one meant.
    both = tmp_path / "both"
    _checkpoint(both / "best_model.zip", 1)
    assert checkpoint_path(str(both)) == both / "best_model.zip"
    _checkpoint(both / "model.zip", 2)
    assert checkpoint_path(str(both)) == both / "model.zip"
    assert checkpoint_path(str(both / "best_model.zip")) == both / "best_model.zip"
    (tmp_path / "notes.txt").write_text("not a checkpoint")
    assert checkpoint_path(str(tmp_path / "notes.txt")) is None and checkpoint_path(str(tmp_path)) is None
    # the checkpoint resolved is the one played, named after its folder
    policy = resolve_policy(str(both))
    assert policy.name == "both"
    expected = PPOPolicy.load(both / "model.zip").network.state_dict()
    assert all(torch.equal(policy.network.state_dict()[key], value) for key, value in expected.items())


def _weights(policy: PPOPolicy) -> dict[str, torch.Tensor]:
    return policy.network.state_dict()


@pytest.mark.slow  # loads every shipped agent twice
def test_every_shipped_agent_is_built_from_its_own_folder():
    names = shipped_names()
    assert len(names) >= 2, f"the test needs two shipped agents in {MODELS_DIR}"
    factories = shipped_policies()
    assert sorted(factories) == names
    built = {name: factories[name]() for name in names}
    for name, policy in built.items():
        own = PPOPolicy.load(MODELS_DIR / name / MODEL_FILE)
        assert policy.name == name and policy.deterministic
        assert _weights(policy).keys() == _weights(own).keys()
        assert all(torch.equal(_weights(policy)[key], value) for key, value in _weights(own).items()), name
    # the registry's name builds the same agent, and no two shipped agents are one network
    first, second = names[:2]
    assert all(torch.equal(_weights(make_policy(first))[k], v) for k, v in _weights(built[first]).items())
    one, other = _weights(built[first]), _weights(built[second])
    assert one.keys() != other.keys() or any(one[k].shape != other[k].shape or not torch.equal(one[k], other[k])
                                             for k in one)


@pytest.mark.parametrize("deterministic", [True, False])
def test_a_shipped_agent_resolved_by_name_plays_as_asked(deterministic):
    name = shipped_names()[0]
    policy = resolve_policy(name, deterministic=deterministic)
    assert isinstance(policy, PPOPolicy) and policy.name == name and policy.deterministic is deterministic
