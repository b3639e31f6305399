"""The training config (train.config) and the uno-train command line's error handling (train.cli.train).

Every bad input must give a ``ConfigError`` whose message names the key and the bad value, and the
command line must turn it into exit status 2 with the message on stderr, before any training starts.
"""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from agents.ppo import SETTINGS_MEMBER
from train.cli.train import main
from train.config import ConfigError, TrainConfig, apply_override, config_to_dict, load_config, parse_config
from train.training.trainer import train
from uno_env.belief import NoisyRuleModel

ROOT = Path(__file__).resolve().parent.parent
CONFIG_FILES = sorted((ROOT / "configs").glob("*.yaml"))
BASE: dict[str, Any] = {"total_timesteps": 1000}


def with_(**changes: Any) -> dict[str, Any]:
    """BASE with nested changes: ``with_(ppo={"gamma": 2})``."""
    data = copy.deepcopy(BASE)
    data.update(changes)
    return data


def error_of(data: Any) -> str:
    """The message of the ConfigError that ``parse_config(data)`` raises."""
    with pytest.raises(ConfigError) as raised:
        parse_config(data)
    return str(raised.value)


def assert_names(message: str, *parts: str) -> None:
    for part in parts:
        assert part in message, f"{part!r} not in {message!r}"


# ------------------------------------------------------------------------------------ good configs
def test_minimal_config_takes_the_defaults():
    config = parse_config(BASE)
    assert isinstance(config, TrainConfig)
    assert config.total_timesteps == 1000
    assert config.ppo.learning_rate == 3e-4 and config.env.belief == "none"
    assert config.opponents[0].mix == {"random": 1.0} and config.opponents[0].until == 1.0
    assert config.eval.belief_games == 20


@pytest.mark.parametrize("path", CONFIG_FILES, ids=[p.name for p in CONFIG_FILES])
def test_every_shipped_config_loads_and_round_trips(path: Path):
    config = load_config(path)
    # The run folder's config.yaml is config_to_dict's output, and resume reads it back.
    assert parse_config(config_to_dict(config)) == config


def test_default_config_is_there():
    assert ROOT / "configs" / "default.yaml" in CONFIG_FILES


def test_yaml_numbers_in_every_spelling(tmp_path: Path):
    path = tmp_path / "c.yaml"
    # PyYAML reads 3e-4 (no dot) as a string and 200_000 as an int; both must be numbers here.
    path.write_text("total_timesteps: 200_000\nppo:\n  learning_rate: 3e-4\n  clip_range: 1.5E-1\n"
                    "  n_steps: 1e2\n  batch_size: '64'\n")
    config = load_config(path)
    assert config.total_timesteps == 200_000 and isinstance(config.total_timesteps, int)
    assert config.ppo.learning_rate == pytest.approx(3e-4) and isinstance(config.ppo.learning_rate, float)
    assert config.ppo.clip_range == pytest.approx(0.15)
    assert config.ppo.n_steps == 100 and isinstance(config.ppo.n_steps, int)
    assert config.ppo.batch_size == 64


def test_integers_are_accepted_for_floats_and_nulls_where_optional():
    config = parse_config(with_(ppo={"gamma": 1, "target_kl": None}, expert_iteration={"start": None}))
    assert config.ppo.gamma == 1.0 and isinstance(config.ppo.gamma, float)
    assert config.ppo.target_kl is None and config.expert_iteration.start is None


def test_self_play_schedule():
    config = parse_config(with_(opponents=[{"mix": {"random": 1}, "until": 0.5},
                                           {"mix": {"rule": 1, "self": 2}, "until": 1.0}]))
    assert config.uses_self_play()
    assert config.mix_at(0) == {"random": 1.0}
    assert config.mix_at(499) == {"random": 1.0}
    assert config.mix_at(500) == {"rule": 1.0, "self": 2.0}
    assert config.mix_at(5000) == {"rule": 1.0, "self": 2.0}  # beyond the end: the last phase
    assert not parse_config(BASE).uses_self_play()


def test_module_attribute_players_are_accepted():
    config = parse_config(with_(opponents=[{"mix": {"uno_env.opponents:RulePolicy": 1}}],
                                eval={"opponents": ["uno_env.opponents:RandomPolicy"]}))
    assert "uno_env.opponents:RulePolicy" in config.opponents[0].mix


