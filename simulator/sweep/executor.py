"""What runs a sweep's plans: an ``Executor`` maps a function over items and yields results as they finish.

    with make_executor(workers=2, dask=None) as executor:
        for position, result in executor.run(run_plan, argvs):
            ...

``run(fn, items)`` yields ``(position, fn(items[position]))`` in the order calls finish, each once;
the caller puts them back in order (the sweep sorts its rows by plan number; ``in_order`` yields each
result once every earlier one is in, as ``map`` would). ``fn`` must be a module-level function and
items and results plain data where a distributed executor may run it: it pickles them to other
machines. ``LocalPool`` also takes a closure (its workers inherit it), which ``tpsim predict
--workers N`` uses to bound and simulate arrangements on one topology without copying it. A call
that raises, or a worker that dies, stops the run with the error; rows already written stay, and a
rerun resumes. ``describe`` says in a few words where the calls run.

The executors: ``LocalPool`` (``simulator.sweep.local_pool``, the default: this machine's forked
processes) and ``DaskCluster`` (``simulator.sweep.dask_cluster``: a Dask distributed cluster, local or
remote, from the optional ``cluster`` extra).
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator, Protocol

__all__ = ["Executor", "WorkerLost", "make_executor", "in_order", "MAX_WORKERS"]

MAX_WORKERS = 256
"""More worker processes than any one host has cores for; ``--workers`` refuses more."""


class WorkerLost(RuntimeError):
    """A worker process died under a call (killed, out of memory) or the cluster went away."""


class Executor(Protocol):
    """Runs calls somewhere; a context manager that releases its processes or cluster on exit."""

    def describe(self) -> str:
        """Where the calls run: ``2 local processes``, ``a local Dask cluster of 2 processes``."""

    def run(self, fn: Callable[[Any], Any], items: list) -> Iterator[tuple[int, Any]]:
        """``(position, fn(items[position]))`` for every item, as each call finishes."""

    def __enter__(self) -> "Executor": ...

    def __exit__(self, *exc) -> None: ...


def make_executor(workers: int, dask: str | bool | None = None) -> Executor:
    """The local pool of ``workers`` processes; with ``dask``, a Dask cluster instead: True starts a local
    one of ``workers`` processes, a string is the address of a running scheduler (``tcp://host:8786``)."""
    if dask is None or dask is False:
        from simulator.sweep.local_pool import LocalPool

        return LocalPool(workers)
    from simulator.sweep.dask_cluster import DaskCluster

    return DaskCluster(workers, None if dask is True else dask)


def in_order(results: Iterable[tuple[int, Any]]) -> Iterator[Any]:
    """The results of ``Executor.run`` in input order, each as soon as every earlier one is in.

        >>> list(in_order([(1, "b"), (0, "a"), (2, "c")]))
        ['a', 'b', 'c']
    """
    waiting: dict[int, Any] = {}
    following = 0
    for position, result in results:
        waiting[position] = result
        while following in waiting:
            yield waiting.pop(following)
            following += 1
