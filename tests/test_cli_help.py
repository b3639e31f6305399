"""The command-line programs as a new user meets them: their --help, and what a mistyped name gets.

Each --help says what the program does once, in plain text, and names only configs that exist; a mistyped
shipped config or player gets the closest name and the list of them; a path that does not exist is said to be
missing, naming it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from train.cli import evaluate, play, ship, train, tune
from train.config import ConfigError, load_config
from train.shipped import CONFIGS_DIR, config_names, find_config
from uno_env.policy import policy_names

PROGRAMS: dict[str, Callable] = {"uno-train": train.main, "uno-evaluate": evaluate.main, "uno-play": play.main,
                                 "uno-tune": tune.main, "train.cli.ship": ship.main}
#: reStructuredText markup, which a terminal shows as it is.
MARKUP = re.compile(r"``|:(mod|func|class|data|meth|attr):`")


def help_text(program: str, capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exited:
        PROGRAMS[program](["--help"])
    assert exited.value.code == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("program", PROGRAMS)
def test_help_says_what_the_program_does_once_in_plain_text(program: str, capsys: pytest.CaptureFixture[str]):
    text = help_text(program, capsys)
    description = text.split("\n\n")[1]  # after the usage
    assert len(description) > 20 and text.count(description) == 1, description
    assert not MARKUP.search(text), MARKUP.search(text)
    assert "example" in text


@pytest.mark.parametrize("program", PROGRAMS)
def test_help_names_only_configs_that_exist(program: str, capsys: pytest.CaptureFixture[str]):
    text = help_text(program, capsys)
    for path in re.findall(r"configs/[\w/.-]+\.yaml", text):
        assert (CONFIGS_DIR.parent / path).is_file(), path
    for name in re.findall(r"^ +uno-train (\w[\w-]*)(?=\s)", text, re.M):  # a config by name
        assert find_config(name).is_file(), name
    for override in re.findall(r"--set ([a-z_.]+=\S+)", text):  # every key the examples set exists
        load_config(find_config("default"), [override])


def test_uno_train_help_lists_the_shipped_configs(capsys: pytest.CaptureFixture[str]):
    names = config_names()
    assert "default" in names and len(names) >= 2
    listing = help_text("uno-train", capsys).split("shipped configs", 1)[1]
    assert all(name in listing for name in names)


def test_uno_evaluate_help_gives_the_defaults_and_the_published_seed(capsys: pytest.CaptureFixture[str]):
    text = " ".join(help_text("uno-evaluate", capsys).split())  # argparse wraps the help at any space
    assert re.search(r"--pairs PAIRS [^-]*\(default: 500\)", text)
    assert re.search(r"--seed SEED [^-]*\(default: 0;", text)
    assert "--seed 12346 with --pairs 2000" in text


def test_a_mistyped_shipped_config_gets_the_closest_name_and_the_list(capsys: pytest.CaptureFixture[str]):
    name = max(config_names(), key=len)
    assert train.main([name[:-1]]) == 2
    err = capsys.readouterr().err
    assert f"config file {name[:-1]} does not exist" in err and f"did you mean {name!r}?" in err
    assert all(shipped in err for shipped in config_names())
    with pytest.raises(ConfigError, match="did you mean 'default'"):
        find_config("configs/defualt.yaml")


def test_a_shipped_sweep_is_found_by_name_and_a_mistyped_one_gets_the_closest(capsys: pytest.CaptureFixture[str]):
    pytest.importorskip("ray")
    pytest.importorskip("optuna")
    name = max(config_names("sweeps"), key=len)
    assert find_config(name, "sweeps") == CONFIGS_DIR / "sweeps" / f"{name}.yaml"
    assert tune.main([name[:-1]]) == 2
    err = capsys.readouterr().err
    assert f"sweep file {name[:-1]} does not exist" in err and f"did you mean {name!r}?" in err


def test_a_folder_given_as_the_config_is_not_taken_for_the_shipped_config_of_its_name(tmp_path: Path):
    folder = tmp_path / "default"
    folder.mkdir()
    assert find_config(folder) == folder
    with pytest.raises(ConfigError, match="cannot read config file"):
        load_config(find_config(folder))


# ------------------------------------------------------------------------------------ players
def test_a_mistyped_player_gets_the_closest_name_and_the_list(capsys: pytest.CaptureFixture[str]):
    for argv, named in ((["rulee"], "rulee"), (["rule", "--opponents", "random", "rulee"], "--opponents rulee")):
        assert evaluate.main([*argv, "--pairs", "1", "--workers", "1"]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"uno-evaluate: error: {named}: not a policy name (did you mean 'rule'?)"), err
        assert all(name in err for name in policy_names()) and err.count("\n") == 1
    for argv in (["--opponent", "rulee"], ["--watch", "random", "rulee"]):
        with pytest.raises(SystemExit) as exited:
            play.main(argv)
        assert exited.value.code == 2
        err = capsys.readouterr().err
        assert f"{argv[0]} rulee: not a policy name (did you mean 'rule'?)" in err
        assert all(name in err for name in policy_names())


def test_a_missing_checkpoint_or_run_folder_is_said_to_be_missing(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    empty = tmp_path / "empty-run"
    empty.mkdir()
    for spec, problem in ((f"{tmp_path}/runs/nope/", "no such file or folder"),
                          ("runs/nope-20261128/model.zip", "no such file or folder"),
                          (str(empty), "the folder holds no model.zip or best_model.zip")):
        assert evaluate.main([spec, "--pairs", "1", "--workers", "1"]) == 2
        err = capsys.readouterr().err
        assert err == f"uno-evaluate: error: {spec}: {problem}" + err.split(problem, 1)[1]
        assert "unknown player" not in err and "policy name" not in err
        with pytest.raises(SystemExit):
            play.main(["--opponent", spec])
        assert f"--opponent {spec}: {problem}" in capsys.readouterr().err


def test_a_missing_run_or_record_is_named_as_missing(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    assert train.main(["--resume", str(tmp_path / "runs" / "nope")]) == 2
    err = capsys.readouterr().err
    assert err == f"uno-train: config error: cannot resume {tmp_path}/runs/nope: no such run folder\n"
    with pytest.raises(SystemExit) as exited:
        play.main(["--replay", str(tmp_path / "nope.json")])
    assert exited.value.code == 2
    assert capsys.readouterr().err.endswith(f"--replay {tmp_path}/nope.json: No such file or directory\n")
