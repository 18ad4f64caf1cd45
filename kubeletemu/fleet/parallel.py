"""Runs a fleet's configurations side by side and hands the results back in the order they were given.

Three ways, one contract (``run_many``):

- in-process (``workers=1``), one configuration after the other;
- a local ``concurrent.futures.ProcessPoolExecutor`` (the default, ``os.cpu_count()`` workers), started
  with the ``spawn`` method: a worker begins from a fresh interpreter (no inherited threads or locks of
  the caller, the same on every platform) and receives the configuration and the function by pickling;
- a Ray cluster (``ray_address``: ``"auto"``, an address such as ``"ray://head:10001"``, or ``"local"`` to
  start a private one-machine instance), each configuration one Ray task (the optional extra
  ``[cluster]``). A Ray already initialised in this process is used as it is. The cluster's nodes need
  kubeletemu installed; a local instance started here passes this process's import path to its workers,
  as ``spawn`` does.

Progress (``progress=True`` and standard error a terminal): the engine calls ``progress(done, total)`` in
the worker; a picklable relay puts ``(index, done, total)`` on a queue (a ``multiprocessing`` manager's, or
``ray.util.queue.Queue``, an actor) and this process draws it (``progress.FleetProgress``, tqdm).

A configuration that raises stops the run: the others still queued are cancelled, and
:class:`ConfigurationFailed` names it, chained to the worker's exception (and traceback). Every error of
the runner is a :class:`RunnerError` with a one-line message (a CLI prints it as it is):
:class:`RayUnavailable` (``--ray`` without the extra; :func:`require_ray` checks before any work) and
a Ray cluster that cannot be reached.

Library behaviour relied on (read in the installed packages): CPython 3.11 ``concurrent.futures`` (a
worker's exception is re-raised by ``Future.result()`` with the remote traceback as ``__cause__``;
``shutdown(cancel_futures=True)``), Ray 2.60.0 (``ray.get`` raises ``RayTaskError``, whose ``cause`` is the
task's own exception; ``ray.init(runtime_env={"env_vars": ...})`` sets the workers' environment).
"""

from __future__ import annotations

import importlib.util
import logging
import multiprocessing
import os
import queue as queue_module
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from kubeletemu.fleet.progress import FleetProgress

# ``ray_address`` that starts a private single-machine Ray instance (tests, trying --ray without a cluster).
LOCAL = "local"
NO_RAY = "--ray needs Ray: pip install 'kubeletemu[cluster]'"
# How often the loop wakes to draw relayed progress while nothing finishes.
POLL_S = 0.2

RunFn = Callable[..., dict[str, Any]]
ProgressFn = Callable[[int, int], None]


class Named(Protocol):
    """What the runner needs of a configuration (``fleet.spec.ConfigurationSpec`` is one): a name for
    messages and progress; the rest is the run function's business. It must pickle."""

    @property
    def name(self) -> str: ...


class RunnerError(RuntimeError):
    """The run could not be done; the message is one line naming what failed."""


class RayUnavailable(RunnerError):
    """``ray_address`` given, but Ray (the optional extra ``[cluster]``) is not installed."""

    def __init__(self) -> None:
        super().__init__(NO_RAY)


def require_ray() -> None:
    """Raises :class:`RayUnavailable` unless Ray can be imported (imports nothing itself)."""
    if importlib.util.find_spec("ray") is None:
        raise RayUnavailable


class ConfigurationFailed(RunnerError):
    """A configuration's run raised; ``name`` is the configuration's, ``cause`` the exception it raised."""

    def __init__(self, name: str, cause: BaseException) -> None:
        self.name = name
        self.cause = cause
        detail = str(cause).strip().splitlines()
        reason = f"{type(cause).__name__}: {detail[0]}" if detail else type(cause).__name__
        super().__init__(f"configuration {name!r} failed: {reason}")


def run_many(
    configs: Sequence[Named],
    *,
    workers: int | None = None,
    ray_address: str | None = None,
    progress: bool = False,
    fn: RunFn | None = None,
) -> list[dict[str, Any]]:
    """Runs ``fn(config, progress=...)`` for every configuration (``fn`` defaults to
    ``fleet.engine.run_configuration``; it must be a module-level function, to pickle) and returns the
    results in the order of ``configs``, whatever order they finish in."""
    if fn is None:
        from kubeletemu.fleet.engine import run_configuration

        fn = run_configuration
    if workers is not None and workers < 1:
        raise ValueError(f"workers: must be at least 1, got {workers}")
    if not configs:
        return []
    names = [config.name for config in configs]
    bars = _progress_bars(names) if progress and sys.stderr.isatty() else None
    try:
        if ray_address is not None:
            return _run_ray(configs, names, fn, ray_address, workers, bars)
        count = min((os.cpu_count() or 1) if workers is None else workers, len(configs))
        if count == 1:
            return _run_here(configs, names, fn, bars)
        return _run_pool(configs, names, fn, count, bars)
    finally:
        if bars is not None:
            bars.close()


def _progress_bars(names: Sequence[str]) -> FleetProgress:
    from kubeletemu.fleet.progress import FleetProgress

    return FleetProgress(names)


def call(fn: RunFn, config: Named, report: ProgressFn | None) -> dict[str, Any]:
    """What a worker runs: module-level, so the pool and Ray pickle it by reference."""
    return fn(config, progress=report)


class QueueRelay:
    """A worker's ``progress`` callback: forwards ``(index, done, total)`` to the runner's queue."""

    def __init__(self, queue: Any, index: int) -> None:
        self.queue = queue
        self.index = index

    def __call__(self, done: int, total: int) -> None:
        self.queue.put((self.index, done, total))


