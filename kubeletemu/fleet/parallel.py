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

Ctrl-C (SIGINT, which a terminal sends to the whole foreground process group): the worker processes
and the progress relay's manager ignore it (they are started with SIGINT blocked, then set to ignore it
before unblocking, so no child ever raises ``KeyboardInterrupt``); this process stops the workers
(terminated, then joined), then the manager, and raises :class:`Interrupted` carrying the configurations
that had finished, in the order given. The CLI prints those and one line. On Ray, SIGINT only sets a flag
while the loop waits (a ``KeyboardInterrupt`` raised inside a Ray call can leave Ray's locks held); the loop
then cancels the remaining tasks (``force=True``) and stops a Ray instance it started.

Test hook (for tests only, not a user setting): with ``KUBELETEMU_FLEET_EVENTS`` naming a file, this
process appends ``finished <name>`` to it, one line as each configuration finishes, so a test can wait for
work to be done before it interrupts the run.

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

import contextlib
import importlib.util
import logging
import multiprocessing
import os
import queue as queue_module
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from multiprocessing.managers import SyncManager
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from kubeletemu.fleet.progress import FleetProgress

# ``ray_address`` that starts a private single-machine Ray instance (tests, trying --ray without a cluster).
LOCAL = "local"
NO_RAY = "--ray needs Ray: pip install 'kubeletemu[cluster]'"
# How often the loop wakes to draw relayed progress while nothing finishes.
POLL_S = 0.2
EVENTS_ENV = "KUBELETEMU_FLEET_EVENTS"  # test-only: see the module docstring

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


class Interrupted(RunnerError):
    """The fleet was interrupted (Ctrl-C); ``results`` are the runs (configurations) that had finished, in
    the order given, ``done`` of ``total``."""

    def __init__(self, results: list[dict[str, Any]], total: int) -> None:
        self.results = results
        self.done = len(results)
        self.total = total
        super().__init__(f"interrupted: {self.done} of {total} runs done")


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
        super().__init__(f"run {name!r} failed: {reason}")


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
    run = _Results(names, bars)
    try:
        if ray_address is not None:
            _run_ray(configs, run, fn, ray_address, workers)
        else:
            count = min((os.cpu_count() or 1) if workers is None else workers, len(configs))
            if count == 1:
                _run_here(configs, run, fn)
            else:
                with _sigpipe_ignored():
                    _run_pool(configs, run, fn, count)
    except KeyboardInterrupt:
        raise Interrupted(run.finished(), len(configs)) from None
    finally:
        if bars is not None:
            bars.close()
    return run.complete()


class _Results:
    """The results as they come in, the progress bars and the test hook's events."""

    def __init__(self, names: Sequence[str], bars: FleetProgress | None) -> None:
        self.names = names
        self.bars = bars
        self.results: list[dict[str, Any] | None] = [None] * len(names)
        self.events = os.environ.get(EVENTS_ENV)

    def done(self, index: int, result: dict[str, Any]) -> None:
        self.results[index] = result
        if self.bars is not None:
            self.bars.finished(index)
        if self.events:
            with open(self.events, "a", encoding="utf-8") as fh:
                fh.write(f"finished {self.names[index]}\n")

    def finished(self) -> list[dict[str, Any]]:
        return [r for r in self.results if r is not None]

    def complete(self) -> list[dict[str, Any]]:
        out = self.finished()
        # Every configuration either returned or raised (and raising leaves before here).
        assert len(out) == len(self.results)
        return out


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


def _run_here(configs: Sequence[Named], run: _Results, fn: RunFn) -> None:
    for index, config in enumerate(configs):
        report = None if run.bars is None else _direct(run.bars, index)
        try:
            result = call(fn, config, report)
        except Exception as err:
            raise ConfigurationFailed(run.names[index], err) from err
        run.done(index, result)


def _direct(bars: FleetProgress, index: int) -> ProgressFn:
    def report(done: int, total: int) -> None:
        bars.pods(index, done, total)

    return report


def _run_pool(configs: Sequence[Named], run: _Results, fn: RunFn, workers: int) -> None:
    context = multiprocessing.get_context("spawn")
    manager: SyncManager | None = None
    pool: ProcessPoolExecutor | None = None
    finished = False
    try:
        with _sigint_blocked():  # the children start with it blocked and ignore it before unblocking
            if run.bars is not None:
                manager = SyncManager(ctx=context)
                manager.start(_ignore_sigint)
            relay_queue = manager.Queue() if manager is not None else None
            pool = ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_ignore_sigint)
            index_of: dict[Future[dict[str, Any]], int] = {}
            for index, config in enumerate(configs):
                report = None if relay_queue is None else QueueRelay(relay_queue, index)
                index_of[pool.submit(call, fn, config, report)] = index
        pending = set(index_of)
        while pending:
            done, pending = wait(pending, timeout=POLL_S if run.bars else None, return_when=FIRST_COMPLETED)
            if run.bars is not None and relay_queue is not None:
                _drain_local(relay_queue, run.bars)
            for future in sorted(done, key=index_of.__getitem__):
                index = index_of[future]
                try:
                    result = future.result()
                except Exception as err:
                    raise ConfigurationFailed(run.names[index], err) from err
                run.done(index, result)
        finished = True
    finally:
        # A second ^C during the clean-up must not leave workers or the manager behind.
        with _sigint_blocked():
            if pool is not None:
                if not finished:
                    # A failure (or ^C) discards the run: drop the queued configurations, stop the running.
                    _stop_workers(pool)
                pool.shutdown(wait=True, cancel_futures=True)
            # Only once no worker is left to talk to it.
            if manager is not None:
                manager.shutdown()


