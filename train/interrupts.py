"""Ctrl-C and SIGTERM taken where the code can take them: held through a block, delivered when it ends.

Python raises ``KeyboardInterrupt`` wherever the main thread happens to be, and two places in the training and
evaluation commands cannot take it:

* **Waiting on a process pool.** ``concurrent.futures.wait`` and ``as_completed`` take each future's lock in turn
  (``_AcquireFutures``); an interrupt between two takes leaves the first locks held for good. The pool's manager
  thread then blocks on one of them as the process exits, and the process never ends (CPython 3.11: a run
  stopped with Ctrl-C hung in about one try in ten on a loaded machine). :func:`as_finished` waits with the
  signals held, a short while at a time, and lets them through between waits.
* **A label shard written but not yet in its manifest** (:mod:`train.training.labelling`).

And one place drops it: an exception raised inside a finalizer (``__del__``, such as tqdm's) is printed as
"Exception ignored in ..." and lost, so a Ctrl-C or SIGTERM that lands there would let the run go on and end with
status 0. :func:`keeping_interrupts` raises it again, outside the finalizer.

The signals are only held, never lost: each block ends by raising the first one caught, so it meets the handler
it would have met (``uno-train`` turns SIGTERM into Ctrl-C), only later and outside the block.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, wait
from contextlib import contextmanager
from typing import Any

#: Seconds :func:`as_finished` waits with the signals held before letting a caught one through.
POLL = 0.2


@contextmanager
def signals_held() -> Iterator[None]:
    """Hold Ctrl-C and SIGTERM until the block is done, then deliver the first one caught.

    Only the main thread receives signals in Python, so elsewhere this holds nothing and needs nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = {number: signal.signal(number, lambda number, _frame: caught.append(number))
                for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        if caught:
            signal.raise_signal(caught[0])


def as_finished(futures: Iterable[Future], stop: Callable[[], bool] | None = None) -> Iterator[Future]:
    """The futures as they finish, like ``as_completed``, but a Ctrl-C never lands inside the waiting (module
    docstring): it is raised here between two waits of at most :data:`POLL` seconds. With ``stop``, the iteration
    also ends, leaving the futures not yet finished, once ``stop()`` is true (asked between two waits)."""
    pending = set(futures)
    while pending:
        with signals_held():
            finished, pending = wait(pending, timeout=POLL, return_when=FIRST_COMPLETED)
        yield from finished
        if pending and stop is not None and stop():
            return


def terminate_as_interrupt(signum: int, frame: object) -> None:
    """A SIGTERM handler that stops a command the way Ctrl-C does (``signal.signal(signal.SIGTERM, ...)``).

    Further SIGTERMs (a service manager, or an impatient user, sending another) are ignored from then on: what the
    interrupt saves must not be cut short, and the command must still end with status 130.
    """
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise KeyboardInterrupt


#: Seconds after a dropped interrupt that :func:`keeping_interrupts` sends it again.
REDELIVER = 0.01


@contextmanager
def keeping_interrupts() -> Iterator[None]:
    """Within the block, a ``KeyboardInterrupt`` that Python drops because it was raised inside a finalizer is
    raised again (module docstring): ``sys.unraisablehook`` has a thread send SIGINT a moment later, once the finalizer
    is over, and its handler raises it in ordinary code (should it land in a finalizer again, the same happens
    again). Other unraisable exceptions go to the previous hook."""
    previous = sys.unraisablehook

    def hook(unraisable: Any) -> None:
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            # Not signal.raise_signal here: its handler would run at once, inside this hook, and be dropped again.
            later = threading.Timer(REDELIVER, os.kill, (os.getpid(), signal.SIGINT))
            later.daemon = True
            later.start()
        else:
            previous(unraisable)

    sys.unraisablehook = hook
    try:
        yield
    finally:
        sys.unraisablehook = previous
