"""The afterstate actor (agents.afterstate): its move features, its head, its checkpoints, its fit, its config.

The features must describe the move and the hand it leaves exactly; the head must score every legal move as its
scorer does one move at a time, 0 elsewhere, and tell moves apart by their features; a checkpoint must load
without unpickling and play the same; the search-values fit must learn a value that lives in the afterstate; the
run's network alone is fitted centred and annealed.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from sb3_contrib import MaskablePPO

from agents.actor_kernels import forward
from agents.afterstate import MOVE_FEATURES, TABLES, AfterstateHead, AfterstatePolicy, move_features
from agents.compiled_actor import actor_params
from agents.files import file_digest
from agents.ppo import SETTINGS_MEMBER, PPOPolicy, load_network, save_model
from train.config import ConfigError, parse_config
from train.training import expert_iteration
from train.training import fit as fitting
from train.training.expert_iteration import run_expert_iteration
from train.training.fit import SCALE, fit
from train.training.trainer import train
from uno_env import core
from uno_env.cards import DRAW_ACTION, NUM_ACTIONS, NUM_CARD_TYPES, card_id, colour_id, play_action
from uno_env.env import UnoEnv
from uno_env.game import Game
from uno_env.observation import BASE_SIZE, LEGAL_CHANNEL, encode_state_into
from uno_env.opponents import RulePolicy

TABLE_TENSORS = {name: torch.from_numpy(table) for name, table in TABLES.items()}


def hand_of(*names: str) -> torch.Tensor:
    hand = torch.zeros((1, NUM_CARD_TYPES))
    for name in names:
        hand[0, card_id(name)] += 1
    return hand


def features_of(hand: torch.Tensor, action: int) -> dict[str, torch.Tensor]:
    row = move_features(hand, torch.tensor([action]), TABLE_TENSORS)[0]
    sizes = {"card": 54, "colour": 4, "draw": 1, "hand_after": 54, "colours_after": 4, "wilds_after": 2,
             "follow": 1, "size_after": 1}
    assert sum(sizes.values()) == MOVE_FEATURES == len(row)
    return dict(zip(sizes, torch.split(row, list(sizes.values())), strict=True))


def test_the_features_of_a_coloured_card():
    hand = hand_of("red:7", "red:2", "blue:7", "green:1", "wild")
    move = features_of(hand, play_action(card_id("red:7"), colour_id("red")))
    assert move["card"].nonzero().flatten().tolist() == [card_id("red:7")]
    assert move["colour"].tolist() == [1, 0, 0, 0] and move["draw"].item() == 0
    assert torch.equal(move["hand_after"], (hand - hand_of("red:7"))[0])
    assert move["colours_after"].tolist() == [1, 1, 1, 0]  # red:2, green:1, blue:7
    assert move["wilds_after"].tolist() == [1, 0]
    # what can follow a red 7: red:2 (colour), blue:7 (rank), the wild
    assert move["follow"].item() == pytest.approx(3 / 7) and move["size_after"].item() == pytest.approx(4 / 20)


def test_the_features_of_a_wild_and_of_the_draw():
    hand = hand_of("wild", "wild_draw4", "blue:3", "blue:9", "red:3")
    wild = features_of(hand, play_action(card_id("wild"), colour_id("blue")))
    assert wild["card"].nonzero().flatten().tolist() == [card_id("wild")]
    assert wild["colour"].tolist() == [0, 0, 1, 0]
    assert wild["wilds_after"].tolist() == [0, 1]
    assert wild["follow"].item() == pytest.approx(3 / 7)  # two blues and the wild draw four; a wild has no rank
    draw = features_of(hand, DRAW_ACTION)
    assert draw["draw"].item() == 1 and draw["card"].sum() == 0 and draw["colour"].sum() == 0
    assert torch.equal(draw["hand_after"], hand[0]) and draw["size_after"].item() == pytest.approx(5 / 20)


def observations(count: int, seed: int) -> np.ndarray:
    """Observations of the agent's turns in games against rule, the agent playing uniformly random legal moves."""
    env = UnoEnv(opponent="rule")
    rng = np.random.default_rng(seed)
    rows = []
    obs, info = env.reset(seed=seed)
    while len(rows) < count:
        rows.append(obs)
        obs, _, terminated, truncated, info = env.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))
        if terminated or truncated:
            obs, info = env.reset(seed=int(rng.integers(2**31)))
    return np.array(rows, dtype=np.float32)


