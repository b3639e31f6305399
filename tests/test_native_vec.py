"""The SB3 adapter of the native vector env (train/training/native_vec.py) and ``vec_env: native`` training."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported
from stable_baselines3.common.vec_env import VecMonitor
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from train.config import ConfigError, parse_config
from train.training.native_vec import NativeVecEnv
from train.training.trainer import build_vec_env, train
from uno_env.vector import UnoVectorEnv


def test_the_adapter_speaks_sb3s_vecenv():
    mix = {"random": 1, "rule": 1}
    venv = NativeVecEnv(6, opponent=mix, belief="counting", max_episode_steps=5)
    venv.seed(4)
    obs = venv.reset()
    assert obs.shape == (6, 354)
    assert np.array_equal(obs, UnoVectorEnv(6, opponent=mix, belief="counting").reset(seed=4)[0])
    assert is_masking_supported(venv)
    masks = get_action_masks(venv)
    assert masks.dtype == np.bool_ and masks.shape == (6, 61) and masks.any(axis=1).all()
    rng = np.random.default_rng(0)
    ended = 0
    for _ in range(12):
        venv.step_async((rng.random(masks.shape) * masks).argmax(axis=1))
        obs, rewards, dones, infos = venv.step_wait()
        assert rewards.dtype == np.float32 and dones.dtype == np.bool_ and len(infos) == 6
        for i in np.flatnonzero(dones):
            info = infos[i]
            assert info["terminal_observation"].shape == (354,) and info["opponent"] in ("random", "rule")
            # Same-step autoreset: the observation returned is the next game's (7 cards in hand).
            assert obs[i, :54].sum() == 7
            if info["TimeLimit.truncated"]:
                assert "winner" not in info and rewards[i] == 0
            else:
                assert info["winner"] == {1.0: "agent", -1.0: "opponent", 0.0: "draw"}[float(rewards[i])]
                assert info["is_success"] == (rewards[i] > 0)
            ended += 1
        assert not any(infos[i] for i in np.flatnonzero(~dones))
        masks = get_action_masks(venv)
    assert ended >= 6  # the 5-step limit ends every game at least once
    assert venv.env_method("action_masks", indices=[1, 3])[1].tolist() == masks[3].tolist()
    venv.set_opponent_mix({"rule": 1.0, "self": 0.0}, [])
    assert venv.env.opponent_mix == {"rule": 1.0}
    with pytest.raises(ValueError, match="pool"):
        venv.set_opponent_mix({"rule": 1.0}, ["checkpoint.zip"])


def test_finished_games_name_their_winner_as_uno_env_does():
    """Games played to their end: each names the winner its reward says, and wins and losses both occur."""
    venv = NativeVecEnv(8, opponent="rule")
    venv.seed(11)
    venv.reset()
    rng = np.random.default_rng(1)
    winners: dict[str, int] = {}
    while sum(winners.values()) < 40:
        masks = get_action_masks(venv)
        venv.step_async((rng.random(masks.shape) * masks).argmax(axis=1))
        _, rewards, dones, infos = venv.step_wait()
        for i in np.flatnonzero(dones):
            expected = {1.0: "agent", -1.0: "opponent", 0.0: "draw"}[float(rewards[i])]
            assert infos[i]["winner"] == expected and infos[i]["is_success"] == (expected == "agent")
            winners[expected] = winners.get(expected, 0) + 1
    assert winners.get("agent", 0) > 0 and winners.get("opponent", 0) > 0


def test_maskable_ppo_learns_on_the_adapter():
    """The critic learns to predict game outcomes from the adapter's transitions (explained variance well above
    0, which scrambled rewards, observations or episode ends would prevent), and the policy moves; every sampled
    action is legal (the adapter raises on an illegal one)."""
    torch.set_num_threads(1)
    venv = VecMonitor(NativeVecEnv(64, "rule"))
    venv.seed(0)
    model = MaskablePPO("MlpPolicy", venv, n_steps=32, batch_size=512, n_epochs=4, learning_rate=1e-3, seed=0,
                        device="cpu", policy_kwargs={"net_arch": [64]})
    before = [p.detach().clone() for p in model.policy.action_net.parameters()]
    model.learn(3 * 8192)
    logged = model.logger.name_to_value
    assert logged["train/explained_variance"] > 0.1 and 0 < logged["train/approx_kl"] < 0.1
    assert any(not torch.equal(a, b) for a, b in zip(before, model.policy.action_net.parameters(), strict=True))


TINY = {"name": "tiny", "seed": 0, "total_timesteps": 256, "n_envs": 4, "vec_env": "native",
        "ppo": {"n_steps": 64, "batch_size": 64}, "opponents": [{"mix": {"random": 1, "rule": 1}}]}


def test_the_native_config_builds_the_adapter():
    venv = build_vec_env(parse_config(TINY), seed=3)
    assert isinstance(venv, VecMonitor) and isinstance(venv.venv, NativeVecEnv) and venv.num_envs == 4
    assert venv.venv.env.opponent_mix == {"random": 1.0, "rule": 1.0}
    assert np.array_equal(venv.reset(), UnoVectorEnv(4, opponent={"random": 1, "rule": 1}).reset(seed=3)[0])


@pytest.mark.parametrize(("changes", "named"), [
    ({"opponents": [{"mix": {"random": 1, "search": 1}}]}, "opponents[0].mix.search"),
    ({"opponents": [{"mix": {"rule": 1, "self": 1}}]}, "opponents[0].mix.self"),
    ({"env": {"belief": "particles"}}, "env.belief"),
    ({"env": {"reward_shaping": 0.1}}, "env.reward_shaping"),
])
def test_native_refuses_what_does_not_compile(changes: dict, named: str):
    with pytest.raises(ConfigError, match=named.replace(".", r"\.").replace("[", r"\[").replace("]", r"\]")):
        parse_config({**TINY, **changes})
    parse_config({**TINY, **changes, "vec_env": "dummy"})  # the same settings are fine with per-process envs


def test_a_native_run_trains_through_the_opponent_schedule(tmp_path: Path):
    config = {**TINY, "total_timesteps": 512, "n_envs": 16, "checkpoint_every": 256, "progress_bar": False,
              "ppo": {"n_steps": 16, "batch_size": 128, "n_epochs": 1}, "policy": {"net_arch": [16]},
              "opponents": [{"mix": {"random": 1}, "until": 0.5}, {"mix": {"rule": 1}}],
              "eval": {"every": 256, "pairs": 2, "final_pairs": 2, "opponents": ["random"], "workers": 1,
                       "belief_games": 0}}
    train(parse_config(config), tmp_path / "run", quiet=True)
    assert sorted(p.name for p in (tmp_path / "run" / "checkpoints").glob("*.zip")) == \
        ["step_000000256.zip", "step_000000512.zip"]
    events = EventAccumulator(str(tmp_path / "run" / "tb"), size_guidance={"scalars": 0})
    events.Reload()
    tags = events.Tags()["scalars"]
    # Finished games reached the trainer labelled with their opponent, and the episodes were counted (the switch to
    # the second phase's opponent is the adapter's set_opponent_mix, tested above; its games outlast this run).
    assert {"train/win_rate/random", "rollout/ep_rew_mean", "eval/mean_win_rate"} <= set(tags)
