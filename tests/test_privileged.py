"""The privileged critic (agents.privileged, UnoEnv(privileged=True)) and search distillation (DAgger rounds).

The privileged channels must show exactly the hidden state they claim, only when asked for; the actor of a
privileged model must not depend on them at all (its actions identical whatever they hold), while the critic
does; a saved privileged agent plays from the public observation alone. Distillation runs end to end.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from uno_testlib import deck_names

from agents.ppo import PPOPolicy, read_settings
from agents.privileged import PrivilegedCriticPolicy
from agents.search import SearchPolicy
from train.config import parse_config
from train.training import pretrain
from train.training.pretrain import collect
from train.training.trainer import train
from uno_env.cards import NUM_CARD_TYPES, card_id
from uno_env.env import UnoEnv
from uno_env.match import play_game
from uno_env.observation import BASE_SIZE, PRIVILEGED_DECK_CARDS, PRIVILEGED_SIZE
from uno_env.opponents import RulePolicy

TINY = {
    "name": "privileged", "seed": 0, "total_timesteps": 256, "n_envs": 2, "checkpoint_every": 128,
    "progress_bar": False, "ppo": {"n_steps": 64, "batch_size": 64, "n_epochs": 2},
    "policy": {"net_arch": [16], "critic": "privileged"},
    "pretrain": {"teacher": "rule", "games": 6, "epochs": 2},
    "opponents": [{"mix": {"rule": 1}}],
    "eval": {"every": 128, "pairs": 2, "final_pairs": 2, "opponents": ["random"], "workers": 1, "belief_games": 0},
}


def small_search() -> SearchPolicy:
    """A search teacher cheap enough for a test (the spec ``test_privileged:small_search``)."""
    return SearchPolicy(simulations=8, belief="counting")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished tiny run with the privileged critic (warm start included)."""
    folder = tmp_path_factory.mktemp("runs") / "privileged"
    train(parse_config(TINY), folder, quiet=True)
    return folder


def _scenario() -> dict:
    """A position with known hands and deck: the opponent holds three cards, the deck order is fixed."""
    agent = ["red:1", "red:2", "green:5", "wild"]
    opponent = ["blue:7", "blue:7", "yellow:draw2"]
    discard = ["red:9"]
    rest = deck_names()
    for name in agent + opponent + discard:
        rest.remove(name)
    return {"agent_hand": agent, "opponent_hand": opponent, "deck": rest, "discard": discard,
            "to_move": "agent", "pending_draw": 0}


def test_privileged_channels_show_the_opponent_hand_and_the_next_deck_cards():
    scenario = _scenario()
    env = UnoEnv(opponent="rule", privileged=True)
    obs, _ = env.reset(seed=0, options={"scenario": scenario})
    assert obs.shape == (BASE_SIZE + PRIVILEGED_SIZE,) and env.observation_space.contains(obs)
    public, hidden = obs[:BASE_SIZE], obs[BASE_SIZE:]
    plain, _ = UnoEnv(opponent="rule").reset(seed=0, options={"scenario": scenario})
    assert np.array_equal(public, plain)  # the public part is the ordinary observation
    opponent = hidden[:NUM_CARD_TYPES]
    assert opponent[card_id("blue:7")] == 2 and opponent[card_id("yellow:draw2")] == 1 and opponent.sum() == 3
    upcoming = hidden[NUM_CARD_TYPES:].reshape(PRIVILEGED_DECK_CARDS, NUM_CARD_TYPES)
    assert np.array_equal(upcoming.argmax(axis=1), [card_id(name) for name in scenario["deck"][:PRIVILEGED_DECK_CARDS]])
    assert np.array_equal(upcoming.sum(axis=1), np.ones(PRIVILEGED_DECK_CARDS))


def test_privileged_channels_follow_the_game():
    """After every step the hidden part still says the opponent's hand size, and a draw moves the deck on."""
    env = UnoEnv(opponent="rule", privileged=True)
    obs, info = env.reset(seed=4)
    for _ in range(30):
        assert obs[BASE_SIZE:BASE_SIZE + NUM_CARD_TYPES].sum() == info["opponent_hand_size"]
        if info.get("winner"):
            break
        obs, _, terminated, _, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))
        if terminated:
            break


def test_privileged_needs_the_flat_observation():
    with pytest.raises(ValueError, match="dict_obs"):
        UnoEnv(privileged=True, dict_obs=True)


def test_the_actor_ignores_the_privileged_inputs_and_the_critic_reads_them(run: Path):
    policy = PPOPolicy.load(run / "best_model.zip").network
    assert isinstance(policy, PrivilegedCriticPolicy) and policy.public_size == BASE_SIZE
    env = UnoEnv(opponent="rule", privileged=True)
    obs, info = env.reset(seed=1)
    rng = np.random.default_rng(0)
    batch = np.repeat(obs[None], 16, axis=0)
    batch[1:, BASE_SIZE:] = rng.random((15, PRIVILEGED_SIZE), dtype=np.float32) * 4  # anything at all
    masks = np.repeat(info["action_mask"][None].astype(bool), 16, axis=0)
    with torch.no_grad():
        tensor = torch.from_numpy(batch)
        logits = policy.get_distribution(tensor, action_masks=masks).distribution.logits
        values = policy.predict_values(tensor).squeeze(-1)
    assert torch.equal(logits, logits[:1].expand_as(logits))  # bit-identical whatever the hidden part holds
    actions, _ = policy.predict(batch, action_masks=masks, deterministic=True)
    assert len(set(actions.tolist())) == 1
    assert len(set(values.tolist())) > 1  # the critic does read them


