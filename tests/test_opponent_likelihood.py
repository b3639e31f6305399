"""The opponent models' likelihood, move by move (uno_env/belief/models.py and the trajectory filter's kernels).

Each case is a hand-made view where the probability of the observed move is known in closed form from the
documented policies (RULES.md, :class:`uno_env.opponents.RulePolicy`'s scoring): ``random`` picks uniformly among
the legal action ids (a wild counts once per declared colour), ``rule`` picks by tier then score, attacking when
*its opponent* holds two cards or fewer. Each case is built so that reading a swapped field (the mover's own hand
size for its opponent's, the top card's rank for the colour in force) changes an assertion.

Then the same likelihoods inside the beliefs: on a five-card pool the posterior after one observed play is worked
out by hand for each model, and both the exact enumeration (which calls the models) and the policy-aware particle
filter (whose compiled kernels log the decision's fields themselves) must match it.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest
from belief_testlib import Replay, counts
from uno_testlib import act, scenario

from uno_env.belief import ExactBelief, RandomModel, RuleModel, TrajectoryBelief
from uno_env.belief.models import (
    NOISY_RULE_MODEL,
    PLAIN_MODEL,
    RANDOM_MODEL,
    RULE_MODEL,
    NoisyRuleModel,
    action_likelihood,
)
from uno_env.belief.tracker import Decision
from uno_env.cards import card_id, card_rank
from uno_env.style_kernels import RULE_NOISE

RED, GREEN, BLUE, YELLOW = range(4)


def likelihood(model: int, hand: list[str], action: int, top: str, colour: int, opponent_size: int) -> float:
    """``pi(action | hand)`` straight from the compiled function."""
    return action_likelihood(model, counts(hand), action, colour, card_rank(card_id(top)), opponent_size,
                             np.empty(60, np.int64))


def decision(top: str, colour: int, own: int, opponent: int) -> Decision:
    """The public side of the modelled player's decision: it holds ``own`` cards, its opponent ``opponent``."""
    return Decision(card_id(top), colour, own, opponent, 30)


# ---------------------------------------------------------------------------------------------- each model alone
def test_a_card_not_held_has_probability_zero_under_every_model():
    for model in (PLAIN_MODEL, RANDOM_MODEL, RULE_MODEL, NOISY_RULE_MODEL):
        assert likelihood(model, ["red:5", "blue:1"], act("red:7"), "red:9", RED, 5) == 0.0
    assert likelihood(PLAIN_MODEL, ["red:5", "red:5", "blue:1"], act("red:5"), "red:9", RED, 5) == 1.0


def test_random_is_uniform_over_the_legal_action_ids():
    # On red:9: red:5, red:7 (colour), blue:9 (rank) and the wild's four colours: 7 ids; green:2 is not playable.
    hand = ["red:5", "red:7", "blue:9", "green:2", "wild"]
    for action in (act("red:5"), act("red:7"), act("blue:9"), act("wild", "yellow")):
        assert likelihood(RANDOM_MODEL, hand, action, "red:9", RED, 5) == pytest.approx(1 / 7)
    # After a wild that declared green the colour in force is green, the top's rank none of the hand's:
    # green:2 and the wild's four ids. Reading the top's colour or rank for the colour in force gives another count.
    assert likelihood(RANDOM_MODEL, hand, act("green:2"), "wild", GREEN, 5) == pytest.approx(1 / 5)
    # On blue:7 with blue in force: blue:9 (colour), red:7 (rank), the wild: 6 ids
    assert likelihood(RANDOM_MODEL, hand, act("red:7"), "blue:7", BLUE, 5) == pytest.approx(1 / 6)
    # the same through the model object and a Decision, for several hands at once
    rows = np.array([counts(hand), counts(["red:7", "blue:1"]), counts(["red:5"])])
    got = RandomModel().likelihood(rows, act("red:7"), decision("blue:7", BLUE, 5, 5))
    assert got == pytest.approx([1 / 6, 1 / 2, 0.0])  # the second: red:7 by rank, blue:1 by colour


