"""Every compiled player is one definition used three ways (uno_env.style_kernels, core.player_options).

The twins walked position by position (OpenSpiel's ``test_consistent``): the compiled move distribution of each
player against a frozen reference, the styles as ``uno_env.styles`` wrote them in Python before they were compiled
(the evaluation tables of docs/results.md were measured with those); the Python policies' choices, draw for draw,
against the reference's; the belief's likelihood against the distribution. Then the compiled players where they
play: legal and seeded in ``core.playout``, accepted and seeded in the native vector env.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from test_opponents import random_game_views

from uno_env import core
from uno_env.belief.learned import LearnedOpponent
from uno_env.belief.models import MODELS, PLAIN_MODEL, action_likelihood, opponent_model
from uno_env.cards import DRAW_ACTION, NUM_ACTIONS, WILD, WILD_DRAW4, action_card, card_rank
from uno_env.opponents import RandomPolicy, RulePolicy
from uno_env.policy import make_policy
from uno_env.seat import Seat
from uno_env.style_kernels import RULE_NOISE
from uno_env.styles import HELD_OUT_STYLES, STYLES, NoisyRulePolicy
from uno_env.vector import UnoVectorEnv
from uno_env.view import PublicView

PLAYERS = core.COMPILED_PLAYERS
STYLE_NAMES = sorted(STYLES)


# ------------------------------------------------------------------------- the reference: the styles as they were
def colour_counts(hand: list[int]) -> list[int]:
    return [sum(hand[colour * 13:(colour + 1) * 13]) for colour in range(4)]


def is_number(card: int) -> bool:
    return 0 <= card < WILD and card % 13 < 10


def is_coloured_action(card: int) -> bool:
    return 0 <= card < WILD and card % 13 >= 10


def rule_key(action: int, card: int, score: int, danger: bool) -> tuple[int, int]:
    """The rule player's (tier, score), ``score`` its colour score before the card's bonus."""
    if card == WILD:
        return 0, score - 5
    if card == WILD_DRAW4:
        return (2, score + 36) if danger else (0, score - 4)
    if is_coloured_action(card):
        return (2, score + 20) if danger else (1, score + 2)
    return 1, score


def rule_reference(legal: list[int], hand: list[int], opponent: int) -> int:
    colours = colour_counts(hand)
    return max(legal, key=lambda a: rule_key(a, action_card(a), colours[a // 15] - (action_card(a) < WILD),
                                             opponent <= 2))


def best_key(key: Callable[[int, int, list[int], int], tuple]) -> Callable[[list[int], list[int], int], int]:
    """A scored style: the largest key, the lowest id among equal keys (``max`` keeps the first)."""
    return lambda legal, hand, opponent: max(legal, key=lambda a: key(a, action_card(a), colour_counts(hand),
                                                                      opponent))


def top_tier(tier: Callable[[int], int]) -> Callable[[list[int], list[int], int], list[int]]:
    """A tiered style: the legal actions of the highest tier, uniformly."""
    def options(legal: list[int], hand: list[int], opponent: int) -> list[int]:
        top = max(tier(action_card(a)) for a in legal)
        return [a for a in legal if tier(action_card(a)) == top]
    return options


def wilds_first(legal: list[int], hand: list[int], opponent: int) -> int:
    wilds = [a for a in legal if action_card(a) >= WILD]
    if not wilds:
        return rule_reference(legal, hand, opponent)
    colours = colour_counts(hand)
    return max(wilds, key=lambda a: (action_card(a), colours[a // 15]))


def highest_number_key(a: int, card: int, colours: list[int], opponent: int) -> tuple:
    if is_number(card):
        return 2, card % 13, colours[a // 15]
    return (1 if card < WILD else 0), 0, colours[a // 15]


def dump_actions_key(a: int, card: int, colours: list[int], opponent: int) -> tuple:
    kind = 3 if is_coloured_action(card) else 2 if card == WILD_DRAW4 else 1 if card < WILD else 0
    return kind, colours[a // 15]


def fixed_colour_key(a: int, card: int, colours: list[int], opponent: int) -> tuple:
    return rule_key(a, card, (3, 2, 1, 0)[a // 15], opponent <= 2)


#: Each player's options (a list: uniform among them) and its share of uniform choices over all legal actions.
REFERENCE: dict[str, tuple[Callable[[list[int], list[int], int], list[int]], float]] = {
    "random": (lambda legal, hand, opponent: list(legal), 0.0),
    "rule": (lambda legal, hand, opponent: [rule_reference(legal, hand, opponent)], 0.0),
    "noisy-rule": (lambda legal, hand, opponent: [rule_reference(legal, hand, opponent)], RULE_NOISE),
    "hold-wilds": (top_tier(lambda card: 1 if card < WILD else 0), 0.0),
    "hold-actions": (top_tier(lambda card: 2 if is_number(card) else 1 if card == WILD else 0), 0.0),
    "wilds-first": (lambda legal, hand, opponent: [wilds_first(legal, hand, opponent)], 0.0),
    "dump-actions": (lambda legal, hand, opponent: [best_key(dump_actions_key)(legal, hand, opponent)], 0.0),
    "highest-number": (lambda legal, hand, opponent: [best_key(highest_number_key)(legal, hand, opponent)], 0.0),
    "rule-fixed-colour": (lambda legal, hand, opponent: [best_key(fixed_colour_key)(legal, hand, opponent)], 0.0),
}


def reference_distribution(name: str, view: PublicView) -> dict[int, float]:
    options, noise = REFERENCE[name]
    chosen = options(view.legal_actions, view.hand, view.opponent_hand_size)
    n = len(view.legal_actions)
    return {a: (1 - noise) * (a in chosen) / len(chosen) + noise / n for a in view.legal_actions}


def reference_choice(name: str, view: PublicView, rng: np.random.Generator) -> int:
    """The reference's draw, as the Python styles drew: ``random() < noise`` first (noisy-rule), then one
    ``integers(k)`` among ``k > 1`` options."""
    options, noise = REFERENCE[name]
    legal = view.legal_actions
    if len(legal) == 1:
        return legal[0]
    if noise and rng.random() < noise:
        return legal[int(rng.integers(len(legal)))]
    chosen = options(legal, view.hand, view.opponent_hand_size)
    return chosen[int(rng.integers(len(chosen)))] if len(chosen) > 1 else chosen[0]


# ------------------------------------------------------------------------------------------ the positions walked
@pytest.fixture(scope="module")
def views() -> list[PublicView]:
    """Positions of random self-play with a choice to make: about 3,000, danger (2 cards or fewer) included."""
    chosen = [view for view in random_game_views(120) if len(view.legal_actions) > 1]
    assert sum(view.opponent_hand_size <= 2 for view in chosen) > 100
    return chosen


def compiled_distribution(name: str, view: PublicView) -> dict[int, float]:
    code = PLAYERS.index(name)
    legal = np.array(view.legal_actions, dtype=np.int64)
    choice, options = core.player_options(code, np.array(view.hand, dtype=np.int64), view.opponent_hand_size, legal,
                                          len(legal))
    chosen = [a for a in view.legal_actions if options >> a & 1]
    assert choice == (chosen[0] if len(chosen) == 1 and name in core.DETERMINISTIC_PLAYERS + ("noisy-rule",)
                      else -1), (name, choice, chosen)
    noise = core.PLAYER_NOISE[code]
    return {a: (1 - noise) * (a in chosen) / len(chosen) + noise / len(legal) for a in view.legal_actions}


def test_the_references_cover_the_table():
    assert set(REFERENCE) == set(PLAYERS) and set(STYLES) < set(PLAYERS)


@pytest.mark.parametrize("name", PLAYERS)
def test_the_compiled_distribution_is_the_reference(name: str, views: list[PublicView]):
    for view in views:
        expected = reference_distribution(name, view)
        assert compiled_distribution(name, view) == pytest.approx(expected, abs=1e-12), (name, view.legal_actions)


@pytest.mark.parametrize("name", PLAYERS)
def test_the_likelihood_is_the_distribution(name: str, views: list[PublicView]):
    model = next(model for model in MODELS if model.player == name)
    scratch = np.empty(NUM_ACTIONS, dtype=np.int64)
    for view in views:
        if DRAW_ACTION in view.legal_actions:
            continue  # the likelihood is of plays; a draw is never a choice
        hand, rank = np.array(view.hand, dtype=np.int64), card_rank(view.top)
        likelihood = {a: action_likelihood(model.code, hand, a, view.active_colour, rank, view.opponent_hand_size,
                                           scratch) for a in view.legal_actions}
        assert sum(likelihood.values()) == pytest.approx(1.0, abs=1e-12)
        assert likelihood == pytest.approx(reference_distribution(name, view), abs=1e-12)


@pytest.mark.parametrize("name", STYLE_NAMES)
def test_the_python_style_draws_as_the_reference_drew(name: str, views: list[PublicView]):
    for seed in (0, 1):
        policy, rng = make_policy(name), np.random.default_rng(seed)
        policy.reset(seed if name not in core.DETERMINISTIC_PLAYERS else None)
        assert [policy.act(view) for view in views] == [reference_choice(name, view, rng) for view in views]


def test_rule_is_the_reference_rule(views: list[PublicView]):
    assert [RulePolicy().act(view) for view in views] == [rule_reference(view.legal_actions, view.hand,
                                                                         view.opponent_hand_size) for view in views]


# ----------------------------------------------------------------------------------- one model per compiled player
def test_every_compiled_player_has_one_model_naming_it():
    assert sorted(model.player for model in MODELS) == sorted(PLAYERS)
    codes = [model.code for model in MODELS]
    assert len(set(codes)) == len(codes) and PLAIN_MODEL not in codes
    policies = [RandomPolicy(), RulePolicy(), *(make_policy(name) for name in STYLE_NAMES)]
    for policy in policies:
        assert opponent_model(policy).player == type(policy).compiled_player, policy


def test_held_out_styles_are_not_what_a_learned_model_guesses():
    """Held-out styles are for evaluation only: the learned opponent model's default candidates name none."""
    assert not {candidate.player for candidate in LearnedOpponent().candidates} & set(HELD_OUT_STYLES)


