"""The wheel installs like a library: shipped agents and configs inside, the commands work from any folder; its
metadata (license, type hints, dependencies: torch only with the ``train`` extra); the env and the players without a
network run where torch is not installed.

The wheel is built from a copy of the checkout's tracked files (so nothing is written into the checkout)
without build isolation (offline: the venv's setuptools), and installed without dependencies into a fresh
venv that reuses this venv's packages through a ``.pth`` line. That line only appends a folder to
``sys.path``; it runs none of that folder's ``.pth`` hooks, so the checkout's editable install stays out.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import textwrap
import tomllib
import venv
import zipfile
from email.parser import HeaderParser
from pathlib import Path

import gymnasium as gym
import pytest
from packaging.requirements import Requirement
from setuptools import find_packages

import uno_env

ROOT = Path(__file__).resolve().parent.parent


def test_the_package_list_holds_every_code_package():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = set(find_packages(str(ROOT), include=["uno_env*", "agents*", "train*"]))
    assert found <= listed, f"add {sorted(found - listed)} to [tool.setuptools] packages in pyproject.toml"


def run(command: list[str], cwd: Path, **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, **kwargs)
    assert result.returncode == 0, f"{' '.join(command)}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from this checkout's tracked files."""
    if shutil.which("git") is None:
        pytest.skip("git is needed to list the checkout's files")
    base = tmp_path_factory.mktemp("wheel")
    source = base / "source"
    tracked = run(["git", "ls-files", "-z"], ROOT).stdout.split("\0")
    for name in filter(None, tracked):
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet", "-w",
         str(base / "dist"), str(source)], base)
    (built,) = (base / "dist").glob("uno_rl-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bin folder of a fresh venv holding :func:`wheel`."""
    base = tmp_path_factory.mktemp("installed")
    env_dir = base / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    purelib = run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], base).stdout
    Path(purelib.strip(), "zz_reuse_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--quiet", str(wheel)], base)
    return env_dir / "bin"


def test_installed_package_finds_its_shipped_agents_and_configs(installed: Path, tmp_path: Path):
    code = "import train.shipped as s, uno_env; print(s.MODELS_DIR); print(s.CONFIGS_DIR); print(uno_env.__file__)"
    lines = run([str(installed / "python"), "-c", code], tmp_path).stdout.splitlines()
    assert all("site-packages" in line for line in lines), lines
    assert Path(lines[0], "search-q-none", "model.zip").is_file() and Path(lines[1], "default.yaml").is_file()


def test_commands_work_from_an_unrelated_folder(installed: Path, tmp_path: Path):
    out = run([str(installed / "uno-evaluate"), "search-q-none", "--pairs", "5"], tmp_path).stdout
    assert "| search-q-none | random | 10 |" in out and "| search-q-none | rule | 10 |" in out
    run([str(installed / "uno-train"), "--set", "total_timesteps=2048", "--set", "expert_iteration.start=null",
         "--set", "eval.every=2048", "--set", "eval.pairs=2", "--set", "eval.final_pairs=2", "--set", "eval.workers=1",
         "--quiet", "--run-dir", "run"], tmp_path)
    assert (tmp_path / "run" / "final_eval.json").is_file() and (tmp_path / "run" / "config.yaml").is_file()
    played = run([str(installed / "uno-play"), "--opponent", "search-q-none", "--seed", "1"], tmp_path, input="q\n")
    assert "search-q-none" in played.stdout


