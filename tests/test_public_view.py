"""What each seat sees (RULES.md "What each player sees" and "Public view"): the info dict and PublicView.

The replay test rebuilds the agent's hand, the opponent's hand size, the pile sizes, the top card and
the colour from nothing but the events of successive infos: that only works if the events are
complete, in order (oldest first) and exactly those since the agent's previous decision.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pytest
from uno_testlib import COLOUR_ORDER, DRAW, FirstLegalPolicy, ScriptedPolicy, act, capped, deck_names, minus, scenario

from uno_env.cards import CARD_NAMES
from uno_env.env import UnoEnv
from uno_env.game import Game
from uno_env.view import DRAW as DRAW_EVENT
from uno_env.view import PublicView

RUNNING_KEYS = {"action_mask", "hand", "top", "active_colour", "opponent_hand_size", "deck_size", "discard_size",
                "pending_draw", "events"}
END_KEYS = RUNNING_KEYS | {"winner", "is_success"}
EVENT_KEYS = {"play": {"player", "kind", "card", "colour"}, "draw": {"player", "kind", "count"},
              "reshuffle": {"kind"}}


def check_info_shape(info: dict[str, Any]) -> None:
    """Keys, types and value ranges of one info dict."""
    over = "winner" in info
    assert set(info) == (END_KEYS if over else RUNNING_KEYS)
    mask = info["action_mask"]
    assert isinstance(mask, np.ndarray) and mask.dtype == np.int8 and mask.shape == (61,)
    assert set(np.unique(mask)) <= {0, 1} and mask.any()
    if over:
        assert mask.tolist() == [0] * 60 + [1], "after the end only 'draw' is set, so the mask is never all zero"
        assert info["winner"] in ("agent", "opponent", "draw")
        assert info["is_success"] is (info["winner"] == "agent")
    assert isinstance(info["hand"], list) and set(info["hand"]) <= set(deck_names())
    assert info["top"] in deck_names() and info["active_colour"] in COLOUR_ORDER
    if info["top"] not in ("wild", "wild_draw4"):
        assert info["top"].split(":")[0] == info["active_colour"]
    for key in ("opponent_hand_size", "deck_size", "discard_size", "pending_draw"):
        assert type(info[key]) is int and info[key] >= 0, key
    assert info["pending_draw"] in (0, 2, 4)
    assert len(info["hand"]) + info["opponent_hand_size"] + info["deck_size"] + info["discard_size"] == 108
    for event in info["events"]:
        keys = EVENT_KEYS[event["kind"]]
        if event["kind"] == "draw" and event["player"] == "agent":
            keys = keys | {"cards"}
            assert len(event["cards"]) == event["count"] and set(event["cards"]) <= set(deck_names())
        assert set(event) == keys
        if event["kind"] != "reshuffle":
            assert event["player"] in ("agent", "opponent")
        if event["kind"] == "play":
            assert event["card"] in deck_names() and event["colour"] in COLOUR_ORDER
            if event["card"] not in ("wild", "wild_draw4"):
                assert event["colour"] == event["card"].split(":")[0]
        if event["kind"] == "draw":
            assert event["count"] in (1, 2, 4)


class Replay:
    """The public state, advanced event by event from the previous info."""

    def __init__(self, info: dict[str, Any]) -> None:
        self.hand = Counter(info["hand"])
        self.opponent = info["opponent_hand_size"]
        self.deck, self.discard = info["deck_size"], info["discard_size"]
        self.top, self.colour = info["top"], info["active_colour"]

    def apply(self, events: list[dict[str, Any]]) -> None:
        for i, event in enumerate(events):
            if event["kind"] == "reshuffle":
                # The next event must be the draw that needed it, or the game ends on it.
                follows = events[i + 1] if i + 1 < len(events) else None
                assert follows is None or (follows["kind"] == "draw" and follows["count"] > self.deck)
                self.deck += self.discard - 1
                self.discard = 1
            elif event["kind"] == "draw":
                assert self.deck >= event["count"]
                self.deck -= event["count"]
                if event["player"] == "agent":
                    self.hand.update(event["cards"])
                else:
                    self.opponent += event["count"]
            else:
                if event["player"] == "agent":
                    assert self.hand[event["card"]] > 0
                    self.hand[event["card"]] -= 1
                else:
                    self.opponent -= 1
                self.discard += 1
                self.top, self.colour = event["card"], event["colour"]

    def matches(self, info: dict[str, Any]) -> bool:
        return (+self.hand == Counter(info["hand"]) and self.opponent == info["opponent_hand_size"]
                and (self.deck, self.discard) == (info["deck_size"], info["discard_size"])
                and (self.top, self.colour) == (info["top"], info["active_colour"]))


@pytest.mark.parametrize("opponent", ["random", "rule"])
def test_infos_are_complete_and_replayable_from_events(opponent):
    rng = np.random.default_rng(2)  # with these seeds both opponents' games meet reshuffles
    env = UnoEnv(opponent=opponent)
    reshuffles = 0
    for seed in range(40):
        _, info = env.reset(seed=seed)
        check_info_shape(info)
        assert all(e.get("player") == "opponent" for e in info["events"] if e["kind"] != "reshuffle")
        replay = Replay({**info, "opponent_hand_size": 7, "deck_size": 93, "discard_size": 1})  # right after the deal
        replay.apply(info["events"])
        assert replay.matches(info)
        terminated = "winner" in info
        for _ in capped():
            if terminated:
                break
            action = int(rng.choice(np.flatnonzero(info["action_mask"])))
            replay = Replay(info)
            _, reward, terminated, _, info = env.step(action)
            check_info_shape(info)
            replay.apply(info["events"])
            assert replay.matches(info)
            reshuffles += sum(e["kind"] == "reshuffle" for e in info["events"])
            first = next(e for e in info["events"] if e["kind"] != "reshuffle")
            assert first["player"] == "agent", "the events start with the agent's own move"
            if action == DRAW:
                assert first["kind"] == "draw"
            else:
                assert first["kind"] == "play" and act(first["card"], first["colour"]) == action
            assert ("winner" in info) is terminated
            if not terminated:
                assert reward == 0.0
    assert reshuffles > 0, "the replay must have met reshuffles"


def test_events_at_reset_when_the_opponent_moves_first():
    s = scenario(["blue:1", "blue:2"], ["red:skip", "wild", "green:1"], ["red:3"], ["yellow:9"], to_move="opponent")
    env = UnoEnv(opponent=ScriptedPolicy([act("red:skip"), act("wild", "blue")]))
    _, info = env.reset(seed=0, options={"scenario": s})
    assert info["events"] == [
        {"player": "opponent", "kind": "play", "card": "red:skip", "colour": "red"},
        {"player": "opponent", "kind": "play", "card": "wild", "colour": "blue"},
    ]
    assert info["active_colour"] == "blue" and info["top"] == "wild" and info["opponent_hand_size"] == 1


def test_event_dicts_for_every_kind():
    s = scenario(["red:draw2", "red:4", "blue:5"], ["green:9", "green:8", "wild_draw4"], ["red:3"],
                 ["yellow:9", "yellow:8"], rest="discard")
    env = UnoEnv(opponent=ScriptedPolicy([DRAW, act("wild_draw4", "blue"), DRAW]))
    env.reset(seed=0, options={"scenario": s})
    info = env.step(act("red:draw2"))[-1]
    assert info["events"] == [
        {"player": "agent", "kind": "play", "card": "red:draw2", "colour": "red"},
        {"player": "opponent", "kind": "draw", "count": 2},
    ]
    info = env.step(act("red:4"))[-1]
    assert info["events"] == [
        {"player": "agent", "kind": "play", "card": "red:4", "colour": "red"},
        {"player": "opponent", "kind": "play", "card": "wild_draw4", "colour": "blue"},
    ]
    assert info["pending_draw"] == 4 and info["deck_size"] == 0
    info = env.step(DRAW)[-1]
    assert info["events"][0] == {"kind": "reshuffle"}
    assert info["events"][1]["player"] == "agent" and info["events"][1]["count"] == 4
    assert len(info["events"][1]["cards"]) == 4
    assert info["events"][2] == {"player": "opponent", "kind": "draw", "count": 1}
    assert info["discard_size"] == 1 and info["top"] == "wild_draw4"


def test_agent_draw_carries_cards_in_draw_order():
    s = scenario(["blue:1"], ["green:2", "green:4"], ["red:draw2"], ["yellow:9", "green:0", "blue:7"], pending_draw=2)
    env = UnoEnv(opponent=ScriptedPolicy([DRAW]))
    env.reset(seed=0, options={"scenario": s})
    info = env.step(DRAW)[-1]
    assert info["events"] == [
        {"player": "agent", "kind": "draw", "count": 2, "cards": ["yellow:9", "green:0"]},
        {"player": "opponent", "kind": "draw", "count": 1},
    ]


def test_the_opponent_never_sees_the_agents_drawn_cards_and_vice_versa():
    opponent = FirstLegalPolicy()
    env = UnoEnv(opponent=opponent)
    rng = np.random.default_rng(0)
    for seed in range(20):
        _, info = env.reset(seed=seed)
        for _ in capped():
            if "winner" in info:
                break
            info = env.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))[-1]
            for event in info["events"]:
                assert event["kind"] != "draw" or (event["player"] == "agent") == ("cards" in event)
    seen = [e for view in opponent.views for e in view.events if e[0] == DRAW_EVENT]
    assert any(e[1] == 1 for e in seen) and any(e[1] == 0 for e in seen)
    for _kind, player, count, cards in seen:
        assert (cards is None) == (player == 1), "a seat sees the cards of its own draws only"
        assert cards is None or len(cards) == count


def test_public_view_is_the_seats_snapshot_of_the_game():
    game = Game.deal(np.random.default_rng(3), 0)
    rng = np.random.default_rng(4)
    for _ in range(60):
        if game.done:
            break
        for seat in (0, 1):
            view = game.observe(seat, consume_events=False)
            assert isinstance(view, PublicView)
            assert view.hand == game.hands[seat] and view.hand_size == sum(game.hands[seat])
            assert view.opponent_hand_size == sum(game.hands[1 - seat])
            assert view.deck_size == len(game.deck) and view.discard_size == len(game.discard)
            assert view.discard == [game.discard.count(card) for card in range(54)]
            assert view.top == game.discard[-1] and view.pending_draw == game.pending_draw
            assert view.to_move == (game.current == seat)
            if view.to_move:
                assert view.legal_actions == game.legal_actions()
            else:
                assert view.legal_actions == [] and view.action_mask.tolist() == [0] * 60 + [1]
            assert view.outcome is None and view.hand_names == [
                CARD_NAMES[c] for c in range(54) for _ in range(game.hands[seat][c])]
            view.hand[0] += 5  # a snapshot: changing it does not touch the game
            assert view.hand != game.hands[seat]
        legal = game.legal_actions()
        game.step(legal[int(rng.integers(len(legal)))])


def test_observe_consumes_events_per_seat():
    s = scenario(["blue:1"], ["green:2", "green:4"], ["red:3"], ["yellow:9", "green:0"])
    game = Game.from_scenario(s, np.random.default_rng(0))
    game.step(DRAW)
    assert len(game.observe(0, consume_events=False).events) == 1
    assert len(game.observe(0).events) == 1
    assert game.observe(0).events == []
    assert len(game.observe(1).events) == 1, "each seat has its own cursor"


@pytest.mark.parametrize(("agent_cards", "agent_sees", "opponent_sees"),
                         [(50, "agent", "opponent"), (56, "opponent", "agent"), (53, "draw", "draw")])
def test_outcome_is_relative_to_the_viewer(agent_cards, agent_sees, opponent_sees):
    held = minus(deck_names(), ["red:draw2", "yellow:9"])
    s = scenario(held[:agent_cards], held[agent_cards:], ["red:draw2"], ["yellow:9"], pending_draw=2)
    game = Game.from_scenario(s, np.random.default_rng(0))
    game.step(DRAW)  # cannot be supplied: fewer cards wins, equal hands draw
    mine, theirs = game.observe(0).to_info(), game.observe(1).to_info()
    assert (mine["winner"], theirs["winner"]) == (agent_sees, opponent_sees)
    assert mine["is_success"] is (agent_sees == "agent") and theirs["is_success"] is (opponent_sees == "agent")


def test_view_without_encoder_has_no_observation():
    view = Game.deal(np.random.default_rng(0), 0).observe(0)
    with pytest.raises(RuntimeError, match="encoder"):
        _ = view.observation