# ------------------------------------------------------------------------------------ bad configs
def test_unknown_key_suggests_the_close_one():
    message = error_of(with_(ppo={"lerning_rate": 1e-3}))
    assert_names(message, "ppo.lerning_rate", "did you mean 'ppo.learning_rate'")
    assert_names(error_of(with_(totl_timesteps=5)), "'totl_timesteps'", "did you mean 'total_timesteps'")
    assert_names(error_of(with_(expert_iteration={"gams": 5})), "'expert_iteration.gams'",
                 "did you mean 'expert_iteration.games'?")


def test_unknown_key_without_a_close_one_lists_the_known_keys():
    assert_names(error_of(with_(env={"zzzzzz": 1})), "env.zzzzzz", "known keys", "belief", "reward_shaping")


@pytest.mark.parametrize(("changes", "key", "value", "expected"), [
    ({"n_envs": "eight"}, "n_envs", "'eight'", "an integer"),
    ({"n_envs": True}, "n_envs", "True", "an integer"),  # a boolean is no number
    ({"n_envs": 2.5}, "n_envs", "2.5", "an integer"),
    ({"ppo": {"n_steps": [64]}}, "ppo.n_steps", "[64]", "an integer"),
    ({"ppo": {"learning_rate": "fast"}}, "ppo.learning_rate", "'fast'", "a number"),
    ({"progress_bar": "sometimes"}, "progress_bar", "'sometimes'", "true or false"),
    ({"progress_bar": 1}, "progress_bar", "1", "true or false"),
    ({"name": 7}, "name", "7", "a string"),
    ({"policy": {"net_arch": 128}}, "policy.net_arch", "128", "a list of an integer"),
    ({"policy": {"net_arch": [64, "wide"]}}, "policy.net_arch[1]", "'wide'", "an integer"),
    ({"ppo": {"target_kl": "x"}}, "ppo.target_kl", "'x'", "a number"),
    ({"expert_iteration": {"start": 3}}, "expert_iteration.start", "3", "a string"),
    ({"distil": {"labels": "runs/x"}}, "distil.labels", "'runs/x'", "a list of a string"),
    ({"opponents": {"random": 1}}, "opponents", "{'random': 1}", "a list of a mapping"),
    ({"opponents": [{"mix": ["random"]}]}, "opponents[0].mix", "['random']", "a mapping to a number"),
    ({"opponents": [{"mix": {"random": "lots"}}]}, "opponents[0].mix.random", "'lots'", "a number"),
    ({"eval": {"opponents": "rule"}}, "eval.opponents", "'rule'", "a list of a string"),
])
def test_wrong_type(changes: dict[str, Any], key: str, value: str, expected: str):
    assert_names(error_of(with_(**changes)), key, value, expected)


def test_a_section_that_is_not_a_mapping():
    assert_names(error_of(with_(ppo=[1, 2])), "ppo", "[1, 2]", "mapping")
    assert_names(error_of(with_(ppo=None)), "ppo", "None", "mapping")
    assert_names(error_of(["total_timesteps", 5]), "config", "mapping")


@pytest.mark.parametrize(("changes", "key", "value"), [
    ({"env": {"belief": "particle"}}, "env.belief", "'particle'"),
    ({"env": {"first_player": "me"}}, "env.first_player", "'me'"),
    ({"vec_env": "threads"}, "vec_env", "'threads'"),
    ({"start_method": "clone"}, "start_method", "'clone'"),
    ({"ppo": {"lr_schedule": "cosine"}}, "ppo.lr_schedule", "'cosine'"),
    ({"policy": {"activation": "gelu"}}, "policy.activation", "'gelu'"),
])
def test_bad_literal_lists_the_choices(changes: dict[str, Any], key: str, value: str):
    message = error_of(with_(**changes))
    assert_names(message, key, value, "one of")


def test_bad_literal_names_every_choice():
    assert_names(error_of(with_(env={"belief": "particle"})), "'none'", "'counting'", "'particles'")


