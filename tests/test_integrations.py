"""Uno-v0 in the ecosystem: pictures (rgb_array, SVG, RecordVideo), SB3's make_vec_env, the mask wrappers."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium.wrappers import RecordVideo
from sb3_contrib import MaskablePPO
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env

import uno_env  # noqa: F401  (registers Uno-v0)
from uno_env.render import HEIGHT, WIDTH
from uno_env.wrappers import ActionMaskObservation, IllegalMovePenalty

torch.set_num_threads(1)

RED = np.array([214, 39, 24])  # uno_env.render's red card face
YELLOW_OUTLINE = np.array([255, 225, 77])  # the outline of a card that may be played now


def colour_pixels(frame: np.ndarray, colour: np.ndarray, region: tuple[slice, slice]) -> int:
    """How many pixels of ``frame[region]`` have (nearly) ``colour``."""
    return int((np.abs(frame[region].astype(int) - colour).sum(axis=2) < 30).sum())


HAND_ROWS, OPPONENT_ROWS = slice(330, 480), slice(0, 110)
LEFT = slice(0, 480)


def test_rgb_array_shows_the_table():
    env = gym.make("Uno-v0", opponent="rule", render_mode="rgb_array")
    assert env.unwrapped.render() is None  # before the first reset (gym.make's order enforcer raises instead)
    _, info = env.reset(seed=90)
    frame = env.render()
    assert frame.shape == (HEIGHT, WIDTH, 3) and frame.dtype == np.uint8
    # Seed 90 deals the agent red cards and two playable blue ones: red faces and playable outlines in the hand row.
    assert "red:4" in info["hand"] and info["action_mask"][[34, 42]].all()
    assert colour_pixels(frame, RED, (HAND_ROWS, LEFT)) > 500
    assert colour_pixels(frame, YELLOW_OUTLINE, (HAND_ROWS, LEFT)) > 100
    # The opponent's row shows card backs: more cards, more of the back's colour.
    backs = colour_pixels(frame, np.array([122, 16, 16]), (OPPONENT_ROWS, LEFT))
    assert backs > 500 * info["opponent_hand_size"] * 0.5
    # The picture follows the game: after a move it changes.
    env.step(int(np.flatnonzero(info["action_mask"])[0]))
    assert not np.array_equal(env.render(), frame)


def test_picture_of_a_finished_game_and_svg_export(tmp_path):
    env = gym.make("Uno-v0", render_mode="rgb_array")
    _, info = env.reset(seed=0)
    playing = env.render()
    _, _, terminated, _, info = env.step(59 if info["action_mask"][59] == 0 else 58)  # an illegal move loses
    assert terminated and info["winner"] == "opponent"
    over = env.render()
    # "You lost" is written in a dark box over the centre of the table.
    centre = (slice(100, 190), slice(100, 380))
    assert np.abs(over[centre].astype(int) - playing[centre].astype(int)).sum() > 10_000
    path = env.unwrapped.save_picture(str(tmp_path / "table.svg"))
    text = (tmp_path / "table.svg").read_text()
    assert path.endswith("table.svg") and text.lstrip().startswith("<?xml") and "<svg" in text
    with pytest.raises(ValueError, match="use .svg, .png or .pdf"):
        env.unwrapped.save_picture(str(tmp_path / "table.gif"))
    with pytest.raises(ValueError, match="render_mode must be None, 'ansi', 'rgb_array' or 'human'"):
        gym.make("Uno-v0", render_mode="video")


def test_record_video_writes_a_file(tmp_path):
    pytest.importorskip("moviepy")
    env = RecordVideo(gym.make("Uno-v0", opponent="rule", render_mode="rgb_array"), str(tmp_path),
                      episode_trigger=lambda episode: episode == 0, disable_logger=True)
    _, info = env.reset(seed=1)
    terminated = truncated = False
    steps = 0
    while not (terminated or truncated) and steps < 12:
        _, _, terminated, truncated, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))
        steps += 1
    env.close()
    videos = list(tmp_path.glob("*.mp4"))
    assert len(videos) == 1 and videos[0].stat().st_size > 1000


def test_make_vec_env_and_maskable_ppo():
    # SB3's one-liner passes render_mode="rgb_array"; MaskablePPO finds action_masks() through the wrappers.
    vec_env = make_vec_env("Uno-v0", n_envs=2, seed=0, env_kwargs={"opponent": "random"})
    assert vec_env.render_mode == "rgb_array"
    vec_env.reset()
    masks = np.stack(vec_env.env_method("action_masks"))
    assert masks.shape == (2, 61) and masks.any(axis=1).all()
    model = MaskablePPO("MlpPolicy", vec_env, n_steps=64, batch_size=64, n_epochs=1, seed=0).learn(128)
    assert model.num_timesteps >= 128
    frames = vec_env.get_images()
    assert len(frames) == 2 and frames[0].shape == (HEIGHT, WIDTH, 3)


def test_action_masks_through_gym_make_wrappers():
    env = gym.make("Uno-v0")
    _, info = env.reset(seed=2)
    expected = info["action_mask"].astype(bool)
    assert np.array_equal(env.unwrapped.action_masks(), expected)
    assert np.array_equal(env.get_wrapper_attr("action_masks")(), expected)


def test_mask_in_the_observation_with_a_masked_random_rollout():
    env = ActionMaskObservation(gym.make("Uno-v0", opponent="rule"))
    assert set(env.observation_space.spaces) == {"observation", "action_mask"}
    env.action_space.seed(0)
    obs, _ = env.reset(seed=4)
    games, steps = 0, 0
    while games < 3:
        assert obs in env.observation_space
        assert obs["action_mask"].dtype == np.int8 and obs["action_mask"].any()
        # A masked sample (what RLlib/Tianshou do with the mask) is always legal: no game ends by forfeit.
        action = env.action_space.sample(mask=obs["action_mask"])
        obs, _, terminated, truncated, info = env.step(action)
        assert not info.get("illegal_action", False)
        steps += 1
        if terminated or truncated:
            assert info["winner"] in ("agent", "opponent", "draw")
            games += 1
            obs, _ = env.reset()
    assert steps > 3 * 5


def test_illegal_move_penalty_retries_the_same_position():
    env = IllegalMovePenalty(gym.make("Uno-v0", opponent="rule"), penalty=-0.25)
    obs, info = env.reset(seed=5)
    assert info["illegal_moves"] == 0
    illegal = int(np.flatnonzero(info["action_mask"] == 0)[0])
    again, reward, terminated, truncated, info2 = env.step(illegal)
    assert (reward, terminated, truncated) == (-0.25, False, False)
    assert np.array_equal(again, obs) and info2["illegal_action"] and info2["illegal_moves"] == 1
    legal = int(np.flatnonzero(info["action_mask"])[0])
    _, reward, _, _, info3 = env.step(legal)
    assert reward in (0.0, 1.0, -1.0) and "illegal_action" not in info3 and info3["illegal_moves"] == 1
    # A stuck agent cannot loop for ever: after max_retries the env's own rule (an illegal move loses) applies.
    stuck = IllegalMovePenalty(gym.make("Uno-v0"), max_retries=3)
    _, info = stuck.reset(seed=5)
    bad = int(np.flatnonzero(info["action_mask"] == 0)[0])
    results = [stuck.step(bad) for _ in range(4)]
    assert [r[2] for r in results] == [False, False, False, True] and results[-1][1] == -1.0
    with pytest.raises(ValueError, match="penalty must be a number <= 0"):
        IllegalMovePenalty(gym.make("Uno-v0"), penalty=0.5)


def legal_probability(model: PPO, states: np.ndarray, masks: np.ndarray) -> float:
    """The policy's mean probability of choosing a legal action over fixed positions."""
    with torch.no_grad():
        probs = model.policy.get_distribution(torch.as_tensor(states)).distribution.probs.numpy()
    return float((probs * masks).sum(axis=1).mean())