def test_the_head_scores_each_legal_move_as_its_scorer_does_and_nothing_else():
    torch.manual_seed(0)
    head = AfterstateHead(BASE_SIZE, [32, 16], torch.nn.Tanh)
    batch = observations(40, seed=1)
    with torch.no_grad():
        logits = head(torch.from_numpy(batch))
        for row, obs in enumerate(batch):
            legal = np.flatnonzero(obs[LEGAL_CHANNEL])
            assert logits[row, np.setdiff1d(np.arange(NUM_ACTIONS), legal)].abs().sum() == 0
            for action in legal:
                one = torch.from_numpy(obs[None])
                inputs = torch.cat((one, move_features(one[:, :NUM_CARD_TYPES], torch.tensor([action]),
                                                       TABLE_TENSORS)), dim=1)
                assert logits[row, action].item() == pytest.approx(head.scorer(inputs).item(), abs=1e-5)
    several = [row for row in logits if (row != 0).sum() > 1]
    assert several and all(len(set(row[row != 0].tolist())) == (row != 0).sum() for row in several)


def follow_labels(batch: np.ndarray) -> np.ndarray:
    """Each legal move's label: the cards it leaves that could follow it (a value of the afterstate)."""
    rows, actions = np.nonzero(batch[:, LEGAL_CHANNEL] > 0)
    follow = move_features(torch.from_numpy(batch[rows, :NUM_CARD_TYPES]), torch.from_numpy(actions),
                           TABLE_TENSORS)[:, -2].numpy()
    values = np.full((len(batch), NUM_ACTIONS), np.nan)
    values[rows, actions] = follow
    return values


def test_a_fit_learns_a_value_that_lives_in_the_afterstate():
    """On fresh positions whose moves' labels differ, the fitted head picks a best move by the labels; the first
    legal move does not. (A per-action MLP fitted the same way picked one at about two positions in three.)"""
    batch = observations(3000, seed=2)
    values = follow_labels(batch)
    model, _ = fit(batch, values, np.argmax(np.isfinite(values), axis=1), epochs=20, seed=0, net_arch=[64],
                   learning_rate=3e-3, batch_size=64, actor="afterstate", centred=True, cosine=True)
    assert isinstance(model.policy, AfterstatePolicy)
    fresh = observations(1000, seed=5)
    labels = follow_labels(fresh)
    best = np.nanmax(labels, axis=1)
    differ = np.nanmin(labels, axis=1) < best
    with torch.no_grad():
        logits = model.policy.action_net(torch.from_numpy(fresh)).numpy()
    chosen = np.where(np.isfinite(labels), logits, -np.inf).argmax(axis=1)
    first = np.isfinite(labels).argmax(axis=1)
    rows = np.arange(len(fresh))
    assert differ.sum() > 100
    assert np.mean((labels[rows, chosen] == best)[differ]) > 0.95
    assert np.mean((labels[rows, first] == best)[differ]) < 0.5  # so the check above has something to find


