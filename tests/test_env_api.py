"""The Gymnasium/SB3 contract of UnoEnv: checkers, seeding, pickling, illegal actions, rendering, training."""

from __future__ import annotations

import pickle
import warnings
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env
from uno_testlib import DRAW, FirstLegalPolicy, capped, mask_set

import uno_env
from uno_env.env import UnoEnv
from uno_env.game import IllegalActionError
from uno_env.observation import BASE_CHANNELS
from uno_env.opponents import RulePolicy


def snapshot(obs: Any) -> Any:
    return {k: v.tolist() for k, v in obs.items()} if isinstance(obs, dict) else obs.tolist()


def trajectory(env: gym.Env, seed: int | None, action_seed: int, steps: int = 1000,
               info: dict[str, Any] | None = None) -> list:
    """Reset (unless ``info`` continues a game) and play random legal actions, recording every output."""
    rng = np.random.default_rng(action_seed)
    out = []
    if info is None:
        obs, info = env.reset(seed=seed)
        out.append((snapshot(obs), repr(info)))
    for _ in range(steps):
        action = int(rng.choice(np.flatnonzero(info["action_mask"])))
        obs, reward, terminated, truncated, info = env.step(action)
        out.append((snapshot(obs), reward, terminated, truncated, repr(info)))
        if terminated or truncated:
            break
    return out


def random_legal(info: dict[str, Any], rng: np.random.Generator) -> int:
    return int(rng.choice(np.flatnonzero(info["action_mask"])))


def illegal_action_for(info: dict[str, Any]) -> int:
    return int(np.flatnonzero(info["action_mask"] == 0)[0])


