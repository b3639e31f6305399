"""README.md stays true: its Python snippets run (training budgets cut to a few steps), its commands name programs,
options, config files and players that exist, and its agents' figures are their model cards' ``final_eval.json``
(as are those of the docs pages that show them)."""

from __future__ import annotations

import argparse
import importlib
import itertools
import json
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
    assert len(SNIPPETS) >= 1


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
    assert configs >= 2 and len(players) >= 4
    assert players <= set(policy_names()), f"unknown players in README: {sorted(players - set(policy_names()))}"


# ------------------------------------------------------------------------------------------- the agents' figures
MODELS = sorted(path.parent.name for path in (ROOT / "models").glob("*/final_eval.json"))
#: The pages whose tables give the shipped networks' win rates against ``rule`` and ``random``.
PAGES = ["README.md", "docs/agents.md", "docs/results.md"]
_RATE = re.compile(r"^\**(\d+\.\d)%(?: \((\d+\.\d)% - (\d+\.\d)%\))?\**$")


def _card_figures(name: str) -> dict[str, tuple[float, float, float]]:
    """``opponent -> (win rate, CI low, CI high)`` in percent, from ``models/NAME/final_eval.json``."""
    rows = json.loads((ROOT / "models" / name / "final_eval.json").read_text())
    return {row["opponent"]: (100 * row["win_rate"], 100 * row["ci_low"], 100 * row["ci_high"]) for row in rows}


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _table_rows(text: str, name: str) -> list[list[tuple[float, float | None, float | None]]]:
    """For every row whose first cell is ``name`` (in backticks, maybe bold) in a table with columns "vs `rule`" and
    "vs `random`": those two cells as ``(rate, CI low, CI high)`` (the bounds None where a cell has no interval)."""
    found, columns = [], None
    for line in text.splitlines():
        if not line.startswith("|"):
            columns = None
            continue
        cells = _cells(line)
        if columns is None:  # a table's header
            columns = [cells.index(header) for header in ("vs `rule`", "vs `random`") if header in cells]
        elif len(columns) == 2 and cells[0].strip("*") == f"`{name}`":
            matches = [_RATE.match(cells[column]) for column in columns]
            assert all(matches), f"the row of {name} has no win rate in a vs `rule`/`random` column: {line}"
            found.append([(float(r), None if low is None else float(low), None if high is None else float(high))
                          for r, low, high in (match.groups() for match in matches)])
    return found


def test_every_shipped_network_has_figures():
    assert len(MODELS) >= 5 and "search-q-afterstate" in MODELS
    for name in MODELS:
        assert set(_card_figures(name)) == {"rule", "random"}


@pytest.mark.parametrize("page", PAGES)
def test_agents_tables_agree_with_the_model_cards(page: str):
    """Each table row of a shipped network gives its win rates against rule and random (and their intervals, where
    shown) as its ``final_eval.json`` does, to the 0.1 point; every page shows every network."""
    text = (ROOT / page).read_text()
    shown = set()
    for name in MODELS:
        card = _card_figures(name)
        for rates in _table_rows(text, name):
            for opponent, (rate, low, high) in zip(("rule", "random"), rates, strict=True):
                expected = card[opponent]
                assert abs(rate - expected[0]) <= 0.05 + 1e-9, f"{page}: {name} against {opponent}: {rate}%, " \
                    f"the model card says {expected[0]:.2f}%"
                if low is not None:
                    assert abs(low - expected[1]) <= 0.05 + 1e-9 and abs(high - expected[2]) <= 0.05 + 1e-9, \
                        f"{page}: {name} against {opponent}: interval {low}% - {high}%, the card's " \
                        f"{expected[1]:.2f}% - {expected[2]:.2f}%"
            shown.add(name)
    assert shown == set(MODELS), f"{page} shows no table row for {sorted(set(MODELS) - shown)}"


def test_the_model_cards_tables_are_their_final_eval():
    """Each model card's evaluation table is its final_eval.json, rounded."""
    for name in MODELS:
        card = (ROOT / "models" / name / "README.md").read_text()
        row = rf"^\| {re.escape(name)} \| (\w+) \| \d+ \| ([\d.]+)% \| ([\d.]+)% - ([\d.]+)% \|"
        rows = {opponent: (float(rate), float(low), float(high))
                for opponent, rate, low, high in re.findall(row, card, flags=re.MULTILINE)}
        assert set(rows) == {"rule", "random"}, f"models/{name}/README.md: no evaluation rows"
        for opponent, expected in _card_figures(name).items():
            assert all(abs(a - b) <= 0.05 + 1e-9 for a, b in zip(rows[opponent], expected, strict=True)), \
                f"models/{name}/README.md: {opponent} row {rows[opponent]} against final_eval.json {expected}"


def test_readme_names_the_strongest_network():
    """The agents table's bold row is the network with the best win rate against rule."""
    best = max(MODELS, key=lambda name: _card_figures(name)["rule"][0])
    assert f"| `{best}` | **" in README
