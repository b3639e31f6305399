"""The documentation site builds, and no file of the project tells its history with internal work labels.

``mkdocs build --strict`` fails on a broken link, a missing anchor, a page left out of the nav and a docstring the
API reference cannot render, so the build is the site's test. It is skipped only when mkdocs is not installed and
``UNO_REQUIRE_DOCS`` is unset (CI sets it: the dev extra carries mkdocs).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"

#: Where users read the project: the site, the README and changelog, configs, model cards, notebooks, every source.
SCANNED = (["docs", "configs", "models", "notebooks", "uno_env", "agents", "train", "tests", "benchmarks"],
           ["README.md", "CHANGELOG.md", "mkdocs.yml", "pyproject.toml"])
SUFFIXES = {".md", ".py", ".yaml", ".yml", ".ipynb", ".json", ".toml", ".txt", ".cfg"}

#: Labels of the work's own history (its stops and issue numbers), which mean nothing to a user. A number must
#: follow the word, so prose such as "the search stops at..." or "step 12" is not flagged.
LABELS = (re.compile(r"\bstops? \d+", re.IGNORECASE), re.compile(r"\bissues? \d+", re.IGNORECASE))
#: Pages the site replaced; "RULES.md" stays as the rules contract's name, only a path to it must be current.
RETIRED_PAGES = re.compile(r"\b(?:BELIEF|BENCHMARKS|DECISIONS|TESTING|RESULTS)\.md\b")
DOCS_PATH = re.compile(r"\bdocs/([\w./-]+?\.md)\b")


def scanned_files() -> list[Path]:
    """Every text file of :data:`SCANNED` (caches and this test's own patterns excepted)."""
    folders, files = SCANNED
    found = [ROOT / name for name in files if (ROOT / name).is_file()]
    for folder in folders:
        found += [path for path in sorted((ROOT / folder).rglob("*"))
                  if path.is_file() and path.suffix in SUFFIXES and "__pycache__" not in path.parts
                  and ".ipynb_checkpoints" not in path.parts]
    return [path for path in found if path != Path(__file__).resolve()]


def hits(flagged: Callable[[str], bool]) -> list[str]:
    """``path:line: text`` for every line of the scanned files that ``flagged`` says is wrong."""
    found = []
    for path in scanned_files():
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if flagged(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:160]}")
    return found


def names_a_missing_page(line: str) -> bool:
    """Whether ``line`` names a page the site replaced, or a path ``docs/....md`` that does not exist."""
    return bool(RETIRED_PAGES.search(line)) or any(not (DOCS / m.group(1)).is_file() for m in DOCS_PATH.finditer(line))


SCRIPTS = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]


def doc_commands() -> list[tuple[str, list[str]]]:
    """``(page, words)`` of every command in the bash blocks of the site's pages (continued lines joined)."""
    commands = []
    for page in sorted(DOCS.rglob("*.md")):
        for block in re.findall(r"```bash\n(.*?)```", page.read_text(), flags=re.DOTALL):
            for line in block.replace("\\\n", " ").splitlines():
                words = shlex.split(line, comments=True)
                if words:
                    commands.append((str(page.relative_to(ROOT)), words))
    return commands


def program(words: list[str]) -> tuple[list[str], list[str]] | None:
    """The command line that runs the project program a command names (``uno-*``, ``python -m train...``,
    ``python benchmarks/....py``) and the command's arguments; None for other commands (pip, ray, tensorboard)."""
    name = Path(words[0]).name
    if name in SCRIPTS:
        return [sys.executable, "-m", SCRIPTS[name].split(":")[0]], words[1:]
    if name.startswith("python") and len(words) > 2:
        if words[1] == "-m" and words[2].split(".")[0] in ("train", "agents", "uno_env"):
            return [sys.executable, "-m", words[2]], words[3:]
        if words[1].startswith("benchmarks/"):
            return [sys.executable, str(ROOT / words[1])], words[2:]
    return None


def uses_of_programs() -> dict[str, list[tuple[str, list[str], list[str]]]]:
    """Each program the pages run, by name: ``(page, command line, arguments)`` of every command that runs it."""
    uses: dict[str, list[tuple[str, list[str], list[str]]]] = {}
    for page, words in doc_commands():
        if (found := program(words)) is not None:
            line, arguments = found
            uses.setdefault(" ".join(Path(word).name for word in line[1:]), []).append((page, line, arguments))
    return uses


