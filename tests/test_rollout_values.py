"""Move values by rollouts (train.training.rollout_values): the labels of the rollout-values warm start."""

from __future__ import annotations

from typing import get_args, get_type_hints

import numpy as np
import pytest
import torch
from sb3_contrib import MaskablePPO
from uno_testlib import act, scenario

from agents.ppo import save_model
from train.config import PretrainConfig
from train.training.rollout_values import SEARCH_BELIEFS, BasePlayer, SearchLabels, collect, fit, move_values
from uno_env import UnoEnv, core
from uno_env.game import Game
from uno_env.observation import BASE_SIZE


def position(agent: list[str], opponent: list[str], top: str) -> Game:
    return Game.from_scenario(scenario(agent, opponent, [top]), np.random.default_rng(0))


def test_a_move_that_wins_at_once_is_worth_one_and_illegal_moves_have_no_value():
    # red skip, then red 5 alone wins: skip gives the same seat another turn, and red 5 is its only move then.
    game = position(["red:skip", "red:5"], ["blue:1", "blue:2", "blue:3"], "red:9")
    values = move_values(game, deck_orders=4, rng=np.random.default_rng(1))
    legal = game.legal_actions()
    assert sorted(np.flatnonzero(np.isfinite(values))) == legal
    assert values[act("red:skip")] == 1.0
    assert -1.0 <= values[act("red:5")] <= 1.0


def test_a_move_that_hands_the_opponent_the_win_is_worth_minus_one():
    # Green 4 (on the yellow 4, by rank) makes green the colour, and the opponent goes out with its green 2: a
    # sure loss. Yellow 6 keeps yellow in force, which the opponent's only card cannot follow.
    game = position(["green:4", "yellow:6"], ["green:2"], "yellow:4")
    values = move_values(game, deck_orders=8, rng=np.random.default_rng(2))
    assert values[act("green:4")] == -1.0
    assert values[act("yellow:6")] > -1.0  # the opponent must draw: some deck orders let this seat win


def test_the_labels_replay_for_a_seed_and_the_game_is_left_untouched():
    game = Game.deal(np.random.default_rng(5))
    before = (game.hands[0][:], game.hands[1][:], game.deck[:], game.discard[:], game.current)
    first = move_values(game, 4, np.random.default_rng(9))
    assert np.array_equal(first, move_values(game, 4, np.random.default_rng(9)), equal_nan=True)
    assert (game.hands[0], game.hands[1], game.deck, game.discard, game.current) == before


def test_collect_records_choices_with_rule_moves_and_the_belief_features_asked_for():
    observations, values, moves = collect(games=4, seed=3, deck_orders=2, belief="counting")
    assert len(observations) == len(values) == len(moves) > 0
    assert observations.shape[1] > BASE_SIZE  # the counting features follow the base channels
    legal = observations[:, 54:115] > 0.5  # the observation's legal-move channel
    assert np.array_equal(np.isfinite(values), legal)
    assert (legal.sum(axis=1) > 1).all()  # only decisions with a choice
    assert legal[np.arange(len(moves)), moves].all()
    none_observations, none_values, none_moves = collect(games=4, seed=3, deck_orders=2, belief="none")
    # the same games whatever the features: the belief does not touch the deal or the players
    assert none_observations.shape[1] == BASE_SIZE and np.array_equal(none_moves, moves)
    assert np.array_equal(none_values, values, equal_nan=True)  # same labels: a belief ablation is paired


