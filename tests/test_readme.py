"""README.md stays true: its Python snippets run (training budgets cut to a few steps), its commands name programs,
options, config files and players that exist, and its headline figures are the model card's."""

from __future__ import annotations

import argparse
import importlib
import itertools
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SNIPPETS = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.DOTALL)


def test_the_readme_has_python_snippets():
    assert len(SNIPPETS) >= 2


@pytest.mark.parametrize("index", range(len(SNIPPETS)))
def test_readme_snippet_runs(index: int, tmp_path: Path):
    # .learn(20_000) becomes .learn(256): the snippet's code paths all run, in seconds rather than minutes.
    code, cut = re.subn(r"\.learn\([0-9_]+\)", ".learn(256)", SNIPPETS[index])
    code = code.replace('"MlpPolicy", env,', '"MlpPolicy", env, n_steps=128, batch_size=64,') if cut else code
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                            timeout=110)
    assert result.returncode == 0, f"README snippet {index}:\n{code}\n{result.stderr[-3000:]}"


# ------------------------------------------------------------------------------------------- README's commands
README = (ROOT / "README.md").read_text()
SCRIPTS = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]


def _commands() -> list[list[str]]:
    """Every command of README's bash blocks as words (comments, ``[optional]`` brackets and ``&&`` split off)."""
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", README, flags=re.DOTALL):
        for line in block.splitlines():
            for part in line.split("&&"):
                words = [_unbracket(word) for word in shlex.split(part, comments=True)]
                if words:
                    commands.append(words)
    return commands


def _unbracket(word: str) -> str:
    """A word without the brackets that mark an optional part (``[--port``, ``8000]``), keeping a value's own
    (``policy.net_arch=[64,64]``)."""
    word = word.removeprefix("[")
    return word[:-1] if word.endswith("]") and word.count("[") < word.count("]") else word


def _entry_point(words: list[str]) -> tuple[str, list[str]] | None:
    """``(module, arguments)`` of a command that runs this project's code (its CLIs, ``python -m``), else None."""
    name = Path(words[0]).name
    if name in SCRIPTS:
        return SCRIPTS[name].split(":")[0], words[1:]
    if name.startswith("python") and words[1:2] == ["-m"]:
        return words[2], words[3:]
    return None


PROJECT_COMMANDS = [found for found in map(_entry_point, _commands()) if found is not None]


class _Parsed(Exception):
    """Raised instead of parsing: the parser a program built, for its option names."""

    def __init__(self, parser: argparse.ArgumentParser) -> None:
        self.parser = parser


def _options(module: str, monkeypatch: pytest.MonkeyPatch) -> set[str]:
    def capture(parser: argparse.ArgumentParser, *args, **kwargs):
        raise _Parsed(parser)

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", capture)
    with pytest.raises(_Parsed) as parsed:
        importlib.import_module(module).main([])
    return {option for action in parsed.value.parser._actions for option in action.option_strings}


def test_readme_has_commands_of_every_program():
    programs = {module for module, _ in PROJECT_COMMANDS}
    assert {entry.split(":")[0] for entry in SCRIPTS.values()} <= programs
    assert {"train.integrations.rllib_ppo", "train.integrations.torchrl_ppo"} <= programs


@pytest.mark.parametrize("module", sorted({module for module, _ in PROJECT_COMMANDS}))
def test_readme_commands_use_real_options(module: str, monkeypatch: pytest.MonkeyPatch):
    """Every ``--option`` README gives a program is one its parser defines (the program's module must exist)."""
    if module == "train.integrations.rllib_ppo":
        pytest.importorskip("ray.rllib")
    if module == "train.integrations.torchrl_ppo":
        pytest.importorskip("torchrl")
    known = _options(module, monkeypatch)
    used = {word.split("=")[0] for m, arguments in PROJECT_COMMANDS if m == module
            for word in arguments if word.startswith("--")}
    assert used <= known, f"{module}: README uses {sorted(used - known)}, not among {sorted(known)}"


def _values(arguments: list[str], option: str) -> list[str]:
    """The words after ``option`` up to the next option."""
    if option not in arguments:
        return []
    rest = arguments[arguments.index(option) + 1:]
    return list(itertools.takewhile(lambda word: not word.startswith("--"), rest))


def test_readme_configs_and_players_exist():
    """Every config file README names loads (with the command's ``--set`` overrides); every player name is known."""
    from train.config import load_config
    from train.sweeps.config import load_sweep
    from uno_env.policy import policy_names

    players, configs = set(), 0
    for module, arguments in PROJECT_COMMANDS:
        for word in arguments:
            if word.endswith(".yaml"):
                path = ROOT / word
                assert path.is_file(), f"README names {word}, which does not exist"
                if path.parent.name == "sweeps":
                    load_sweep(path)
                else:
                    load_config(path, [arguments[i + 1] for i, w in enumerate(arguments) if w == "--set"])
                configs += 1
        if module in ("train.cli.evaluate", "train.cli.play"):
            first = arguments[0] if arguments and not arguments[0].startswith("--") else None
            players.update(name for name in [first, *_values(arguments, "--opponent"),
                                             *_values(arguments, "--opponents"), *_values(arguments, "--tournament"),
                                             *_values(arguments, "--watch")]
                           if name and "/" not in name and not name.isupper())
    assert configs >= 8 and len(players) >= 5
    assert players <= set(policy_names()), f"unknown players in README: {sorted(players - set(policy_names()))}"


def test_readme_headline_agrees_with_the_model_card_and_results():
    """README's figures for the strongest shipped agent are its model card's, and RESULTS.md's headline cites them."""
    card = (ROOT / "models" / "search-q-afterstate" / "README.md").read_text()
    rows = {opponent: (rate, ci) for opponent, rate, ci in re.findall(
        r"^\| search-q-afterstate \| (\w+) \| \d+ \| ([\d.]+%) \| ([\d.]+% - [\d.]+%) \|", card, flags=re.MULTILINE)}
    (rule, rule_ci), (random, _) = rows["rule"], rows["random"]
    text = " ".join(README.split())
    assert f"`search-q-afterstate`, wins {rule} ({rule_ci}) against `rule` and {random} against `random`" in text
    assert f"`search-q-afterstate` ({rule})" in " ".join((ROOT / "docs" / "RESULTS.md").read_text().split())
