"""Independent calls spread over forked worker processes, results in input order: ``ordered_map``.

``tpsim predict --workers N`` bounds and simulates its arrangements this way. Workers are forked, not
spawned: each starts with the parent's memory (the topology, its route cache, the workload), so
nothing but the call's index goes to a worker and nothing but its result comes back (pickled). The
function may be a closure for that reason. Results come back in input order whatever order the
workers finish in, so the caller's output is the same for every N; an exception in a call is raised
in the parent, as ``map`` would raise it. Forking needs a POSIX system; every worker holds what one
call needs (a simulation of 4,096 GPUs: about 2.7 GB each).

Example::

    >>> list(ordered_map(lambda x: x * x, [1, 2, 3], workers=2))
    [1, 4, 9]
"""

from __future__ import annotations

import multiprocessing
from typing import Callable, Iterable, Iterator, TypeVar

__all__ = ["ordered_map", "MAX_WORKERS"]

MAX_WORKERS = 256
"""More worker processes than any one host has cores for; ``--workers`` refuses more."""

T = TypeVar("T")
R = TypeVar("R")

_job: tuple[Callable, list] | None = None  # set before the fork, so that every worker inherits it


def _call(index: int):
    fn, items = _job
    return fn(items[index])


def ordered_map(fn: Callable[[T], R], items: Iterable[T], workers: int = 1) -> Iterator[R]:
    """``fn`` of each item, yielded in input order, over ``workers`` forked processes (1: in this one)."""
    global _job
    items = list(items)
    if workers <= 1 or len(items) <= 1:
        for item in items:
            yield fn(item)
        return
    if _job is not None:
        raise RuntimeError("ordered_map: nested use is not supported (a worker cannot fork workers)")
    _job = (fn, items)
    try:
        with multiprocessing.get_context("fork").Pool(min(workers, len(items))) as pool:
            yield from pool.imap(_call, range(len(items)))
    finally:
        _job = None
