"""The native vector env (uno_env/vector.py) against the rules, the single env and Gymnasium's vector conventions.

* Long random play: in every running sub-env the 108 cards are all there, the mask is the set of legal actions
  of RULES.md (restated in uno_testlib), and the observation (counting features included) is the one ``UnoEnv``
  gives for the same position.
* Same position, same trajectory: from each sub-env's position as a scenario, ``UnoEnv`` with the (deterministic)
  rule opponent and the same actions gives the same observations, masks, rewards and terminations up to the
  first reshuffle (the module docstring says why not beyond, and why not from the same seed).
* Gymnasium's vector conventions: spaces, dtypes, fresh arrays, seeding (sub-env i plays as sub-env 0 of the seed
  plus i), next-step / same-step / disabled autoreset, truncation, Gymnasium's vector wrappers.
* Bad input gets a clear error; illegal actions lose or raise as asked; game statistics match the single env's.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode
from uno_testlib import deck_names, legal_by_rules, mask_set, same_cards

import uno_env  # noqa: F401  (registers Uno-v0)
from agents.compiled_actor import compiled_opponent
from agents.ppo import PPOPolicy
from uno_env.env import UnoEnv
from uno_env.game import IllegalActionError
from uno_env.vector import OPPONENTS, UnoVectorEnv

CHECKPOINT = "models/search-q-none/model.zip"


def make(num_envs: int = 8, **kwargs) -> UnoVectorEnv:
    return gym.make_vec("Uno-v0", num_envs=num_envs, vectorization_mode="vector_entry_point", **kwargs)


def random_legal(masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random legal action per row of an (N, 61) mask."""
    return (rng.random(masks.shape) * masks).argmax(axis=1)


def single_from(env: UnoVectorEnv, index: int, **kwargs) -> tuple[UnoEnv, np.ndarray, dict]:
    """A UnoEnv started from sub-env ``index``'s position."""
    single = UnoEnv(**kwargs)
    obs, info = single.reset(seed=index, options={"scenario": env.scenario(index)})
    return single, obs, info


# ---------------------------------------------------------------------------------------------- construction
def test_make_vec_builds_the_native_env_with_the_single_envs_spaces():
    env = make(8, opponent="rule", belief="counting")
    assert isinstance(env, UnoVectorEnv) and env.num_envs == 8
    assert env.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP and env.max_episode_steps == 1000
    single = UnoEnv(belief="counting")
    assert env.single_observation_space == single.observation_space
    assert env.single_action_space == single.action_space
    assert env.observation_space.shape == (8, 354) and env.action_space == gym.spaces.MultiDiscrete([61] * 8)
    assert make(3).observation_space.shape == (3, 294)


@pytest.mark.parametrize(("kwargs", "named"), [
    ({"num_envs": 0}, "num_envs"), ({"num_envs": -2}, "num_envs"), ({"num_envs": True}, "num_envs"),
    ({"num_envs": 2.0}, "num_envs"), ({"belief": "particles"}, "particles"), ({"opponent": "search"}, "'search'"),
    ({"opponent": {"rule": -1.0}}, "'rule'"), ({"opponent": {"rule": 0}}, "positive weight"),
    ({"opponent": {"rule": float("inf")}}, "'rule'"), ({"opponent": {"rule": float("nan")}}, "'rule'"),
    ({"opponent": {"rule": 1e308, "random": 1e308}}, "'rule'"),  # their sum overflowed to inf
    ({"opponent": object()}, "opponent"), ({"first_player": "me"}, "first_player"),
    ({"illegal_action": "ignore"}, "illegal_action"), ({"max_episode_steps": 0}, "max_episode_steps"),
    ({"autoreset_mode": "Sometimes"}, "autoreset_mode"), ({"render_mode": "human"}, "render_mode"),
])
def test_bad_arguments_are_named(kwargs: dict, named: str):
    arguments = {"num_envs": 2, **kwargs}
    with pytest.raises(ValueError, match=named):
        UnoVectorEnv(**arguments)