def _ignore_sigint() -> None:
    """A child's first act: ignore SIGINT (the terminal's ^C goes to the whole process group; only the
    parent acts on it), then take the signals the parent blocked while starting it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


@contextlib.contextmanager
def _sigint_as_flag() -> Iterator[threading.Event]:
    """In the main thread, SIGINT sets the yielded flag instead of raising (the caller raises
    ``KeyboardInterrupt`` where it is safe to); elsewhere the flag is never set."""
    flag = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield flag
        return
    previous = signal.signal(signal.SIGINT, lambda _signum, _frame: flag.set())
    try:
        yield flag
    finally:
        signal.signal(signal.SIGINT, previous)


@contextlib.contextmanager
def _sigpipe_ignored() -> Iterator[None]:
    """SIGPIPE ignored while the pool runs: the CLI sets it to the default (a reader gone ends it quietly),
    but after ^C the executor may still write to a stopped worker's pipe — during the clean-up, or from its
    exit handler when the interpreter ends — which must be an error it handles, not the signal that kills
    this process (exit -13 instead of 130, seen under load). So the default comes back only when the pool
    ended normally; after an interruption or a failure it stays ignored for the rest of the process."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may change a handler; elsewhere it is Python's (ignored) anyway
        return
    previous = signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    yield
    signal.signal(signal.SIGPIPE, previous)


@contextlib.contextmanager
def _sigint_blocked() -> Iterator[None]:
    """SIGINT held back in this thread (a ^C meanwhile is delivered on leaving): processes started here
    inherit the mask, so none can be interrupted before :func:`_ignore_sigint` runs."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _stop_workers(pool: ProcessPoolExecutor) -> None:
    """Python 3.14 has ``terminate_workers()``; before it, the pool's process table is the only handle."""
    terminate = getattr(pool, "terminate_workers", None)
    if terminate is not None:
        terminate()
        return
    # Taken before shutdown: shutdown(wait=False) already drops the table (``_processes = None``).
    processes: dict[int, multiprocessing.process.BaseProcess] = dict(getattr(pool, "_processes", None) or {})
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes.values():
        process.terminate()
    for process in processes.values():
        process.join()


def _drain_local(relay_queue: Any, bars: FleetProgress) -> None:
    while True:
        try:
            index, done, total = relay_queue.get_nowait()
        except queue_module.Empty:
            return
        bars.pods(index, done, total)


def _run_ray(configs: Sequence[Named], run: _Results, fn: RunFn, address: str, workers: int | None) -> None:
    require_ray()
    import ray
    from ray.util.queue import Queue as RayQueue

    started_here = not ray.is_initialized()
    if started_here:
        init_ray(address, workers)
    relay_queue = RayQueue() if run.bars is not None else None
    task = ray.remote(call)
    refs: list[Any] = []
    pending: list[Any] = []
    try:
        for index, config in enumerate(configs):
            report = None if relay_queue is None else QueueRelay(relay_queue, index)
            # One CPU per configuration: the engine is single-threaded Python.
            name = f"fleet:{run.names[index]}"
            refs.append(task.options(name=name, num_cpus=1).remote(fn, config, report))
        index_of = {ref: index for index, ref in enumerate(refs)}
        pending = list(refs)
        with _sigint_as_flag() as interrupted:
            while pending:
                # A ^C is taken here, between Ray calls (a KeyboardInterrupt inside one can leave Ray's
                # own locks held, and shutdown would wait on them); never an unbounded wait.
                if interrupted.is_set():
                    raise KeyboardInterrupt
                done, pending = ray.wait(pending, num_returns=1, timeout=POLL_S)
                if run.bars is not None and relay_queue is not None:
                    for index, count, total in relay_queue.get_nowait_batch(relay_queue.qsize()):
                        run.bars.pods(index, count, total)
                for ref in done:
                    index = index_of[ref]
                    try:
                        result = ray.get(ref)
                    except Exception as err:
                        # A task's exception arrives wrapped (RayTaskError): name the task's own.
                        cause = getattr(err, "cause", None)
                        raise ConfigurationFailed(
                            run.names[index], cause if isinstance(cause, BaseException) else err
                        ) from err
                    run.done(index, result)
    finally:
        with _sigint_blocked():
            for other in pending:  # a failure or ^C: the rest is not wanted
                ray.cancel(other, force=True)
            if relay_queue is not None:
                relay_queue.shutdown()
            if started_here:
                ray.shutdown()


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