@pytest.mark.parametrize(("changes", "key", "value", "rule"), [
    ({"total_timesteps": 0}, "total_timesteps", "0", "> 0"),
    ({"n_envs": -2}, "n_envs", "-2", "> 0"),
    ({"torch_threads": 0}, "torch_threads", "0", "> 0"),
    ({"checkpoint_every": 0}, "checkpoint_every", "0", "> 0"),
    ({"ppo": {"learning_rate": 0}}, "ppo.learning_rate", "0", "> 0"),
    ({"ppo": {"gamma": 1.5}}, "ppo.gamma", "1.5", "between 0 and 1"),
    ({"ppo": {"gae_lambda": -0.1}}, "ppo.gae_lambda", "-0.1", "between 0 and 1"),
    ({"ppo": {"ent_coef": -0.01}}, "ppo.ent_coef", "-0.01", ">= 0"),
    ({"ppo": {"target_kl": 0}}, "ppo.target_kl", "0", "> 0"),
    ({"env": {"reward_shaping": -1}}, "env.reward_shaping", "-1", ">= 0"),
    ({"env": {"n_particles": 0}}, "env.n_particles", "0", "> 0"),
    ({"env": {"max_episode_steps": 0}}, "env.max_episode_steps", "0", "> 0"),
    ({"self_play": {"pool_size": 0}}, "self_play.pool_size", "0", "> 0"),
    ({"expert_iteration": {"games": 0}}, "expert_iteration.games", "0", "> 0"),
    ({"distil": {"epochs": 0}}, "distil.epochs", "0", "> 0"),
    ({"eval": {"pairs": 0}}, "eval.pairs", "0", "> 0"),
    ({"eval": {"every": -1}}, "eval.every", "-1", ">= 0"),
    ({"eval": {"workers": 0}}, "eval.workers", "0", "> 0"),
    ({"eval": {"belief_games": -1}}, "eval.belief_games", "-1", ">= 0"),
    ({"opponents": [{"mix": {"random": 1}, "until": 0}]}, "opponents[0].until", "0", "(0, 1]"),
    ({"opponents": [{"mix": {"random": 1}, "until": 1.5}]}, "opponents[0].until", "1.5", "(0, 1]"),
    ({"opponents": [{"mix": {"random": -1, "rule": 2}}]}, "opponents[0].mix.random", "-1", ">= 0"),
    ({"opponents": [{"mix": {"random": 0}}]}, "opponents[0].mix", "{'random': 0.0}", "more than 0"),
    ({"opponents": [{"mix": {}}]}, "opponents[0].mix", "{}", "at least one"),
    ({"opponents": []}, "opponents", "[]", "at least one phase"),
    ({"eval": {"opponents": []}}, "eval.opponents", "[]", "at least one"),
    ({"policy": {"net_arch": []}}, "policy.net_arch", "[]", "non-empty"),
    ({"policy": {"net_arch": [64, 0]}}, "policy.net_arch", "[64, 0]", "positive"),
    ({"expert_iteration": {"generation_net_arch": []}}, "expert_iteration.generation_net_arch", "[]", "non-empty"),
    ({"expert_iteration": {"generation_net_arch": [0]}}, "expert_iteration.generation_net_arch", "[0]", "positive"),
    ({"expert_iteration": {"shard_games": 0}}, "expert_iteration.shard_games", "0", "> 0"),
    ({"expert_iteration": {"window": 0}}, "expert_iteration.window", "0", "> 0"),
    ({"expert_iteration": {"gate_pairs": -5}}, "expert_iteration.gate_pairs", "-5", ">= 0"),
    ({"expert_iteration": {"leaf_moves": -1}}, "expert_iteration.leaf_moves", "-1", ">= 0"),
])
def test_out_of_range(changes: dict[str, Any], key: str, value: str, rule: str):
    assert_names(error_of(with_(**changes)), key, value, rule)


@pytest.mark.parametrize("value", [".inf", "-.inf", ".nan", "1e999"])
@pytest.mark.parametrize("key", ["seed", "ppo.learning_rate", "ppo.clip_range"])
def test_infinite_and_nan_numbers_are_refused(tmp_path: Path, key: str, value: str):
    path = tmp_path / "c.yaml"
    path.write_text("total_timesteps: 1000\n")
    with pytest.raises(ConfigError) as raised:
        load_config(path, [f"{key}={value}"])
    assert key in str(raised.value)


