"""The default executor: this machine's processes, forked, one call each at a time.

With one worker (or one item) the calls run in this process, one after another. With more, each
``run`` forks a ``concurrent.futures.ProcessPoolExecutor`` of processes that inherit the call's
function and items (set just before the fork), so nothing but an item's position goes to a worker and
nothing but the result comes back (pickled): the function may be a closure over a large object (the
topology and route cache of ``tpsim predict --workers``), which is never copied, and a plan starts in
milliseconds with this process's imports. At most two calls are queued per process (a sweep of
50,000 plans does not hold 50,000 futures). A worker that dies (killed, out of memory) stops the run
with ``WorkerLost`` rather than hanging, as ``multiprocessing.Pool`` would. Workers ignore Ctrl-C:
the caller's own process handles it, ends the workers (the plans they were running are run again on
resuming) and leaves the rows written so far. Forking needs a POSIX system.
"""

from __future__ import annotations

import multiprocessing
import signal
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable, Iterator

from simulator.sweep.executor import WorkerLost

__all__ = ["LocalPool"]

_job: tuple[Callable, list] | None = None
"""The running ``run``'s function and items, set before its workers fork, so that each inherits them."""


def _ignore_interrupt() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _call(position: int):
    fn, items = _job
    return fn(items[position])


class LocalPool:
    """``workers`` forked processes on this machine (1: this process)."""

    def __init__(self, workers: int = 1):
        self.workers = workers
        self._pool: ProcessPoolExecutor | None = None

    def describe(self) -> str:
        return "this process" if self.workers == 1 else f"{self.workers} local processes"

    def __enter__(self) -> "LocalPool":
        return self

    def __exit__(self, kind=None, *exc) -> None:
        global _job
        self._stop(kind is not None)
        _job = None  # a run left suspended by an error in its caller's loop is over too

    def _stop(self, terminate: bool) -> None:
        if self._pool is None:
            return
        if terminate:
            # Stopped (Ctrl-C, a lost worker, an error): the calls still running would be thrown away anyway,
            # and shutdown would wait for each to finish; the executor offers no other way to end them.
            for process in list((self._pool._processes or {}).values()):
                process.terminate()
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._pool = None

    def run(self, fn: Callable[[Any], Any], items: list) -> Iterator[tuple[int, Any]]:
        global _job
        if self.workers == 1 or len(items) <= 1:
            for position, item in enumerate(items):
                yield position, fn(item)
            return
        if _job is not None:
            raise RuntimeError("LocalPool.run: nested use is not supported (a worker cannot fork workers)")
        _job = (fn, items)
        finished_all = False
        try:
            # Forked at the first submit (ProcessPoolExecutor forks all its workers then), while _job is set.
            self._pool = ProcessPoolExecutor(min(self.workers, len(items)),
                                             mp_context=multiprocessing.get_context("fork"),
                                             initializer=_ignore_interrupt)
            yield from self._results(len(items))
            finished_all = True
        finally:
            self._stop(terminate=not finished_all)
            _job = None

    def _results(self, count: int) -> Iterator[tuple[int, Any]]:
        pending, queue = {}, iter(range(count))

        def top_up():
            for position in queue:
                pending[self._pool.submit(_call, position)] = position
                if len(pending) >= 2 * self.workers:
                    break

        top_up()
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in sorted(finished, key=pending.get):
                position = pending.pop(future)
                try:
                    result = future.result()
                except BrokenProcessPool as error:
                    raise WorkerLost(f"a worker process died ({error})") from None
                yield position, result
            top_up()
