"""Every rule of RULES.md as a table of positions, each run through the engine AND the Gymnasium env.

A :class:`Case` is a scenario, a script of moves (who moves, which action, optionally the legal set
the mover must have had) and what the agent's ``info`` must say afterwards. The engine run checks
that the seat the script names is the seat to move before every move, so "the same player moves
again" and "the turn passes" are checked move by move. The env run plays the agent's moves with
``env.step`` and the opponent's with a scripted policy; both runs must agree with the case and with
each other. Set-up, first player and truncation are not positions, so they have their own tests below.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from uno_testlib import (
    DRAW,
    FirstLegalPolicy,
    ScriptedPolicy,
    act,
    deck_names,
    legal_by_rules,
    mask_set,
    minus,
    scenario,
    wild_actions,
)

import uno_env  # noqa: F401  (registers Uno-v0)
from uno_env import seat
from uno_env.cards import card_name, full_deck
from uno_env.env import UnoEnv
from uno_env.game import Game, IllegalActionError

SEAT = {"agent": 0, "opponent": 1}
REWARD = {"agent": 1.0, "opponent": -1.0, "draw": 0.0}


@dataclass(frozen=True)
class Case:
    """One rule position. ``moves`` items are ``(player, action)`` or ``(player, action, legal_set)``.

    ``expect`` keys are ``info`` keys compared for equality (``hand`` as a multiset), plus
    ``legal`` (the set of mask ids), ``hand_size``, ``to_move`` (``"agent"`` or None once the game is
    over) and ``log``: the whole event log since the start as (player, kind, card or count) tuples.
    ``illegal``: agent actions that must be refused in the final position.
    """

    id: str
    scenario: dict[str, Any]
    moves: tuple[tuple, ...]
    expect: dict[str, Any]
    illegal: tuple[int, ...] = field(default=())


def log_of(events: list[dict[str, Any]]) -> list[tuple]:
    """Events as short tuples: (player, "play", card), (player, "draw", count), (None, "reshuffle", None)."""
    short = {"play": "card", "draw": "count"}
    return [(e.get("player"), e["kind"], e.get(short.get(e["kind"], ""))) for e in events]


# ---------------------------------------------------------------------------------------------- the table
RED3 = ["red:3"]


def _playability() -> list[Case]:
    return [
        Case("colour_match_and_must_play",
             scenario(["red:7", "green:5", "blue:9"], ["yellow:1", "yellow:2"], RED3), (),
             {"legal": {act("red:7")}, "to_move": "agent"},
             illegal=(DRAW, act("green:5"), act("blue:9"))),
        Case("rank_match_other_colour",
             scenario(["green:3", "blue:9", "yellow:skip"], ["yellow:1", "yellow:2"], RED3), (),
             {"legal": {act("green:3")}}, illegal=(act("blue:9"), act("yellow:skip"), DRAW)),
        Case("rank_match_action_cards",
             scenario(["blue:skip", "green:reverse", "yellow:draw2", "blue:4"], ["yellow:1"], ["red:skip"]), (),
             {"legal": {act("blue:skip")}}, illegal=(act("green:reverse"), act("yellow:draw2"), act("blue:4"))),
        Case("draw2_on_draw2_without_pending",
             scenario(["green:draw2", "blue:skip"], ["yellow:1"], ["red:draw2"]), (),
             {"legal": {act("green:draw2")}, "pending_draw": 0}, illegal=(act("blue:skip"),)),
        Case("wilds_always_playable",
             scenario(["red:7", "wild", "wild_draw4", "blue:9"], ["yellow:1"], RED3), (),
             {"legal": {act("red:7")} | wild_actions("wild") | wild_actions("wild_draw4")},
             illegal=(DRAW, act("blue:9"))),
        Case("only_a_wild_playable_still_must_play",
             scenario(["wild_draw4", "blue:9"], ["yellow:1"], RED3), (),
             {"legal": wild_actions("wild_draw4")}, illegal=(DRAW,)),
        Case("declared_colour_of_a_wild_on_top",
             scenario(["yellow:2", "red:2", "blue:skip"], ["green:1"], ["wild"], active_colour="yellow"), (),
             {"legal": {act("yellow:2")}, "active_colour": "yellow"}, illegal=(act("red:2"),)),
        Case("declared_colour_of_a_wild_draw4_on_top",
             scenario(["green:1", "blue:1"], ["red:1"], ["wild_draw4"], active_colour="green"), (),
             {"legal": {act("green:1")}, "pending_draw": 0}, illegal=(act("blue:1"), DRAW)),
        Case("colour_declared_by_a_played_wild",
             scenario(["blue:1", "red:3", "red:8"], ["wild", "green:1", "green:2"], RED3, to_move="opponent"),
             (("opponent", act("wild", "blue"), wild_actions("wild")),),
             {"legal": {act("blue:1")}, "top": "wild", "active_colour": "blue", "opponent_hand_size": 2},
             illegal=(act("red:3"), act("red:8"))),
        Case("nothing_playable_only_draw",
             scenario(["blue:4", "green:5"], ["yellow:1"], RED3), (),
             {"legal": {DRAW}}, illegal=(act("blue:4"), act("green:5"))),
    ]


def _drawing() -> list[Case]:
    return [
        Case("no_playable_card_draws_one_and_turn_passes",
             scenario(["blue:4", "green:5"], ["red:1", "blue:7"], RED3, ["yellow:9", "green:8"]),
             (("agent", DRAW, {DRAW}), ("opponent", act("red:1"), {act("red:1")})),
             {"hand": ["blue:4", "green:5", "yellow:9"], "opponent_hand_size": 1, "deck_size": 102,
              "top": "red:1", "legal": {DRAW},
              "log": [("agent", "draw", 1), ("opponent", "play", "red:1")]}),
        Case("drawn_card_is_not_played_now",
             scenario(["blue:4", "green:5"], ["red:1", "blue:7"], RED3, ["red:8"]),
             (("agent", DRAW, {DRAW}), ("opponent", act("red:1"))),
             {"hand": ["blue:4", "green:5", "red:8"], "legal": {act("red:8")}, "top": "red:1",
              "log": [("agent", "draw", 1), ("opponent", "play", "red:1")]}),
        Case("both_players_draw_one",
             scenario(["blue:4", "green:5"], ["blue:7", "green:1"], RED3, ["yellow:9", "yellow:8"]),
             (("agent", DRAW), ("opponent", DRAW, {DRAW})),
             {"hand": ["blue:4", "green:5", "yellow:9"], "opponent_hand_size": 3, "deck_size": 101,
              "log": [("agent", "draw", 1), ("opponent", "draw", 1)]}),
    ]


def _skips() -> list[Case]:
    cases = []
    for card in ("red:skip", "red:reverse"):
        cases.append(Case(
            f"{card.split(':')[1]}_same_player_moves_again",
            scenario([card, "red:7", "blue:1"], ["green:1", "green:2"], RED3, ["yellow:9"]),
            (("agent", act(card)), ("agent", act("red:7"), {act("red:7")}), ("opponent", DRAW, {DRAW})),
            {"hand": ["blue:1"], "opponent_hand_size": 3, "top": "red:7", "legal": {DRAW},
             "log": [("agent", "play", card), ("agent", "play", "red:7"), ("opponent", "draw", 1)]}))
    cases += [
        Case("skip_matched_by_rank_moves_again",
             scenario(["blue:skip", "blue:7", "green:1"], ["yellow:1", "yellow:2"], ["red:skip"], ["red:9"]),
             (("agent", act("blue:skip")), ("agent", act("blue:7")), ("opponent", DRAW)),
             {"hand": ["green:1"], "opponent_hand_size": 3, "active_colour": "blue"}),
        Case("opponent_skip_moves_again",
             scenario(["blue:1", "blue:2"], ["red:skip", "red:5", "green:1"], RED3, to_move="opponent"),
             (("opponent", act("red:skip")), ("opponent", act("red:5"), {act("red:5")})),
             {"opponent_hand_size": 1, "top": "red:5", "legal": {DRAW}, "hand": ["blue:1", "blue:2"],
              "log": [("opponent", "play", "red:skip"), ("opponent", "play", "red:5")]}),
    ]
    return cases


def _forced_draws() -> list[Case]:
    return [
        Case("draw2_opponent_draws_2_no_stacking_then_player_again",
             scenario(["red:draw2", "red:7", "wild_draw4", "blue:1"], ["green:draw2", "wild_draw4", "green:1"], RED3,
                      ["yellow:9", "yellow:8", "blue:5"]),
             (("agent", act("red:draw2")), ("opponent", DRAW, {DRAW}), ("agent", act("red:7")),
              ("opponent", act("wild_draw4", "green"), wild_actions("wild_draw4"))),
             {"hand": ["wild_draw4", "blue:1"], "opponent_hand_size": 4, "deck_size": 108 - 4 - 3 - 1 - 2,
              "pending_draw": 4, "legal": {DRAW}, "top": "wild_draw4", "active_colour": "green",
              "log": [("agent", "play", "red:draw2"), ("opponent", "draw", 2), ("agent", "play", "red:7"),
                      ("opponent", "play", "wild_draw4")]},
             illegal=(act("wild_draw4", "red"), act("blue:1"))),
        Case("wild_draw4_opponent_draws_4_then_player_again",
             scenario(["wild_draw4", "blue:5", "green:1"], ["blue:draw2", "wild_draw4", "yellow:1"], RED3,
                      ["yellow:9", "yellow:8", "green:7", "red:6"]),
             (("agent", act("wild_draw4", "blue")), ("opponent", DRAW, {DRAW}), ("agent", act("blue:5")),
              ("opponent", act("blue:draw2"), {act("blue:draw2")} | wild_actions("wild_draw4"))),
             {"hand": ["green:1"], "opponent_hand_size": 6, "pending_draw": 2, "legal": {DRAW},
              "log": [("agent", "play", "wild_draw4"), ("opponent", "draw", 4), ("agent", "play", "blue:5"),
                      ("opponent", "play", "blue:draw2")]},
             illegal=(act("green:1"),)),
        Case("agent_facing_draw2_may_only_draw_then_opponent_moves_again",
             scenario(["red:draw2", "red:9", "blue:1"], ["red:draw2", "red:5", "green:1"], RED3,
                      ["yellow:9", "yellow:8", "blue:6"], to_move="opponent"),
             (("opponent", act("red:draw2")), ("agent", DRAW, {DRAW}), ("opponent", act("red:5"))),
             {"hand": ["red:draw2", "red:9", "blue:1", "yellow:9", "yellow:8"], "opponent_hand_size": 1,
              "pending_draw": 0, "legal": {act("red:draw2"), act("red:9")},
              "log": [("opponent", "play", "red:draw2"), ("agent", "draw", 2), ("opponent", "play", "red:5")]}),
        Case("scenario_pending_draw4",
             scenario(["green:1", "wild"], ["blue:9", "blue:8"], ["wild_draw4"],
                      ["red:1", "red:2", "blue:3", "yellow:4", "green:9"], pending_draw=4, active_colour="green"),
             (("agent", DRAW, {DRAW}), ("opponent", DRAW, {DRAW})),
             {"hand": ["green:1", "wild", "red:1", "red:2", "blue:3", "yellow:4"], "opponent_hand_size": 3,
              "legal": {act("green:1")} | wild_actions("wild"), "pending_draw": 0,
              "log": [("agent", "draw", 4), ("opponent", "draw", 1)]}),
    ]


def _winning() -> list[Case]:
    cases = []
    for card, action in (("red:skip", act("red:skip")), ("red:reverse", act("red:reverse")),
                         ("red:draw2", act("red:draw2")), ("wild_draw4", act("wild_draw4", "blue")),
                         ("wild", act("wild", "green"))):
        cases.append(Case(
            f"agent_wins_with_last_card_{card.replace(':', '_')}",
            scenario([card], ["green:1", "green:2"], RED3), (("agent", action),),
            {"winner": "agent", "is_success": True, "to_move": None, "hand": [], "opponent_hand_size": 2,
             "pending_draw": 0, "deck_size": 108 - 1 - 2 - 1, "legal": {DRAW}, "top": card,
             "log": [("agent", "play", card)]},
            illegal=(act("green:1"),)))
    for card in ("red:9", "red:draw2", "red:skip"):
        cases.append(Case(
            f"opponent_wins_with_last_card_{card.replace(':', '_')}",
            scenario(["red:7", "blue:1"], [card], RED3), (("agent", act("red:7")), ("opponent", act(card))),
            {"winner": "opponent", "is_success": False, "to_move": None, "hand": ["blue:1"],
             "opponent_hand_size": 0, "pending_draw": 0, "legal": {DRAW}}))
    return cases


def _reshuffles() -> list[Case]:
    return [
        Case("reshuffle_when_deck_has_fewer_than_2",
             scenario(["green:1"], ["blue:2", "blue:4"], ["red:draw2"], ["yellow:9"], rest="discard",
                      pending_draw=2),
             (("agent", DRAW, {DRAW}), ("opponent", DRAW, {DRAW})),
             {"hand_size": 3, "opponent_hand_size": 3, "deck_size": 104 - 2 - 1, "discard_size": 1,
              "top": "red:draw2", "active_colour": "red",
              "log": [(None, "reshuffle", None), ("agent", "draw", 2), ("opponent", "draw", 1)]}),
        Case("no_reshuffle_when_deck_has_exactly_2_then_reshuffle_for_1",
             scenario(["green:1"], ["blue:2", "blue:4"], ["red:draw2"], ["yellow:9", "yellow:8"], rest="discard",
                      pending_draw=2),
             (("agent", DRAW), ("opponent", DRAW)),
             {"hand": ["green:1", "yellow:9", "yellow:8"], "opponent_hand_size": 3, "deck_size": 102 - 1,
              "discard_size": 1, "top": "red:draw2",
              "log": [("agent", "draw", 2), (None, "reshuffle", None), ("opponent", "draw", 1)]}),
        Case("reshuffle_when_deck_has_fewer_than_4",
             scenario(["green:1"], ["blue:2", "blue:4"], ["wild_draw4"], ["yellow:9", "yellow:8", "red:1"],
                      rest="discard", pending_draw=4, active_colour="red"),
             (("agent", DRAW), ("opponent", DRAW)),
             {"hand_size": 5, "opponent_hand_size": 3, "deck_size": 104 - 4 - 1, "discard_size": 1,
              "top": "wild_draw4", "active_colour": "red",
              "log": [(None, "reshuffle", None), ("agent", "draw", 4), ("opponent", "draw", 1)]}),
    ]


def _cannot_draw(agent_size: int, winner: str) -> Case:
    """The agent faces a +2 with one card in the deck and nothing under the top card."""
    pool = minus(deck_names(), ["red:draw2", "yellow:9"])
    return Case(f"agent_cannot_draw_2_with_{agent_size}_cards_vs_{106 - agent_size}_{winner}_wins",
                scenario(pool[:agent_size], pool[agent_size:], ["red:draw2"], ["yellow:9"], pending_draw=2),
                (("agent", DRAW, {DRAW}),),
                {"winner": winner, "to_move": None, "hand_size": agent_size, "opponent_hand_size": 106 - agent_size,
                 "deck_size": 1, "discard_size": 1})


def _draw_impossible() -> list[Case]:
    no_red_no_3 = [n for n in minus(deck_names(), RED3)
                   if not n.startswith("red") and n not in ("wild", "wild_draw4") and not n.endswith(":3")]
    held = minus(deck_names(), ["yellow:9", "green:1", "green:2", "wild_draw4"])
    return [
        _cannot_draw(52, "agent"),
        _cannot_draw(54, "opponent"),
        _cannot_draw(53, "draw"),
        Case("cannot_draw_4_even_after_reshuffle_no_partial_draw",
             scenario(held[:50], held[50:], ["green:1", "green:2", "wild_draw4"], ["yellow:9"], pending_draw=4,
                      active_colour="red"),
             (("agent", DRAW),),
             {"winner": "agent", "hand_size": 50, "opponent_hand_size": 54, "deck_size": 3, "discard_size": 1,
              "top": "wild_draw4", "log": [(None, "reshuffle", None)]}),
        Case("cannot_draw_1_more_cards_loses",
             scenario(no_red_no_3[:54], minus(minus(deck_names(), RED3), no_red_no_3[:54]), RED3),
             (("agent", DRAW, {DRAW}),),
             {"winner": "opponent", "hand_size": 54, "opponent_hand_size": 53, "deck_size": 0}),
        Case("opponent_cannot_draw_2_more_cards_loses",
             scenario(["red:draw2"] + minus(deck_names(), ["red:3", "red:draw2"])[:49],
                      minus(deck_names(), ["red:3", "red:draw2"])[49:], RED3),
             (("agent", act("red:draw2")), ("opponent", DRAW, {DRAW})),
             {"winner": "agent", "hand_size": 49, "opponent_hand_size": 57, "deck_size": 1, "discard_size": 1}),
    ]


CASES = _playability() + _drawing() + _skips() + _forced_draws() + _winning() + _reshuffles() + _draw_impossible()


# ---------------------------------------------------------------------------------------------- runners
def _moves(case: Case) -> list[tuple[str, int, set[int] | None]]:
    return [(m[0], m[1], m[2] if len(m) > 2 else None) for m in case.moves]


def run_engine(case: Case) -> tuple[dict[str, Any], str | None, Game]:
    """Play the script on the engine, checking the mover and its legal set before every move."""
    game = Game.from_scenario(case.scenario, np.random.default_rng(0))
    for i, (player, action, legal) in enumerate(_moves(case)):
        assert not game.done, f"move {i}: the game ended before {player} could move"
        assert game.current == SEAT[player], f"move {i}: expected {player} to move"
        if legal is not None:
            assert set(game.legal_actions()) == legal, f"move {i}: legal actions of {player}"
        game.step(action)
    info = game.observe(0).to_info()
    to_move = None if game.done else ("agent" if game.current == 0 else "opponent")
    return info, to_move, game


def run_env(case: Case) -> tuple[dict[str, Any], str | None, UnoEnv]:
    """Play the script in UnoEnv (agent moves by step, opponent moves by a scripted policy)."""
    moves = _moves(case)
    opponent = ScriptedPolicy(a for p, a, _ in moves if p == "opponent")
    env = UnoEnv(opponent=opponent, illegal_action="raise")
    _, info = env.reset(seed=0, options={"scenario": case.scenario})
    events, terminated = list(info["events"]), "winner" in info
    agent_moves = [(a, legal) for p, a, legal in moves if p == "agent"]
    for i, (action, legal) in enumerate(agent_moves):
        assert not terminated
        if legal is not None:
            assert mask_set(info["action_mask"]) == legal
        _, reward, terminated, truncated, info = env.step(action)
        assert truncated is False
        events += info["events"]
        if i < len(agent_moves) - 1 or not terminated:
            assert reward == 0.0
        else:
            assert reward == REWARD[info["winner"]]
    assert opponent.actions == [], "the env did not let the opponent play its whole script"
    expected_opponent_legal = [legal for p, _, legal in moves if p == "opponent"]
    for view, legal in zip(opponent.views, expected_opponent_legal, strict=True):
        if legal is not None:
            assert set(view.legal_actions) == legal
    info["events"] = events
    return info, (None if terminated else "agent"), env


def check_expect(info: dict[str, Any], to_move: str | None, case: Case) -> None:
    for key, want in case.expect.items():
        if key == "legal":
            assert mask_set(info["action_mask"]) == want, key
        elif key == "hand":
            assert Counter(info["hand"]) == Counter(want), key
        elif key == "hand_size":
            assert len(info["hand"]) == want, key
        elif key == "log":
            assert log_of(info["events"]) == want, key
        elif key == "to_move":
            assert to_move == want, key
        else:
            assert info[key] == want, key
    if "winner" not in case.expect:
        assert to_move == "agent", "every case ends at an agent decision or at the end of the game"
        assert "winner" not in info and "is_success" not in info
    assert info["action_mask"].dtype == np.int8 and info["action_mask"].shape == (61,)
    if to_move == "agent":
        assert mask_set(info["action_mask"]) == legal_by_rules(
            info["hand"], info["top"], info["active_colour"], info["pending_draw"])


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_rule_on_engine(case: Case):
    info, to_move, game = run_engine(case)
    check_expect(info, to_move, case)
    assert game.card_count() == 108
    before = game.observe(0, consume_events=False).to_info()
    for action in case.illegal:
        with pytest.raises(IllegalActionError):
            game.step(action)
    after = game.observe(0, consume_events=False).to_info()
    assert np.array_equal(before.pop("action_mask"), after.pop("action_mask")) and before == after


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_rule_in_env(case: Case):
    info, to_move, env = run_env(case)
    check_expect(info, to_move, case)
    engine_info, engine_to_move, _ = run_engine(case)
    assert to_move == (engine_to_move and "agent")
    # Reshuffles are seeded differently in the two runs, so drawn cards may differ after one.
    for key in engine_info.keys() - {"hand", "events", "action_mask"}:
        assert info[key] == engine_info[key], key
    assert log_of(info["events"]) == log_of(engine_info["events"])
    mask = env.action_masks()
    for action in case.illegal:
        if to_move is None:  # after the end of a game the env ignores actions (see test_env_api)
            assert env.step(action)[1:4] == (0.0, True, False)
        else:
            with pytest.raises(IllegalActionError):
                env.step(action)
        assert np.array_equal(env.action_masks(), mask)


def test_every_agent_draw_event_carries_the_drawn_cards_in_deck_order():
    case = next(c for c in CASES if c.id == "scenario_pending_draw4")
    info, _, _ = run_env(case)
    assert info["events"][0]["cards"] == ["red:1", "red:2", "blue:3", "yellow:4"]
    assert "cards" not in info["events"][1]


# ---------------------------------------------------------------------------------------------- set-up
class RiggedRng:
    """A Generator stand-in whose first ``permutation`` is a chosen deck order; all else is a real Generator."""

    def __init__(self, order: list[str], seed: int = 0) -> None:
        base = full_deck()
        positions: dict[str, list[int]] = {}
        for index, card in enumerate(base):
            positions.setdefault(card_name(card), []).append(index)
        self._perm: np.ndarray | None = np.array([positions[name].pop() for name in order])
        self._rng = np.random.default_rng(seed)
        self.shuffles = 0

    def permutation(self, n: int) -> np.ndarray:
        if self._perm is None:
            return self._rng.permutation(n)
        perm, self._perm = self._perm, None
        return perm

    def shuffle(self, x: Any) -> None:
        self.shuffles += 1
        self._rng.shuffle(x)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._rng, name)


def rigged_order(turn_up: str) -> list[str]:
    """A deck order whose 15th card from either end is ``turn_up`` and whose other 28 end cards are not wild.

    Whichever end the engine deals 7 + 7 cards from, the card it turns up next is ``turn_up``.
    """
    pool = minus(deck_names(), [turn_up, turn_up])
    plain = [n for n in pool if n not in ("wild", "wild_draw4")][:28]
    middle = minus(pool, plain)
    return plain[:14] + [turn_up] + middle + [turn_up] + plain[14:]


@pytest.mark.parametrize("first_player", [0, 1])
def test_deal_seven_each_and_a_non_wild_start(first_player):
    for seed in range(300):
        game = Game.deal(np.random.default_rng(seed), first_player)
        assert game.hand_sizes == [7, 7] and [sum(h) for h in game.hands] == [7, 7]
        assert len(game.discard) == 1 and game.top < 52
        assert len(game.deck) == 108 - 15 and game.card_count() == 108
        assert game.current == first_player and game.pending_draw == 0
        assert game.active_colour == game.top // 13


@pytest.mark.parametrize("wild", ["wild", "wild_draw4"])
def test_wild_turned_up_goes_back_and_the_deck_is_reshuffled(wild):
    rng = RiggedRng(rigged_order(wild))
    game = Game.deal(rng, 0)
    assert rng.shuffles >= 1
    assert game.top < 52 and len(game.discard) == 1
    assert game.hand_sizes == [7, 7] and game.card_count() == 108
    wilds_in_deck = sum(1 for card in game.deck if card >= 52)
    assert wilds_in_deck == 8, "the turned-up wild must go back into the deck"


def test_no_reshuffle_when_the_turned_up_card_is_not_wild():
    rng = RiggedRng(rigged_order("green:4"))
    game = Game.deal(rng, 0)
    assert rng.shuffles == 0 and card_name(game.top) == "green:4"


@pytest.mark.parametrize("first_player", [0, 1])
@pytest.mark.parametrize("start", ["red:skip", "red:reverse", "red:draw2"])
def test_starting_action_card_has_no_effect_on_the_engine(start, first_player):
    game = Game.deal(RiggedRng(rigged_order(start)), first_player)
    assert card_name(game.top) == start
    assert game.current == first_player and game.pending_draw == 0
    view = game.observe(first_player)
    hand = [card_name(c) for c in range(54) for _ in range(view.hand[c])]
    assert set(view.legal_actions) == legal_by_rules(hand, start, "red", 0)


def rig_deals(monkeypatch: pytest.MonkeyPatch, start: str) -> None:
    """Make every game the seat module deals start from ``start`` (its deal generator becomes a RiggedRng)."""
    real = seat.game_seeds
    monkeypatch.setattr(seat, "game_seeds", lambda seed: replace(real(seed), deal=RiggedRng(rigged_order(start))))


@pytest.mark.parametrize("start", ["red:skip", "red:reverse", "red:draw2"])
def test_starting_action_card_has_no_effect_in_the_env(start, monkeypatch):
    rig_deals(monkeypatch, start)
    env = UnoEnv(first_player="agent")
    _, info = env.reset()
    assert info["top"] == start and info["pending_draw"] == 0 and info["events"] == []
    assert len(info["hand"]) == 7 and info["opponent_hand_size"] == 7
    assert mask_set(info["action_mask"]) == legal_by_rules(info["hand"], start, "red", 0)

    opponent = FirstLegalPolicy()
    env = UnoEnv(opponent=opponent, first_player="opponent")
    env.reset()
    assert len(opponent.views) >= 1, "the first player is not skipped by the starting card"
    first = opponent.views[0]
    assert first.pending_draw == 0 and first.hand_size == 7 and first.opponent_hand_size == 7


def test_env_deal_seven_each_and_a_non_wild_start():
    env = UnoEnv(first_player="agent")
    for seed in range(50):
        _, info = env.reset(seed=seed)
        assert len(info["hand"]) == 7 and info["opponent_hand_size"] == 7
        assert info["deck_size"] == 93 and info["discard_size"] == 1
        assert info["top"] not in ("wild", "wild_draw4") and info["pending_draw"] == 0
        assert info["events"] == []


def test_first_player_option():
    assert UnoEnv(first_player="agent").reset(seed=3)[1]["events"] == []
    for seed in range(20):
        events = UnoEnv(first_player="opponent").reset(seed=seed)[1]["events"]
        assert events and events[0]["player"] == "opponent"
    env = UnoEnv(first_player="random")
    opponent_first = [bool(env.reset(seed=seed)[1]["events"]) for seed in range(400)]
    assert 0.4 < np.mean(opponent_first) < 0.6


# ---------------------------------------------------------------------------------------------- episode end
def test_truncation_is_not_termination():
    env = gym.make("Uno-v0", first_player="agent", max_episode_steps=2)
    _, info = env.reset(seed=11)
    outcomes = []
    for _ in range(2):
        action = int(np.flatnonzero(info["action_mask"])[0])
        _, reward, terminated, truncated, info = env.step(action)
        outcomes.append((reward, terminated, truncated))
    assert outcomes == [(0.0, False, False), (0.0, False, True)]
    assert "winner" not in info
    assert gym.spec("Uno-v0").max_episode_steps == 1000
