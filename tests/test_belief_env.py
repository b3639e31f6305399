"""Belief features in the envs (uno_env/observation.py through uno_env/seat.py): env and SB3 checkers,
MaskablePPO with particles, no hidden state in observations, the env's filter models no opponent.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from uno_env.belief import CountingBelief, ParticleBelief
from uno_env.env import UnoEnv
from uno_env.observation import BASE_SIZE


# ---------------------------------------------------------------------------------------------- 8. env
@pytest.mark.parametrize("kwargs", [{"belief": "counting"}, {"belief": "particles", "n_particles": 64}],
                         ids=["counting", "particles"])
def test_env_checkers_with_beliefs(kwargs):
    """Gymnasium's and SB3's env checkers accept the env with belief features (warnings are errors); the
    observation's last 60 entries are the tracker's features, and every observation lies in the space."""
    from gymnasium.utils.env_checker import check_env as gym_check_env
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gym_check_env(UnoEnv(**kwargs), skip_render_check=True)
        sb3_check_env(UnoEnv(**kwargs), warn=True)
    env = UnoEnv(**kwargs)
    obs, info = env.reset(seed=1)
    rng = np.random.default_rng(1)
    for _ in range(20):
        tracker = env._agent_seat.observer.tracker
        if kwargs["belief"] == "counting":
            # Read off the kernel state on the compiled path, which keeps no tracker; counting depends on the
            # current view alone, so a tracker started at this view has the same features.
            assert tracker is None
            tracker = CountingBelief()
            tracker.reset(env._agent_view())
        assert np.array_equal(obs[BASE_SIZE:], tracker.features()) and obs in env.observation_space
        obs, _, terminated, _, info = env.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))
        if terminated:
            break


def test_maskable_ppo_learns_with_particles_and_its_checkpoint_refuses_counting(tmp_path):
    """MaskablePPO learns a few hundred steps on UnoEnv(belief="particles", n_particles=32). Its checkpoint
    refuses a counting env although both observations have 354 entries, naming both settings; it loads into a
    particles env, and as a PPOPolicy it declares belief="particles" and plays as the embedded opponent, which
    then gets particle features. (Checkpoints whose sizes differ: tests/test_evaluate.py.)"""
    import torch
    from sb3_contrib import MaskablePPO

    from agents.ppo import PPOPolicy, load_model, save_model

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # two cores shared with the other tests
    try:
        model = MaskablePPO("MlpPolicy", UnoEnv(belief="particles", n_particles=32), n_steps=128, batch_size=64,
                            n_epochs=1, seed=0, policy_kwargs={"net_arch": [16]}, device="cpu")
        model.learn(total_timesteps=256)
        assert model.num_timesteps >= 256
        path = save_model(model, tmp_path / "ppo.zip", {"belief": "particles", "n_particles": 32})
        counting = UnoEnv(belief="counting")
        assert counting.observation_space.shape == model.observation_space.shape
        with pytest.raises(ValueError) as err:
            load_model(path, env=counting)
        assert "trained with belief='particles'" in str(err.value) and "uses belief='counting'" in str(err.value)
        env = UnoEnv(belief="particles", n_particles=32)
        loaded = load_model(path, env=env)
        obs, info = env.reset(seed=0)
        action, _ = loaded.predict(obs, action_masks=env.action_masks(), deterministic=True)
        assert info["action_mask"][int(action)] == 1

        policy = PPOPolicy.load(path)
        assert policy.belief == "particles" and policy.observation_size == 294 + 60
        host = UnoEnv(opponent=policy, n_particles=32, first_player="opponent")
        _, info = host.reset(seed=2)
        rng = np.random.default_rng(2)
        plays = 0
        for _ in range(30):
            plays += sum(e.get("player") == "opponent" and e["kind"] == "play" for e in info["events"])
            _, _, terminated, _, info = host.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))
            if terminated:
                break
        assert plays > 0 and isinstance(host._opponent_seat.observer.tracker, ParticleBelief)
    finally:
        torch.set_num_threads(threads)


def test_env_particle_filter_does_not_model_its_opponent():
    """The env's tracker is the lazy plain-likelihood filter whoever the opponent is: a learner's features must not
    change meaning with the opponent (docs/beliefs.md)."""
    for opponent in ("random", "rule"):
        env = UnoEnv(opponent=opponent, belief="particles", n_particles=32)
        env.reset(seed=0)
        assert type(env._agent_seat.observer.tracker) is ParticleBelief
