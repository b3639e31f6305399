"""Evaluation (train.evaluation.matches), tournaments (train.evaluation.tournament) and MaskablePPO checkpoints as
players (agents.ppo).

Evaluations are paired and seat-balanced: each deal is played twice with the seats swapped, so a
deterministic player against itself scores exactly 1/2 on every pair. Results derive from one seed
and do not depend on how the games are spread over worker processes.
"""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path

import numpy as np
import pytest
from sb3_contrib import MaskablePPO
from stable_baselines3.common.vec_env import DummyVecEnv
from uno_testlib import capped, winner_by_rules

from agents.ppo import SETTINGS_MEMBER, PPOPolicy, load_model, read_settings, save_model
from train.cli.evaluate import main
from train.evaluation.matches import MatchResult, evaluate, format_table, run_matches
from train.evaluation.statistics import paired_interval
from train.evaluation.tournament import bradley_terry, format_tournament, round_robin
from train.evaluation.value import DEFAULT_PATH
from uno_env.env import UnoEnv
from uno_env.game import Game
from uno_env.observation import encode_base


class Lowest:
    """Plays its lowest legal action id (a weak, deterministic player for tournaments)."""

    name = "lowest"

    def reset(self, seed: int | None = None) -> None:
        """Deterministic: nothing to reset."""

    def act(self, view) -> int:
        return min(view.legal_actions)


