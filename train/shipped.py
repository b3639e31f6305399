"""Where the shipped agents (``models/``) and training configs (``configs/``) are found.

In a checkout (or an editable install) they are the repository's own folders. An installed wheel
carries copies of both as package data, in the ``uno_rl_data`` package (``uno_rl_data/models``,
``uno_rl_data/configs`` in site-packages), so ``uno-evaluate ppo-counting`` and ``uno-train`` work
from any folder. :data:`MODELS_DIR` and :data:`CONFIGS_DIR` are the folders in use.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

_CHECKOUT = Path(__file__).resolve().parent.parent


def _shipped_folder(name: str) -> Path:
    """The checkout's ``name`` folder when this code runs from a checkout, else the installed package data."""
    # pyproject.toml next to the folder tells a checkout from a site-packages that happens to hold a "models".
    if (_CHECKOUT / "pyproject.toml").is_file() and (_CHECKOUT / name).is_dir():
        return _CHECKOUT / name
    spec = importlib.util.find_spec(f"uno_rl_data.{name}")
    if spec is not None and spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    return _CHECKOUT / name  # missing: callers name this path in their errors


#: The shipped agents: a bare name like ``ppo-none`` resolves to ``MODELS_DIR / "ppo-none"``.
MODELS_DIR = _shipped_folder("models")
#: The shipped training configs (``default.yaml`` and the recipes of the shipped agents).
CONFIGS_DIR = _shipped_folder("configs")


def find_config(spec: str | Path) -> Path:
    """The config file ``spec`` names: the path itself if it exists, else a shipped config of that name.

    ``configs/ppo-counting.yaml``, ``ppo-counting.yaml`` and ``ppo-counting`` all find the shipped
    recipe when no such file exists in the current folder. A name found nowhere comes back unchanged,
    so the config loader's "no such file" error names what the user typed.
    """
    path = Path(spec)
    if path.is_file():
        return path
    for candidate in (CONFIGS_DIR / path.name, CONFIGS_DIR / f"{path.name}.yaml"):
        if candidate.is_file():
            return candidate
    return path