def test_missing_required_key():
    assert_names(error_of({}), "missing key 'total_timesteps'", "an integer")
    assert_names(error_of(with_(opponents=[{"until": 1.0}])), "missing key 'opponents[0].mix'")


def test_batch_larger_than_the_rollout():
    message = error_of(with_(n_envs=2, ppo={"n_steps": 64, "batch_size": 256}))
    assert_names(message, "ppo.batch_size", "256", "128")
    parse_config(with_(n_envs=2, ppo={"n_steps": 64, "batch_size": 128}))  # equal is fine


def test_phases_must_increase():
    message = error_of(with_(opponents=[{"mix": {"random": 1}, "until": 0.5},
                                        {"mix": {"rule": 1}, "until": 0.5}]))
    assert_names(message, "opponents[1].until", "0.5", "increase")
    message = error_of(with_(opponents=[{"mix": {"random": 1}, "until": 0.7},
                                        {"mix": {"rule": 1}, "until": 0.3},
                                        {"mix": {"rule": 1}, "until": 1.0}]))
    assert_names(message, "opponents[1].until", "0.3", "0.7")


def test_last_phase_must_end_the_run():
    message = error_of(with_(opponents=[{"mix": {"random": 1}, "until": 0.2},
                                        {"mix": {"rule": 1}, "until": 0.9}]))
    assert_names(message, "opponents[1].until", "0.9", "1.0")


@pytest.mark.parametrize(("changes", "key", "value"), [
    ({"opponents": [{"mix": {"randon": 1}}]}, "opponents[0].mix.randon", "'randon'"),
    ({"opponents": [{"mix": {"random": 1}, "until": 0.5}, {"mix": {"rule": 1, "ruel": 1}}]},
     "opponents[1].mix.ruel", "'ruel'"),
    ({"opponents": [{"mix": {"no/such/model.zip": 1}}]}, "opponents[0].mix", "'no/such/model.zip'"),
    ({"opponents": [{"mix": {"no_such_module_xyz:Player": 1}}]}, "opponents[0].mix", "cannot import"),
    ({"opponents": [{"mix": {"uno_env.opponents:NoSuchPlayer": 1}}]}, "opponents[0].mix", "NoSuchPlayer"),
    ({"eval": {"opponents": ["random", "expert"]}}, "eval.opponents[1]", "'expert'"),
])
def test_unknown_opponents(changes: dict[str, Any], key: str, value: str):
    assert_names(error_of(with_(**changes)), key, value, "unknown opponent")


@pytest.mark.parametrize("start", ["rules", "self", "missing.zip", "search"])
def test_unknown_start(start: str):
    message = error_of(with_(expert_iteration={"start": start}))
    assert_names(message, "expert_iteration.start", repr(start), "'rule', 'random' or a checkpoint")


_EI = {"start": "rule"}


