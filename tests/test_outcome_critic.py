"""The critic refitted on game outcomes (train/training/outcome_critic.py) and its place in a generation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from sb3_contrib import MaskablePPO

from agents.ppo import load_network
from train.config import ConfigError, parse_config
from train.training import outcome_critic
from train.training.outcome_critic import fit_critic_on_outcomes
from train.training.pretrain import improve
from uno_env.env import UnoEnv


def small_network(seed: int = 0, value: float = -2.0) -> MaskablePPO:
    """A 16-unit network whose critic says ``value`` everywhere (its head's weights zeroed): far from any outcome."""
    model = MaskablePPO("MlpPolicy", UnoEnv(), seed=seed, device="cpu", policy_kwargs={"net_arch": [16]})
    with torch.no_grad():
        model.policy.value_net.weight.zero_()
        model.policy.value_net.bias.fill_(value)
    return model


def state(module: torch.nn.Module) -> list[np.ndarray]:
    return [t.detach().numpy().copy() for t in module.state_dict().values()]


def test_the_critic_learns_the_outcomes_and_the_actor_is_untouched():
    model = small_network()
    policy = model.policy
    actor_before = state(policy.mlp_extractor.policy_net) + state(policy.action_net)
    metrics = fit_critic_on_outcomes(policy, "none", games=300, seed=3, learning_rate=1e-2, batch_size=64)
    # a critic saying -2 misses every outcome in [-1, 1] by at least 1; after the fit it is near their spread
    assert metrics["critic_outcome_error_before"] >= 1.0
    assert metrics["critic_outcome_error_after"] < 1.0
    assert metrics["critic_outcome_positions"] > 285 * 5  # every decision of the 285 games not held out
    actor_after = state(policy.mlp_extractor.policy_net) + state(policy.action_net)
    assert all(np.array_equal(a, b) for a, b in zip(actor_before, actor_after, strict=True))


def test_the_same_seed_gives_the_same_critic_and_another_seed_another():
    critics = []
    for seed in (5, 5, 6):
        policy = small_network().policy
        fit_critic_on_outcomes(policy, "none", games=40, seed=seed, learning_rate=1e-3, batch_size=64)
        critics.append(state(policy.mlp_extractor.value_net) + state(policy.value_net))
    assert all(np.array_equal(a, b) for a, b in zip(critics[0], critics[1], strict=True))
    assert not all(np.array_equal(a, b) for a, b in zip(critics[0], critics[2], strict=True))


def test_a_counting_network_plays_with_its_features():
    model = MaskablePPO("MlpPolicy", UnoEnv(belief="counting"), seed=0, device="cpu", policy_kwargs={"net_arch": [8]})
    metrics = fit_critic_on_outcomes(model.policy, "counting", games=10, seed=0, learning_rate=1e-3)
    assert metrics["critic_outcome_positions"] > 0


@pytest.mark.parametrize("games", [0, -3])
def test_no_games_is_refused(games: int):
    with pytest.raises(ValueError, match="games must be at least 1"):
        fit_critic_on_outcomes(small_network().policy, "none", games, seed=0, learning_rate=1e-3)


@pytest.mark.parametrize(("changes", "named"), [
    ({"pretrain": {"teacher": "rule", "labels": "moves", "critic_games": 10}}, "pretrain.critic_games is for labels"),
    ({"env": {"belief": "particles"}, "pretrain": {"teacher": "rule", "labels": "search-values", "critic_games": 10}},
     "pretrain.critic_games plays the native vector env's games"),
])
def test_settings_it_cannot_serve_are_refused_by_name(changes: dict, named: str):
    with pytest.raises(ConfigError, match=named):
        parse_config({"total_timesteps": 0, **changes})


def test_each_generation_saves_the_network_with_its_refitted_critic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    config = parse_config({"total_timesteps": 0, "policy": {"net_arch": [16]}, "eval": {"workers": 1},
                           "pretrain": {"teacher": "random", "labels": "search-values", "games": 4, "shard_games": 2,
                                        "rounds": 2, "round_net_arch": [8], "search_simulations": 10, "epochs": 1,
                                        "batch_size": 64, "critic_games": 12}})
    refitted: list[tuple[str, list[np.ndarray]]] = []  # the belief asked for, the critic after each refit
    real = outcome_critic.fit_critic_on_outcomes

    def recorded(policy, belief, games, *args, **kwargs):
        metrics = real(policy, belief, games, *args, **kwargs)
        refitted.append((belief, state(policy.mlp_extractor.value_net) + state(policy.value_net)))
        return metrics

    monkeypatch.setattr(outcome_critic, "fit_critic_on_outcomes", recorded)
    logged: dict[int, dict[str, float]] = {}
    model = MaskablePPO("MlpPolicy", UnoEnv(), device="cpu", policy_kwargs={"net_arch": [16]})
    improve(model, config, seed=0, workdir=tmp_path, log=logged.__setitem__)
    assert [belief for belief, _ in refitted] == ["none", "none"]
    for round_, (_, critic) in zip((1, 2), refitted, strict=True):
        network = load_network(tmp_path / f"round_{round_}.zip")
        saved = state(network.mlp_extractor.value_net) + state(network.value_net)
        assert all(np.array_equal(a, b) for a, b in zip(critic, saved, strict=True))  # saved after the refit
        assert logged[round_]["critic_outcome_positions"] > 0 and "critic_outcome_error_after" in logged[round_]
