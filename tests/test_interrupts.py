"""Ctrl-C held where it cannot be taken (train.interrupts): raised after the block, never inside it, never lost."""

from __future__ import annotations

import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from train import interrupts
from train.interrupts import as_finished, keeping_interrupts, signals_held


@pytest.fixture(autouse=True)
def ctrl_c_raises():
    """Ctrl-C raising KeyboardInterrupt, as in a command's process (a pytest-xdist worker ignores SIGINT)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_a_signal_during_the_block_is_raised_when_it_ends():
    reached_the_end = False
    with pytest.raises(KeyboardInterrupt), signals_held():
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.2)  # a Ctrl-C not held would land here
        reached_the_end = True
    assert reached_the_end
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the handler is back


def test_a_ctrl_c_while_waiting_on_futures_lands_between_waits(monkeypatch: pytest.MonkeyPatch):
    """The waiting itself (concurrent.futures.wait, which can leave futures' locks held if interrupted) runs to its
    end; the KeyboardInterrupt comes after it, and every future's lock is free."""
    real_wait, waits_finished = interrupts.wait, []

    def wait_with_a_ctrl_c(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.2)
        outcome = real_wait(*args, **kwargs)
        waits_finished.append(True)
        return outcome

    monkeypatch.setattr(interrupts, "wait", wait_with_a_ctrl_c)
    with ThreadPoolExecutor(1) as pool:
        futures = [pool.submit(time.sleep, 0.5) for _ in range(2)]
        with pytest.raises(KeyboardInterrupt):
            list(as_finished(futures))
    assert waits_finished == [True]
    assert all(future._condition.acquire(blocking=False) for future in futures)


def test_as_finished_gives_every_future_once():
    with ThreadPoolExecutor(2) as pool:
        futures = [pool.submit(time.sleep, delay) for delay in (0.3, 0.0, 0.1, 0.5)]
        assert sorted(map(id, as_finished(futures))) == sorted(map(id, futures))


class _InterruptedFinalizer:
    """An object whose finalizer is where a Ctrl-C lands (as tqdm's did under a SIGTERM in CI)."""

    def __del__(self) -> None:
        raise KeyboardInterrupt


def test_a_ctrl_c_that_lands_in_a_finalizer_is_raised_again_outside_it():
    went_on = False
    with pytest.raises(KeyboardInterrupt), keeping_interrupts():
        _InterruptedFinalizer()  # dropped at once: without the hook Python prints "Exception ignored" and goes on
        for _ in range(100):
            time.sleep(0.01)
        went_on = True
    assert not went_on


def test_other_unraisable_exceptions_still_reach_the_previous_hook(monkeypatch: pytest.MonkeyPatch):
    seen = []
    monkeypatch.setattr(interrupts.sys, "unraisablehook", lambda unraisable: seen.append(unraisable.exc_type))

    class Failing:
        def __del__(self) -> None:
            raise ValueError("in a finalizer")

    with keeping_interrupts():
        Failing()
    assert seen == [ValueError]