@pytest.mark.parametrize("changes, parts", [
    ({"expert_iteration": {**_EI, "generations": 2}, "env": {"belief": "counting"}},
     ["expert_iteration.generations", "env.belief must be none", "'counting'"]),
    ({"expert_iteration": {**_EI, "simulations": 0}}, ["expert_iteration.simulations", "0"]),
    ({"expert_iteration": {**_EI, "belief": "none"}}, ["expert_iteration.belief", "'none'", "'particles'"]),
    ({"expert_iteration": {**_EI, "generations": 2, "generation_simulations": [10]}},
     ["expert_iteration.generation_simulations", "one number per generation", "expert_iteration.generations = 2",
      "got 1"]),
    ({"expert_iteration": {**_EI, "generations": 2, "generation_simulations": [10, 0]}},
     ["expert_iteration.generation_simulations", "1 to 1,000,000", "[10, 0]"]),
    ({"expert_iteration": {**_EI, "generation_simulations": [2_000_000]}},
     ["expert_iteration.generation_simulations", "1 to 1,000,000"]),
    ({"expert_iteration": {**_EI, "generation_simulations": "400"}},
     ["expert_iteration.generation_simulations", "a list of an integer"]),
    ({"expert_iteration": {**_EI, "opponent": {"ruel": 1}}},
     ["expert_iteration.opponent.ruel", "unknown opponent", "'ruel'"]),
    ({"expert_iteration": {**_EI, "opponent": {"rule": -1, "random": 1}}},
     ["expert_iteration.opponent.rule", "-1", ">= 0"]),
    ({"expert_iteration": {**_EI, "opponent": {"rule": 0}}}, ["expert_iteration.opponent", "more than 0"]),
    ({"expert_iteration": {**_EI, "opponent": {}}}, ["expert_iteration.opponent", "at least one"]),
    ({"expert_iteration": {**_EI, "belief": "aware", "opponent": {"rule": 1, "self": 1}}},
     ["expert_iteration.belief 'aware'", "expert_iteration.opponent must be rule alone", "'self'"]),
    ({"expert_iteration": {**_EI, "opponent_rollout": "modelled"}},
     ["expert_iteration.opponent_rollout 'modelled'", "needs expert_iteration.belief 'learned'", "'counting'"]),
    ({"expert_iteration": {**_EI, "belief": "aware", "opponent_rollout": "modelled"}},
     ["expert_iteration.opponent_rollout 'modelled'", "needs expert_iteration.belief 'learned'", "'aware'"]),
    ({"expert_iteration": {**_EI, "opponent_rollout": "random"}},
     ["expert_iteration.opponent_rollout must be one of 'rule', 'modelled'", "'random'"]),
    ({"expert_iteration": _EI, "distil": {"labels": ["runs/a/expert_iteration/generation_1"]}},
     ["expert iteration or distils", "expert_iteration.start", "distil.labels"]),
])
def test_expert_iteration_refuses_what_it_cannot_compile(changes: dict[str, Any], parts: list[str]):
    assert_names(error_of(with_(**changes)), *parts)


def test_a_labelling_mix_of_players_and_self_is_accepted():
    config = parse_config(with_(expert_iteration={**_EI, "belief": "aware", "opponent": {"rule": 2, "random": 0}}))
    assert config.expert_iteration.opponent == {"rule": 2.0, "random": 0.0}
    mixed = parse_config(with_(expert_iteration={**_EI, "opponent": {"rule": 2, "random": 1, "self": 1}}))
    assert mixed.expert_iteration.opponent == {"rule": 2.0, "random": 1.0, "self": 1.0}


def test_a_modelled_opponent_is_accepted_when_every_candidate_names_a_compiled_player(
        monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(NoisyRuleModel, "player", "rule", raising=False)  # so every default candidate has one
    config = parse_config(with_(expert_iteration={**_EI, "belief": "learned", "opponent_rollout": "modelled",
                                                  "opponent": {"rule": 1, "hold-actions": 1, "random": 1}}))
    assert (config.expert_iteration.belief, config.expert_iteration.opponent_rollout) == ("learned", "modelled")
    assert parse_config(with_(expert_iteration=_EI)).expert_iteration.opponent_rollout == "rule"
    monkeypatch.setattr(NoisyRuleModel, "player", "noisy", raising=False)
    assert_names(error_of(with_(expert_iteration={**_EI, "belief": "learned", "opponent_rollout": "modelled"})),
                 "expert_iteration.opponent_rollout 'modelled'", "candidate model NoisyRuleModel",
                 "names no compiled player", "'noisy'")


def test_zero_steps_need_something_to_train():
    assert_names(error_of(with_(total_timesteps=0, expert_iteration={"start": None})), "total_timesteps 0",
                 "expert_iteration.start", "distil.labels")
    assert parse_config(with_(total_timesteps=0, expert_iteration={"start": "rule"})).total_timesteps == 0
    distil = parse_config(with_(total_timesteps=0, distil={"labels": ["runs/a/expert_iteration/generation_1"]}))
    assert distil.distil.labels == ["runs/a/expert_iteration/generation_1"] and distil.distil.epochs == 30


def test_expert_iteration_accepts_rule_and_a_belief_none_checkpoint_with_several_generations():
    config = parse_config(with_(expert_iteration={**_EI, "start": "search-q-none", "generations": 3}))
    assert config.expert_iteration.generations == 3 and config.expert_iteration.simulations == 800
    assert parse_config(with_(expert_iteration=_EI, env={"belief": "counting"})).expert_iteration.generations == 1
    # the generations' own networks are featureless, so the run's network may have features
    assert parse_config(with_(expert_iteration={**_EI, "generations": 2, "generation_net_arch": [64, 64]},
                              env={"belief": "counting"})).expert_iteration.generation_net_arch == [64, 64]


# ------------------------------------------------------------------------------------ files and overrides
def test_missing_file(tmp_path: Path):
    with pytest.raises(ConfigError, match="does not exist") as raised:
        load_config(tmp_path / "nope.yaml")
    assert "nope.yaml" in str(raised.value)


@pytest.mark.parametrize(("text", "problem"), [
    ("total_timesteps: [1, 2\n", "not valid YAML"),
    ("a: b: c\n", "not valid YAML"),
    ("- total_timesteps\n- 1000\n", "must hold a mapping"),
    ("just a sentence\n", "must hold a mapping"),
])
def test_non_yaml_or_non_mapping_file(tmp_path: Path, text: str, problem: str):
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=problem) as raised:
        load_config(path)
    assert str(path) in str(raised.value)