def test_a_privileged_agent_plays_from_the_public_observation(run: Path):
    settings = read_settings(run / "best_model.zip")
    assert settings["observation_size"] == BASE_SIZE and settings["privileged_size"] == PRIVILEGED_SIZE
    agent = PPOPolicy.load(run / "best_model.zip")
    result = play_game((agent, RulePolicy()), seed=3)  # no hidden state anywhere: public views only
    assert result.winner in (-1, 0, 1) and result.decisions > 0
    env = UnoEnv(opponent=agent)  # as the embedded opponent of an ordinary env
    env.reset(seed=2)
    env.step(int(np.flatnonzero(env.action_masks())[0]))


def test_a_privileged_run_resumes(run: Path, tmp_path: Path):
    folder = tmp_path / "again"
    shutil.copytree(run, folder)
    config = parse_config({**TINY, "total_timesteps": 384})
    train(config, folder, resume=True, quiet=True)
    assert read_settings(sorted((folder / "checkpoints").glob("step_*.zip"))[-1])["steps"] >= 384


def test_privileged_pretrain_records_the_hidden_channels():
    config = parse_config(TINY)
    data, _ = collect(config, seed=1)
    assert data.observations.shape == (len(data), BASE_SIZE + PRIVILEGED_SIZE)
    # Each recorded position's hidden part holds some opponent cards and a full window of upcoming cards.
    hidden = data.observations[:, BASE_SIZE:]
    assert (hidden[:, :NUM_CARD_TYPES].sum(axis=1) >= 1).all()
    assert (hidden[:, NUM_CARD_TYPES:].sum(axis=1) <= PRIVILEGED_DECK_CARDS).all()


def _spy_on_warm_start(monkeypatch: pytest.MonkeyPatch) -> tuple[list, list]:
    """Record every collect() (labeller, games, examples) and every clone() (examples) of a warm start."""
    collected, refits = [], []
    real_collect, real_clone = pretrain.collect, pretrain.clone

    def spy_collect(config, seed, student=None, labeller=None, games=None):
        data, agreement = real_collect(config, seed, student=student, labeller=labeller, games=games)
        collected.append((labeller or config.pretrain.teacher, student is not None, len(data)))
        return data, agreement

    def spy_clone(model, data, config, seed):
        refits.append(len(data))
        return real_clone(model, data, config, seed)

    monkeypatch.setattr(pretrain, "collect", spy_collect)
    monkeypatch.setattr(pretrain, "clone", spy_clone)
    return collected, refits


def test_dagger_rounds_label_the_students_own_positions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Distillation end to end on a tiny budget: the rule player cloned, then a small search expert's DAgger rounds."""
    collected, refits = _spy_on_warm_start(monkeypatch)
    expert = "test_privileged:small_search"
    config = parse_config({**TINY, "name": "distil", "total_timesteps": 128, "eval": {**TINY["eval"], "every": 0},
                           "policy": {"net_arch": [16]},
                           "pretrain": {"teacher": "rule", "games": 6, "epochs": 2, "rounds": 3, "expert": expert,
                                        "expert_games": 3}})
    folder = tmp_path / "distil"
    train(config, folder, quiet=True)
    # Round 1: the teacher plays and labels; rounds 2 and 3: the student plays, the expert labels.
    rounds = [(labeller, student) for labeller, student, _ in collected]
    assert rounds == [("rule", False), (expert, True), (expert, True)]
    # The refits after round 1 use the expert's labels only, pooled over the rounds.
    assert refits == [collected[0][2], collected[1][2], collected[1][2] + collected[2][2]]
    metrics = json.loads((folder / "run_info.json").read_text())["pretrain"]
    assert metrics["examples"] == refits[-1] and 0 <= metrics["student_agreement"] <= 1


def test_dagger_with_the_teacher_as_expert_pools_every_round(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    collected, refits = _spy_on_warm_start(monkeypatch)
    config = parse_config({**TINY, "name": "dagger", "total_timesteps": 128, "eval": {**TINY["eval"], "every": 0},
                           "policy": {"net_arch": [16]},
                           "pretrain": {"teacher": "rule", "games": 4, "epochs": 2, "rounds": 3}})
    train(config, tmp_path / "dagger", quiet=True)
    sizes = [n for _, _, n in collected]
    assert [student for _, student, _ in collected] == [False, True, True]
    assert refits == [sizes[0], sizes[0] + sizes[1], sum(sizes)]  # the teacher's first round stays in the pool
