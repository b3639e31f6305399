"""The wheel installs like a library: shipped agents and configs inside, the commands work from any folder.

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
import tomllib
import venv
from pathlib import Path

import pytest
from setuptools import find_packages

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
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bin folder of a fresh venv holding the wheel built from this checkout."""
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
    (wheel,) = (base / "dist").glob("uno_rl-*.whl")
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
    run([str(installed / "uno-train"), "--set", "total_timesteps=2048", "--set", "pretrain.teacher=null",
         "--set", "eval.every=2048", "--set", "eval.pairs=2", "--set", "eval.final_pairs=2", "--set", "eval.workers=1",
         "--quiet", "--run-dir", "run"], tmp_path)
    assert (tmp_path / "run" / "final_eval.json").is_file() and (tmp_path / "run" / "config.yaml").is_file()
    played = run([str(installed / "uno-play"), "--opponent", "search-q-none", "--seed", "1"], tmp_path, input="q\n")
    assert "search-q-none" in played.stdout