PROGRAMS = sorted(uses_of_programs())


@pytest.mark.slow
@pytest.mark.parametrize("name", PROGRAMS)
def test_the_pages_commands_use_real_programs_and_options(name: str) -> None:
    """Every program a page runs exists, every ``--option`` it is given is in the program's ``--help``, and every
    config file named exists."""
    uses = uses_of_programs()[name]
    result = subprocess.run([*uses[0][1], "--help"], cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, f"{name} --help failed (named in {uses[0][0]}):\n{result.stderr[-2000:]}"
    known = set(re.findall(r"--[\w-]+", result.stdout))
    for page, _, arguments in uses:
        options = {word.split("=")[0] for word in arguments if word.startswith("--")}
        assert options <= known, f"{page}: {name} has no {sorted(options - known)}"
        for word in arguments:
            if word.startswith("configs/"):
                assert (ROOT / word).is_file(), f"{page}: {word} does not exist"


def snippets() -> list[tuple[str, str]]:
    """``(page, code)`` of every complete program among the pages' Python blocks (those that start by importing)."""
    return [(str(page.relative_to(ROOT)), code) for page in sorted(DOCS.rglob("*.md"))
            for code in re.findall(r"```python\n(.*?)```", page.read_text(), flags=re.DOTALL)
            if code.startswith(("import ", "from "))]


@pytest.mark.slow
@pytest.mark.parametrize(("page", "code"), snippets(), ids=[f"{page}-{i}" for i, (page, _) in enumerate(snippets())])
def test_the_pages_python_snippets_run(page: str, code: str) -> None:
    # Run from the clone's root, as the pages' relative paths (models/...) assume. .learn(20_000) becomes
    # .learn(256) with a rollout to match: every code path runs, in seconds.
    code, cut = re.subn(r"\.learn\([0-9_]+\)", ".learn(256)", code)
    if cut:
        code = re.sub(r'\("MlpPolicy", env,', '("MlpPolicy", env, n_steps=128, batch_size=64,', code)
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, f"{page}:\n{code}\n{result.stderr[-3000:]}"


@pytest.mark.slow
def test_the_site_builds_strictly(tmp_path: Path) -> None:
    if importlib.util.find_spec("mkdocs") is None:
        if os.environ.get("UNO_REQUIRE_DOCS"):
            pytest.fail("UNO_REQUIRE_DOCS is set but mkdocs is not installed (pip install -e '.[dev]')")
        pytest.skip("mkdocs is not installed (the dev extra has it)")
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                            cwd=ROOT, capture_output=True, text=True, timeout=240,
                            env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert result.returncode == 0, f"mkdocs build --strict failed:\n{result.stdout}\n{result.stderr}"
    for page in ("index.html", "environment/index.html", "reference/uno_env/index.html"):
        assert (tmp_path / "site" / page).is_file(), page
    reference = (tmp_path / "site" / "reference" / "uno_env" / "index.html").read_text()
    assert "Observation Space" in reference, "the API reference lost UnoEnv's docstring"


@pytest.mark.parametrize("pattern", LABELS, ids=lambda p: p.pattern)
def test_no_file_carries_an_internal_history_label(pattern: re.Pattern[str]) -> None:
    found = hits(pattern.search)
    assert not found, f"{len(found)} line(s) with a work label; describe the project as it is:\n" + "\n".join(found)


def test_no_file_points_to_a_page_that_is_gone() -> None:
    found = hits(names_a_missing_page)
    assert not found, f"{len(found)} reference(s) to documentation that is not there:\n" + "\n".join(found)


def test_the_label_patterns_flag_labels_and_spare_prose() -> None:
    # Label-shaped text, joined from its words so that this file itself holds none.
    labelled = [" ".join(words) for words in (("measured at", "stop", "21"), ("(Issue", "13)"), ("issues", "17/31"),
                                              ("stops", "20 to 35"))]
    prose = ["step 12", "the search stops at 800 simulations", "an issue of 2 cards", "stop the run"]
    assert all(any(p.search(text) for p in LABELS) for text in labelled)
    assert not any(p.search(text) for p in LABELS for text in prose)
    assert names_a_missing_page("see docs/RULES.md") and names_a_missing_page("BENCHMARKS.md, 'Belief cost'")
    assert not names_a_missing_page("the rules contract, RULES.md (docs/rules.md)")