def _run_here(
    configs: Sequence[Named], names: Sequence[str], fn: RunFn, bars: FleetProgress | None
) -> list[dict[str, Any]]:
    results = []
    for index, config in enumerate(configs):
        report = None if bars is None else _direct(bars, index)
        try:
            results.append(call(fn, config, report))
        except Exception as err:
            raise ConfigurationFailed(names[index], err) from err
        if bars is not None:
            bars.finished(index)
    return results


def _direct(bars: FleetProgress, index: int) -> ProgressFn:
    def report(done: int, total: int) -> None:
        bars.pods(index, done, total)

    return report


def _run_pool(
    configs: Sequence[Named], names: Sequence[str], fn: RunFn, workers: int, bars: FleetProgress | None
) -> list[dict[str, Any]]:
    context = multiprocessing.get_context("spawn")
    manager = context.Manager() if bars is not None else None
    relay_queue = manager.Queue() if manager is not None else None
    results: list[dict[str, Any] | None] = [None] * len(configs)
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=context)
    finished = False
    try:
        index_of: dict[Future[dict[str, Any]], int] = {}
        for index, config in enumerate(configs):
            report = None if relay_queue is None else QueueRelay(relay_queue, index)
            index_of[pool.submit(call, fn, config, report)] = index
        pending = set(index_of)
        while pending:
            done, pending = wait(pending, timeout=POLL_S if bars else None, return_when=FIRST_COMPLETED)
            if bars is not None and relay_queue is not None:
                _drain_local(relay_queue, bars)
            for future in sorted(done, key=index_of.__getitem__):
                index = index_of[future]
                try:
                    results[index] = future.result()
                except Exception as err:
                    raise ConfigurationFailed(names[index], err) from err
                if bars is not None:
                    bars.finished(index)
        finished = True
    finally:
        if not finished:
            # A failure (or ^C) discards the run: drop the queued configurations, stop the running ones.
            _stop_workers(pool)
        pool.shutdown(wait=True, cancel_futures=True)
        if manager is not None:
            manager.shutdown()
    return _complete(results)


def _stop_workers(pool: ProcessPoolExecutor) -> None:
    """Python 3.14 has ``terminate_workers()``; before it, the pool's process table is the only handle."""
    terminate = getattr(pool, "terminate_workers", None)
    if terminate is not None:
        terminate()
        return
    pool.shutdown(wait=False, cancel_futures=True)
    processes: dict[int, multiprocessing.process.BaseProcess] = getattr(pool, "_processes", None) or {}
    for process in list(processes.values()):
        process.terminate()


def _drain_local(relay_queue: Any, bars: FleetProgress) -> None:
    while True:
        try:
            index, done, total = relay_queue.get_nowait()
        except queue_module.Empty:
            return
        bars.pods(index, done, total)


def _run_ray(
    configs: Sequence[Named],
    names: Sequence[str],
    fn: RunFn,
    address: str,
    workers: int | None,
    bars: FleetProgress | None,
) -> list[dict[str, Any]]:
    require_ray()
    import ray
    from ray.util.queue import Queue as RayQueue

    started_here = not ray.is_initialized()
    if started_here:
        init_ray(address, workers)
    relay_queue = RayQueue() if bars is not None else None
    results: list[dict[str, Any] | None] = [None] * len(configs)
    task = ray.remote(call)
    refs: list[Any] = []
    try:
        for index, config in enumerate(configs):
            report = None if relay_queue is None else QueueRelay(relay_queue, index)
            # One CPU per configuration: the engine is single-threaded Python.
            refs.append(task.options(name=f"fleet:{names[index]}", num_cpus=1).remote(fn, config, report))
        index_of = {ref: index for index, ref in enumerate(refs)}
        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1, timeout=POLL_S if bars else None)
            if bars is not None and relay_queue is not None:
                for index, count, total in relay_queue.get_nowait_batch(relay_queue.qsize()):
                    bars.pods(index, count, total)
            for ref in done:
                index = index_of[ref]
                try:
                    results[index] = ray.get(ref)
                except Exception as err:
                    for other in pending:
                        ray.cancel(other)
                    # A task's exception arrives wrapped (RayTaskError): name the task's own.
                    cause = getattr(err, "cause", None)
                    raise ConfigurationFailed(
                        names[index], cause if isinstance(cause, BaseException) else err
                    ) from err
                if bars is not None:
                    bars.finished(index)
    finally:
        if relay_queue is not None:
            relay_queue.shutdown()
        if started_here:
            ray.shutdown()
    return _complete(results)


def init_ray(address: str, workers: int | None = None) -> None:
    """Connects to the Ray cluster at ``address`` (``"auto"``: the one this machine belongs to), or with
    ``"local"`` starts a private instance of ``workers`` CPUs (default: all) whose workers import from
    this process's ``sys.path``."""
    import ray

    if address == LOCAL:
        path = os.pathsep.join(entry for entry in sys.path if entry)
        ray.init(
            num_cpus=workers,
            include_dashboard=False,
            logging_level=logging.WARNING,
            runtime_env={"env_vars": {"PYTHONPATH": path}},
        )
    else:
        try:
            ray.init(address=address, logging_level=logging.WARNING)
        except ConnectionError as err:  # "auto" with no cluster here; a head that refuses
            raise RunnerError(f"--ray {address}: {err}") from err


def _complete(results: Sequence[dict[str, Any] | None]) -> list[dict[str, Any]]:
    out = [r for r in results if r is not None]
    # Every configuration either returned or raised (and raising leaves before here).
    assert len(out) == len(results)
    return out