def test_binary_file_and_folder_are_config_errors(tmp_path: Path):
    binary = tmp_path / "model.zip"
    binary.write_bytes(b"PK\x03\x04\xff\xfe\x00\x81\x92binary")
    with pytest.raises(ConfigError, match="not a YAML text file") as raised:
        load_config(binary)
    assert "model.zip" in str(raised.value)
    with pytest.raises(ConfigError, match="cannot read") as raised:
        load_config(tmp_path)
    assert str(tmp_path) in str(raised.value)


def test_empty_file_is_an_empty_config(tmp_path: Path):
    path = tmp_path / "c.yaml"
    path.write_text("# nothing\n")
    with pytest.raises(ConfigError, match="missing key 'total_timesteps'"):
        load_config(path)
    assert load_config(path, ["total_timesteps=10"]).total_timesteps == 10


def test_overrides_are_read_as_yaml(tmp_path: Path):
    path = tmp_path / "c.yaml"
    path.write_text("total_timesteps: 1000\nppo:\n  n_steps: 64\n")
    config = load_config(path, ["ppo.learning_rate=3e-4", "env.belief=counting", "eval.opponents=[rule]",
                                "policy.net_arch=[32, 32]", "expert_iteration.start=rule", "progress_bar=false",
                                "total_timesteps=2_000", "ppo.batch_size=32"])
    assert config.ppo.learning_rate == pytest.approx(3e-4)
    assert config.ppo.n_steps == 64 and config.ppo.batch_size == 32  # the file's other keys stay
    assert config.env.belief == "counting" and config.eval.opponents == ["rule"]
    assert config.policy.net_arch == [32, 32] and config.expert_iteration.start == "rule"
    assert config.progress_bar is False and config.total_timesteps == 2000
    # A later override wins; expert_iteration.start=null turns expert iteration off again.
    assert load_config(path, ["seed=1", "seed=2", "expert_iteration.start=null"]).seed == 2
    assert load_config(path, ["expert_iteration.start=null"]).expert_iteration.start is None


def test_overrides_are_validated(tmp_path: Path):
    path = tmp_path / "c.yaml"
    path.write_text("total_timesteps: 1000\n")
    with pytest.raises(ConfigError, match=re.escape("ppo.gamma must be between 0 and 1, got 2")):
        load_config(path, ["ppo.gamma=2"])
    with pytest.raises(ConfigError, match="did you mean 'ppo.learning_rate'"):
        load_config(path, ["ppo.learningrate=1e-4"])


@pytest.mark.parametrize(("assignment", "problem"), [
    ("seed", "key.path=value"),
    ("=3", "key.path=value"),
    ("", "key.path=value"),
    ("seed.x=3", "seed is not a mapping"),
    ("ppo.n_steps.x=3", "ppo.n_steps is not a mapping"),
    ("name=[unclosed", "not valid YAML"),
])
def test_override_syntax(assignment: str, problem: str):
    data = {"total_timesteps": 10, "seed": 1, "ppo": {"n_steps": 64}}
    with pytest.raises(ConfigError, match=re.escape(problem)) as raised:
        apply_override(data, assignment)
    assert repr(assignment) in str(raised.value) or assignment.split("=")[0] in str(raised.value)


def test_override_creates_missing_sections():
    data: dict[str, Any] = {"total_timesteps": 10}
    apply_override(data, "env.belief=counting")
    apply_override(data, "x=a=b")  # only the first '=' separates key and value
    assert data == {"total_timesteps": 10, "env": {"belief": "counting"}, "x": "a=b"}


