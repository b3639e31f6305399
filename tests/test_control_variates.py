"""The control variates: every term has expectation zero, checked exactly on small positions and on whole games."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from itertools import permutations
from pathlib import Path

import numpy as np
import pytest
from uno_testlib import scenario

from train.evaluation.control_variates import known_probabilities, replay, state_of
from train.evaluation.lookahead import seat_players
from train.evaluation.matches import run_matches
from train.evaluation.value import CURRENT, DECK, FEATURES, HANDS, PENDING, ValueFunction
from uno_env.cards import DRAW_ACTION, NUM_CARD_TYPES
from uno_env.core import draw_plan
from uno_env.game import Game
from uno_env.match import play_game
from uno_env.opponents import RandomPolicy, RulePolicy
from uno_env.seat import deal_game


def random_value(seed: int = 0, hidden: int = 16, scale: float = 0.5) -> ValueFunction:
    """An arbitrary value network: random weights, values spread over (0, 1)."""
    rng = np.random.default_rng(seed)
    return ValueFunction([rng.normal(0, scale, (FEATURES, hidden)), rng.normal(0, 1, (hidden, 1))],
                         [rng.normal(0, 0.1, hidden), np.zeros(1)])


def constant_mover_value(p: float = 0.8) -> ValueFunction:
    """The seat to move scores ``p`` everywhere: seat 0's value still changes whenever the turn does."""
    return ValueFunction([np.zeros((FEATURES, 1))], [np.array([np.log(p / (1 - p))])])


_RULE, _RANDOM = RulePolicy(), RandomPolicy()


def _leaves(game: Game, known: tuple, depth: int) -> Iterator[tuple[float, list]]:
    """Every way the game goes on for ``depth`` moves (or to its end, or to a draw that would reshuffle): the
    probability of each branch (the known player's choices) and its events. Seat 0 plays rule, seat 1 random."""
    legal = game.legal_actions()
    reshuffles = legal == [DRAW_ACTION] and draw_plan(game.pending_draw, len(game.deck), len(game.discard))[1]
    if game.done or depth == 0 or reshuffles:  # a stopping time: the sum of the terms up to it has mean zero too
        yield 1.0, list(game.events)
        return
    seat = game.current
    if known[seat] is not None and len(legal) > 1:
        branches = zip(legal, known[seat](legal, game.hands[seat], game.hand_sizes[1 - seat]), strict=True)
    else:
        branches = [(_RULE.act_legal(legal, game.hands[seat], game.hand_sizes[1 - seat]), 1.0)]
    for action, p in branches:
        child = copy.deepcopy(game)
        child.step(action)
        for q, events in _leaves(child, known, depth - 1):
            yield p * q, events


@pytest.mark.parametrize("lookahead", [False, True])
@pytest.mark.parametrize("pending", [0, 2])
@pytest.mark.parametrize("value", [random_value(2, scale=2.0), constant_mover_value()])
def test_the_terms_cancel_exactly_over_every_deck_order_and_every_known_choice(pending: int, value: ValueFunction,
                                                                             lookahead: bool):
    # The deck holds card types in unequal numbers: an expectation over the distinct types instead of the cards,
    # over the wrong seat's hand, or over other actions than the legal ones would not cancel. With the lookahead,
    # each outcome is valued after rule's replayed moves (random's choices stop it): still exactly zero on average.
    players = seat_players((_RULE, _RANDOM)) if lookahead else None
    deck = ["yellow:1", "yellow:1", "green:7", "wild", "red:3"]
    top = "yellow:draw2" if pending else "yellow:7"
    known = (None, known_probabilities(_RANDOM))
    total, mass, terms = 0.0, 0.0, 0
    for order in set(permutations(deck)):
        scn = scenario(["red:1", "blue:2", "red:9"], ["yellow:4", "green:5", "wild_draw4"], [top], list(order),
                       rest="discard", pending_draw=pending)
        start = Game.from_scenario(scn, np.random.default_rng(0))
        for p, events in _leaves(copy.deepcopy(start), known, depth=6):
            chance = replay(copy.deepcopy(start), events, known)
            total += p * chance.correction(value, players=players)
            mass += p
            terms += len(chance.actual)
    assert mass == pytest.approx(len(set(permutations(deck))))
    assert terms > 1000  # the branches reached many draws and choices
    assert abs(total / mass) < 1e-8  # float32 networks: a wrong expectation is off by about 1e-3