def test_each_style_has_its_twin_and_draws_only_if_random():
    for name in STYLE_NAMES:
        seat = Seat(1, make_policy(name))
        code, words = seat.compiled_twin()
        assert PLAYERS[code] == name
        assert (words is None) == (name in core.DETERMINISTIC_PLAYERS) == (not seat.reads_seed), name
    assert Seat(1, NoisyRulePolicy(noise=0.5)).compiled_twin() is None  # no compiled player has that noise


# ----------------------------------------------------------------------------------- where the compiled players play
def dealt(seed: int) -> np.ndarray:
    state = np.zeros(core.STATE_SIZE, dtype=np.int64)
    core.deal_into(state, core.seed_stream(seed), seed % 2)
    return state


@pytest.mark.parametrize("name", STYLE_NAMES)
def test_each_compiled_style_plays_legal_moves_to_the_end(name: str):
    code, other = PLAYERS.index(name), core.RULE_POLICY
    legal = np.empty(NUM_ACTIONS, dtype=np.int64)
    for seed in range(8):
        state, stream = dealt(seed), core.seed_stream(seed + 100)
        for _ in range(3000):
            n = core.legal_actions_into(state, legal)
            if n == 0:
                break
            policy = code if state[core.CURRENT] == 0 else other
            action = core.choose(state, legal, n, policy, stream)
            assert action in legal[:n]
            core.apply_action(state, action, stream)
        assert state[core.OUTCOME] in (0, 1, core.DRAWN)