# ---------------------------------------------------------------------------------------------- the rules
def test_long_random_play_keeps_the_cards_the_rules_and_the_encoding():
    """Compiled vs reference on long random play, against a mix of both opponents, counting features on."""
    env = make(12, opponent={"random": 1, "rule": 1}, belief="counting")
    rng = np.random.default_rng(1)
    obs, info = env.reset(seed=11)
    checked = ended = 0
    for step in range(250):
        masks = info["action_mask"]
        assert masks.dtype == np.int8 and masks.shape == (12, 61) and masks.any(axis=1).all()
        for i in range(env.num_envs):
            if env._ended[i]:  # the game ended in the last step; its terminal mask is "draw" alone
                assert mask_set(masks[i]) == {60}
                continue
            s = env.scenario(i)
            assert same_cards(s["agent_hand"] + s["opponent_hand"] + s["deck"] + s["discard"], deck_names())
            assert mask_set(masks[i]) == legal_by_rules(s["agent_hand"], s["discard"][-1], s["active_colour"],
                                                        s["pending_draw"])
            if step % 5 == 0:
                _, single_obs, single_info = single_from(env, i, belief="counting")
                np.testing.assert_allclose(obs[i], single_obs, rtol=0, atol=1e-6)
                assert np.array_equal(masks[i], single_info["action_mask"])
            checked += 1
        obs, rewards, terminated, truncated, info = env.step(random_legal(info["action_mask"], rng))
        assert set(np.unique(rewards[~terminated])) <= {0.0} and not (terminated & truncated).any()
        assert set(np.unique(rewards[terminated])) <= {-1.0, 0.0, 1.0}
        ended += int(terminated.sum())
    assert checked > 2000 and ended > 30


@pytest.mark.parametrize(("opponent", "belief"), [("rule", "none"), ("rule", "counting"), ("checkpoint", "none")])
def test_from_the_same_position_the_single_env_plays_the_same_game(opponent: str, belief: str):
    """With a deterministic opponent (the rule player, a checkpoint's actor compiled into the kernel), same positions
    and actions give the same trajectory until a reshuffle."""
    if opponent == "checkpoint":
        policy = PPOPolicy.load(CHECKPOINT)
        env = make(10, opponent=compiled_opponent(policy), belief=belief)
        assert env.opponent_names[-1] == policy.name
    else:
        policy = opponent
        env = make(10, opponent=opponent, belief=belief)
    rng = np.random.default_rng(2)
    obs, info = env.reset(seed=5)
    singles = {}
    for i in range(env.num_envs):
        single, single_obs, _ = single_from(env, i, opponent=policy, belief=belief)
        np.testing.assert_allclose(obs[i], single_obs, rtol=0, atol=1e-6)
        singles[i] = single
    compared = finished = 0
    while singles:
        actions = random_legal(info["action_mask"], rng)
        obs, rewards, terminated, truncated, info = env.step(actions)
        for i, single in list(singles.items()):
            single_obs, reward, done, _, single_info = single.step(int(actions[i]))
            if any(event["kind"] == "reshuffle" for event in single_info["events"]):
                del singles[i]  # each side shuffled with its own generator: the games part here
                continue
            np.testing.assert_allclose(obs[i], single_obs, rtol=0, atol=1e-6)
            assert np.array_equal(info["action_mask"][i], single_info["action_mask"])
            assert (rewards[i], terminated[i], truncated[i]) == (reward, done, False)
            compared += 1
            if done:
                assert info["is_success"][i] == single_info["is_success"] and info["_is_success"][i]
                finished += 1
                del singles[i]
    assert compared > 100 and finished >= 5


def test_the_compiled_deal():
    env = make(500, first_player="random")
    env.reset(seed=0)
    starts = {"agent": 0, "opponent": 0}
    for i in range(env.num_envs):
        s = env.scenario(i)
        assert same_cards(s["agent_hand"] + s["opponent_hand"] + s["deck"] + s["discard"], deck_names())
        assert len(s["agent_hand"]) == 7 and s["discard"][0] not in ("wild", "wild_draw4")
        # The agent is to move after the reset; if the opponent started, it played or drew first.
        opened = len(s["discard"]) > 1 or len(s["opponent_hand"]) != 7
        starts["opponent" if opened else "agent"] += 1
    assert 200 < starts["agent"] < 300  # a fair coin, 500 flips (the opponent always acts when it starts)
    first = make(50, first_player="agent")
    first.reset(seed=0)
    assert all(len(first.scenario(i)["discard"]) == 1 and len(first.scenario(i)["opponent_hand"]) == 7
               for i in range(50))


