"""The built-in policies (uno_env.opponents)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from uno_testlib import DRAW, act, capped, scenario

from uno_env.game import Game
from uno_env.opponents import RandomPolicy, RulePolicy
from uno_env.view import PublicView

OPPONENT_FILLER = ["yellow:1", "yellow:2", "yellow:4", "yellow:5", "yellow:6", "yellow:7", "yellow:8"]


def view_of(hand: list[str], top: str = "red:3", opponent_cards: int = 5, **kwargs) -> PublicView:
    """The agent's view with ``hand`` on ``top`` and an opponent holding ``opponent_cards`` cards."""
    game = Game.from_scenario(scenario(hand, OPPONENT_FILLER[:opponent_cards], [top], **kwargs),
                              np.random.default_rng(0))
    return game.observe(0)


def random_game_views(n_games: int) -> list[PublicView]:
    """Views of the seat to move from random self-play, for legality checks."""
    views = []
    for seed in range(n_games):
        rng = np.random.default_rng(seed)
        game = Game.deal(rng, seed % 2)
        for _ in capped():
            if game.done:
                break
            view = game.observe(game.current)
            views.append(view)
            game.step(view.legal_actions[int(rng.integers(len(view.legal_actions)))])
    return views


@pytest.fixture(scope="module")
def views() -> list[PublicView]:
    """Views from 40 random games, built when a test first asks (no games played at import time)."""
    return random_game_views(40)


# ---------------------------------------------------------------------------------------------- RandomPolicy
def test_random_policy_plays_only_legal_actions(views):
    policy = RandomPolicy()
    policy.reset(0)
    for view in views:
        assert policy.act(view) in view.legal_actions


def test_random_policy_is_seeded(views):
    def actions(seed: int) -> list[int]:
        policy = RandomPolicy()
        policy.reset(seed)
        return [policy.act(view) for view in views]

    assert actions(3) == actions(3)
    assert actions(3) != actions(4)


def test_random_policy_is_uniform_over_legal_ids():
    view = view_of(["red:7", "red:8", "wild"])
    assert len(view.legal_actions) == 6
    policy = RandomPolicy()
    policy.reset(1)
    counts = Counter(policy.act(view) for _ in range(6000))
    assert set(counts) == set(view.legal_actions)
    assert all(800 < count < 1200 for count in counts.values())


# ---------------------------------------------------------------------------------------------- RulePolicy
RULE_CASES = [
    # (id, hand, top, opponent cards, expected action)
    ("keeps_wild_over_a_coloured_card_even_with_a_strong_other_colour",
     ["red:5", "wild", "blue:1", "blue:2", "blue:4", "blue:5", "blue:6", "blue:7", "blue:8"], "red:3", 5, act("red:5")),
    ("keeps_wild_draw4_over_a_coloured_card",
     ["red:5", "wild_draw4", "green:1", "green:2", "green:4", "green:5", "green:6", "green:7"], "red:3", 5,
     act("red:5")),
    ("prefers_wild_draw4_to_a_plain_wild", ["wild", "wild_draw4", "blue:1"], "red:3", 5, act("wild_draw4", "blue")),
    ("declares_its_strongest_colour", ["wild", "blue:1", "blue:2", "blue:4", "green:1"], "red:3", 5,
     act("wild", "blue")),
    ("declares_its_strongest_colour_with_wild_draw4", ["wild_draw4", "green:1", "green:2", "yellow:4"], "red:3", 5,
     act("wild_draw4", "green")),
    ("stays_in_its_strong_colour", ["red:5", "green:3", "green:1", "green:2", "green:4"], "red:3", 5,
     act("green:3")),
    ("tempo_card_first_on_equal_colour", ["red:5", "red:skip", "blue:1"], "red:3", 5, act("red:skip")),
    ("no_attack_when_opponent_has_3", ["green:3", "green:1", "green:2", "green:4", "green:6", "red:skip"], "red:3", 3,
     act("green:3")),
    ("attacks_when_opponent_has_2", ["green:3", "green:1", "green:2", "green:4", "green:6", "red:skip"], "red:3", 2,
     act("red:skip")),
    ("attacks_when_opponent_has_1", ["green:3", "green:1", "green:2", "green:4", "green:6", "red:draw2"], "red:3", 1,
     act("red:draw2")),
    ("wild_draw4_is_the_strongest_attack", ["red:draw2", "wild_draw4", "red:5"], "red:3", 1,
     act("wild_draw4", "red")),
    ("no_wild_draw4_attack_when_safe", ["red:draw2", "wild_draw4", "red:5"], "red:3", 3, act("red:draw2")),
    ("plain_wild_is_no_attack", ["red:5", "wild", "blue:1", "blue:2", "blue:4", "blue:5"], "red:3", 1, act("red:5")),
    ("ties_go_to_the_lowest_action_id", ["red:5", "green:3"], "red:3", 5, act("red:5")),
]


@pytest.mark.parametrize(("hand", "top", "opponent_cards", "expected"), [c[1:] for c in RULE_CASES],
                         ids=[c[0] for c in RULE_CASES])
def test_rule_policy_behaviour(hand, top, opponent_cards, expected):
    view = view_of(hand, top, opponent_cards)
    assert expected in view.legal_actions
    assert RulePolicy().act(view) == expected


def test_rule_policy_takes_a_forced_draw():
    view = view_of(["red:draw2", "wild_draw4"], "blue:draw2", 2, pending_draw=2)
    assert view.legal_actions == [DRAW] and RulePolicy().act(view) == DRAW


def test_rule_policy_only_legal_and_deterministic(views):
    policy = RulePolicy()
    first = [policy.act(view) for view in views]
    policy.reset(123)
    assert [policy.act(view) for view in views] == first
    for view, action in zip(views, first, strict=True):
        assert action in view.legal_actions
        coloured = [a for a in view.legal_actions if a % 15 < 13]
        if coloured and view.opponent_hand_size > 2:
            assert action % 15 < 13, "a coloured card is always played before a wild"


def test_rule_policy_beats_random_play():
    wins = 0
    rule, rand = RulePolicy(), RandomPolicy()
    for seed in range(300):
        rand.reset(seed)
        game = Game.deal(np.random.default_rng(seed), seed % 2)
        for _ in capped():
            if game.done:
                break
            view = game.observe(game.current)
            game.step((rule if game.current == 0 else rand).act(view))
        wins += game.outcome == 0
    assert wins > 0.55 * 300