# ---------------------------------------------------------------------------------------------- checkers
@pytest.mark.parametrize("kwargs", [{}, {"dict_obs": True}, {"render_mode": "ansi"}, {"opponent": "rule"}])
def test_gymnasium_env_checker(kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gym_check_env(gym.make("Uno-v0", **kwargs).unwrapped, skip_render_check=False)


@pytest.mark.parametrize("dict_obs", [False, True])
def test_sb3_env_checker(dict_obs):
    from stable_baselines3.common.env_checker import check_env

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(UnoEnv(dict_obs=dict_obs), warn=True)


def test_spaces():
    env = UnoEnv()
    assert env.action_space == gym.spaces.Discrete(61)
    assert isinstance(env.observation_space, gym.spaces.Box) and env.observation_space.dtype == np.float32
    obs, _ = env.reset(seed=0)
    assert obs.shape == env.observation_space.shape and obs.dtype == np.float32
    denv = UnoEnv(dict_obs=True)
    obs, _ = denv.reset(seed=0)
    assert isinstance(denv.observation_space, gym.spaces.Dict) and set(obs) == set(denv.observation_space.spaces)
    flat = np.concatenate([obs[name] for name, _, _ in BASE_CHANNELS])
    assert np.array_equal(flat, env.reset(seed=0)[0]), "the dict holds the flat observation's channels"


# ---------------------------------------------------------------------------------------------- seeding
@pytest.mark.parametrize("kwargs", [{}, {"opponent": "rule"}, {"first_player": "opponent"}, {"dict_obs": True}])
def test_same_seed_same_trajectory(kwargs):
    for seed in range(6):
        assert trajectory(UnoEnv(**kwargs), seed, 9) == trajectory(UnoEnv(**kwargs), seed, 9)
    assert len({repr(trajectory(UnoEnv(**kwargs), seed, 9)) for seed in range(6)}) == 6


def test_belief_setting_does_not_change_the_game():
    """The trackers draw from generators of their own: a seed deals and reshuffles one game whatever the belief."""
    for seed in (0, 10):  # seed 10's game (random actions from seed 10) reshuffles the discard pile
        games = [[repr(step[1:]) if len(step) > 2 else step[1] for step in
                  trajectory(UnoEnv(belief=belief, n_particles=16), seed, seed)]
                 for belief in ("none", "counting", "particles")]
        assert games[0] == games[1] == games[2]
    assert any("reshuffle" in step for step in games[0])


def test_random_opponent_is_seeded_by_the_env():
    """Same agent actions, same seed: the random opponent, moving first, repeats itself."""
    runs = [trajectory(UnoEnv(first_player="opponent"), 4, 0) for _ in range(2)]
    assert runs[0] == runs[1]


def test_unseeded_reset_continues_the_seeded_stream():
    def two_games() -> list:
        env = UnoEnv()
        return trajectory(env, 3, 1) + trajectory(env, None, 2)

    assert two_games() == two_games()


def test_a_seeded_reset_seeds_np_random_as_gymnasium_does():
    """UnoEnv.reset sets np_random itself (uno_env.seeding, for speed): the generator and np_random_seed that
    gymnasium.Env.reset would set; a bad seed still gets Gymnasium's error and leaves the generator as it was."""
    env = UnoEnv()
    for seed in (0, 7, 2**40, 2**64 + 3):
        env.reset(seed=seed)
        expected, expected_seed = gym.utils.seeding.np_random(seed)
        assert env.np_random_seed == expected_seed == seed
        expected.integers(2**62)  # the game's seed, which the reset drew
        assert env.np_random.integers(2**62, size=4).tolist() == expected.integers(2**62, size=4).tolist()
    before = env.np_random.bit_generator.state
    for bad in (-1, 1.5):
        with pytest.raises(gym.error.Error):
            env.reset(seed=bad)
    assert env.np_random.bit_generator.state == before


def test_first_player_random_is_seeded():
    firsts = [[bool(UnoEnv().reset(seed=seed)[1]["events"]) for seed in range(30)] for _ in range(2)]
    assert firsts[0] == firsts[1] and 0 < sum(firsts[0]) < 30


# ---------------------------------------------------------------------------------------------- pickling
@pytest.mark.parametrize("make", [lambda: UnoEnv(), lambda: UnoEnv(opponent="rule", dict_obs=True),
                                  lambda: gym.make("Uno-v0")], ids=["random", "rule_dict", "gym_make"])
def test_pickle_mid_game_continues_identically(make):
    env = make()
    rng = np.random.default_rng(0)
    _, info = env.reset(seed=21)
    for _ in range(5):
        _, _, terminated, _, info = env.step(random_legal(info, rng))
        assert not terminated
    clone = pickle.loads(pickle.dumps(env))
    assert trajectory(clone, None, 77, info=info) == trajectory(env, None, 77, info=info)
    # Reshuffles and the opponent's randomness carry on identically too: play the next games.
    assert trajectory(clone, None, 5) == trajectory(env, None, 5)


# ---------------------------------------------------------------------------------------------- illegal actions
def test_illegal_action_default_is_a_loss():
    env = UnoEnv(first_player="agent")
    _, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(illegal_action_for(info))
    assert (reward, terminated, truncated) == (-1.0, True, False)
    assert info["illegal_action"] is True and info["winner"] == "opponent" and info["is_success"] is False
    assert mask_set(info["action_mask"]) == {DRAW}
    assert obs in env.observation_space


@pytest.mark.parametrize("action", [61, -1, 1000, np.int64(-5), np.array(99)])
def test_out_of_range_actions_are_illegal(action):
    env = UnoEnv()
    env.reset(seed=0)
    assert env.step(action)[1:3] == (-1.0, True)
    raising = UnoEnv(illegal_action="raise")
    raising.reset(seed=0)
    with pytest.raises(IllegalActionError):
        raising.step(action)


def test_legal_actions_of_numpy_types_are_accepted():
    env = UnoEnv(illegal_action="raise")
    _, info = env.reset(seed=0)
    action = np.int64(np.flatnonzero(info["action_mask"])[0])
    assert env.step(action)[-1].get("illegal_action") is None
    _, info = env.reset(seed=0)
    env.step(np.array(np.flatnonzero(info["action_mask"])[0]))


def test_illegal_action_raise_leaves_state_unchanged():
    env, twin = UnoEnv(illegal_action="raise"), UnoEnv(illegal_action="raise")
    rng = np.random.default_rng(3)
    _, info = env.reset(seed=8)
    twin.reset(seed=8)
    for _ in range(3):
        action = random_legal(info, rng)
        _, _, terminated, _, info = env.step(action)
        twin.step(action)
        assert not terminated
    mask = env.action_masks()
    for bad in {illegal_action_for(info), DRAW} - set(np.flatnonzero(mask)):
        with pytest.raises(IllegalActionError, match="not legal") as err:
            env.step(bad)
        assert isinstance(err.value, ValueError)
    assert np.array_equal(env.action_masks(), mask)
    assert trajectory(env, None, 4, info=info) == trajectory(twin, None, 4, info=info)


def test_step_after_the_end_is_safe():
    env = UnoEnv()
    record = trajectory(env, 2, 2)
    final_obs, _, terminated, _, final_info = record[-1]
    assert terminated
    for action in (DRAW, 0, 61):
        obs, reward, terminated, truncated, info = env.step(action)
        assert (reward, terminated, truncated) == (0.0, True, False)
        assert obs.tolist() == final_obs and repr(info) == final_info
        obs[:] = -1  # fresh arrays: changing one does not change the next
    assert env.step(DRAW)[0].tolist() == final_obs
    assert env.action_masks().tolist() == [False] * 60 + [True]


@pytest.mark.parametrize("opponent", ["random", FirstLegalPolicy()])  # the compiled path and the Python one
def test_a_finished_game_still_refuses_actions_that_are_not_integers(opponent):
    env = UnoEnv(opponent=opponent)
    obs, info = env.reset(seed=2)
    terminated = False
    for _ in capped(1000):
        if terminated:
            break
        obs, _, terminated, _, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))
    for action in ("x", 4.0, None):
        with pytest.raises(TypeError, match="integer"):
            env.step(action)
    assert env.step(DRAW)[2] is True