def _greedy_moves(model, observations: np.ndarray, legal: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        policy = model.policy
        logits = policy.action_net(policy.mlp_extractor.forward_actor(
            policy.extract_features(torch.from_numpy(observations)))).numpy()
    return np.where(legal, logits, -np.inf).argmax(axis=1)


def test_fit_learns_the_best_move_and_the_bonus_pulls_toward_the_rule_move():
    observations, values, moves = collect(games=30, seed=4, deck_orders=1, belief="none")
    legal = np.isfinite(values)
    # Synthetic labels: a fixed preferred move (the highest legal id) is worth +0.5, every other legal move 0.
    best = np.array([np.flatnonzero(row).max() for row in legal])
    synthetic = np.where(legal, 0.0, np.nan)
    synthetic[np.arange(len(best)), best] = 0.5
    model, metrics = fit(observations, synthetic, moves, epochs=40, seed=0)
    plain = _greedy_moves(model, observations, legal)
    assert (plain == best).mean() > 0.9
    assert metrics["held_out_value_of_network_move"] >= metrics["held_out_value_of_base_move"]
    # A bonus larger than any gain moves the network toward the rule player's moves.
    biased, _ = fit(observations, synthetic, moves, epochs=40, seed=0, base_bonus=1.0)
    assert (_greedy_moves(biased, observations, legal) == moves).mean() > (plain == moves).mean() + 0.2


def test_a_random_base_plays_varied_moves_and_labels_replay_for_a_seed():
    first = collect(games=10, seed=2, deck_orders=1, belief="none", base="random")
    again = collect(games=10, seed=2, deck_orders=1, belief="none", base="random")
    assert all(np.array_equal(a, b, equal_nan=True) for a, b in zip(first, again, strict=True))
    # random's moves spread over the legal ones: a stream restarted at every move would repeat one choice
    observations, _, moves = first
    lowest = (observations[:, 54:115] > 0.5).argmax(axis=1)  # the first legal action id
    assert len(moves) > 30 and 0.2 < (moves == lowest).mean() < 0.7


def test_search_labels_value_the_same_positions_and_agree_with_playouts_from_the_true_position():
    search = SearchLabels(simulations=1000, belief="counting")
    observations, values, moves = collect(games=12, seed=6, deck_orders=1, belief="none", search=search)
    rollout_observations, rollout_values, rollout_moves = collect(games=12, seed=6, deck_orders=32, belief="none")
    # the same games and base moves: only the labels differ, so the two kinds of labels compare paired
    assert np.array_equal(observations, rollout_observations) and np.array_equal(moves, rollout_moves)
    legal = np.isfinite(rollout_values)
    assert np.array_equal(np.isfinite(values), legal)
    assert (np.abs(values[legal]) <= 1.0).all()
    # Both estimate each move's value under rule continuations, one from the true hidden hand, the other over the
    # belief's hands: centred on each position's mean, they agree in part (0.27-0.34 on two seeds; a label put on
    # the wrong move would make it about 0).
    def centred(table: np.ndarray) -> np.ndarray:
        return (table - np.nanmean(table, axis=1, keepdims=True))[legal]
    assert np.corrcoef(centred(values), centred(rollout_values))[0, 1] > 0.15
    again = collect(games=12, seed=6, deck_orders=1, belief="none", search=search)
    assert np.array_equal(again[1], values, equal_nan=True)  # same seed, same search, same labels


def test_aware_search_labels_are_told_the_opponent_and_label_the_same_positions_differently():
    plain, aware = SearchLabels(simulations=400, belief="particles"), SearchLabels(simulations=400, belief="aware")
    assert aware.player(BasePlayer()).opponent_policy is not None and plain.player(BasePlayer()).opponent_policy is None
    observations, values, moves = collect(games=6, seed=8, deck_orders=1, belief="none", search=plain)
    aware_observations, aware_values, aware_moves = collect(games=6, seed=8, deck_orders=1, belief="none",
                                                            search=aware)
    # The games are the base player's: the search's belief changes the labels only.
    assert np.array_equal(observations, aware_observations) and np.array_equal(moves, aware_moves)
    legal = np.isfinite(values)
    assert np.array_equal(np.isfinite(aware_values), legal)
    # Told that the opponent plays rule, the filter weighs its hands by rule's choices: other worlds, other values.
    assert not np.allclose(values[legal], aware_values[legal])


def test_search_labels_name_the_beliefs_they_know():
    with pytest.raises(ValueError, match="search belief must be one of counting, particles, aware, got 'none'"):
        SearchLabels(belief="none")  # type: ignore[arg-type]


def test_the_config_offers_exactly_the_search_beliefs_the_labels_know():
    # train.config must not import torch to parse a file, so it spells the choices again: this keeps them one list.
    assert get_args(get_type_hints(PretrainConfig)["search_belief"]) == SEARCH_BELIEFS


def test_search_labels_roll_out_the_base_player_on_its_seat_and_rule_on_the_other(tmp_path):
    # rule as the base is the search player itself; random (policy iteration from scratch) knows nothing of play.
    assert SearchLabels().player(BasePlayer("rule"))._compiled_rollout == (core.RULE_POLICY, core.RULE_POLICY)
    assert SearchLabels().player(BasePlayer("random"))._compiled_rollout == (core.RANDOM_POLICY, core.RULE_POLICY)
    model = MaskablePPO("MlpPolicy", UnoEnv(), seed=2, device="cpu", policy_kwargs={"net_arch": [8]})
    base = BasePlayer(save_model(model, tmp_path / "round.zip", {"belief": "none", "config": "test", "steps": 0}))
    player = SearchLabels().player(base)
    assert player._actor is base.params and player._compiled_rollout[1] == core.RULE_POLICY


def test_a_search_budget_below_the_legal_moves_leaves_the_unsimulated_moves_unlabelled():
    """Two simulations a decision cannot try every move: those it never tried get no label (NaN), and nothing fails."""
    _, values, moves = collect(games=4, seed=2, deck_orders=1, belief="none", search=SearchLabels(2))
    tried = np.isfinite(values).sum(axis=1)
    assert tried.max() <= 2 and (tried >= 1).all()
    assert len(moves) > 20
