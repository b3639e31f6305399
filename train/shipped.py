"""Where the shipped agents (``models/``) and training configs (``configs/``) are found.

In a checkout (or an editable install) they are the repository's own folders. An installed wheel
carries copies of both as package data, in the ``uno_rl_data`` package (``uno_rl_data/models``,
``uno_rl_data/configs`` in site-packages), so ``uno-evaluate search-q-ensemble`` and ``uno-train`` work
from any folder. :data:`MODELS_DIR` and :data:`CONFIGS_DIR` are the folders in use (the models folder is
:mod:`agents.shipped`'s, which also makes each shipped agent a policy by name).
"""

from __future__ import annotations

from pathlib import Path

from agents.shipped import MODELS_DIR, shipped_folder

__all__ = ["CONFIGS_DIR", "MODELS_DIR", "find_config"]

#: The shipped training configs (``default.yaml`` and the recipes of the shipped agents).
CONFIGS_DIR = shipped_folder("configs")


def find_config(spec: str | Path) -> Path:
    """The config file ``spec`` names: the path itself if it exists, else a shipped config of that name.

    ``configs/search-values.yaml``, ``search-values.yaml`` and ``search-values`` all find the shipped
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
