"""The PettingZoo AEC environment ``uno_v0``: API conformance, seeding, a full game, illegal actions, rendering."""

from __future__ import annotations

import warnings

import matplotlib
import numpy as np
import pytest
from pettingzoo.test import api_test, render_test, seed_test
from uno_testlib import DRAW, act, capped, scenario

from uno_env.cards import CARD_NAMES
from uno_env.game import IllegalActionError
from uno_env.multiagent import UnoAECEnv, env
from uno_env.observation import encode_base
from uno_env.render import HEIGHT, WIDTH


def play_random(aec, seed: int, action_seed: int = 0) -> list[tuple]:
    """Play one game with uniformly random legal actions; the trajectory as comparable tuples."""
    rng = np.random.default_rng(action_seed)
    aec.reset(seed=seed)
    trajectory = []
    for agent in aec.agent_iter():
        obs, reward, terminated, truncated, info = aec.last()
        trajectory.append((agent, obs["observation"].tobytes(), obs["action_mask"].tobytes(), reward, terminated))
        aec.step(None if terminated or truncated else int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    return trajectory


def test_pettingzoo_api_test_passes():
    with warnings.catch_warnings():
        # api_test warns about dict observations for any env outside its own list of classic games.
        warnings.filterwarnings("ignore", message="Observation is not a NumPy array")
        warnings.filterwarnings("ignore", message="Observation space for each agent probably should be")
        warnings.filterwarnings("ignore", message=".*ignores unknown reset option")
        api_test(env(), num_cycles=300)


def test_pettingzoo_seed_test_passes():
    seed_test(env, num_cycles=200)


def test_same_seed_same_game_and_different_seed_different_deal():
    first = play_random(env(), seed=7)
    again = play_random(env(), seed=7)
    other = play_random(env(), seed=8)
    assert first == again
    assert first[0][1] != other[0][1]


def test_reset_without_seed_continues_the_seeded_stream():
    a, b = env(), env()
    play_random(a, seed=3)
    play_random(b, seed=3)
    a.reset()
    b.reset()
    assert np.array_equal(a.observe("player_0")["observation"], b.observe("player_0")["observation"])


def test_full_random_game_follows_the_engine():
    aec = UnoAECEnv()
    aec.reset(seed=11)
    game = aec._game
    rng = np.random.default_rng(1)
    finished = []
    for _ in capped():
        if not aec.agents:
            break
        agent = aec.agent_selection
        obs, reward, terminated, truncated, info = aec.last()
        assert not truncated
        if terminated:
            finished.append((agent, reward, info["winner"], info["is_success"]))
            aec.step(None)
            continue
        seat = int(agent[-1])
        assert game.current == seat
        assert np.flatnonzero(obs["action_mask"]).tolist() == game.legal_actions()
        assert np.array_equal(obs["observation"], encode_base(game.observe(seat, consume_events=False)))
        waiting = aec.observe(f"player_{1 - seat}")
        assert np.flatnonzero(waiting["action_mask"]).tolist() == [DRAW]
        assert info["hand"] == [CARD_NAMES[c] for c in range(54) for _ in range(game.hands[seat][c])]
        aec.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
        assert game.card_count() == 108
    assert game.done
    assert sorted(agent for agent, *_ in finished) == ["player_0", "player_1"]
    results = {agent: (reward, winner, success) for agent, reward, winner, success in finished}
    if game.outcome == -1:
        assert all(r == (0.0, "draw", False) for r in results.values())
    else:
        winner = f"player_{game.outcome}"
        loser = f"player_{1 - game.outcome}"
        assert results[winner] == (1.0, "agent", True)
        assert results[loser] == (-1.0, "opponent", False)
        assert game.hand_sizes[game.outcome] == 0 or game.hand_sizes[game.outcome] < game.hand_sizes[1 - game.outcome]


def test_illegal_action_loses_for_the_mover():
    aec = env()
    aec.reset(seed=5)
    mover = aec.agent_selection
    other = "player_1" if mover == "player_0" else "player_0"
    mask = aec.observe(mover)["action_mask"]
    illegal = int(np.flatnonzero(mask == 0)[0])
    aec.step(illegal)
    assert aec.terminations == {"player_0": True, "player_1": True}
    assert aec.rewards == {mover: -1.0, other: 1.0}
    assert aec.infos[mover]["illegal_action"] is True
    assert "illegal_action" not in aec.infos[other]
    assert aec.infos[other]["winner"] == "agent"


def test_illegal_action_can_raise_and_leave_the_game_unchanged():
    aec = UnoAECEnv(illegal_action="raise")
    aec.reset(seed=5)
    before = aec.observe(aec.agent_selection)
    with pytest.raises(IllegalActionError, match="not legal"):
        aec.step(int(np.flatnonzero(before["action_mask"] == 0)[0]))
    after = aec.observe(aec.agent_selection)
    assert np.array_equal(before["observation"], after["observation"])
    assert not any(aec.terminations.values())


def one_card_left() -> dict:
    """player_0 holds only red:7 on a red:3 and moves first; player_1 holds two blue cards."""
    return scenario(["red:7"], ["blue:1", "blue:2"], ["red:3"])


def test_scenario_start_and_immediate_win():
    aec = env()
    aec.reset(seed=0, options={"scenario": one_card_left()})
    assert aec.agent_selection == "player_0"
    assert aec.infos["player_0"]["hand"] == ["red:7"]
    aec.step(act("red:7"))
    assert aec.rewards == {"player_0": 1.0, "player_1": -1.0}
    assert aec.infos["player_0"]["is_success"] is True


def test_bad_scenario_raises_and_keeps_the_env_usable():
    aec = env()
    aec.reset(seed=0)
    bad = one_card_left() | {"pending_draw": 3}
    with pytest.raises(ValueError, match="pending_draw"):
        aec.reset(seed=99, options={"scenario": bad})
    obs, *_ = aec.last()
    assert obs["action_mask"].any()
    # The failed reset did not re-seed: the next unseeded deal continues the seed-0 stream.
    reference = env()
    reference.reset(seed=0)
    reference.reset()
    aec.reset()
    assert np.array_equal(aec.observe("player_0")["observation"], reference.observe("player_0")["observation"])


def test_max_steps_truncates_both_players():
    aec = UnoAECEnv(max_steps=3, first_player="player_0")
    aec.reset(seed=2)
    for _ in range(3):
        obs, *_ = aec.last()
        aec.step(int(np.flatnonzero(obs["action_mask"])[0]))
    assert aec.truncations == {"player_0": True, "player_1": True}
    assert aec.rewards == {"player_0": 0.0, "player_1": 0.0}
    aec.step(None)
    aec.step(None)
    assert aec.agents == []


def test_ansi_render_shows_only_the_viewers_drawn_cards():
    aec = UnoAECEnv(render_mode="ansi")
    rng = np.random.default_rng(0)
    aec.reset(seed=4)
    seen_hidden_draw = False
    for _ in capped():
        if any(aec.terminations.values()):
            break
        text = aec.render()
        viewer = aec.agent_selection
        assert text.startswith(f"[{viewer}'s view, to move]")
        for line in text.splitlines():
            if " drew " in line and not line.strip().startswith(f"- {viewer}"):
                assert ":" not in line.split(" drew ")[1]
                seen_hidden_draw = True
        obs, *_ = aec.last()
        aec.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    assert seen_hidden_draw
    assert "game over" in aec.render()


def test_constructor_rejects_bad_arguments():
    with pytest.raises(ValueError, match="first_player"):
        UnoAECEnv(first_player="agent")
    with pytest.raises(ValueError, match="illegal_action"):
        UnoAECEnv(illegal_action="ignore")
    with pytest.raises(ValueError, match="max_steps"):
        UnoAECEnv(max_steps=0)
    with pytest.raises(ValueError, match="max_steps"):
        UnoAECEnv(max_steps=True)  # a bool is no step count
    with pytest.raises(ValueError, match="render_mode"):
        UnoAECEnv(render_mode="rgb")


@pytest.fixture
def headless(monkeypatch: pytest.MonkeyPatch) -> None:
    """Render "human" windows off-screen (matplotlib's Agg backend), without the pause between frames."""
    from matplotlib import pyplot

    previous = matplotlib.get_backend()
    pyplot.switch_backend("Agg")
    monkeypatch.setitem(UnoAECEnv.metadata, "render_fps", 1000)
    yield
    pyplot.close("all")
    pyplot.switch_backend(previous)


def test_pettingzoo_render_test_passes_in_every_mode(headless):
    assert UnoAECEnv.metadata["render_modes"] == ["ansi", "rgb_array", "human"]
    render_test(lambda render_mode=None: env(render_mode=render_mode))


def test_rgb_array_is_the_table_of_the_seat_to_move():
    aec = UnoAECEnv(render_mode="rgb_array")
    assert aec.render() is None  # nothing to draw before the first reset (the wrapped env() refuses to ask)
    aec.reset(seed=5)
    frame = aec.render()
    assert frame.dtype == np.uint8 and frame.shape == (HEIGHT, WIDTH, 3)
    obs, *_ = aec.last()
    aec.step(int(np.flatnonzero(obs["action_mask"])[0]))
    assert not np.array_equal(aec.render(), frame)  # a move changes the picture


def test_human_mode_shows_a_window_on_reset_and_step_and_close_closes_it(headless):
    from matplotlib import pyplot

    aec = env(render_mode="human")
    aec.reset(seed=2)
    (window,) = [pyplot.figure(number) for number in pyplot.get_fignums()]  # reset opened exactly one
    first = window.axes[0].images[0].get_array().copy()
    obs, *_ = aec.last()
    aec.step(int(np.flatnonzero(obs["action_mask"])[0]))
    assert not np.array_equal(window.axes[0].images[0].get_array(), first)  # the step redrew it
    assert aec.render() is None
    aec.close()
    assert pyplot.get_fignums() == []
