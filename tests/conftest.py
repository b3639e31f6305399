"""Shared pytest set-up: the ``slow`` marker.

Tests marked ``slow`` (whole training runs, subprocesses killed and resumed, Ray, notebooks, a browser) run
everywhere by default, CI included (``python3 dev.py test`` selects no marker); ``pytest -m "not slow"`` leaves
them out of a quick loop while editing.
"""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: a test that takes many seconds (run by CI; -m 'not slow' skips it)")
