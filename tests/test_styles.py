"""The opponent styles (uno_env.styles): legal, seeded, playable by name everywhere, each with its own behaviour."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from test_opponents import random_game_views, view_of
from uno_testlib import act, capped

import uno_env  # noqa: F401 (registers Uno-v0)
from train.cli import evaluate, play
from uno_env.belief.models import NoisyRuleModel, opponent_model
from uno_env.cards import WILD, WILD_DRAW4, action_card
from uno_env.match import play_game
from uno_env.opponents import RulePolicy
from uno_env.policy import make_policy, policy_names
from uno_env.styles import HELD_OUT_STYLES, STYLES, TRAINING_STYLES, NoisyRulePolicy
from uno_env.view import PublicView

NAMES = sorted(STYLES)
#: The styles that draw random numbers (the others are deterministic).
RANDOM_STYLES = ("hold-wilds", "hold-actions", "noisy-rule")


@pytest.fixture(scope="module")
def views() -> list[PublicView]:
    """Views of random self-play with a choice to make (two or more legal actions)."""
    return [view for view in random_game_views(60) if len(view.legal_actions) > 1]


class Checked:
    """A style seen through ``act(view)`` only, asserting that each of its choices is legal."""

    def __init__(self, style: str) -> None:
        self.style = make_policy(style)
        self.choices = 0

    def reset(self, seed: int | None = None) -> None:
        self.style.reset(seed)

    def act(self, view: PublicView) -> int:
        action = self.style.act(view)
        assert action in view.legal_actions, (action, view.legal_actions)
        self.choices += 1
        return action


def choices(style: str, views: list[PublicView], seed: int = 3) -> list[int]:
    """The style's choices on ``views`` after ``reset(seed)``."""
    policy = make_policy(style)
    policy.reset(seed)
    return [policy.act(view) for view in views]


def colour_counts(hand: list[int]) -> list[int]:
    """The coloured cards held of each colour, from a hand of 54 counts."""
    return [sum(hand[colour * 13:(colour + 1) * 13]) for colour in range(4)]


def colour_of(action: int) -> int:
    """The colour a play leaves in force (RULES.md's layout: 15 action ids per colour)."""
    return action // 15


# ------------------------------------------------------------------------------------------ the population
def test_the_population_is_registered_and_split_into_training_and_held_out():
    assert len(STYLES) >= 6 and set(STYLES) <= set(policy_names())
    assert set(HELD_OUT_STYLES) | set(TRAINING_STYLES) == set(STYLES)
    assert not set(HELD_OUT_STYLES) & set(TRAINING_STYLES) and HELD_OUT_STYLES and TRAINING_STYLES


@pytest.mark.parametrize("name", NAMES)
def test_each_style_plays_only_legal_moves(name):
    for seed in range(12):
        styled, other = Checked(name), Checked(NAMES[(NAMES.index(name) + 1) % len(NAMES)])
        result = play_game((styled, other), seed, seed % 2)
        assert result.winner in (0, 1) and styled.choices > 3


@pytest.mark.parametrize("name", NAMES)
def test_each_style_is_the_env_opponent_and_reproducible_from_the_seed(name):
    def trajectory(seed: int) -> list[bytes]:
        env = gym.make("Uno-v0", opponent=name)
        observation, info = env.reset(seed=seed)
        seen = [observation.tobytes()]
        for _ in capped():
            legal = np.flatnonzero(info["action_mask"])
            observation, _, terminated, truncated, info = env.step(int(legal[-1]))
            seen.append(observation.tobytes())
            if terminated or truncated:
                return seen
        return seen

    assert trajectory(5) == trajectory(5)
    assert trajectory(5) != trajectory(6)


@pytest.mark.parametrize("name", RANDOM_STYLES)
def test_random_styles_draw_from_their_seed(name, views):
    assert choices(name, views, 3) == choices(name, views, 3)
    assert choices(name, views, 3) != choices(name, views, 4)