def tiny_model(belief: str = "none", steps: int = 0) -> MaskablePPO:
    """A 16-unit MaskablePPO on UnoEnv, trained for ``steps`` steps."""
    model = MaskablePPO("MlpPolicy", UnoEnv(belief=belief), n_steps=32, batch_size=32, n_epochs=1, seed=0,
                        policy_kwargs={"net_arch": [16]}, device="cpu")
    if steps:
        model.learn(steps)
    return model


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Checkpoints of a (barely) trained model without beliefs, an untrained counting one, and a plain SB3 zip."""
    folder = tmp_path_factory.mktemp("models")
    trained = tiny_model(steps=64)
    paths = {"none": save_model(trained, folder / "tiny", {"belief": "none", "steps": 64, "config": "test"}),
             "counting": save_model(tiny_model("counting"), folder / "counting.zip", {"belief": "counting"})}
    trained.save(folder / "plain.zip")
    paths["plain"] = folder / "plain.zip"
    return paths


# ------------------------------------------------------------------------------------ paired evaluation
def test_a_deterministic_player_against_itself_scores_exactly_half_per_pair():
    (result,) = evaluate("rule", ["rule"], pairs=20, seed=0, workers=1)
    assert result.pair_scores.shape == (20, 2) and result.games == 40
    assert np.all(result.pair_scores.mean(axis=1) == 0.5)
    # The second game of a pair is the first with the seats swapped: the same game, seen from the other seat.
    assert np.array_equal(result.lengths[:, 0], result.lengths[:, 1])
    assert result.score == 0.5 and result.wins == result.losses
    low, high = result.ci
    assert low < 0.5 < high


def test_every_opponent_meets_the_same_deals():
    first, second = evaluate("rule", ["random", "random"], pairs=10, seed=4, workers=1)
    assert np.array_equal(first.pair_scores, second.pair_scores) and np.array_equal(first.lengths, second.lengths)


def test_reproducible_from_the_seed():
    def run(seed: int) -> MatchResult:
        return evaluate("rule", ["random"], pairs=15, seed=seed, workers=1)[0]

    assert np.array_equal(run(7).pair_scores, run(7).pair_scores)
    assert np.array_equal(run(7).lengths, run(7).lengths)
    assert not np.array_equal(run(7).lengths, run(8).lengths)


def test_independent_of_the_number_of_workers(checkpoints: dict[str, Path]):
    matchups = [("rule", "random"), (str(checkpoints["none"]), "rule"), ("random", str(checkpoints["counting"]))]
    one = run_matches(matchups, pairs=7, seed=3, workers=1)
    two = run_matches(matchups, pairs=7, seed=3, workers=2)  # 7 pairs in several chunks per matchup
    for a, b in zip(one, two, strict=True):
        assert (a.agent, a.opponent) == (b.agent, b.opponent)
        assert np.array_equal(a.pair_scores, b.pair_scores) and np.array_equal(a.lengths, b.lengths)


def test_confidence_interval_contains_the_score_and_shrinks():
    small, large = (evaluate("rule", ["random"], pairs=pairs, seed=1, workers=1)[0] for pairs in (20, 200))
    widths = []
    for result in (small, large):
        low, high = result.ci
        assert 0 <= low <= result.score <= high <= 1
        widths.append(high - low)
    assert widths[1] < widths[0] / 2  # ten times the pairs: about a third of the width


def test_paired_interval_falls_back_to_wilson_without_spread():
    low, high = paired_interval(np.array([[1.0, 0.0]] * 10))
    assert low < 0.5 < high and high - low < 0.5
    assert paired_interval(np.array([[1.0, 1.0]] * 10)) == pytest.approx((0.839, 1.0), abs=1e-3)  # 20/20 games


def test_rule_beats_random():
    (result,) = evaluate("rule", ["random"], pairs=100, seed=0, workers=1)
    low, high = result.ci
    assert low > 0.5, f"rule vs random: {result.score:.3f} [{low:.3f}, {high:.3f}]"
    assert result.to_dict()["ci_low"] == low and result.to_dict()["wins"] == result.wins


def test_bad_opponent_spec_is_a_clear_error():
    with pytest.raises(ValueError, match=r"unknown player 'rulez': not a policy name \(did you mean 'rule'\?\)") \
            as raised:
        evaluate("rule", ["random", "rulez"], pairs=1, workers=1)
    listed = str(raised.value).split("the names are ", 1)[1].split("; ", 1)[0].split(", ")
    assert {"random", "rule"} <= set(listed) and "module:attribute" in str(raised.value)
    with pytest.raises(ValueError, match="^runs/none/best_model.zip: no such file or folder$"):
        evaluate("rule", ["runs/none/best_model.zip"], pairs=1, workers=1)
    with pytest.raises(ValueError, match="cannot import player"):
        evaluate("rule", ["uno_env.opponents:Nobody"], pairs=1, workers=1)
    with pytest.raises(ValueError, match="pairs must be at least 1"):
        evaluate("rule", ["random"], pairs=0, workers=1)


def test_format_table():
    table = format_table(evaluate("rule", ["random", "rule"], pairs=3, seed=0, workers=1))
    rows, note = table.split("\n\n")
    lines = rows.splitlines()
    assert lines[0].startswith("| agent | opponent | games | win rate | 95% CI |") and len(lines) == 4
    assert note.startswith("95% CI: ") and all(" (t) | " in line or " (W) | " in line for line in lines[2:])
    assert lines[2].startswith("| rule | random | 6 |") and lines[3].startswith("| rule | rule | 6 | 50.0% |")


# ------------------------------------------------------------------------------------ uno-evaluate
def test_cli_prints_a_table_and_writes_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    out = tmp_path / "results.json"
    assert main(["rule", "--opponents", "random", "rule", "--pairs", "4", "--seed", "2", "--workers", "1",
                 "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "| rule | random | 8 |" in printed and "| rule | rule | 8 | 50.0% |" in printed
    payload = json.loads(out.read_text())
    expected = [r.to_dict() for r in evaluate("rule", ["random", "rule"], pairs=4, seed=2, workers=1,
                                              control_variates=DEFAULT_PATH)]
    assert payload == json.loads(json.dumps(expected))
    assert {"win_rate", "ci_low", "ci_high", "method"} == payload[0]["adjusted"].keys()
    assert main(["rule", "--opponents", "random", "--pairs", "4", "--workers", "1", "--no-control-variates",
                 "--json", str(out)]) == 0
    assert "adjusted" not in json.loads(out.read_text())[0] and "adjusted" not in capsys.readouterr().out


def test_cli_takes_a_checkpoint_or_a_run_folder(checkpoints: dict[str, Path], tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]):
    assert main([str(checkpoints["none"]), "--opponents", "random", "--pairs", "2", "--workers", "1"]) == 0
    assert "| tiny | random | 4 |" in capsys.readouterr().out
    run = tmp_path / "run"  # a run still training: no best_model.zip yet, its last checkpoint stands in
    (run / "checkpoints").mkdir(parents=True)
    for step in (64, 128):
        (run / "checkpoints" / f"step_{step:09d}.zip").write_bytes(checkpoints["none"].read_bytes())
    assert main([str(run), "--opponents", "random", "--pairs", "2", "--workers", "1"]) == 0
    assert "| step_000000128 | random | 4 |" in capsys.readouterr().out


def test_cli_errors(checkpoints: dict[str, Path], capsys: pytest.CaptureFixture[str]):
    assert main(["rule", "--opponents", "nobody", "--pairs", "1", "--workers", "1"]) == 2
    assert "uno-evaluate: error: --opponents nobody: not a policy name;" in capsys.readouterr().err
    assert main([str(checkpoints["plain"]), "--pairs", "1", "--workers", "1"]) == 2
    assert f"{checkpoints['plain']} has no {SETTINGS_MEMBER}" in capsys.readouterr().err
    for argv in (["rule", "random"], ["rule", "--pairs", "0"]):
        with pytest.raises(SystemExit) as raised:
            main(argv)
        assert raised.value.code == 2
    assert "--pairs must be at least 1" in capsys.readouterr().err


# ------------------------------------------------------------------------------------ tournaments
def test_tournament_ratings_are_ordered_sensibly(tmp_path: Path):
    result = round_robin(["random", "rule", Lowest()], pairs=30, seed=0, workers=1, bootstrap=100)
    assert result.players == ["random", "rule", "lowest"] and len(result.matches) == 3
    ratings = dict(zip(result.players, result.ratings, strict=True))
    assert ratings["random"] == 0  # the anchor
    assert ratings["rule"] == max(ratings.values()) and result.rating_ci[1][0] > 0  # clearly above random
    # Bradley-Terry with equal games per matchup ranks exactly as the total scores do.
    totals = dict.fromkeys(result.players, 0.0)
    for match in result.matches:
        totals[match.agent] += match.score
        totals[match.opponent] += 1 - match.score
    assert sorted(totals, key=totals.get) == sorted(ratings, key=ratings.get)
    for rating, (low, high) in zip(result.ratings, result.rating_ci, strict=True):
        assert low <= rating + 1e-9 and rating - 1e-9 <= high
    table = format_tournament(result)
    assert table.splitlines()[2].startswith("| 1 | rule |")
    assert json.loads(json.dumps(result.to_dict()))["ratings"]["random"]["elo"] == 0


def test_tournament_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    out = tmp_path / "t.json"
    assert main(["--tournament", "random", "rule", "--pairs", "5", "--workers", "1", "--json", str(out)]) == 0
    expected = round_robin(["random", "rule"], pairs=5, seed=0, workers=1)
    assert capsys.readouterr().out == format_tournament(expected) + "\n"
    assert json.loads(out.read_text()) == json.loads(json.dumps(expected.to_dict()))


def test_the_tournament_table_explains_its_anchor_and_its_cells():
    result = round_robin(["rule", Lowest(), "random"], pairs=4, seed=1, workers=1, bootstrap=20)
    table = format_tournament(result)
    assert "+0 .. +0" not in table and result.to_dict()["anchor"] == "random"
    rows = {line.split(" | ")[1]: line for line in table.split("\n\n")[0].splitlines()[2:]}
    assert rows["random"].split(" | ")[2:4] == ["+0", "anchor"]
    assert re.search(r"^\| \d \| rule \| \+\d+ \| [+-]\d+ \.\. [+-]\d+ \|", rows["rule"])
    captions = [part for part in table.split("\n\n") if not part.startswith("|")]
    assert len(captions) == 2 and "relative to random, which is 0 by definition" in captions[0]
    assert "the row player's score against the column player over 8 games" in captions[1]


def test_tournament_needs_distinct_players():
    with pytest.raises(ValueError, match="at least 2 players"):
        round_robin(["rule"], pairs=1, workers=1)
    with pytest.raises(ValueError, match="distinct names"):
        round_robin(["rule", "rule"], pairs=1, workers=1)


def test_bradley_terry_two_players():
    # 75 of 100 points, plus the virtual drawn game: odds 75.5 : 25.5.
    ratings = bradley_terry(np.array([[0.0, 75.0], [25.0, 0.0]]), np.array([[0.0, 100.0], [0.0, 0.0]]))
    assert ratings[0] - ratings[1] == pytest.approx(400 * np.log10(75.5 / 25.5), abs=1e-6)
    assert ratings.sum() == pytest.approx(0.0, abs=1e-9)


# ------------------------------------------------------------------------------------ checkpoints
def test_checkpoint_settings(checkpoints: dict[str, Path]):
    assert checkpoints["none"].name == "tiny.zip"  # the suffix is added
    settings = read_settings(checkpoints["none"])
    assert settings.pop("policy") == {"class": "MaskableActorCriticPolicy", "net_arch": {"pi": [16], "vf": [16]},
                                      "activation": "Tanh", "ortho_init": True, "share_features_extractor": True}
    assert settings == {"belief": "none", "steps": 64, "config": "test", "observation_size": 294}
    counting = read_settings(checkpoints["counting"])
    assert counting["belief"] == "counting" and counting["observation_size"] > 294
    with pytest.raises(ValueError, match="settings\\['belief'\\]"):
        save_model(tiny_model(), checkpoints["none"].parent / "bad.zip", {"belief": "psychic"})


def test_checkpoint_loads_as_a_policy(checkpoints: dict[str, Path]):
    policy = PPOPolicy.load(checkpoints["none"])
    assert (policy.name, policy.belief, policy.observation_size, policy.deterministic) == ("tiny", "none", 294, True)
    rng = np.random.default_rng(0)
    game = Game.deal(rng, 0)
    choices = 0
    for _ in capped():
        if game.done:
            break
        view = game.observe(game.current)
        view.encoder = encode_base
        action = policy.act(view) if game.current == 0 else int(rng.choice(view.legal_actions))
        assert action in view.legal_actions
        if game.current == 0 and len(view.legal_actions) > 1:
            choices += 1
            logits = policy.action_logits(view)
            assert action == int(np.argmax(logits)) and np.isinf(logits[view.action_mask == 0]).all()
        game.step(action)
    assert choices > 0


def test_sampling_policy_is_seeded(checkpoints: dict[str, Path]):
    def actions(seed: int) -> list[int]:
        policy = PPOPolicy.load(checkpoints["none"], deterministic=False)
        policy.reset(seed)
        views = []
        game = Game.deal(np.random.default_rng(5), 0)
        for _ in range(20):
            view = game.observe(game.current)
            view.encoder = encode_base
            views.append(view)
        return [policy.act(view) for view in views]

    assert actions(1) == actions(1)


@pytest.mark.parametrize("kind", ["none", "counting"])
def test_checkpoint_as_the_embedded_opponent(checkpoints: dict[str, Path], kind: str):
    opponent = PPOPolicy.load(checkpoints[kind])
    env = UnoEnv(opponent=opponent, belief="none")
    rng = np.random.default_rng(0)
    opponent_plays = 0
    for episode in range(3):
        _, info = env.reset(seed=episode)
        done = False
        for _ in capped():
            if done:
                break
            action = int(rng.choice(np.flatnonzero(env.action_masks())))
            _, _, terminated, truncated, info = env.step(action)
            opponent_plays += sum(e.get("player") == "opponent" and e["kind"] == "play" for e in info["events"])
            done = terminated or truncated
        assert terminated and info["winner"] == winner_by_rules(len(info["hand"]), info["opponent_hand_size"])
    assert opponent_plays > 0


def test_checkpoint_in_evaluate(checkpoints: dict[str, Path]):
    by_path = evaluate(str(checkpoints["counting"]), ["random"], pairs=3, seed=0, workers=1)[0]
    by_object = evaluate(PPOPolicy.load(checkpoints["counting"], name="counting"), ["random"], pairs=3, seed=0,
                         workers=1)[0]
    assert by_path.agent == by_object.agent == "counting"
    assert np.array_equal(by_path.pair_scores, by_object.pair_scores)


@pytest.mark.parametrize("vectorized", [False, True])
def test_loading_into_an_env_with_another_belief(checkpoints: dict[str, Path], vectorized: bool):
    env = UnoEnv(belief="counting")
    with pytest.raises(ValueError) as raised:
        load_model(checkpoints["none"], env=DummyVecEnv([lambda: env]) if vectorized else env)
    message = str(raised.value)
    assert str(checkpoints["none"]) in message
    assert "trained with belief='none' (observation size 294)" in message
    assert "environment uses belief='counting'" in message
    assert load_model(checkpoints["none"], env=UnoEnv()).num_timesteps == 64  # the matching env loads


def test_a_policy_given_the_wrong_observation_names_both(checkpoints: dict[str, Path]):
    policy = PPOPolicy.load(checkpoints["counting"])
    game = Game.deal(np.random.default_rng(0), 0)
    view = game.observe(0)
    view.encoder = encode_base
    with pytest.raises(ValueError, match="belief='counting'") as raised:
        policy.action_logits(view)
    assert "(294,)" in str(raised.value)


def test_plain_sb3_zip_is_refused(checkpoints: dict[str, Path]):
    for load in (read_settings, PPOPolicy.load, load_model):
        with pytest.raises(ValueError, match=f"has no {SETTINGS_MEMBER}") as raised:
            load(checkpoints["plain"])
        assert str(checkpoints["plain"]) in str(raised.value)
    assert MaskablePPO.load(checkpoints["none"], device="cpu").num_timesteps == 64  # ours are still SB3 zips


def test_corrupt_or_missing_checkpoint(checkpoints: dict[str, Path], tmp_path: Path):
    garbage = tmp_path / "garbage.zip"
    garbage.write_bytes(b"not a zip archive at all")
    truncated = tmp_path / "truncated.zip"
    truncated.write_bytes(checkpoints["none"].read_bytes()[:2000])  # an interrupted copy
    for path in (garbage, truncated):
        for load in (read_settings, PPOPolicy.load):
            with pytest.raises(ValueError, match="not a valid checkpoint") as raised:
                load(path)
            assert str(path) in str(raised.value)
        assert not isinstance(raised.value, zipfile.BadZipFile)
    with pytest.raises(FileNotFoundError, match="no checkpoint at"):
        read_settings(tmp_path / "missing.zip")