def test_a_checkpoint_loads_without_unpickling_and_plays_the_same(tmp_path: Path):
    model, _ = fit(observations(200, seed=3), *_random_labels(200), epochs=1, seed=0, net_arch=[16, 8],
                   actor="afterstate")
    path = save_model(model, tmp_path / "afterstate.zip", {"belief": "none", "steps": 0})
    with zipfile.ZipFile(path) as archive:
        record = json.loads(archive.read(SETTINGS_MEMBER))["policy"]
    assert record["class"] == "AfterstatePolicy" and record["head_arch"] == [16, 8]
    loaded = PPOPolicy.load(path)
    batch = observations(30, seed=4)
    with torch.no_grad():
        expected = model.policy.action_net(torch.from_numpy(batch)).numpy()
    assert np.allclose(loaded.logits(batch), expected, atol=1e-6)
    params, legal = actor_params(loaded), np.empty(NUM_ACTIONS, dtype=np.int64)
    for state in _states(20):  # the compiled head's scores are the torch head's
        n = core.legal_actions_into(state, legal)
        observation = np.empty(BASE_SIZE, dtype=np.float32)
        encode_state_into(state, legal, n, observation)
        assert np.allclose(forward(state, legal, n, params), loaded.logits(observation[None])[0], atol=1e-5)
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    settings = json.loads(members[SETTINGS_MEMBER])
    settings["policy"]["head_arch"] = [0]
    members[SETTINGS_MEMBER] = json.dumps(settings).encode()
    bad = tmp_path / "bad.zip"
    with zipfile.ZipFile(bad, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    with pytest.raises(ValueError, match="head_arch"):
        load_network(bad, trusted=False)


def _states(count: int) -> list[np.ndarray]:
    """Kernel states of the decisions of rule-vs-rule games, ``count`` of them."""
    states, rule = [], RulePolicy()
    for seed in range(count):
        game = Game.deal(np.random.default_rng(seed), seed % 2)
        for _ in range(seed % 9):
            if not game.done:
                game.step(rule.act(game.observe(game.current)))
        if not game.done:
            states.append(core.pack_state(game.hands, game.deck, game.discard, game.active_colour, game.current,
                                          game.pending_draw))
    return states


def _random_labels(count: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.uniform(-1, 1, (count, NUM_ACTIONS)), rng.integers(NUM_ACTIONS, size=count)


TINY = {
    "name": "afterstate", "seed": 0, "total_timesteps": 128, "n_envs": 2, "checkpoint_every": 64,
    "progress_bar": False, "ppo": {"n_steps": 32, "batch_size": 32, "n_epochs": 1},
    "policy": {"net_arch": [16], "actor": "afterstate"},
    "opponents": [{"mix": {"rule": 1}}],
    "eval": {"every": 64, "pairs": 2, "final_pairs": 2, "opponents": ["random"], "workers": 1, "belief_games": 0},
}


def test_uno_train_trains_an_afterstate_actor_with_ppo(tmp_path: Path):
    train(parse_config(TINY), tmp_path / "run", quiet=True)
    network = PPOPolicy.load(tmp_path / "run" / "best_model.zip").network
    assert isinstance(network, AfterstatePolicy) and isinstance(network.action_net, AfterstateHead)


def test_expert_iteration_runs_generations_of_afterstate_networks(tmp_path: Path):
    """Generation 2's games and the search's rollouts are played by generation 1's afterstate network, compiled."""
    config = parse_config({**TINY, "total_timesteps": 0, "expert_iteration": {
        "start": "rule", "generations": 2, "games": 4, "shard_games": 2, "epochs": 2, "simulations": 64,
        "leaf_moves": 2}, "eval": {**TINY["eval"], "final_pairs": 0}})
    train(config, tmp_path / "run", quiet=True)
    folder = tmp_path / "run" / "expert_iteration"
    generation_1 = folder / "generation_1.zip"
    assert isinstance(PPOPolicy.load(generation_1).network, AfterstatePolicy)
    settings = json.loads((folder / "generation_2" / "labels.json").read_text())["settings"]
    assert settings["base player"] == file_digest(generation_1)


def test_a_per_action_network_cannot_start_an_afterstate_run(tmp_path: Path):
    with pytest.raises(ConfigError, match="policy.init: .* is not this config's network: .*actor 'mlp'"):
        train(parse_config({**TINY, "policy": {"net_arch": [512, 512, 256], "actor": "afterstate",
                                               "init": "search-q-none"}}), tmp_path / "run", quiet=True)


def test_centred_targets_drop_each_positions_level():
    """Labels equal for every legal move but far from 0: centred, the fitted logits stay near 0; not, they follow."""
    batch = observations(400, seed=7)
    values = np.where(batch[:, LEGAL_CHANNEL] > 0, 0.9, np.nan)
    means = {}
    for centred in (True, False):
        model, _ = fit(batch, values, np.argmax(np.isfinite(values), axis=1), epochs=20, seed=0, net_arch=[16],
                       learning_rate=3e-3, batch_size=32, actor="afterstate", centred=centred)
        with torch.no_grad():
            logits = model.policy.action_net(torch.from_numpy(batch)).numpy()
        means[centred] = float(np.mean(logits[np.isfinite(values)]) / SCALE)
    assert abs(means[True]) < 0.1 and means[False] > 0.6


def test_the_runs_network_alone_is_fitted_centred_and_annealed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """expert_iteration.centred / cosine reach the fit of the run's network; a generation's small network keeps the
    plain fit."""
    config = parse_config({**TINY, "total_timesteps": 0, "expert_iteration": {
        "start": "random", "generations": 2, "games": 4, "shard_games": 2, "epochs": 1, "generation_net_arch": [8],
        "simulations": 16, "batch_size": 64, "centred": True, "cosine": True}})
    fits: list[tuple[bool, bool, bool]] = []  # (afterstate network, centred, cosine) of each fit
    real = fitting.fit_values

    def recorded(policy, *args):
        fits.append((isinstance(policy, AfterstatePolicy), *args[-3:-1]))  # before the epoch log
        return real(policy, *args)

    monkeypatch.setattr(fitting, "fit_values", recorded)  # a new network's fit (fitting.fit)
    monkeypatch.setattr(expert_iteration, "fit_values", recorded)  # the run's network's
    model = MaskablePPO(AfterstatePolicy, UnoEnv(), device="cpu", policy_kwargs={"net_arch": [16],
                                                                                 "head_arch": [16]})
    run_expert_iteration(model, config, seed=0, workdir=tmp_path)
    assert fits == [(False, False, False), (True, True, True)]
