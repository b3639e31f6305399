"""Where the shipped agents (``models/``) and training configs (``configs/``) are found.

In a checkout (or an editable install) they are the repository's own folders. An installed wheel
carries copies of both as package data, in the ``uno_rl_data`` package (``uno_rl_data/models``,
``uno_rl_data/configs`` in site-packages), so ``uno-evaluate search-q-ensemble`` and ``uno-train`` work
from any folder. :data:`MODELS_DIR` and :data:`CONFIGS_DIR` are the folders in use (the models folder is
:mod:`agents.shipped`'s, which also makes each shipped agent a policy by name).
"""

from __future__ import annotations

import difflib
import textwrap
from pathlib import Path

from agents.shipped import MODELS_DIR, shipped_folder
from train.config import ConfigError

__all__ = ["CONFIGS_DIR", "MODELS_DIR", "config_listing", "config_names", "find_config"]

#: The shipped training configs (``default.yaml`` and the recipes of the shipped agents).
CONFIGS_DIR = shipped_folder("configs")


def config_names(folder: str = "") -> list[str]:
    """The names of the shipped configs (``default``, ...), or of the sweeps with ``folder="sweeps"``."""
    return sorted(path.stem for path in (CONFIGS_DIR / folder).glob("*.yaml"))


def config_listing(folder: str = "") -> str:
    """The shipped configs (or sweeps) for a ``--help``: where they are, then their names, wrapped."""
    kind = "sweeps" if folder == "sweeps" else "configs"
    return f"shipped {kind} (in {CONFIGS_DIR / folder}):\n" + textwrap.fill(
        ", ".join(config_names(folder)), 116, initial_indent="  ", subsequent_indent="  ")


def find_config(spec: str | Path, folder: str = "") -> Path:
    """The config file ``spec`` names: the path itself if it exists, else a shipped config of that name.

    ``configs/search-values.yaml``, ``search-values.yaml`` and ``search-values`` all find the shipped
    recipe when no such file exists in the current folder; ``folder="sweeps"`` finds the shipped sweeps. A name
    found nowhere raises :class:`ConfigError` naming what the user typed, the closest shipped name and the list.
    """
    path = Path(spec)
    if path.exists():  # a folder or an unreadable file too: the config loader says what is wrong with it
        return path
    for candidate in (CONFIGS_DIR / folder / path.name, CONFIGS_DIR / folder / f"{path.name}.yaml"):
        if candidate.is_file():
            return candidate
    names = config_names(folder)
    close = difflib.get_close_matches(path.name.removesuffix(".yaml"), names, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    kind = "sweep" if folder == "sweeps" else "config"
    raise ConfigError(f"{kind} file {spec} does not exist, and no shipped {kind} has that name{hint}; the shipped "
                      f"{kind}s are {', '.join(names)} (give the name alone, or a YAML file's path)")
