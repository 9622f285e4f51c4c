"""The distributed executor: a Dask distributed cluster, started here or reached at an address.

``DaskCluster(workers)`` starts a ``LocalCluster`` of ``workers`` worker processes of one thread each
(a plan is one single-threaded simulation; threads would only share the GIL) and stops it on exit;
``DaskCluster(workers, "tcp://host:8786")`` connects to a running scheduler and uses its workers as
they are (each must have this tpsim installed: a plan runs there by importing it). Calls are
submitted all at once, each under its own key with ``pure=False``, and their results gathered as they
complete (``distributed.as_completed``). Dask is the optional ``cluster`` extra
(``pip install -e '.[cluster]'``); without it, asking for this executor is one line naming the extra.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Iterator

from simulator.errors import InputError
from simulator.sweep.executor import WorkerLost

__all__ = ["DaskCluster"]

CONNECT_TIMEOUT_S = 30
"""Seconds to wait for a remote scheduler before giving up with one line."""


def _distributed():
    try:
        import distributed
    except ImportError:
        raise InputError("--dask needs Dask distributed, which is not installed: pip install -e '.[cluster]' "
                         "(or pip install 'dask[distributed]')") from None
    return distributed


class DaskCluster:
    """A Dask cluster: a local one of ``workers`` processes, or the one whose scheduler is at ``address``."""

    def __init__(self, workers: int = 2, address: str | None = None):
        self.workers, self.address = workers, address
        self._distributed = _distributed()
        self._cluster = self._client = None

    def describe(self) -> str:
        if self.address is None:
            return f"a local Dask cluster of {self.workers} processes"
        return f"the Dask cluster at {self.address}"

    @property
    def scheduler_address(self) -> str | None:
        """The scheduler's address once entered (``tcp://127.0.0.1:PORT`` for a local cluster)."""
        return self._client.scheduler.address if self._client is not None else self.address

    def __enter__(self) -> "DaskCluster":
        d = self._distributed
        try:
            if self.address is None:
                # ":0": the scheduler's HTTP server on a free port; None would still take 8787 or warn
                # that another cluster holds it.
                self._cluster = d.LocalCluster(n_workers=self.workers, threads_per_worker=1, processes=True,
                                               dashboard_address=":0", silence_logs=logging.ERROR)
                self._client = d.Client(self._cluster)
            else:
                self._client = d.Client(self.address, timeout=CONNECT_TIMEOUT_S)
        except (OSError, TimeoutError, ValueError) as error:  # ValueError: an address Dask cannot parse
            self.__exit__()
            where = self.address or "a local cluster"
            raise InputError(f"--dask {where}: cannot reach the scheduler ({error})") from None
        return self

    def __exit__(self, *exc) -> None:
        for part in (self._client, self._cluster):
            if part is not None:
                part.close()
        self._client = self._cluster = None

    def run(self, fn: Callable[[Any], Any], items: list) -> Iterator[tuple[int, Any]]:
        import uuid

        tag = uuid.uuid4().hex[:8]  # keys unique to this run: a shared scheduler may hold another sweep's
        futures = self._client.map(fn, items, key=[f"tpsim-plan-{tag}-{i}" for i in range(len(items))], pure=False)
        position = {future.key: i for i, future in enumerate(futures)}
        try:
            for future in self._distributed.as_completed(futures):
                try:
                    result = future.result()
                except self._distributed.KilledWorker as error:
                    raise WorkerLost(f"Dask gave up on a plan whose workers kept dying ({error})") from None
                yield position[future.key], result
        finally:
            self._client.cancel(futures)
