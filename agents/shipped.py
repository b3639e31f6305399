"""The shipped agents (``models/``): where they are, and each one as a policy by its folder's name.

In a checkout (or an editable install) the folder is the repository's own. An installed wheel carries a
copy as package data, in the ``uno_rl_data`` package (``uno_rl_data/models`` in site-packages), so
``gym.make("Uno-v0", opponent="search-q-ensemble")`` and ``uno-evaluate search-q-ensemble`` work from any folder.
:func:`shipped_policies` is the catalogue :mod:`uno_env.policy` consults for these names.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

_CHECKOUT = Path(__file__).resolve().parent.parent
#: The file a shipped agent's folder holds.
MODEL_FILE = "model.zip"


def shipped_folder(name: str) -> Path:
    """The checkout's ``name`` folder when this code runs from a checkout, else the installed package data."""
    # pyproject.toml next to the folder tells a checkout from a site-packages that happens to hold a "models".
    if (_CHECKOUT / "pyproject.toml").is_file() and (_CHECKOUT / name).is_dir():
        return _CHECKOUT / name
    spec = importlib.util.find_spec(f"uno_rl_data.{name}")
    if spec is not None and spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    return _CHECKOUT / name  # missing: callers name this path in their errors


#: The shipped agents: a bare name like ``search-q-none`` is ``MODELS_DIR / "search-q-none"``.
MODELS_DIR = shipped_folder("models")


def shipped_names() -> list[str]:
    """The shipped agents' names: the folders of :data:`MODELS_DIR` that hold a model."""
    if not MODELS_DIR.is_dir():
        return []
    return sorted(folder.name for folder in MODELS_DIR.iterdir() if (folder / MODEL_FILE).is_file())


def checkpoint_path(network: str | Path, who: str) -> Path:
    """The checkpoint of ``network``: a shipped agent's ``model.zip`` by name, else ``network`` as a path.

    Raises:
        ValueError: ``"{who}: network ... is neither a shipped agent (...) nor a checkpoint file"``.
    """
    path = MODELS_DIR / str(network) / MODEL_FILE if str(network) in shipped_names() else Path(network)
    if not path.is_file():
        raise ValueError(f"{who}: network {str(network)!r} is neither a shipped agent ({', '.join(shipped_names())}) "
                         "nor a checkpoint file")
    return path


def shipped_policies() -> dict[str, Callable[[], Any]]:
    """Name -> factory of each shipped agent (a deterministic :class:`~agents.ppo.PPOPolicy`)."""
    return {name: partial(load_shipped, name) for name in shipped_names()}


def load_shipped(name: str) -> Any:
    """The shipped agent ``name`` as a Policy."""
    # Imported here, not at the top: agents.ppo loads torch and SB3 (about 7 s measured on a loaded 2-core
    # machine), which listing the policy names must not pay.
    from agents.ppo import PPOPolicy

    return PPOPolicy.load(MODELS_DIR / name / MODEL_FILE, name=name)