# The rule player holding red:5, red:skip, a +4 and blue:1 on red:9. Its opponent at 2 cards: attack, and the +4
# (score 2 reds + 36, declaring red, the lowest id of the best colour) beats the skip (2 - 1 + 20). Its opponent at
# 3 cards or more: no attack; the skip (2 - 1 + 2) beats red:5 (2 - 1), and wilds come last.
RULE_HAND = ["red:5", "red:skip", "wild_draw4", "blue:1"]


def test_noisy_rule_is_rule_with_a_share_of_uniform_choices():
    # On red:9 the hand has 7 legal ids (red:5, red:7, blue:9, the wild's four colours); rule plays one of them.
    hand = ["red:5", "red:7", "blue:9", "green:2", "wild"]
    legal = [act("red:5"), act("red:7"), act("blue:9")] + [act("wild", c) for c in ("red", "green", "blue", "yellow")]
    chosen = [a for a in legal if likelihood(RULE_MODEL, hand, a, "red:9", RED, 5) == 1.0]
    assert len(chosen) == 1
    noisy = {a: likelihood(NOISY_RULE_MODEL, hand, a, "red:9", RED, 5) for a in legal}
    assert noisy[chosen[0]] == pytest.approx(1 - RULE_NOISE + RULE_NOISE / 7)
    assert all(noisy[a] == pytest.approx(RULE_NOISE / 7) for a in legal if a != chosen[0])
    assert sum(noisy.values()) == pytest.approx(1.0)
    row = NoisyRuleModel().likelihood(np.array([counts(hand)]), chosen[0], decision("red:9", RED, 5, 5))
    assert row[0] == pytest.approx(noisy[chosen[0]])


@pytest.mark.parametrize(("opponent", "chosen"), [(1, act("wild_draw4", "red")), (2, act("wild_draw4", "red")),
                                                  (3, act("red:skip")), (7, act("red:skip"))])
def test_rule_attacks_exactly_when_its_opponent_holds_two_cards_or_fewer(opponent, chosen):
    legal = [act("red:5"), act("red:skip")] + [act("wild_draw4", c) for c in ("red", "green", "blue", "yellow")]
    for action in legal:
        expected = float(action == chosen)
        assert likelihood(RULE_MODEL, RULE_HAND, action, "red:9", RED, opponent) == expected, action
    # Through a Decision: the modelled player's own hand size (4 here, or 2) is not the one that matters.
    for own in (2, 4, 9):
        row = RuleModel().likelihood(np.array([counts(RULE_HAND)]), chosen, decision("red:9", RED, own, opponent))
        assert row.tolist() == [1.0]


def test_rule_prefers_the_colour_it_holds_most_and_reads_the_colour_in_force():
    # On a wild with blue in force: blue:2 and blue:8 are playable (tier 1, score 2 - 1 = 1 each: the lower id
    # wins), the wild is tier 0. With yellow in force only the wild is playable, declaring blue (3 blues held).
    hand = ["blue:2", "blue:8", "wild", "red:4"]
    assert likelihood(RULE_MODEL, hand, act("blue:2"), "wild", BLUE, 5) == 1.0
    assert likelihood(RULE_MODEL, hand, act("blue:8"), "wild", BLUE, 5) == 0.0
    assert likelihood(RULE_MODEL, hand, act("wild", "blue"), "wild", YELLOW, 5) == 1.0
    assert likelihood(RULE_MODEL, hand, act("wild", "red"), "wild", YELLOW, 5) == 0.0


# ---------------------------------------------------------------------------------------------- inside the beliefs
# The opponent moves first and plays red:5 on red:9. The pool (cards we do not see) is five: its hand and a
# two-card deck, everything else under the top card. A hypothesis is its hand before the play: red:5 and the
# others drawn uniformly from the four other pool cards; the posterior weighs each by the model's likelihood.
POOL_OTHERS = ["blue:1", "green:7", "yellow:1", "wild_draw4"]


def _game(ours: list[str], theirs: list[str]) -> dict:
    deck = [card for card in POOL_OTHERS if card not in theirs]
    return scenario(ours, theirs, ["red:9"], deck, rest="discard", to_move="opponent")