def test_an_expectation_over_the_card_types_instead_of_the_cards_does_not_cancel():
    """What the exact test above would catch: weighting each type the deck holds equally is biased."""
    value = random_value(5, scale=0.5)
    deck = ["yellow:1", "yellow:1", "green:7"]
    total = 0.0
    orders = set(permutations(deck))
    for order in orders:
        start = Game.from_scenario(scenario(["red:1"], ["blue:5", "blue:6"], ["yellow:7"], list(order),
                                            rest="discard"), np.random.default_rng(0))
        game = copy.deepcopy(start)
        game.step(DRAW_ACTION)
        chance = replay(start, game.events)
        v = chance.values(value)
        right = v[chance.actual].sum() - (chance.weights * v).sum()
        wrong = v[chance.actual].sum() - v.mean()  # the two outcomes (yellow:1, green:7) weighted 1/2 each
        assert chance.correction(value) == pytest.approx(right)
        total += np.array([right, wrong])
    assert abs(total[0]) < 1e-9 and abs(total[1]) > 1e-6


def test_a_draw_of_two_goes_through_the_state_between_its_cards():
    start = Game.from_scenario(scenario(["red:1"], ["blue:5", "blue:6"], ["yellow:draw2"], ["green:7", "wild"],
                                        rest="discard", pending_draw=2), np.random.default_rng(0))
    game = copy.deepcopy(start)
    game.step(DRAW_ACTION)
    chance = replay(start, game.events)
    first, second = chance.states[chance.actual]
    wild, green7 = NUM_CARD_TYPES - 2, 1 * 13 + 7
    # A scenario's deck is listed in draw order: green:7 first, with one card still to draw by the same seat.
    assert first[HANDS + green7] == 1 and first[DECK + green7] == 0 and first[CURRENT] == 0 and first[PENDING] == 1
    assert second[HANDS + wild] == 1 and second[CURRENT] == 1 and second[PENDING] == 0
    assert second[HANDS:DECK].tolist() == game.hands[0] + game.hands[1]


@pytest.mark.parametrize("players", [(RulePolicy(), RandomPolicy()), (RandomPolicy(), RandomPolicy())])
def test_whole_games_replay_to_the_end_the_engine_reached(players):
    for seed in range(5):
        dealt: list[Game] = []
        play_game(players, seed, seed % 2, on_deal=dealt.append)
        chance = replay(deal_game(seed, seed % 2), dealt[0].events, tuple(map(known_probabilities, players)))
        assert chance.states[chance.actual[-1], HANDS:DECK].tolist() == dealt[0].hands[0] + dealt[0].hands[1]


@pytest.mark.parametrize("matchup", [("rule", "random"), ("search-q-none", "rule")])
def test_adjusted_and_plain_means_agree_whatever_the_value_function(tmp_path: Path, matchup: tuple[str, str]):
    """Over many games the corrections average to zero with an arbitrary V (their mean within 4 standard errors),
    a network's moves replayed by the lookahead or not."""
    for index, value in enumerate((random_value(4, scale=2.0), constant_mover_value(0.7))):
        path = tmp_path / f"v{index}.npz"
        value.save(path)
        result, = run_matches([matchup], pairs=80, seed=11, workers=1, control_variates=path)
        corrections = (result.pair_scores - result.adjusted_scores).ravel()
        assert corrections.std() > 0.05  # the terms are not all zero
        assert abs(corrections.mean()) < 4 * corrections.std(ddof=1) / np.sqrt(corrections.size)


def test_the_shipped_value_network_knows_a_won_position_from_a_lost_one():
    value = ValueFunction.load()
    opponent = ["blue:1", "blue:2", "green:3", "green:4", "yellow:5", "yellow:6", "blue:9"]
    positions = [scenario(["red:5"], opponent, ["red:7"], to_move=mover) for mover in ("agent", "opponent")]
    # Seat 0 goes out on its move; when seat 1 moves first it has nothing red and no 7 (a draw), then seat 0 goes out.
    near_wins = value.seat0(np.stack([state_of(Game.from_scenario(p, np.random.default_rng(0))) for p in positions]))
    assert (near_wins > 0.8).all()
    mirrored = scenario(opponent, ["red:5"], ["red:7"], to_move="opponent")
    assert value.seat0(state_of(Game.from_scenario(mirrored, np.random.default_rng(0)))[None])[0] < 0.2


def test_a_value_file_that_is_not_one_is_refused(tmp_path: Path):
    bad = tmp_path / "v.npz"
    bad.write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="not a value network"):
        ValueFunction.load(bad)
    with pytest.raises(ValueError, match="no such file"):
        ValueFunction.load(tmp_path / "missing.npz")
    np.savez(bad, w0=np.zeros((3, 1)), b0=np.zeros(1))
    with pytest.raises(ValueError, match="do not take"):
        ValueFunction.load(bad)