def test_calls_before_reset():
    env = UnoEnv()
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)
    with pytest.raises(RuntimeError, match="reset"):
        env.action_masks()
    assert UnoEnv(render_mode="ansi").render() is None


# ---------------------------------------------------------------------------------------------- constructor
@pytest.mark.parametrize(("kwargs", "words"), [
    ({"opponent": "nobody"}, ["unknown policy", "nobody", "random", "rule"]),
    ({"first_player": "me"}, ["first_player", "me"]),
    ({"illegal_action": "ignore"}, ["illegal_action", "ignore"]),
    ({"render_mode": "video"}, ["render_mode", "video"]),
    ({"belief": "magic"}, ["belief", "magic"]),
    ({"n_particles": 0}, ["n_particles", "0"]),
    ({"dict_obs": "yes"}, ["dict_obs", "'yes'"]),
])
def test_bad_constructor_arguments(kwargs, words):
    with pytest.raises(ValueError) as err:
        UnoEnv(**kwargs)
    for word in words:
        assert word in str(err.value)


def test_opponent_object_without_policy_methods():
    with pytest.raises(TypeError, match="reset.*act"):
        UnoEnv(opponent=object())


def test_opponent_given_as_an_object_plays():
    opponent = FirstLegalPolicy()
    env = UnoEnv(opponent=opponent, first_player="opponent")
    _, info = env.reset(seed=1)
    assert len(opponent.views) >= 1
    first_view = opponent.views[0]
    assert info["events"][0]["player"] == "opponent" and min(first_view.legal_actions) >= 0
    assert first_view.observation.shape == env.observation_space.shape


def test_gym_make():
    env = gym.make("Uno-v0", opponent="rule")
    assert isinstance(env.unwrapped, UnoEnv) and isinstance(env.unwrapped.opponent, RulePolicy)
    assert env.spec.max_episode_steps == 1000
    obs, info = env.reset(seed=0)
    assert obs in env.observation_space
    env.step(int(np.flatnonzero(info["action_mask"])[0]))
    assert uno_env.UnoEnv is UnoEnv


def test_action_masks_match_info():
    env = UnoEnv(opponent="rule")
    rng = np.random.default_rng(0)
    for seed in range(5):
        _, info = env.reset(seed=seed)
        for _ in capped():
            mask = env.action_masks()
            assert mask.dtype == bool and np.array_equal(mask, info["action_mask"].astype(bool))
            if "winner" in info:
                break
            info = env.step(random_legal(info, rng))[-1]


# ---------------------------------------------------------------------------------------------- rendering
def test_render_ansi():
    env = UnoEnv(render_mode="ansi", first_player="agent")
    _, info = env.reset(seed=0)
    text = env.render()
    assert isinstance(text, str)
    assert f"Top card: {info['top']}" in text and f"Colour in force: {info['active_colour']}" in text
    assert f"Your hand (7): {' '.join(info['hand'])}" in text and "Opponent: 7 cards" in text
    assert text.splitlines()[-1].startswith("Legal: ")
    rng = np.random.default_rng(0)
    for _ in capped():
        if "winner" in info:
            break
        info = env.step(random_legal(info, rng))[-1]
    text = env.render()
    assert text.splitlines()[-1] == {"agent": "You won.", "opponent": "You lost.", "draw": "The game is drawn."}[
        info["winner"]]
    assert " played " in text
    assert UnoEnv().render() is None


# ---------------------------------------------------------------------------------------------- training
def test_maskable_ppo_learns_on_subprocess_envs():
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import SubprocVecEnv

    # fork: the workers need not re-import torch (seconds each); one torch thread: two cores, two workers.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    vec = make_vec_env(UnoEnv, n_envs=2, seed=0, vec_env_cls=SubprocVecEnv, vec_env_kwargs={"start_method": "fork"})
    try:
        model = MaskablePPO("MlpPolicy", vec, n_steps=64, batch_size=64, n_epochs=1, seed=0, device="cpu")
        model.learn(total_timesteps=256)
        assert model.num_timesteps >= 256
    finally:
        vec.close()
        torch.set_num_threads(threads)
    env = UnoEnv()
    rng = np.random.default_rng(0)
    obs, info = env.reset(seed=0)
    for _ in range(50):
        action, _state = model.predict(obs, action_masks=env.action_masks(), deterministic=True)
        assert info["action_mask"][int(action)] == 1
        obs, _, terminated, _, info = env.step(int(action) if rng.random() < 0.5 else random_legal(info, rng))
        if terminated:
            obs, info = env.reset()