def test_game_statistics_match_the_single_env():
    """Random agent: win rates against each opponent and game lengths agree with UnoEnv's (in distribution)."""
    rng = np.random.default_rng(3)
    mix = ("random", "rule")
    vector = {name: ([], []) for name in OPPONENTS}  # (results, lengths) per opponent
    env = make(200, opponent=dict.fromkeys(mix, 1), autoreset_mode="SameStep")  # every step an agent step
    _, info = env.reset(seed=0)
    lengths = np.zeros(env.num_envs, dtype=int)
    for _ in range(300):
        _, rewards, terminated, _, info = env.step(random_legal(info["action_mask"], rng))
        lengths += 1
        for i in np.flatnonzero(terminated):
            results, game_lengths = vector[OPPONENTS[info["opponent"][i]]]
            results.append(rewards[i] > 0)
            game_lengths.append(lengths[i])
        lengths[terminated] = 0
    for name in mix:
        single = UnoEnv(opponent=name)
        wins, steps = [], []
        for game in range(300):
            _, info = single.reset(seed=game)
            for length in range(1, 10_000):
                _, reward, done, _, info = single.step(int(random_legal(info["action_mask"][None], rng)[0]))
                if done:
                    wins.append(reward > 0)
                    steps.append(length)
                    break
        results, game_lengths = vector[name]
        assert len(results) > 600
        for a, b in ((results, wins), (game_lengths, steps)):
            a, b = np.asarray(a, float), np.asarray(b, float)
            z = (a.mean() - b.mean()) / np.sqrt(a.var() / len(a) + b.var() / len(b))
            assert abs(z) < 4, (name, a.mean(), b.mean())
    assert np.mean(vector["rule"][0]) < np.mean(vector["random"][0]) - 0.1  # the rule player is the stronger


# ---------------------------------------------------------------------------------------------- Gymnasium conventions
def test_types_shapes_and_fresh_arrays():
    env = make(4, belief="counting")
    obs, info = env.reset(seed=0)
    assert obs.dtype == np.float32 and obs in env.observation_space and set(info) == {"action_mask"}
    previous = obs
    rng = np.random.default_rng(0)
    for _ in range(60):
        obs, rewards, terminated, truncated, info = env.step(random_legal(info["action_mask"], rng))
        assert obs in env.observation_space
        assert rewards.dtype == np.float64 and rewards.shape == (4,)
        assert terminated.dtype == truncated.dtype == np.bool_ and terminated.shape == truncated.shape == (4,)
        assert not np.shares_memory(obs, previous) and not np.shares_memory(info["action_mask"], env._masks)
        previous = obs
        if "is_success" in info:  # Gymnasium's vector info: a value array and its mask per key
            assert info["_is_success"].dtype == np.bool_ and info["_is_success"].shape == (4,)


