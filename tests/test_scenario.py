"""Scenarios (RULES.md "Scenarios"): valid ones start exactly where they say, malformed ones raise a
``ValueError`` naming the problem, on the engine and through ``env.reset``, and leave the env usable."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pytest
from uno_testlib import DRAW, mask_set, minus, scenario

from uno_env.cards import card_id
from uno_env.env import UnoEnv
from uno_env.game import Game
from uno_env.view import DRAW as DRAW_EVENT


def base() -> dict[str, Any]:
    """A valid scenario to break in one place."""
    return scenario(["red:7", "blue:1"], ["green:2", "yellow:5"], ["red:3"], ["blue:9"])


def with_(**changes: Any) -> dict[str, Any]:
    out = base()
    out.update(changes)
    return out


def without(key: str) -> dict[str, Any]:
    out = base()
    del out[key]
    return out


def _extra_card() -> dict[str, Any]:
    out = base()
    out["deck"] = out["deck"] + ["red:0"]
    return out


def _missing_card() -> dict[str, Any]:
    out = base()
    out["deck"] = minus(out["deck"], ["wild"])
    return out


def _moved_copy() -> dict[str, Any]:
    """108 cards in all, but one red:5 replaced by a second red:0."""
    out = base()
    out["deck"] = minus(out["deck"], ["red:5"]) + ["red:0"]
    return out


def _wild_top(**changes: Any) -> dict[str, Any]:
    out = scenario(["red:7"], ["green:2"], ["red:3", "wild"])
    out.update(changes)
    return out


#: (id, scenario, words the message must contain)
MALFORMED: list[tuple[str, Any, list[str]]] = [
    ("not_a_dict", ["agent_hand"], ["scenario must be a dict"]),
    *[(f"missing_{key}", without(key), ["missing", key])
      for key in ("agent_hand", "opponent_hand", "deck", "discard", "to_move", "pending_draw")],
    ("unknown_field", with_(colour="red"), ["unknown field", "colour"]),
    ("unknown_name_in_hand", with_(agent_hand=["red:7", "red:10"]), ["agent_hand", "unknown card name", "red:10"]),
    ("unknown_name_in_deck", with_(deck=["wild4"] + base()["deck"][1:]), ["deck", "unknown card name", "wild4"]),
    ("unknown_name_in_discard", with_(discard=["Red:3"]), ["discard", "unknown card name", "Red:3"]),
    ("non_string_name", with_(opponent_hand=["green:2", 5]), ["opponent_hand", "unknown card name"]),
    ("hand_is_a_string", with_(agent_hand="red:7"), ["agent_hand", "list of card names"]),
    ("deck_is_a_number", with_(deck=3), ["deck", "list of card names"]),
    ("extra_card", _extra_card(), ["108", "red:0: 2 (expected 1)"]),
    ("missing_card", _missing_card(), ["108", "wild: 3 (expected 4)"]),
    ("wrong_copies_right_total", _moved_copy(), ["red:0: 2 (expected 1)", "red:5: 1 (expected 2)"]),
    ("empty_agent_hand", scenario([], ["green:2"], ["red:3"]), ["hands must not be empty"]),
    ("empty_opponent_hand", scenario(["red:7"], [], ["red:3"]), ["hands must not be empty"]),
    ("empty_discard", scenario(["red:7"], ["green:2"], [], rest="deck"), ["discard", "top card"]),
    ("wild_top_without_active_colour", _wild_top(), ["active_colour", "required", "wild"]),
    ("wild_top_unknown_colour", _wild_top(active_colour="purple"), ["unknown colour", "purple"]),
    ("active_colour_contradicts_top", with_(active_colour="blue"), ["active_colour", "blue", "red:3"]),
    ("wrong_to_move", with_(to_move="player1"), ["to_move", "player1"]),
    ("pending_3", with_(pending_draw=3), ["pending_draw", "0, 2 or 4", "3"]),
    ("pending_bool", with_(pending_draw=True), ["pending_draw", "True"]),
    ("pending_string", with_(pending_draw="2"), ["pending_draw", "'2'"]),
    ("pending_float", with_(pending_draw=2.0), ["pending_draw", "2.0"]),
    ("pending_2_without_draw2_on_top", with_(pending_draw=2), ["pending_draw", "red:3", "draw2"]),
    ("pending_4_on_a_draw2",
     scenario(["red:7"], ["green:2"], ["blue:draw2"], pending_draw=4), ["pending_draw", "blue:draw2", "wild_draw4"]),
    ("pending_2_on_a_plain_wild",
     _wild_top(active_colour="red", pending_draw=2), ["pending_draw", "wild", "draw2"]),
]


def test_the_base_scenario_is_valid():
    Game.from_scenario(base(), np.random.default_rng(0))


@pytest.mark.parametrize(("bad", "words"), [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED])
def test_engine_rejects_malformed_scenario(bad, words):
    with pytest.raises(ValueError) as err:
        Game.from_scenario(bad, np.random.default_rng(0))
    for word in words:
        assert word in str(err.value)


def _first_legal(info: dict[str, Any]) -> int:
    return int(np.flatnonzero(info["action_mask"])[0])


def _play_out(env: UnoEnv, info: dict[str, Any]) -> list[tuple]:
    """Play the lowest legal action to the end of the game, recording everything returned."""
    record = []
    for _ in range(400):
        obs, reward, terminated, truncated, info = env.step(_first_legal(info))
        record.append((obs.tolist(), reward, terminated, truncated, repr(info)))
        if terminated:
            return record
    raise AssertionError("game did not end")


@pytest.mark.parametrize("reset_seed", [None, 123])
@pytest.mark.parametrize(("bad", "words"), [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED])
def test_env_rejects_malformed_scenario_and_stays_usable(bad, words, reset_seed):
    env, twin = UnoEnv(first_player="agent"), UnoEnv(first_player="agent")
    _, info = env.reset(seed=5)
    _, twin_info = twin.reset(seed=5)
    for _ in range(3):
        info = env.step(_first_legal(info))[-1]
        twin_info = twin.step(_first_legal(twin_info))[-1]
    with pytest.raises(ValueError) as err:
        env.reset(seed=reset_seed, options={"scenario": bad})
    for word in words:
        assert word in str(err.value)
    # The game in progress goes on exactly as in an env that never saw the bad scenario ...
    assert np.array_equal(env.action_masks(), twin.action_masks())
    assert _play_out(env, info) == _play_out(twin, twin_info)
    # ... and so does the generator: the next reset deals what the twin deals.
    obs, info = env.reset()
    twin_obs, twin_info = twin.reset()
    assert np.array_equal(obs, twin_obs) and repr(info) == repr(twin_info)


def test_fresh_env_rejects_bad_scenario_then_resets_normally():
    env = UnoEnv()
    with pytest.raises(ValueError, match="missing"):
        env.reset(seed=0, options={"scenario": {}})
    with pytest.raises(RuntimeError, match="reset"):
        env.step(DRAW)
    obs, info = env.reset(seed=0)
    assert obs in env.observation_space and info["action_mask"].any()


def test_unknown_reset_option():
    env = UnoEnv()
    with pytest.raises(ValueError, match="unknown reset option.*scenarios"):
        env.reset(seed=0, options={"scenarios": base()})


@pytest.mark.parametrize("to_move", ["agent", "opponent"])
def test_valid_scenario_starts_where_it_says(to_move):
    deck_head = ["blue:9", "green:0", "yellow:7"]
    s = scenario(["blue:1", "yellow:2", "green:8"], ["green:2", "yellow:5"], ["green:3", "red:3"], deck_head,
                 to_move=to_move)
    game = Game.from_scenario(s, np.random.default_rng(0))
    seat = 0 if to_move == "agent" else 1
    assert game.current == seat and game.pending_draw == 0
    assert game.hand_sizes == [3, 2] and game.card_count() == 108
    view = game.observe(0, consume_events=False)
    assert view.to_info()["top"] == "red:3" and view.to_info()["active_colour"] == "red"
    assert view.discard_size == 2 and view.discard[card_id("green:3")] == 1 and view.discard[card_id("red:3")] == 1
    assert view.deck_size == len(s["deck"]) and view.events == []
    game.step(DRAW)  # neither seat has a playable card
    assert game.observe(seat).events == [(DRAW_EVENT, 0, 1, (card_id("blue:9"),))], "deck[0] is drawn first"


def test_env_reset_from_scenario_reports_the_position():
    s = scenario(["red:7", "blue:1", "wild"], ["green:2", "yellow:5"], ["green:3", "wild_draw4"], ["blue:9"],
                 active_colour="yellow", pending_draw=4)
    _, info = UnoEnv().reset(seed=0, options={"scenario": s})
    assert Counter(info["hand"]) == Counter(["red:7", "blue:1", "wild"])
    assert info["top"] == "wild_draw4" and info["active_colour"] == "yellow" and info["pending_draw"] == 4
    assert info["opponent_hand_size"] == 2 and info["discard_size"] == 2 and info["deck_size"] == 108 - 7
    assert mask_set(info["action_mask"]) == {DRAW} and info["events"] == []


def test_scenario_accepts_tuples_and_numpy_pending_draw():
    s = scenario(["red:7"], ["green:2"], ["red:draw2"], pending_draw=2)
    s = {**s, "agent_hand": tuple(s["agent_hand"]), "deck": tuple(s["deck"]), "pending_draw": np.int64(2)}
    game = Game.from_scenario(s, np.random.default_rng(0))
    game.step(DRAW)
    assert game.hand_sizes[0] == 3


def _reshuffle_draws(seed: int) -> list[str]:
    """Cards the agent draws right after a forced reshuffle (empty deck) in a scenario start."""
    s = scenario(["blue:1"], ["green:2"], ["red:3"], rest="discard")
    env = UnoEnv()
    env.reset(seed=seed, options={"scenario": s})
    info = env.step(DRAW)[-1]
    draw = next(e for e in info["events"] if e["kind"] == "draw" and e["player"] == "agent")
    assert [e["kind"] for e in info["events"]][:2] == ["reshuffle", "draw"]
    return draw["cards"]


def test_reshuffles_after_a_scenario_start_are_seeded():
    assert _reshuffle_draws(7) == _reshuffle_draws(7)
    assert len({tuple(_reshuffle_draws(seed)) for seed in range(12)}) > 1


def test_scenario_whose_first_move_is_the_opponents_can_end_the_game_in_reset():
    s = scenario(["red:7", "blue:1"], ["red:9"], ["red:3"], to_move="opponent")
    env = UnoEnv()
    _, info = env.reset(seed=0, options={"scenario": s})
    assert info["winner"] == "opponent" and info["is_success"] is False
    assert mask_set(info["action_mask"]) == {DRAW} and info["opponent_hand_size"] == 0
