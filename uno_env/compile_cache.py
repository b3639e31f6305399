"""Where numba keeps the compiled kernels: a read-only install gets a private temporary cache instead of failing.

The kernels are compiled with ``@njit(cache=True)``. numba writes their cache next to the sources (``__pycache__``)
or, when the package folder is read-only, in the user's cache folder (``~/.cache/numba``). With neither writable (a
system-wide or container install, run by a user whose home cannot be written) numba refuses to define a cached
function at all (``RuntimeError: cannot cache function ...: no locator available``), so not even ``import uno_env``
worked. Importing this module (``uno_env/__init__.py`` does, before any kernel is defined) then points numba's cache
at a fresh private temporary folder through its documented setting, ``NUMBA_CACHE_DIR``, and removes the folder when
the process exits: the kernels are compiled once per process, and worker processes share them through the inherited
variable. A cache folder the user chose with ``NUMBA_CACHE_DIR`` is left alone.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

from numba import config
from numba.misc.appdirs import AppDirs


def writable(folder: Path) -> bool:
    """Whether numba could keep a cache in ``folder``: its own test, which creates the folder and a file in it."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=folder).close()
    except OSError:
        return False
    return True


def use_writable_cache() -> str | None:
    """Point numba's cache at a temporary folder if it has nowhere else to write; that folder, or None if untouched.

    The places numba itself tries are the package's ``__pycache__`` and the user cache folder it computes with its
    ``AppDirs``; a whole install is read-only or not, so the folder of this package stands for the others'.
    """
    if config.CACHE_DIR:
        return None
    user_cache = Path(AppDirs(appname="numba", appauthor=False).user_cache_dir)
    if writable(Path(__file__).parent / "__pycache__") or writable(user_cache):
        return None
    folder = tempfile.mkdtemp(prefix="uno_env-numba-")  # private (mode 0700): no other user can plant a kernel
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    # The config for this process (numba read the variable when it was imported), the variable for its workers.
    config.CACHE_DIR = os.environ["NUMBA_CACHE_DIR"] = folder
    return folder


use_writable_cache()