def trajectory(env: UnoVectorEnv, seed, steps: int = 80, action_seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(action_seed)
    obs, info = env.reset(seed=seed)
    out = [obs]
    for _ in range(steps):
        obs, rewards, *_, info = env.step(random_legal(info["action_mask"], rng))
        out += [obs, rewards]
    return out


def test_seeds_replay_and_map_to_sub_envs_as_gymnasium_does():
    a, b = trajectory(make(4), 7), trajectory(make(4), 7)
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    assert not np.array_equal(trajectory(make(4), 8)[0], a[0])
    # Sub-env i of a vector seeded s plays the games of sub-env 0 of one seeded s + i (and a seed list, likewise).
    first = make(4).reset(seed=7)[0]
    for i in range(4):
        assert np.array_equal(make(1).reset(seed=7 + i)[0][0], first[i])
    assert np.array_equal(make(4).reset(seed=[7, 8, 9, 10])[0], first)
    env = make(4)
    env.reset(seed=7)
    assert not np.array_equal(env.reset()[0], first)  # no seed: the streams go on
    for bad in (-1, [1, 2], [1, 2, 3, -4], "7", 1.5):
        with pytest.raises(ValueError, match="seed"):
            env.reset(seed=bad)


def run_until_an_end(env: UnoVectorEnv, rng: np.random.Generator):
    obs, info = env.reset(seed=0)
    for _ in range(500):
        actions = random_legal(info["action_mask"], rng)
        obs, rewards, terminated, truncated, info = env.step(actions)
        if terminated.any():
            return obs, rewards, terminated, info
    raise AssertionError("no game ended in 500 steps")


def test_numpy_scalar_seeds_are_ints():
    env = UnoVectorEnv(3)
    expected = env.reset(seed=3)[0]
    for seed in (np.array(3), np.int64(3), np.array(3, dtype=np.uint32)):
        assert np.array_equal(UnoVectorEnv(3).reset(seed=seed)[0], expected)
    with pytest.raises(ValueError, match="seed"):
        env.reset(seed=np.array(3.5))


def test_the_first_reset_deals_every_game():
    env = UnoVectorEnv(3)
    for mask in (np.zeros(3, dtype=bool), np.array([True, False, True])):
        with pytest.raises(ValueError, match="first reset deals every sub-env"):
            env.reset(seed=1, options={"reset_mask": mask})
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.zeros(3, dtype=np.int64))  # the refused reset dealt nothing
    obs, info = env.reset(seed=1, options={"reset_mask": np.ones(3, dtype=bool)})
    assert info["action_mask"].any(axis=1).all() and obs.any(axis=1).all()
    env.reset(options={"reset_mask": np.zeros(3, dtype=bool)})  # from then on a mask of zeros resets nothing


def test_next_step_autoreset_starts_the_next_game_and_ignores_the_action():
    env = make(6, illegal_action="raise")
    obs, _, terminated, info = run_until_an_end(env, np.random.default_rng(0))
    done = np.flatnonzero(terminated)
    assert all(mask_set(info["action_mask"][i]) == {60} for i in done)  # the terminal mask: draw only
    actions = random_legal(info["action_mask"], np.random.default_rng(1))
    actions[done] = 0  # not legal in a finished game: ignored, since this step deals the next one
    obs, rewards, terminated, truncated, info = env.step(actions)
    for i in done:
        assert rewards[i] == 0 and not terminated[i] and not truncated[i]
        assert obs[i, :54].sum() == 7 and mask_set(info["action_mask"][i]) != set()


def test_same_step_autoreset_equals_next_step_shifted():
    """SAME_STEP's final observation is NEXT_STEP's terminal one, and its next game NEXT_STEP's next game."""
    nxt, same = make(6), make(6, autoreset_mode="SameStep")
    assert same.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    rng_a, rng_b = np.random.default_rng(0), np.random.default_rng(0)
    obs_n, _, terminated, info_n = run_until_an_end(nxt, rng_a)
    obs_s, _, terminated_s, info_s = run_until_an_end(same, rng_b)
    assert np.array_equal(terminated, terminated_s)
    done = np.flatnonzero(terminated)
    assert info_s["_final_obs"].tolist() == terminated.tolist()
    assert np.array_equal(info_s["final_obs"][done], obs_n[done])
    obs_n, *_ = nxt.step(random_legal(info_n["action_mask"], rng_a))
    assert np.array_equal(obs_s[done], obs_n[done])


def test_disabled_autoreset_waits_for_a_reset_mask():
    env = make(6, autoreset_mode=AutoresetMode.DISABLED)
    obs, _, terminated, info = run_until_an_end(env, np.random.default_rng(0))
    with pytest.raises(RuntimeError, match="reset_mask"):
        env.step(random_legal(info["action_mask"], np.random.default_rng(0)))
    fresh, info = env.reset(options={"reset_mask": terminated})
    assert np.array_equal(fresh[~terminated], obs[~terminated])
    assert (fresh[terminated, :54].sum(axis=1) == 7).all()
    env.step(random_legal(info["action_mask"], np.random.default_rng(0)))  # every game runs again
    for bad in ({"reset_mask": np.ones(6, int)}, {"reset_mask": np.ones(5, bool)}, {"other": 1}):
        with pytest.raises(ValueError, match="reset_mask|other"):
            env.reset(options=bad)


