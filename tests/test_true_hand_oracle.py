"""The true-hand oracle (benchmarks/true_hand_oracle.py): right features, and no way into public play.

The oracle hands a network the opponent's real hand. It is for one measurement (benchmarks/belief_bound.py), so
these tests hold what keeps it there: the installed packages never name it, its checkpoints are refused by every
public loader and by ``uno-evaluate``, and its player raises unless the measurement hands it the game it plays.
"""

from __future__ import annotations

import ast
import importlib
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

from agents.ppo import PPOPolicy, read_settings
from agents.shipped import MODELS_DIR
from train.cli import evaluate as evaluate_cli
from train.policies import resolve_policy
from train.training.labelling import LabelJob, label_shard
from train.training.rollout_values import fit
from uno_env.belief import BELIEF_FEATURES
from uno_env.cards import NUM_CARD_TYPES, card_colour, card_rank, playable_types
from uno_env.match import play_game
from uno_env.observation import BASE_SIZE
from uno_env.opponents import RulePolicy
from uno_env.policy import Needs
from uno_env.seat import deal_game

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))  # the measurement's modules are scripts' neighbours, not a package
oracle = importlib.import_module("true_hand_oracle")
bound = importlib.import_module("belief_bound")
PUBLIC_PACKAGES = ("uno_env", "agents", "train")


class _Recorder:
    """``rule`` on a seat, recording (opponent hand, top, colour, oracle features) at each of its decisions."""

    needs = Needs("none")

    def __init__(self) -> None:
        self.records: list[tuple[np.ndarray, int, int, np.ndarray]] = []

    def deal(self, game) -> None:
        self.game = game

    def reset(self, seed: int | None = None) -> None:
        self.source = oracle.FeatureSource(oracle.ORACLE, np.random.default_rng(0))

    def act(self, view) -> int:
        hand = np.array(self.game.hands[1 - self.game.current])
        self.records.append((hand, view.top, view.active_colour, self.source.features(view, self.game)))
        return RulePolicy().act(view)


def test_oracle_features_are_the_opponents_true_hand() -> None:
    recorder = _Recorder()
    for seed in range(3):
        play_game((recorder, RulePolicy()), seed, on_deal=recorder.deal)
    assert len(recorder.records) > 20
    for hand, top, colour, features in recorder.records:
        assert features.shape == (BELIEF_FEATURES,)
        np.testing.assert_array_equal(features[:NUM_CARD_TYPES], hand)  # expected counts: the counts themselves
        held = [card for card in range(NUM_CARD_TYPES) if hand[card]]
        wild = any(card_colour(card) == -1 for card in held)
        expected_colours = [float(wild or any(card_colour(card) == c for card in held))
                            for c in range(4)]
        np.testing.assert_array_equal(features[NUM_CARD_TYPES:NUM_CARD_TYPES + 4], expected_colours)
        assert features[-2] == float(wild)
        playable = set(playable_types(colour, card_rank(top)))
        assert features[-1] == float(any(card in playable for card in held))


def _module_strings_and_imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.add(node.value)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def test_no_public_module_can_name_the_oracle() -> None:
    names = ("true_hand_oracle", "belief_bound", oracle.ORACLE, oracle.ORACLE_CHANNEL)
    for package in PUBLIC_PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            leaks = {text for text in _module_strings_and_imports(path) if any(name in text for name in names)
                     or text.split(".")[0] == "benchmarks"}
            assert not leaks, f"{path.relative_to(ROOT)} names the measurement-only oracle: {leaks}"
    packages = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    assert not [package for package in packages if package.split(".")[0] == "benchmarks"]
    assert oracle.ORACLE not in importlib.import_module("uno_env.belief").BELIEF_KINDS
    with pytest.raises(ValueError, match="belief must be one of"):
        Needs(oracle.ORACLE)


@pytest.fixture(scope="module")
def oracle_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny network fitted on oracle features, saved by the measurement's writer."""
    rng = np.random.default_rng(0)
    observations = rng.random((64, BASE_SIZE + BELIEF_FEATURES), dtype=np.float32)
    values = np.where(rng.random((64, 61)) < 0.3, rng.uniform(-1, 1, (64, 61)), np.nan)
    values[:, 0] = 0.0  # every row has a legal move
    model, _ = fit(observations, values, np.zeros(64, dtype=np.int64), 1, 0, belief="counting", net_arch=[8])
    path = tmp_path_factory.mktemp("oracle") / "q-network.zip"
    return oracle.save_measurement_network(model, path, oracle.ORACLE, {"config": "test", "steps": 0})


def test_public_loaders_refuse_an_oracle_network(oracle_checkpoint: Path, capsys: pytest.CaptureFixture) -> None:
    for load in (read_settings, PPOPolicy.load, resolve_policy):
        with pytest.raises(ValueError, match="true-hand-oracle"):
            load(str(oracle_checkpoint))
    assert evaluate_cli.main([str(oracle_checkpoint), "--pairs", "1", "--workers", "1"]) == 2 \
        or pytest.fail("uno-evaluate accepted an oracle network")
    assert "true-hand-oracle" in capsys.readouterr().err
    # The measurement itself reads it back, as a network that declares no belief: seated directly, refused.
    network = oracle.load_measurement_network(oracle_checkpoint)
    assert network.needs == Needs("none") and network.observation_size == BASE_SIZE + BELIEF_FEATURES
    with pytest.raises(ValueError, match="observation of shape"):
        play_game((network, RulePolicy()), 0)


def test_the_oracle_player_plays_only_the_game_it_was_dealt(oracle_checkpoint: Path) -> None:
    player = oracle.LadderPlayer(oracle.load_measurement_network(oracle_checkpoint), oracle.ORACLE)
    with pytest.raises(RuntimeError, match="need the dealt game"):
        play_game((player, RulePolicy()), 1)  # seated by the public harness: no game handed to it
    player.deal(deal_game(99))  # a stale game of another deal: its hands are not the view's
    with pytest.raises(RuntimeError, match="another game"):
        play_game((player, RulePolicy()), 1)
    result = oracle.play_pairs(lambda opponent: player, RulePolicy(), 2, 12346, "oracle", "rule")
    assert result.pair_scores.shape == (2, 2)


@pytest.mark.parametrize("player", ["rule", "search-q-none"])
def test_the_replay_finds_the_labelled_positions(player: str) -> None:
    """Of a round whose base player is rule, or a network (a generation's)."""
    base_player = player if player == "rule" else str(MODELS_DIR / player / "model.zip")
    job = LabelJob(games=3, shard_games=3, seed=5, round=1, deck_orders=1, belief="none", base=base_player)
    observations, _, _ = label_shard(job, 0)
    sources = tuple(source for source in oracle.SOURCES if source != "none")
    base, features = bound.replay_shard(job, 0, sources, {source: 20 for source in oracle.SOURCES})
    np.testing.assert_array_equal(base, observations)
    assert set(features) == set(sources)
    assert all(array.shape == (len(base), BELIEF_FEATURES) for array in features.values())
