"""The value function's training data: self-play states are positions of real games, rollouts value them."""

from __future__ import annotations

import numpy as np
from uno_testlib import scenario

from train.evaluation.control_variates import state_of
from train.evaluation.value import COLOUR, CURRENT, DECK, HANDS, PENDING, TOP, ValueFunction, features
from train.evaluation.value_targets import pack_row, rollout_values, self_play_states
from uno_env import core
from uno_env.cards import COPIES, NUM_CARD_TYPES, card_rank
from uno_env.game import Game
from uno_env.seat import deal_game

_N = NUM_CARD_TYPES


def test_a_packed_row_is_the_game_it_came_from_but_for_the_deck_order():
    rng = np.random.default_rng(1)
    stream = core.seed_stream(5)
    state = np.zeros(core.STATE_SIZE, dtype=np.int64)
    checked = 0
    for seed in range(4):
        game = deal_game(seed, seed % 2)
        while not game.done:
            pack_row(state_of(game), state, stream)
            assert state[core.HANDS:core.HANDS + 2 * _N].tolist() == game.hands[0] + game.hands[1]
            assert state[[core.HAND_SIZES, core.HAND_SIZES + 1]].tolist() == list(game.hand_sizes)
            deck = state[core.DECK:core.DECK + state[core.DECK_LEN]]
            assert sorted(deck.tolist()) == sorted(game.deck)
            discard = state[core.DISCARD:core.DISCARD + state[core.DISCARD_LEN]]
            assert sorted(discard.tolist()) == sorted(game.discard) and discard[-1] == game.top
            assert state[core.COUNTS:core.COUNTS + _N].tolist() == list(game.discard_counts)
            assert (state[core.COLOUR], state[core.TOP_RANK], state[core.CURRENT], state[core.PENDING]) == \
                (game.active_colour, card_rank(game.top), game.current, game.pending_draw)
            game.step(int(rng.choice(game.legal_actions())))
            checked += 1
    assert checked > 100


def test_rollouts_value_a_position_the_seat_to_move_wins_at_once_as_won():
    going_out = scenario(["red:5"], ["blue:1", "blue:2", "green:3"], ["red:7"], to_move="agent")
    stuck = scenario(["blue:1", "blue:2", "green:3"], ["red:5"], ["red:7"], to_move="opponent")
    rows = np.stack([state_of(Game.from_scenario(s, np.random.default_rng(0))) for s in (going_out, stuck)])
    assert rollout_values(rows, np.zeros(2, bool), 8, 3).tolist() == [1.0, 0.0]


def test_rollouts_are_seeded_and_average_over_deck_orders():
    game = deal_game(3, 0)
    row = state_of(game)[None]
    rule = np.zeros(2, dtype=bool)
    assert rollout_values(row, rule, 64, 9) == rollout_values(row, rule, 64, 9)
    values = rollout_values(np.repeat(row, 50, axis=0), rule, 4, 9)
    assert len(set(values.tolist())) > 1  # each playout shuffles the deck anew


def test_a_seat_marked_random_plays_random_in_the_rollouts():
    rows = np.stack([state_of(deal_game(seed, 0)) for seed in range(40)])
    both_rule = rollout_values(rows, np.array([False, False]), 200, 2).mean()
    seat0_random = rollout_values(rows, np.array([True, False]), 200, 2).mean()
    seat1_random = rollout_values(rows, np.array([False, True]), 200, 2).mean()
    # rule beats random about 3 games in 4 (docs/results.md): far outside these averages' noise (about 0.005)
    assert seat0_random < both_rule - 0.15 and seat1_random > both_rule + 0.15


def test_self_play_states_are_positions_of_seeded_games():
    states, numbers, random_seats = self_play_states(60, 4)
    again, _, again_seats = self_play_states(60, 4)
    assert np.array_equal(states, again) and not np.array_equal(states, self_play_states(60, 5)[0][:len(states)])
    assert np.array_equal(np.unique(numbers), np.arange(60)) and np.all(np.diff(numbers) >= 0)
    held = states[:, HANDS:HANDS + _N] + states[:, HANDS + _N:DECK] + states[:, DECK:DECK + _N]
    assert np.all(held <= np.array(COPIES)) and np.all(held.sum(axis=1) < 108)
    assert np.all(held[np.arange(len(states)), states[:, TOP]] < np.array(COPIES)[states[:, TOP]])
    firsts = np.flatnonzero(np.diff(numbers, prepend=-1))
    assert np.all(states[firsts, HANDS:DECK].sum(axis=1) == 14) and np.all(states[firsts, PENDING] == 0)
    assert set(states[:, CURRENT].tolist()) == {0, 1} and states[:, COLOUR].max() < 4
    assert np.array_equal(random_seats, again_seats)
    by_game = {tuple(flags) for flags in random_seats[firsts].tolist()}
    assert by_game == {(False, False), (True, False), (False, True), (True, True)}  # every pairing, both seats
    assert all((random_seats[numbers == game] == random_seats[firsts[game]]).all() for game in range(60))


def test_a_states_value_has_the_same_digits_alone_and_in_any_batch():
    """V's forward pass sums in a fixed order (``value.dense``): BLAS's ``@`` gave other last digits for a row
    depending on the batch around it and the thread settings, so worker layouts changed adjusted win rates."""
    states, _, random_seats = self_play_states(20, 6)
    value = ValueFunction.load()
    whole = value.seat0(states, random_seats)
    pieces = np.concatenate([value.seat0(states[i:i + 7], random_seats[i:i + 7]) for i in range(0, len(states), 7)])
    assert np.array_equal(whole, pieces)
    x = features(states, random_seats)
    for layer, (w, b) in enumerate(zip(value.weights, value.biases, strict=True)):
        x = x @ w + b
        x = np.maximum(x, 0.0) if layer < len(value.weights) - 1 else x
    mover = 1.0 / (1.0 + np.exp(-x[:, 0].astype(np.float64)))
    assert np.allclose(value.mover(states, random_seats), mover, atol=1e-5)