def test_truncation_after_max_episode_steps():
    env = make(8, opponent="rule", max_episode_steps=3)
    rng = np.random.default_rng(0)
    _, info = env.reset(seed=1)
    flags = []
    for _ in range(3):
        _, _, terminated, truncated, info = env.step(random_legal(info["action_mask"], rng))
        flags.append((terminated.copy(), truncated.copy()))
    ended_early = flags[0][0] | flags[1][0]
    assert not flags[0][1].any() and not flags[1][1].any()
    assert np.array_equal(flags[2][1], ~ended_early & ~flags[2][0])  # the running games truncate at step 3


def test_gymnasium_vector_wrappers_run_on_it():
    env = gym.wrappers.vector.RecordEpisodeStatistics(make(8))
    _, info = env.reset(seed=0)
    rng = np.random.default_rng(0)
    episodes = 0
    for _ in range(150):
        _, _, terminated, _, info = env.step(random_legal(info["action_mask"], rng))
        if terminated.any():
            assert set(np.unique(info["episode"]["r"][info["_episode"]])) <= {-1.0, 0.0, 1.0}
            episodes += int(info["_episode"].sum())
    assert episodes > 10
    # DictInfoToList reads the "_key" masks: one info per sub-env, the game's result only where it ended.
    env = gym.wrappers.vector.DictInfoToList(make(8))
    _, infos = env.reset(seed=0)
    for _ in range(150):
        masks = np.stack([info["action_mask"] for info in infos])
        _, _, terminated, _, infos = env.step(random_legal(masks, rng))
        assert [("is_success" in info) for info in infos] == terminated.tolist()


# ---------------------------------------------------------------------------------------------- bad actions
def test_illegal_actions_raise_naming_the_sub_env_and_step_nothing():
    env = make(4, illegal_action="raise")
    obs, info = env.reset(seed=0)
    actions = random_legal(info["action_mask"], np.random.default_rng(0))
    bad = actions.copy()
    bad[2] = int(np.flatnonzero(info["action_mask"][2] == 0)[0])
    with pytest.raises(IllegalActionError, match="sub-env 2: action"):
        env.step(bad)
    bad[2] = 99
    with pytest.raises(IllegalActionError, match="outside 0..60"):
        env.step(bad)
    reference = make(4)
    reference.reset(seed=0)
    assert np.array_equal(env.step(actions)[0], reference.step(actions)[0])  # the refused steps changed nothing


def test_illegal_actions_lose_by_default():
    env = make(4)
    _, info = env.reset(seed=0)
    actions = random_legal(info["action_mask"], np.random.default_rng(0))
    actions[1] = int(np.flatnonzero(info["action_mask"][1] == 0)[0])
    actions[3] = -1
    _, rewards, terminated, _, info = env.step(actions)
    assert rewards[1] == rewards[3] == -1.0 and terminated[1] and terminated[3]
    assert info["illegal_action"].tolist() == info["_illegal_action"].tolist() == [False, True, False, True]


@pytest.mark.parametrize(("actions", "error", "named"), [
    (np.zeros(4, dtype=np.float32), TypeError, "integers"), (np.zeros(3, dtype=int), ValueError, "shape"),
    (np.zeros((4, 1), dtype=int), ValueError, "shape"), ([True] * 4, TypeError, "integers"),
])
def test_malformed_actions_are_refused(actions, error: type, named: str):
    env = make(4)
    env.reset(seed=0)
    with pytest.raises(error, match=named):
        env.step(actions)


def test_calls_before_reset_are_refused():
    env = make(2)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.zeros(2, dtype=int))
    with pytest.raises(RuntimeError, match="reset"):
        env.scenario(0)
