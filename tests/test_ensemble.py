"""agents.ensemble: several checkpoints merged into one network whose logits are the sum of theirs."""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from sb3_contrib import MaskablePPO

from agents.afterstate import AfterstatePolicy
from agents.ensemble import main, merge
from agents.ppo import PPOPolicy, read_settings, save_model
from uno_env.env import UnoEnv


def _checkpoint(tmp_path: Path, seed: int, net_arch: list[int], belief: str = "none") -> Path:
    model = MaskablePPO("MlpPolicy", UnoEnv(belief=belief), seed=seed, device="cpu",
                        policy_kwargs={"net_arch": net_arch, "activation_fn": torch.nn.Tanh})
    return save_model(model, tmp_path / f"member-{seed}.zip", {"belief": belief, "config": "test", "steps": 0})


def _heads(policy, observations: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    with torch.no_grad():
        features = policy.extract_features(observations)
        return (policy.action_net(policy.mlp_extractor.forward_actor(features)),
                policy.value_net(policy.mlp_extractor.forward_critic(features)))


def test_the_merged_network_sums_the_members_logits_and_averages_their_values(tmp_path: Path):
    paths = [_checkpoint(tmp_path, seed, [16, 8]) for seed in (1, 2, 3)]
    merged = tmp_path / "merged.zip"
    main([str(merged), *map(str, paths)])
    network = PPOPolicy.load(merged).network
    assert [layer.out_features for layer in network.mlp_extractor.policy_net if hasattr(layer, "out_features")] \
        == [48, 24]
    observations = torch.from_numpy(np.stack([UnoEnv().observation_space.sample() for _ in range(32)]))
    members = [_heads(PPOPolicy.load(path).network, observations) for path in paths]
    logits, values = _heads(network, observations)
    assert torch.allclose(logits, sum(member[0] for member in members), atol=1e-5)
    assert torch.allclose(values, sum(member[1] for member in members) / 3, atol=1e-5)
    assert read_settings(merged)["belief"] == "none"


def test_members_that_do_not_fit_together_are_refused(tmp_path: Path):
    with pytest.raises(ValueError, match="belief"):
        merge([_checkpoint(tmp_path, 1, [8]), _checkpoint(tmp_path, 2, [8], belief="counting")])
    with pytest.raises(ValueError, match="hidden layers"):
        merge([_checkpoint(tmp_path, 3, [8]), _checkpoint(tmp_path, 4, [8, 8])])


def test_members_with_other_activations_are_refused(tmp_path: Path):
    relu = MaskablePPO("MlpPolicy", UnoEnv(), seed=6, device="cpu",
                       policy_kwargs={"net_arch": [8], "activation_fn": torch.nn.ReLU})
    path = save_model(relu, tmp_path / "relu.zip", {"belief": "none", "config": "test", "steps": 0})
    with pytest.raises(ValueError, match="activation"):
        merge([_checkpoint(tmp_path, 5, [8]), path])


def test_the_merged_file_is_deflated_and_loads_the_same(tmp_path: Path):
    paths = [_checkpoint(tmp_path, seed, [8]) for seed in (1, 2)]
    merged = tmp_path / "merged.zip"
    main([str(merged), *map(str, paths)])
    with zipfile.ZipFile(merged) as archive:
        assert {info.compress_type for info in archive.infolist()} == {zipfile.ZIP_DEFLATED}
    model, _ = merge(paths)
    loaded = PPOPolicy.load(merged).network.state_dict()
    assert all(torch.equal(loaded[key], value) for key, value in model.policy.state_dict().items() if key in loaded)


def test_the_members_biases_are_kept(tmp_path: Path):
    # SB3 starts every bias at zero, so the members are given random biases first: a merge that dropped them
    # would otherwise still sum the logits.
    paths = []
    for seed in (1, 2):
        model = MaskablePPO("MlpPolicy", UnoEnv(), seed=seed, device="cpu", policy_kwargs={"net_arch": [8, 4]})
        generator = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for name, parameter in model.policy.named_parameters():
                if name.endswith("bias"):
                    parameter.copy_(torch.randn(parameter.shape, generator=generator))
        paths.append(save_model(model, tmp_path / f"biased-{seed}.zip", {"belief": "none", "config": "test",
                                                                          "steps": 0}))
    model, _ = merge(paths)
    observations = torch.from_numpy(np.stack([UnoEnv().observation_space.sample() for _ in range(16)]))
    members = [_heads(PPOPolicy.load(path).network, observations) for path in paths]
    logits, values = _heads(model.policy, observations)
    assert torch.allclose(logits, members[0][0] + members[1][0], atol=1e-5)
    assert torch.allclose(values, (members[0][1] + members[1][1]) / 2, atol=1e-5)


def _afterstate_checkpoint(tmp_path: Path, seed: int) -> Path:
    model = MaskablePPO(AfterstatePolicy, UnoEnv(), seed=seed, device="cpu",
                        policy_kwargs={"head_arch": [8, 4], "net_arch": [6]})
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in model.policy.named_parameters():
            if name.endswith("bias"):  # see test_the_members_biases_are_kept
                parameter.copy_(torch.randn(parameter.shape, generator=generator))
    return save_model(model, tmp_path / f"afterstate-{seed}.zip", {"belief": "none", "config": "test", "steps": 0})


def test_afterstate_members_merge_into_an_afterstate_network_that_sums_their_scores(tmp_path: Path):
    paths = [_afterstate_checkpoint(tmp_path, seed) for seed in (1, 2, 3)]
    model, _ = merge(paths)
    assert isinstance(model.policy, AfterstatePolicy) and model.policy.head_arch == [24, 12]
    observations = torch.from_numpy(np.stack([UnoEnv().observation_space.sample() for _ in range(32)]))
    members = [_heads(PPOPolicy.load(path).network, observations) for path in paths]
    logits, values = _heads(model.policy, observations)
    assert (logits != 0).any()
    assert torch.allclose(logits, sum(member[0] for member in members), atol=1e-5)
    assert torch.allclose(values, sum(member[1] for member in members) / 3, atol=1e-5)
    with pytest.raises(ValueError, match="afterstate"):
        merge([paths[0], _checkpoint(tmp_path, 4, [8, 4])])