def test_plain_ppo_learns_to_move_legally_with_the_penalty():
    # Fixed positions from games of legal random moves, to measure the policy on.
    env = gym.make("Uno-v0")
    rng = np.random.default_rng(0)
    obs, info = env.reset(seed=7)
    states, masks = [], []
    while len(states) < 300:
        states.append(obs)
        masks.append(info["action_mask"].astype(bool))
        obs, _, terminated, truncated, info = env.step(rng.choice(np.flatnonzero(info["action_mask"])))
        if terminated or truncated:
            obs, info = env.reset()
    states, masks = np.array(states), np.array(masks)
    # Plain PPO (no masks). gamma=0: with so tiny a budget only the move's own cost is learnable in time.
    train_env = IllegalMovePenalty(gym.make("Uno-v0", opponent="random"), penalty=-1.0)
    model = PPO("MlpPolicy", train_env, n_steps=256, batch_size=64, n_epochs=10, learning_rate=3e-3, gamma=0.0,
                ent_coef=0.0, seed=1)  # seed 0 rose only 1.5-fold on the env's games; seed 1 2.5-fold
    before = legal_probability(model, states, masks)
    model.learn(4096)
    after = legal_probability(model, states, masks)
    assert before < 0.05  # about the share of legal actions: 1 or 2 of 61
    assert after > 1.6 * before, (before, after)
