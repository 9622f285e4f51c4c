"""``paused_gc``: the cyclic garbage collector off while a big schedule is built, checked, compiled or run.

Those phases allocate millions of small objects (ops, tuples, events) that hold no reference cycles;
each full collection would walk all of them, and at 4,096 ranks the collections alone took seconds
(a third of building the summa25d mlp schedule). Reference counting still frees everything at once.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager

__all__ = ["paused_gc"]


@contextmanager
def paused_gc():
    """Disable the cyclic collector for the ``with`` block (re-enable it after, if it was on)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