@pytest.mark.parametrize("name", STYLE_NAMES)
def test_each_compiled_style_is_reproducible_in_playout(name: str):
    code = PLAYERS.index(name)

    def finals(seed: int) -> list[bytes]:
        out = []
        for game in range(6):
            state = dealt(game)
            assert core.playout(state, code, core.RANDOM_POLICY, core.seed_stream(seed + game), 3000) != core.RUNNING
            out.append(state.tobytes())
        return out

    assert finals(7) == finals(7) and finals(7) != finals(8)


@pytest.mark.parametrize("name", STYLE_NAMES)
def test_the_native_vector_env_plays_each_style_from_its_seed(name: str):
    def run(seed: int) -> tuple[list[bytes], int]:
        env = UnoVectorEnv(4, opponent=name)
        obs, info = env.reset(seed=seed)
        rng, seen, ended = np.random.default_rng(0), [obs.tobytes()], 0
        for _ in range(150):
            actions = [int(rng.choice(np.flatnonzero(mask))) for mask in info["action_mask"]]
            obs, _, terminated, truncated, info = env.step(np.array(actions))
            seen.append(obs.tobytes())
            ended += int(terminated.sum())
        return seen, ended

    first, ended = run(3)
    assert ended > 0 and first == run(3)[0] and first != run(4)[0]