# ------------------------------------------------------------------------------------ uno-train
def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    status = main(list(argv))
    return status, capsys.readouterr().err


def test_cli_config_error_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    path = tmp_path / "c.yaml"
    path.write_text("total_timesteps: 1000\nppo:\n  gama: 0.9\n")
    status, err = run_cli(capsys, str(path), "--run-dir", str(tmp_path / "run"))
    assert status == 2
    assert_names(err, "uno-train: config error", "ppo.gama", "did you mean 'ppo.gamma'")
    assert not (tmp_path / "run").exists()


def test_cli_bad_override_and_missing_file_are_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    status, err = run_cli(capsys, str(ROOT / "configs" / "default.yaml"), "--set", "env.belief=magic",
                          "--run-dir", str(tmp_path / "run"))
    assert status == 2 and "env.belief" in err and "'magic'" in err
    status, err = run_cli(capsys, str(ROOT / "configs" / "default.yaml"), "--set", "seed",
                          "--run-dir", str(tmp_path / "run"))
    assert status == 2 and "key.path=value" in err
    status, err = run_cli(capsys, str(tmp_path / "missing.yaml"), "--run-dir", str(tmp_path / "run"))
    assert status == 2 and "does not exist" in err
    assert not (tmp_path / "run").exists()


def test_cli_new_run_refuses_a_non_empty_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    run = tmp_path / "run"
    run.mkdir()
    (run / "notes.txt").write_text("mine\n")
    status, err = run_cli(capsys, str(ROOT / "configs" / "default.yaml"), "--run-dir", str(run))
    assert status == 2
    assert_names(err, str(run), "not empty", "--resume")
    assert sorted(p.name for p in run.iterdir()) == ["notes.txt"]  # nothing written


def test_cli_resume_refuses_a_folder_without_checkpoints(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    empty = tmp_path / "empty"
    empty.mkdir()
    status, err = run_cli(capsys, "--resume", str(empty))
    assert status == 2 and f"cannot resume {empty}: it has no config.yaml" in err and "first command" in err

    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    (run / "config.yaml").write_text("total_timesteps: 1000\n")
    status, err = run_cli(capsys, "--resume", str(run))
    assert status == 2
    assert_names(err, f"cannot resume {run}", "checkpoints/step_*.zip")
    assert sorted(p.name for p in run.iterdir()) == ["checkpoints", "config.yaml"]  # nothing written


def test_cli_resume_takes_neither_config_nor_run_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    with pytest.raises(SystemExit) as raised:
        main(["configs/default.yaml", "--resume", str(tmp_path)])
    assert raised.value.code == 2
    assert "--resume takes the config and folder of the run" in capsys.readouterr().err


def test_checkpoints_of_different_beliefs_in_one_schedule(tmp_path: Path):
    """The env encodes the opponent seat once, so the schedule's checkpoints must share a belief setting.

    This is only found when the checkpoints are read, by train(); it must still leave the folder unused.
    """
    paths = {}
    for belief in ("none", "counting"):  # only their settings are read, so no network is needed
        paths[belief] = tmp_path / f"{belief}.zip"
        with zipfile.ZipFile(paths[belief], "w") as archive:
            archive.writestr(SETTINGS_MEMBER, json.dumps({"belief": belief, "observation_size": 294}))
    config = parse_config(with_(opponents=[{"mix": {str(paths["none"]): 1, "random": 1}, "until": 0.5},
                                           {"mix": {str(paths["counting"]): 1}}]))
    run = tmp_path / "run"
    with pytest.raises(ConfigError) as raised:
        train(config, run, quiet=True)
    assert_names(str(raised.value), "share one belief", "belief='none'", "belief='counting'", "none.zip",
                 "counting.zip")
    assert not run.exists()


def test_parsing_a_config_loads_no_torch():
    """Reading and checking a YAML config (player specs included) is cheap: torch is for training."""
    code = ("import sys\nfrom train.config import load_config\n"
            "config = load_config('configs/default.yaml', ['eval.opponents=[random, rule, search-q-none]'])\n"
            "print('torch' in sys.modules, config.eval.opponents)")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[0] == "False"
