"""Hostile or careless input to the env, its wrappers, the training config and the web table; a read-only install.

Each test is a case that went wrong before its fix: a float action taken as an illegal move, a class passed as
the opponent, a billion particles allocated at reset, numpy's IndexError for a float index, a bare KeyError for an
unknown agent, a duplicate YAML key kept silently, a YAML error pointing at "<unicode string>", a count of 1e30
games looping on shard bookkeeping, Python's digit-limit error (a 500 on the web table), a JSON string taken as
true, a web client trickling its headers for ever, and ``import uno_env`` failing on a read-only install.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------------------------ a read-only install
@pytest.fixture
def read_only_package() -> Iterator[Path]:
    """A copy of uno_env in a folder every user may read and nobody but root may write."""
    folder = Path(tempfile.mkdtemp(prefix="uno-read-only-"))
    try:
        shutil.copytree(ROOT / "uno_env", folder / "uno_env", ignore=shutil.ignore_patterns("__pycache__"))
        for path in (folder, *folder.rglob("*")):
            path.chmod(0o555 if path.is_dir() else 0o444)
        yield folder
    finally:
        for path in (folder, *folder.rglob("*")):
            path.chmod(0o755)
        shutil.rmtree(folder)


def _unprivileged(command: list[str]) -> list[str]:
    """``command`` as run by a user without privileges: root drops to ``nobody``; anyone else already is one."""
    if os.geteuid() != 0:
        return command
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv (util-linux) to drop to an unprivileged user")
    try:
        pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("no user 'nobody' to run as")
    return [setpriv, "--reuid=nobody", "--regid=nogroup", "--clear-groups", *command]


def test_a_read_only_install_imports_and_plays_as_an_unprivileged_user(read_only_package: Path):
    """numba had nowhere to write its cache (package read-only, no writable home): ``import uno_env`` raised."""
    home = read_only_package / "no-home"  # does not exist, and its parent cannot be written
    environment = {key: value for key, value in os.environ.items()
                   if not key.startswith(("NUMBA_", "XDG_", "PYTHON"))}
    environment.update(HOME=str(home), PYTHONPATH=str(read_only_package), PYTHONDONTWRITEBYTECODE="1")
    reachable = subprocess.run(_unprivileged([sys.executable, "-c", "import gymnasium, numba"]), env=environment,
                               capture_output=True, text=True, timeout=120)
    if reachable.returncode != 0:  # e.g. a venv in a folder only its owner may enter
        pytest.skip(f"the unprivileged user cannot run this Python: {reachable.stderr.strip()[-300:]}")
    game = textwrap.dedent("""
        import gymnasium as gym
        import uno_env

        env = gym.make("Uno-v0", opponent="rule")
        obs, info = env.reset(seed=3)
        done = False
        while not done:
            action = int(info["action_mask"].nonzero()[0][0])
            obs, reward, terminated, truncated, info = env.step(action)
            done = terminated or truncated
        print(uno_env.__file__, info["winner"])
    """)
    result = subprocess.run(_unprivileged([sys.executable, "-c", game]), env=environment, capture_output=True,
                            text=True, timeout=600, cwd=read_only_package)
    assert result.returncode == 0, result.stderr[-3000:]
    where, winner = result.stdout.split()
    assert Path(where).is_relative_to(read_only_package) and winner in ("agent", "opponent", "draw")
    assert not home.exists() and not list(read_only_package.rglob("__pycache__"))
