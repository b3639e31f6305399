"""The command-line programs: ``uno-train`` (``train``), ``uno-evaluate`` (``evaluate``), ``uno-play`` (``play``),
``uno-tune`` (``tune``) and ``python -m train.cli.ship`` (``ship``).

They train and load networks, so they need the ``train`` extra. ``pip install uno-rl`` alone installs their scripts
too (a wheel cannot leave them out), so importing this package first checks that the extra is there and otherwise
stops with the install command instead of a bare ``ModuleNotFoundError`` from deep inside a library.
"""

from importlib.util import find_spec

#: The modules of the ``train`` extra that every program imports.
TRAIN_EXTRA = ("torch", "stable_baselines3", "sb3_contrib", "tensorboard", "yaml")



def _installed(name: str) -> bool:
    try:
        return find_spec(name) is not None
    except (ImportError, ValueError):  # ValueError: a module blocked by a None in sys.modules
        return False


_missing = [name for name in TRAIN_EXTRA if not _installed(name)]
if _missing:
    raise SystemExit(f"uno-rl's command-line programs need the training extra: pip install 'uno-rl[train]' "
                     f"(missing: {', '.join(_missing)})")
