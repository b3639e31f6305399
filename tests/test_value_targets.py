"""The value function's training data: self-play states are positions of real games, rollouts value them."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from uno_testlib import scenario

from agents.compiled_actor import actor_params, network_digest
from agents.ppo import PPOPolicy
from agents.shipped import checkpoint_path
from train.evaluation import fit_value
from train.evaluation.control_variates import state_of
from train.evaluation.fit_value import _start_from
from train.evaluation.value import (
    AGENT_FEATURES,
    AS_AGENT,
    AS_RANDOM,
    AS_RULE,
    COLOUR,
    CURRENT,
    DECK,
    HANDS,
    PENDING,
    TOP,
    ValueFunction,
    features,
)
from train.evaluation.value_targets import pack_row, rollout_values, self_play_states
from train.policies import resolve_policy
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
    assert rollout_values(rows, np.array([AS_RULE, AS_RULE]), 8, 3).tolist() == [1.0, 0.0]


def test_rollouts_are_seeded_and_average_over_deck_orders():
    game = deal_game(3, 0)
    row = state_of(game)[None]
    rule = np.array([AS_RULE, AS_RULE])
    assert rollout_values(row, rule, 64, 9) == rollout_values(row, rule, 64, 9)
    values = rollout_values(np.repeat(row, 50, axis=0), rule, 4, 9)
    assert len(set(values.tolist())) > 1  # each playout shuffles the deck anew


def test_a_seat_marked_random_plays_random_in_the_rollouts():
    rows = np.stack([state_of(deal_game(seed, 0)) for seed in range(40)])
    both_rule = rollout_values(rows, np.array([AS_RULE, AS_RULE]), 200, 2).mean()
    seat0_random = rollout_values(rows, np.array([AS_RANDOM, AS_RULE]), 200, 2).mean()
    seat1_random = rollout_values(rows, np.array([AS_RULE, AS_RANDOM]), 200, 2).mean()
    # rule beats random about 3 games in 4 (docs/results.md): far outside these averages' noise (about 0.005)
    assert seat0_random < both_rule - 0.15 and seat1_random > both_rule + 0.15


def test_self_play_states_are_positions_of_seeded_games():
    states, numbers, seats = self_play_states(60, 4)
    again, _, again_seats = self_play_states(60, 4)
    assert np.array_equal(states, again) and not np.array_equal(states, self_play_states(60, 5)[0][:len(states)])
    assert np.array_equal(np.unique(numbers), np.arange(60)) and np.all(np.diff(numbers) >= 0)
    held = states[:, HANDS:HANDS + _N] + states[:, HANDS + _N:DECK] + states[:, DECK:DECK + _N]
    assert np.all(held <= np.array(COPIES)) and np.all(held.sum(axis=1) < 108)
    assert np.all(held[np.arange(len(states)), states[:, TOP]] < np.array(COPIES)[states[:, TOP]])
    firsts = np.flatnonzero(np.diff(numbers, prepend=-1))
    assert np.all(states[firsts, HANDS:DECK].sum(axis=1) == 14) and np.all(states[firsts, PENDING] == 0)
    assert set(states[:, CURRENT].tolist()) == {0, 1} and states[:, COLOUR].max() < 4
    assert np.array_equal(seats, again_seats)
    by_game = {tuple(codes) for codes in seats[firsts].tolist()}
    assert by_game == {(AS_RULE, AS_RULE), (AS_RANDOM, AS_RULE), (AS_RULE, AS_RANDOM), (AS_RANDOM, AS_RANDOM)}
    assert all((seats[numbers == game] == seats[firsts[game]]).all() for game in range(60))


def test_a_states_value_has_the_same_digits_alone_and_in_any_batch():
    """V's forward pass sums in a fixed order (``value.dense``): BLAS's ``@`` gave other last digits for a row
    depending on the batch around it and the thread settings, so worker layouts changed adjusted win rates."""
    states, _, seats = self_play_states(20, 6)
    value = ValueFunction.load()
    whole = value.seat0(states, seats)
    pieces = np.concatenate([value.seat0(states[i:i + 7], seats[i:i + 7]) for i in range(0, len(states), 7)])
    assert np.array_equal(whole, pieces)
    x = features(states, seats)
    for layer, (w, b) in enumerate(zip(value.weights, value.biases, strict=True)):
        x = x @ w + b
        x = np.maximum(x, 0.0) if layer < len(value.weights) - 1 else x
    mover = 1.0 / (1.0 + np.exp(-x[:, 0].astype(np.float64)))
    assert np.allclose(value.mover(states, seats), mover, atol=1e-5)


@pytest.fixture(scope="module")
def actor() -> tuple:
    """The compiled actor of a shipped network (the cheapest to play)."""
    return actor_params(PPOPolicy.load(checkpoint_path("search-q-none", "test")))


def test_an_agents_games_seat_it_against_rule_and_random_on_both_seats(actor: tuple):
    states, numbers, seats = self_play_states(40, 8, actor)
    again, _, again_seats = self_play_states(40, 8, actor)
    assert np.array_equal(states, again) and np.array_equal(seats, again_seats)
    firsts = np.flatnonzero(np.diff(numbers, prepend=-1))
    by_game = {tuple(codes) for codes in seats[firsts].tolist()}
    assert by_game == {(AS_AGENT, AS_RULE), (AS_RULE, AS_AGENT), (AS_AGENT, AS_RANDOM), (AS_RANDOM, AS_AGENT)}
    # Not the games of the general V's players from the same deals: the agent's moves are its own.
    assert not np.array_equal(states[:200], self_play_states(40, 8)[0][:200])


def test_a_seat_marked_agent_plays_the_network_in_the_rollouts(actor: tuple):
    rows = np.stack([state_of(deal_game(seed, seed % 2)) for seed in range(40)])
    both_rule = rollout_values(rows, np.array([AS_RULE, AS_RULE]), 100, 3).mean()
    agent_first = rollout_values(rows, np.array([AS_AGENT, AS_RULE]), 100, 3, actor).mean()
    agent_second = rollout_values(rows, np.array([AS_RULE, AS_AGENT]), 100, 3, actor).mean()
    # The network wins about 57% of its games against rule (docs/results.md); these means' noise is about 0.008.
    assert agent_first > both_rule + 0.03 and agent_second < both_rule - 0.03
    with pytest.raises(ValueError, match="needs its actor"):
        rollout_values(rows, np.array([AS_AGENT, AS_RULE]), 1, 3)


def test_an_agents_value_takes_which_seat_plays_it_and_keeps_its_name(tmp_path):
    states = self_play_states(5, 2)[0]
    general = features(states, np.array([AS_RANDOM, AS_RULE]))
    x = features(states, np.array([AS_AGENT, AS_RANDOM]), agent_inputs=True)
    assert x.shape == (len(states), AGENT_FEATURES) and general.shape[1] == AGENT_FEATURES - 2
    mover0 = states[:, CURRENT] == 0
    assert np.array_equal(x[:, -2], mover0.astype(np.float32)) and np.array_equal(x[:, -1], (~mover0) * 1.0)
    assert np.array_equal(x[:, -4], (~mover0) * 1.0)  # the random flags are still there: seat 1 plays random
    rng = np.random.default_rng(0)
    agent = ValueFunction([rng.normal(size=(AGENT_FEATURES, 4)), rng.normal(size=(4, 1))],
                          [np.zeros(4), np.zeros(1)], agent="0123456789abcdef")
    agent.save(tmp_path / "v.npz")
    again = ValueFunction.load(tmp_path / "v.npz")
    assert again.agent == "0123456789abcdef" and again.digest() == agent.digest()
    assert np.array_equal(again.seat0(states, np.array([AS_AGENT, AS_RULE])),
                          agent.seat0(states, np.array([AS_AGENT, AS_RULE])))
    with pytest.raises(ValueError, match="do not take"):  # the general V's input count is not an agent's
        ValueFunction(agent.weights, agent.biases)


def test_an_agents_fit_starts_from_the_general_value():
    """The agent's inputs start at zero weight: before any step the agent's V is the general V."""
    general = ValueFunction.load()
    sizes = [AGENT_FEATURES, *(w.shape[1] for w in general.weights)]
    layers: list[torch.nn.Module] = []
    for i in range(len(sizes) - 1):
        layers += [torch.nn.Linear(sizes[i], sizes[i + 1]), torch.nn.ReLU()]
    net = torch.nn.Sequential(*layers[:-1])
    _start_from(net, general)
    states, _, seats = self_play_states(10, 3)
    with torch.no_grad():
        logits = net(torch.from_numpy(features(states, seats, agent_inputs=True)))[:, 0].numpy()
    assert np.allclose(1.0 / (1.0 + np.exp(-logits.astype(np.float64))), general.mover(states, seats), atol=1e-5)


def test_fit_value_writes_an_agents_value_and_refuses_states_of_other_players(tmp_path, capsys):
    out, states = tmp_path / "v.npz", tmp_path / "states.npz"
    argv = ["--games", "10", "--rollouts", "1", "--epochs", "1", "--out", str(out), "--states", str(states)]
    assert fit_value.main(["--agent", "search-q-none", *argv]) == 0
    assert ValueFunction.load(out).agent == network_digest(resolve_policy("search-q-none"))
    assert fit_value.main(argv) == 2  # the general V from the agent's games: refused, naming the file
    assert f"--states {states}: its games were played by the agent" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        fit_value.main(["--agent", "nobody", *argv])
    assert "--agent: network 'nobody' is neither a shipped agent" in capsys.readouterr().err
