"""The search's move values (train.training.search_labels): the labels of expert iteration, and their fit
(train.training.fit)."""

from __future__ import annotations

from typing import get_args, get_type_hints

import numpy as np
import pytest
import torch
from sb3_contrib import MaskablePPO

from agents.ppo import save_model
from train.config import ExpertIterationConfig
from train.training.fit import fit
from train.training.search_labels import OPPONENT_ROLLOUTS, SEARCH_BELIEFS, BasePlayer, SearchLabels, collect
from uno_env import UnoEnv, core
from uno_env.belief import NoisyRuleModel
from uno_env.observation import BASE_SIZE

FEW = SearchLabels(simulations=20, belief="counting")


def test_collect_records_choices_with_the_base_moves_and_the_belief_features_asked_for():
    observations, values, moves = collect(games=4, seed=3, belief="counting", base="rule", search=FEW)
    assert len(observations) == len(values) == len(moves) > 0
    assert observations.shape[1] > BASE_SIZE  # the counting features follow the base channels
    legal = observations[:, 54:115] > 0.5  # the observation's legal-move channel
    assert (np.isfinite(values) <= legal).all() and np.isfinite(values).any(axis=1).all()
    assert (legal.sum(axis=1) > 1).all()  # only decisions with a choice
    assert legal[np.arange(len(moves)), moves].all()
    none_observations, none_values, none_moves = collect(games=4, seed=3, belief="none", base="rule", search=FEW)
    # the same games whatever the features: the belief does not touch the deal or the players
    assert none_observations.shape[1] == BASE_SIZE and np.array_equal(none_moves, moves)
    assert np.array_equal(none_values, values, equal_nan=True)  # same labels: a belief ablation is paired


