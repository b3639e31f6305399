#!/usr/bin/env python3
"""The project's two commands, runnable on a machine that has nothing but Python 3.11 and pip.

    python3 dev.py train [train options]   # train the default config, then print its evaluation table
    python3 dev.py test  [pytest options]  # lint, then run the whole test suite

Both create a virtual environment in ``.venv`` on first use and install the project into it with its ``dev``
extra. ``torch==2.13.0`` goes in first: pyproject.toml's ``train`` extra asks only for a range (``torch>=2.3,<3``),
which this CPU build satisfies, so pip keeps it instead of pulling a multi-GB CUDA build. This exact pin lives only
here: it is the build the project's machines test with, not a requirement of the package.
The install is redone only when ``pyproject.toml`` changes.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
PYTHON = VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
STAMP = VENV / "installed-pyproject.sha256"
#: The CPU build installed before the project, so that the train extra's torch range is already met.
TORCH = "torch==2.13.0"


def run(*command: str | Path) -> None:
    """Run a command from the project root; stop with its exit code if it fails."""
    result = subprocess.run([str(part) for part in command], cwd=ROOT)
    if result.returncode != 0:
        sys.exit(result.returncode)


def ensure_environment() -> None:
    """Create ``.venv`` and install the project with its dev extras, unless already up to date."""
    wanted = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if PYTHON.exists() and STAMP.exists() and STAMP.read_text().strip() == wanted:
        return
    if not PYTHON.exists():
        print(f"creating a virtual environment in {VENV}", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    print("installing the project and its dependencies (a few minutes the first time)", flush=True)
    pip = (PYTHON, "-m", "pip", "install", "--disable-pip-version-check")
    run(*pip, "--quiet", TORCH)
    run(*pip, "--quiet", "-e", ".[dev]")
    STAMP.write_text(wanted + "\n")


def main(argv: list[str]) -> None:
    commands = {"train", "test"}
    if not argv or argv[0] not in commands:
        sys.exit("usage: python3 dev.py train [train options] | python3 dev.py test [pytest options]")
    command, rest = argv[0], argv[1:]
    ensure_environment()
    if command == "test":
        run(PYTHON, "-m", "ruff", "check", ".")
        run(PYTHON, "-m", "pytest", "-n", "2", *rest)
    else:
        run(PYTHON, "-m", "train", "configs/default.yaml", *rest)


if __name__ == "__main__":
    main(sys.argv[1:])