def _posterior(theirs_size: int, likelihood_of) -> np.ndarray:
    """Expected counts after the play, summed by hand over the hypotheses (pairs or singles of POOL_OTHERS)."""
    expected, total = np.zeros(54), 0.0
    for others in combinations(POOL_OTHERS, theirs_size - 1):
        weight = likelihood_of("wild_draw4" in others)
        expected += weight * counts(list(others))
        total += weight
    return expected / total


# (our hand, their hand, model, likelihood of red:5 for a hypothesis with / without the +4)
# Ours 2 cards, theirs 3: rule would have attacked with the +4, so no hand with it is possible; random picks red:5
# with 1/5 (red:5 and four +4 ids) against 1. Ours 4 cards, theirs 2: no attack, the +4 (tier 0) loses to red:5.
CASES = [
    ("rule, we hold 2", ["green:3", "yellow:8"], ["red:5", "blue:1", "green:7"], RuleModel,
     lambda plus4: 0.0 if plus4 else 1.0),
    ("random, we hold 2", ["green:3", "yellow:8"], ["red:5", "blue:1", "green:7"], RandomModel,
     lambda plus4: 0.2 if plus4 else 1.0),
    ("rule, we hold 4", ["green:3", "yellow:8", "green:4", "yellow:2"], ["red:5", "blue:1"], RuleModel,
     lambda plus4: 1.0),
    ("plain, we hold 2", ["green:3", "yellow:8"], ["red:5", "blue:1", "green:7"], None, lambda plus4: 1.0),
]


@pytest.mark.parametrize(("ours", "theirs", "model", "weight"), [case[1:] for case in CASES],
                         ids=[case[0] for case in CASES])
def test_the_beliefs_weigh_each_hand_by_the_models_likelihood(ours, theirs, model, weight):
    expected = _posterior(len(theirs), weight)
    exact = ExactBelief(model=None if model is None else model())
    filters = [TrajectoryBelief(3000, np.random.default_rng(seed), model=None if model is None else model())
               for seed in range(2)]
    replay = Replay(_game(ours, theirs), exact, *filters)
    replay.move("opponent", act("red:5"))
    assert exact.expected_counts() == pytest.approx(expected, abs=1e-12)
    for pf in filters:
        assert (pf.recoveries, pf.fallbacks) == (0, 0)
        got = pf.expected_counts()
        assert got == pytest.approx(expected, abs=0.06)
        if expected[card_id("wild_draw4")] == 0.0:  # a hand the model rules out gets no particle at all
            assert got[card_id("wild_draw4")] == 0.0


@pytest.mark.parametrize("model", [None, RuleModel, RandomModel], ids=["plain", "rule", "random"])
def test_a_draw_rules_out_every_hand_with_a_playable_card(model):
    """The opponent, holding two cards, draws on red:9: under every model it held nothing playable (no red, no 9, no
    wild) and then drew one of the three other pool cards, each equally likely."""
    pool = ["blue:1", "green:7", "yellow:1", "wild_draw4", "red:3"]
    scn = scenario(["green:3", "yellow:8"], ["blue:1", "green:7"], ["red:9"], ["yellow:1", "wild_draw4", "red:3"],
                   rest="discard", to_move="opponent")
    expected, total = np.zeros(54), 0
    for pair in combinations(pool, 2):
        if {"wild_draw4", "red:3"} & set(pair):
            continue
        for drawn in (card for card in pool if card not in pair):
            expected += counts([*pair, drawn])
            total += 1
    expected /= total
    exact = ExactBelief(model=None if model is None else model())
    pf = TrajectoryBelief(3000, np.random.default_rng(0), model=None if model is None else model())
    Replay(scn, exact, pf).move("opponent", 60)
    assert exact.expected_counts() == pytest.approx(expected, abs=1e-12)
    assert pf.expected_counts() == pytest.approx(expected, abs=0.06) and (pf.recoveries, pf.fallbacks) == (0, 0)