def test_wheel_metadata_carries_the_license_the_type_markers_and_torch_only_as_an_extra(wheel: Path):
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        (metadata_name,) = [name for name in names if name.endswith(".dist-info/METADATA")]
        metadata = HeaderParser().parsestr(archive.read(metadata_name).decode())
        license_names = [name for name in names if ".dist-info/licenses/" in name]
        assert [Path(name).name for name in license_names] == ["LICENSE"]
        assert "MIT License" in archive.read(license_names[0]).decode()
    assert {"uno_env/py.typed", "agents/py.typed", "train/py.typed"} <= names
    assert metadata["Version"] == "1.0.0" and metadata["License-Expression"] == "MIT"
    assert metadata["License-File"] == "LICENSE"
    urls = dict(url.split(", ", 1) for url in metadata.get_all("Project-URL"))
    assert {"Homepage", "Documentation", "Repository", "Changelog", "Issues"} <= set(urls)
    requirements = [Requirement(line) for line in metadata.get_all("Requires-Dist")]
    core = {req.name for req in requirements if req.marker is None}
    training = {"torch", "stable-baselines3", "sb3-contrib", "tensorboard"}
    assert {"numpy", "gymnasium", "numba", "scipy", "threadpoolctl", "matplotlib"} <= core
    assert not core & training, f"core dependencies must not pull {sorted(core & training)}: they belong to [train]"
    in_train = {req.name: req for req in requirements if req.marker and req.marker.evaluate({"extra": "train"})}
    assert training <= set(in_train)
    # A range, which the CPU build dev.py installs first satisfies; an exact pin would belong to dev.py alone.
    assert not any(spec.operator == "==" for spec in in_train["torch"].specifier), in_train["torch"]


def test_uno_v0_is_registered_and_documents_its_version_history():
    assert "Uno-v0" in gym.registry and gym.spec("Uno-v0").entry_point == "uno_env.env:UnoEnv"
    history = uno_env.UnoEnv.__doc__.split("## Version History", 1)
    assert len(history) == 2, "UnoEnv's docstring ends with a '## Version History' section (Gymnasium's convention)"
    assert history[1].strip().startswith("* v0:")


#: The modules of the train extra; the child below makes them unimportable before anything else runs.
TRAINING_MODULES = ("torch", "stable_baselines3", "sb3_contrib", "tensorboard")

TORCH_FREE_GAMES = textwrap.dedent("""
    import sys
    blocked = {blocked!r}
    for name in blocked:
        sys.modules[name] = None  # "import torch" now raises ModuleNotFoundError, as without the package

    import gymnasium as gym
    import numpy as np

    import uno_env
    from uno_env.match import play_game

    env = gym.make("Uno-v0", opponent="rule")
    obs, info = env.reset(seed=0)
    rng = np.random.default_rng(0)
    terminated = truncated = False
    while not (terminated or truncated):
        action = int(rng.choice(np.flatnonzero(info["action_mask"])))
        obs, reward, terminated, truncated, info = env.step(action)
    print("env", info["winner"])

    names = uno_env.policy.policy_names()  # reads the entry points and the shipped agents' catalogue
    assert {{"search", "search-guided", "search-q-none"}} <= set(names), names
    from agents.search import SearchPolicy

    assert isinstance(uno_env.make_policy("search"), SearchPolicy)  # the name, through its entry point
    result = play_game((SearchPolicy(simulations=48), uno_env.make_policy("rule")), seed=3)  # a small budget
    print("match", result.winner, result.decisions)

    for name in ("search-guided", "search-q-none"):  # players with a network say what to install
        try:
            uno_env.make_policy(name)
        except ModuleNotFoundError as error:
            assert "uno-rl[train]" in str(error), error
        else:
            raise AssertionError(name + " was built without torch")
    loaded = sorted(name for name in blocked if sys.modules.get(name) is not None)
    assert not loaded, loaded
    print("torch-free")
""")


def test_env_and_players_without_a_network_need_no_torch(tmp_path: Path):
    code = TORCH_FREE_GAMES.format(blocked=TRAINING_MODULES)
    result = run([sys.executable, "-c", code], tmp_path, timeout=240)
    lines = result.stdout.splitlines()
    assert lines[0].startswith("env ") and lines[1].startswith("match ") and lines[-1] == "torch-free", lines


def test_the_programs_without_the_train_extra_name_it():
    """With torch missing, a program stops with the install command of the ``train`` extra, not a traceback."""
    code = "import sys; sys.modules['torch'] = None\nfrom train.cli.evaluate import main"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert result.stderr.strip() == ("uno-rl's command-line programs need the training extra: pip install "
                                     "'uno-rl[train]' (missing: torch)")
