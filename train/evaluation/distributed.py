"""Ray for the project's programs: joining a cluster, and evaluation games spread over Ray tasks.

:class:`RayExecutor` is a ``concurrent.futures.Executor`` whose work runs as Ray tasks, one CPU each, on this
machine (local Ray) or on every machine of a cluster. :func:`train.evaluation.matches.run_matches` (and so
``evaluate``, ``round_robin`` and ``uno-evaluate --address``) takes it in place of its process pool::

    from train.evaluation.distributed import RayExecutor
    from train.evaluation.matches import evaluate

    with RayExecutor("HEAD_IP:6379") as executor:   # or RayExecutor() for local Ray
        results = evaluate("search-q-none", ["random", "rule"], pairs=10_000, seed=0,
                           workers=executor.cpus, executor=executor)

The deal seeds are fixed by ``seed`` before the games are spread, so the results equal the local pool's
game for game. Players named by a file (a checkpoint) must be readable at the same path on every machine
(a shared filesystem); built-in players and ``module:attribute`` policies of installed modules need nothing.
This module is the only one that evaluation imports Ray through; the env never does.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any

import ray

from train.config import ConfigError


def connect(address: str | None) -> bool:
    """Join the Ray cluster at ``address``, or start local Ray when it is None.

    Returns False (and changes nothing) when this process already runs Ray, e.g. a notebook or a test that
    called ``ray.init``. A ``HOST:PORT`` address is first tried with a plain TCP connection, so an unreachable
    one fails at once with a ConfigError naming it instead of after Ray's retries.
    """
    if ray.is_initialized():
        return False
    if address is None:
        ray.init(include_dashboard=False)
        return True
    host, sep, port = address.rpartition("/")[2].rpartition(":")
    if sep and port.isdigit():
        try:
            socket.create_connection((host, int(port)), timeout=5).close()
        except OSError as error:
            raise ConfigError(f"--address {address}: no Ray cluster reachable there ({error.strerror or error}); "
                              f"start one with `ray start --head`, or leave out --address for local Ray") from None
    try:
        ray.init(address=address)
    except (ConnectionError, ValueError, RuntimeError) as error:
        # Clusters started by `ray start` (Ray 2.59 and later) want a token that a client sends only when asked to.
        raise ConfigError(f"--address {address}: cannot join a Ray cluster there: {error} (a cluster with token "
                          f"authentication needs RAY_AUTH_MODE=token and its token: `ray get-auth-token`)") from None
    return True


def _call(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """One task: ``fn(*args, **kwargs)`` with one torch thread (tasks share the cores, like pool workers)."""
    import torch

    torch.set_num_threads(1)
    return fn(*args, **kwargs)


_task = ray.remote(num_cpus=1)(_call)


class RayExecutor(Executor):
    """An Executor running each submitted call as a Ray task (module docstring).

    It joins the cluster at ``address`` (or starts local Ray) unless this process already runs Ray, and
    shuts Ray down on :meth:`shutdown` only if it started it. Functions must be importable where the tasks
    run (module-level functions of installed packages).
    """

    def __init__(self, address: str | None = None) -> None:
        self.started = connect(address)
        self.pending: list[ray.ObjectRef] = []

    @property
    def cpus(self) -> int:
        """The CPUs of the cluster: how many tasks can run at once."""
        return max(1, int(ray.cluster_resources().get("CPU", 1)))

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        """Start ``fn(*args, **kwargs)`` as a Ray task; its result comes back through the Future."""
        ref = _task.remote(fn, args, kwargs)
        self.pending.append(ref)
        return ref.future()

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Cancel the unfinished tasks if asked, wait for the others if asked; stop Ray if this executor started it."""
        if cancel_futures:
            for ref in self.pending:
                ray.cancel(ref)
        elif wait and self.pending:
            ray.wait(self.pending, num_returns=len(self.pending))
        self.pending = []
        if self.started:
            ray.shutdown()
            self.started = False