def test_every_style_plays_in_uno_evaluate(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    out = tmp_path / "styles.json"
    assert evaluate.main(["rule", "--opponents", *NAMES, "--pairs", "3", "--seed", "1", "--workers", "1",
                          "--no-progress", "--json", str(out)]) == 0
    rows = json.loads(out.read_text())
    assert [row["opponent"] for row in rows] == NAMES and all(row["games"] == 6 for row in rows)
    printed = capsys.readouterr().out
    assert all(f"| rule | {name} | 6 |" in printed for name in NAMES)


def test_every_style_plays_in_uno_play(capsys: pytest.CaptureFixture[str]):
    for first, second in zip(NAMES[::2], NAMES[1::2] + NAMES[:1], strict=True):
        assert play.main(["--watch", first, second, "--pace", "0", "--seed", "4", "--games", "1"]) == 0
        out = capsys.readouterr().out
        assert f"{first} against {second}" in out and f"{first} played " in out and f"{second} played " in out


# -------------------------------------------------------------------------------------- each style's behaviour
def check_on(views: list[PublicView], name: str, applies: Callable[[list[int]], bool],
             holds: Callable[[int, PublicView], bool]) -> None:
    """Assert ``holds(choice, view)`` on every view whose legal actions ``applies`` to, and that there were some."""
    policy = make_policy(name)
    policy.reset(0)
    checked = 0
    for view in views:
        if applies(view.legal_actions):
            choice = policy.act(view)
            assert holds(choice, view), (name, choice, view.legal_actions, view.hand)
            checked += 1
    assert checked >= 20, f"only {checked} views to check {name} on"


def numbers(legal: list[int]) -> list[int]:
    """The legal plays of a number card."""
    return [a for a in legal if 0 <= action_card(a) < WILD and a % 15 < 10]


def coloured(legal: list[int]) -> list[int]:
    """The legal plays of a coloured card."""
    return [a for a in legal if 0 <= action_card(a) < WILD]


def coloured_actions(legal: list[int]) -> list[int]:
    """The legal plays of a skip, reverse or draw two."""
    return [a for a in legal if 0 <= action_card(a) < WILD and a % 15 >= 10]


def test_hold_wilds_never_plays_a_wild_when_a_coloured_play_exists(views):
    check_on(views, "hold-wilds", lambda legal: coloured(legal) and len(coloured(legal)) < len(legal),
             lambda choice, view: action_card(choice) < WILD)


def test_wilds_first_plays_a_wild_whenever_it_holds_one_in_its_strongest_colour(views):
    def holds(choice: int, view: PublicView) -> bool:
        wanted = WILD_DRAW4 if any(action_card(a) == WILD_DRAW4 for a in view.legal_actions) else WILD
        return action_card(choice) == wanted and colour_counts(view.hand)[colour_of(choice)] == max(
            colour_counts(view.hand))

    check_on(views, "wilds-first", lambda legal: any(action_card(a) >= WILD for a in legal), holds)


def test_dump_actions_plays_an_action_card_whenever_it_can(views):
    def holds(choice: int, view: PublicView) -> bool:
        counts = colour_counts(view.hand)
        return choice in coloured_actions(view.legal_actions) and counts[colour_of(choice)] == max(
            counts[colour_of(a)] for a in coloured_actions(view.legal_actions))

    check_on(views, "dump-actions", lambda legal: bool(coloured_actions(legal)), holds)


def test_hold_actions_plays_a_number_whenever_it_can_then_a_plain_wild(views):
    check_on(views, "hold-actions", lambda legal: bool(numbers(legal)),
             lambda choice, view: choice in numbers(view.legal_actions))
    check_on(views, "hold-actions",
             lambda legal: not numbers(legal) and any(action_card(a) == WILD for a in legal),
             lambda choice, view: action_card(choice) == WILD)


def test_highest_number_plays_the_highest_number_it_can(views):
    check_on(views, "highest-number", lambda legal: bool(numbers(legal)),
             lambda choice, view: choice in numbers(view.legal_actions)
             and choice % 15 == max(a % 15 for a in numbers(view.legal_actions)))


def test_rule_fixed_colour_prefers_its_colour_not_the_colour_it_holds(views):
    # With only number cards to choose from and no attack due, the fixed preference alone decides: red first.
    preference = (0, 1, 2, 3)
    check_on(views, "rule-fixed-colour",
             lambda legal: len(numbers(legal)) == len(legal) and len({colour_of(a) for a in legal}) > 1,
             lambda choice, view: colour_of(choice) == min((colour_of(a) for a in view.legal_actions),
                                                           key=preference.index))
    held_most = view_of(["green:5", "green:6", "green:7", "red:3"], top="green:3")
    assert make_policy("rule-fixed-colour").act(held_most) == act("red:3")
    assert RulePolicy().act(held_most) == act("green:5")
    wild = view_of(["wild", "blue:1", "blue:2"], top="red:3")
    assert make_policy("rule-fixed-colour").act(wild) == act("wild", "red")


def test_noisy_rule_is_rule_but_for_a_quarter_of_uniform_choices(views):
    rule = [RulePolicy().act(view) for view in views]
    agree = np.mean([a == b for a, b in zip(choices("noisy-rule", views), rule, strict=True)])
    # A quarter of the choices uniform, some of which pick rule's move anyway: between 75% and 90% agree.
    assert 0.72 < agree < 0.92, agree
    assert isinstance(make_policy("noisy-rule").likelihood_model, NoisyRuleModel)
    quiet, loud = NoisyRulePolicy(noise=0.0), NoisyRulePolicy(noise=1.0)
    quiet.reset(0)
    loud.reset(0)
    assert [quiet.act(view) for view in views] == rule
    assert opponent_model(loud) is None and loud.compiled_player is None
    assert np.mean([loud.act(view) == r for view, r in zip(views, rule, strict=True)]) < 0.7
    with pytest.raises(ValueError, match="noise"):
        NoisyRulePolicy(noise=1.5)