def _greedy_moves(model, observations: np.ndarray, legal: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        policy = model.policy
        logits = policy.action_net(policy.mlp_extractor.forward_actor(
            policy.extract_features(torch.from_numpy(observations)))).numpy()
    return np.where(legal, logits, -np.inf).argmax(axis=1)


def test_fit_learns_the_best_move():
    observations, values, moves = collect(games=30, seed=4, belief="none", base="rule", search=FEW)
    legal = observations[:, 54:115] > 0.5
    # Synthetic labels: a fixed preferred move (the highest legal id) is worth +0.5, every other legal move 0.
    best = np.array([np.flatnonzero(row).max() for row in legal])
    synthetic = np.where(legal, 0.0, np.nan)
    synthetic[np.arange(len(best)), best] = 0.5
    model, metrics = fit(observations, synthetic, moves, epochs=40, seed=0)
    plain = _greedy_moves(model, observations, legal)
    assert (plain == best).mean() > 0.9
    assert metrics["held_out_value_of_network_move"] >= metrics["held_out_value_of_base_move"]


def test_a_random_base_plays_varied_moves_and_labels_replay_for_a_seed():
    first = collect(games=10, seed=2, belief="none", base="random", search=FEW)
    again = collect(games=10, seed=2, belief="none", base="random", search=FEW)
    assert all(np.array_equal(a, b, equal_nan=True) for a, b in zip(first, again, strict=True))
    # random's moves spread over the legal ones: a stream restarted at every move would repeat one choice
    observations, _, moves = first
    lowest = (observations[:, 54:115] > 0.5).argmax(axis=1)  # the first legal action id
    assert len(moves) > 30 and 0.2 < (moves == lowest).mean() < 0.7


def test_aware_search_labels_are_told_the_opponent_and_label_the_same_positions_differently():
    plain, aware = SearchLabels(simulations=400, belief="particles"), SearchLabels(simulations=400, belief="aware")
    assert aware.player(BasePlayer()).opponent_policy is not None and plain.player(BasePlayer()).opponent_policy is None
    observations, values, moves = collect(games=6, seed=8, belief="none", base="rule", search=plain)
    aware_observations, aware_values, aware_moves = collect(games=6, seed=8, belief="none", base="rule",
                                                            search=aware)
    # The games are the base player's: the search's belief changes the labels only.
    assert np.array_equal(observations, aware_observations) and np.array_equal(moves, aware_moves)
    legal = np.isfinite(values)
    assert np.array_equal(np.isfinite(aware_values), legal)
    # Told that the opponent plays rule, the filter weighs its hands by rule's choices: other worlds, other values.
    assert not np.allclose(values[legal], aware_values[legal])


def test_search_labels_name_the_beliefs_they_know():
    with pytest.raises(ValueError,
                       match="search belief must be one of counting, particles, aware, learned, got 'none'"):
        SearchLabels(belief="none")  # type: ignore[arg-type]


def test_the_config_offers_exactly_the_search_beliefs_the_labels_know():
    # train.config must not import torch to parse a file, so it spells the choices again: this keeps them one list.
    assert get_args(get_type_hints(ExpertIterationConfig)["belief"]) == SEARCH_BELIEFS
    assert get_args(get_type_hints(ExpertIterationConfig)["opponent_rollout"]) == OPPONENT_ROLLOUTS


def test_learned_search_labels_model_the_opponent_they_meet_instead_of_rule(monkeypatch):
    monkeypatch.setattr(NoisyRuleModel, "player", "rule", raising=False)  # so every default candidate has one
    modelled = SearchLabels(simulations=200, belief="learned", opponent_rollout="modelled")
    player = modelled.player(BasePlayer("random"))
    assert player.opponent_model == "learned" and player.opponent_policy is None and player.belief == "particles"
    assert player._compiled_rollout == (core.RANDOM_POLICY, None) and player._candidate_players is not None
    mix = {"random": 1.0, "hold-actions": 1.0}
    plain = SearchLabels(simulations=200, belief="learned")
    observations, values, moves = collect(games=4, seed=8, belief="none", base="rule", search=plain, opponent=mix)
    modelled_labels = collect(games=4, seed=8, belief="none", base="rule", search=modelled, opponent=mix)
    # The games are the base player's: where the search rolls out the opponent it learned, only the labels change.
    assert np.array_equal(observations, modelled_labels[0]) and np.array_equal(moves, modelled_labels[2])
    legal = np.isfinite(values)
    assert np.array_equal(np.isfinite(modelled_labels[1]), legal)
    assert not np.allclose(values[legal], modelled_labels[1][legal])
    with pytest.raises(ValueError, match="opponent_rollout 'modelled' plays the opponent the belief learns: it needs "
                                         "belief 'learned', got 'particles'"):
        SearchLabels(belief="particles", opponent_rollout="modelled")


def test_search_labels_roll_out_the_base_player_on_its_seat_and_rule_on_the_other(tmp_path):
    # rule as the base is the search player itself; random (policy iteration from scratch) knows nothing of play.
    assert SearchLabels().player(BasePlayer("rule"))._compiled_rollout == (core.RULE_POLICY, core.RULE_POLICY)
    assert SearchLabels().player(BasePlayer("random"))._compiled_rollout == (core.RANDOM_POLICY, core.RULE_POLICY)
    model = MaskablePPO("MlpPolicy", UnoEnv(), seed=2, device="cpu", policy_kwargs={"net_arch": [8]})
    base = BasePlayer(save_model(model, tmp_path / "round.zip", {"belief": "none", "config": "test", "steps": 0}))
    player = SearchLabels().player(base)
    assert player._actor is base.params and player._compiled_rollout[1] == core.RULE_POLICY
    # Guided (leaf_moves): the network's critic scores the leaves; a built-in base has none, so its search plays out.
    guided = SearchLabels(leaf_moves=4).player(base)
    assert guided.value is base.value and guided.value is not None and guided.leaf_moves == 4
    unguided = SearchLabels(leaf_moves=4).player(BasePlayer("rule"))
    assert unguided.value is None and unguided.leaf_moves is None
    assert SearchLabels().player(base).value is None


def test_a_search_budget_below_the_legal_moves_leaves_the_unsimulated_moves_unlabelled():
    """Two simulations a decision cannot try every move: those it never tried get no label (NaN), and nothing fails."""
    _, values, moves = collect(games=4, seed=2, belief="none", base="rule", search=SearchLabels(2))
    tried = np.isfinite(values).sum(axis=1)
    assert tried.max() <= 2 and (tried >= 1).all()
    assert len(moves) > 20
