"""The compiled actor (agents.compiled_actor) plays what the checkpoint plays, inside the kernels' playouts."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sb3_contrib import MaskablePPO
from uno_testlib import capped

from agents.actor_kernels import (
    BATCH,
    TANH,
    _bias_activate,
    actor_choice,
    actor_simulate,
    choose_rows,
    value_of,
    values_into,
)
from agents.compiled_actor import actor_params, value_params
from agents.ppo import PPOPolicy, save_model
from train.training.search_labels import SearchLabels, collect
from uno_env import UnoEnv, core
from uno_env.game import Game
from uno_env.observation import SeatObserver
from uno_env.opponents import RulePolicy
from uno_env.view import RESHUFFLE

SHIPPED = "models/search-q-none/model.zip"
AFTERSTATE = "models/search-q-afterstate/model.zip"  # an afterstate actor (agents.afterstate)


def _relu_checkpoint(tmp_path) -> str:
    model = MaskablePPO("MlpPolicy", UnoEnv(), seed=3, device="cpu",
                        policy_kwargs={"net_arch": [32, 16, 8], "activation_fn": torch.nn.ReLU})
    return str(save_model(model, tmp_path / "relu.zip", {"belief": "none", "config": "test", "steps": 0}))


def _checkpoint(which: str, tmp_path) -> str:
    return {"shipped": SHIPPED, "afterstate": AFTERSTATE}.get(which) or _relu_checkpoint(tmp_path)


@pytest.mark.parametrize("which", ["shipped", "relu", "afterstate"])
def test_the_compiled_actor_chooses_the_checkpoints_move_at_every_decision(which, tmp_path):
    policy = PPOPolicy.load(_checkpoint(which, tmp_path))
    params = actor_params(policy)
    observer, legal = SeatObserver(), np.empty(61, dtype=np.int64)
    compared = 0
    for seed in range(25):
        game = Game.deal(np.random.default_rng(seed), seed % 2)
        for _ in capped():
            if game.done:
                break
            move = policy.act(observer.observe(game, game.current))
            state = core.pack_state(game.hands, game.deck, game.discard, game.active_colour, game.current,
                                    game.pending_draw)
            n = core.legal_actions_into(state, legal)
            if n > 1:
                assert actor_choice(state, legal, n, params) == move
                compared += 1
            game.step(move)
    assert compared > 200


def test_a_network_with_belief_features_is_refused_by_name():
    with pytest.raises(ValueError, match="search-q-particles.*belief='particles'"):
        actor_params(PPOPolicy.load("models/search-q-particles/model.zip", name="search-q-particles"))


def test_actor_playouts_replay_for_a_seed_and_match_the_checkpoint_playing_the_same_game():
    policy = PPOPolicy.load(SHIPPED)
    params = actor_params(policy)
    differ = compared = 0
    for seed in range(30):
        game = Game.deal(np.random.default_rng(seed), seed % 2)
        state = core.pack_state(game.hands, game.deck, game.discard, game.active_colour, game.current,
                                game.pending_draw)
        action = game.legal_actions()[0]
        outcome = actor_simulate(state, action, 0, core.RULE_POLICY, params, np.uint64(seed), 5000)
        assert outcome == actor_simulate(state, action, 0, core.RULE_POLICY, params, np.uint64(seed), 5000)
        differ += outcome != core.simulate(state, action, core.RULE_POLICY, core.RULE_POLICY, np.uint64(seed), 5000)
        # The same game by the engine, seat 0 by the checkpoint, seat 1 by rule; games without a reshuffle only
        # (a reshuffle draws from numpy's generator in Game and from the kernels' stream here).
        game.step(action)
        observer, rule = SeatObserver(), RulePolicy()
        while not game.done:
            view = observer.observe(game, game.current)
            game.step(policy.act(view) if game.current == 0 else rule.act(game.observe(1)))
        if not any(event[0] == RESHUFFLE for event in game.events):
            assert outcome == game.outcome
            compared += 1
    assert differ >= 3 and compared >= 20  # the network's games are not the rule player's


def test_labels_over_a_checkpoint_record_its_moves():
    # 64 simulations: every legal move is tried, so every legal move has a label.
    observations, values, moves = collect(games=3, seed=1, belief="none", base=SHIPPED,
                                          search=SearchLabels(simulations=64))
    network = PPOPolicy.load(SHIPPED).network
    with torch.no_grad():
        logits = network.action_net(network.mlp_extractor.forward_actor(
            network.pi_features_extractor(torch.from_numpy(observations)))).numpy()
    assert np.array_equal(np.where(np.isfinite(values), logits, -np.inf).argmax(axis=1), moves)
    assert len(moves) > 20


@pytest.mark.parametrize("which", ["shipped", "relu", "afterstate"])
def test_a_batched_pass_makes_the_single_passes_choices_and_values(which, tmp_path):
    # choose_rows/values_into take the positions of a batch in one pass (a dense product over the rows), actor_choice
    # and value_of one at a time (the first layer from the non-zero inputs): the same moves, values within rounding.
    policy = PPOPolicy.load(_checkpoint(which, tmp_path))
    actor, critic = actor_params(policy), value_params(policy)
    games, legal, ctls = np.zeros((BATCH, core.STATE_SIZE), np.int64), np.zeros((BATCH, 61), np.int64), \
        np.zeros((BATCH, core.CTL_SIZE), np.int64)
    compared, choices, values = 0, np.empty(BATCH, np.int64), np.empty(BATCH, np.float32)
    for seed in range(12):
        game = Game.deal(np.random.default_rng(seed), seed % 2)
        rule = RulePolicy()
        m = 0
        for _ in capped():
            if game.done or m == BATCH:
                break
            games[m] = core.pack_state(game.hands, game.deck, game.discard, game.active_colour, game.current,
                                       game.pending_draw)
            ctls[m, core.CHOICES] = core.legal_actions_into(games[m], legal[m])
            m += 1
            game.step(rule.act(game.observe(game.current)))
        rows = np.arange(m)[::-1].copy()  # any order of the rows
        choose_rows(games, legal, ctls, rows, m, actor, choices)
        values_into(games, rows, m, critic, np.zeros((BATCH, 61), np.int64), values)
        for r, g in enumerate(rows):
            assert choices[r] == actor_choice(games[g], legal[g], ctls[g, core.CHOICES], actor)
            assert abs(values[r] - value_of(games[g], critic)) < 1e-5
            compared += 1
    assert compared > 300 and np.std(values) > 1e-3


def test_the_compiled_tanh_is_tanh_within_float32_rounding():
    # The forward pass's tanh is a rational fit (agents.actor_kernels._tanh); the shipped networks' moves rest on it.
    x = np.concatenate([np.linspace(0.0, 12.0, 240_001), [9.0, 1e30]]).astype(np.float32)
    rows = np.stack([x, -x])  # two rows of a batch: x and -x
    _bias_activate(rows, np.zeros(len(x), np.float32), TANH)
    assert np.abs(rows.astype(np.float64) - np.tanh(np.stack([x, -x]).astype(np.float64))).max() < 6e-7
    assert np.abs(rows).max() <= 1.0 + 3e-7 and rows[0, 0] == 0.0
    assert np.array_equal(rows[0], -rows[1])  # odd, to the bit
