"""The default executor: this machine's processes, forked, one call each at a time.

With one worker the calls run in this process, one after another. With more, a
``concurrent.futures.ProcessPoolExecutor`` of forked processes (they start with this process's
imports, so a plan starts in milliseconds), at most two calls queued per process (a sweep of 50,000
plans does not hold 50,000 futures). A worker that dies (killed, out of memory) stops the run with
``WorkerLost`` rather than hanging, as ``multiprocessing.Pool`` would. Workers ignore Ctrl-C:
the sweep's own process handles it, ends the workers (the plans they were running are run again on
resuming) and leaves the rows written so far.
"""

from __future__ import annotations

import multiprocessing
import signal
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable, Iterator

from simulator.sweep.executor import WorkerLost

__all__ = ["LocalPool"]


def _ignore_interrupt() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class LocalPool:
    """``workers`` forked processes on this machine (1: this process)."""

    def __init__(self, workers: int = 1):
        self.workers = workers
        self._pool: ProcessPoolExecutor | None = None

    def describe(self) -> str:
        return "this process" if self.workers == 1 else f"{self.workers} local processes"

    def __enter__(self) -> "LocalPool":
        if self.workers > 1:
            self._pool = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("fork"),
                                             initializer=_ignore_interrupt)
        return self

    def __exit__(self, kind=None, *exc) -> None:
        if self._pool is None:
            return
        if kind is not None:
            # Stopped (Ctrl-C, a lost worker): the plans still running would be thrown away anyway, and
            # shutdown would wait for each to finish; the executor offers no other way to end them.
            for process in list((self._pool._processes or {}).values()):
                process.terminate()
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._pool = None

    def run(self, fn: Callable[[Any], Any], items: list) -> Iterator[tuple[int, Any]]:
        if self._pool is None:
            for position, item in enumerate(items):
                yield position, fn(item)
            return
        pending, queue = {}, iter(enumerate(items))

        def top_up():
            for position, item in queue:
                pending[self._pool.submit(fn, item)] = position
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
