"""``paused_gc``: the cyclic garbage collector off while a big schedule is built, checked, compiled or run.

Those phases allocate millions of small objects (ops, tuples, events) that hold no reference cycles;
each full collection would walk all of them, and at 4,096 ranks the collections alone took seconds
(a third of building the summa25d mlp schedule). Reference counting still frees everything at once.

Leaving the pause costs nothing either. Objects allocated while the collector is off all wait in its
youngest generation, and the first young collections after it is back on would walk every one of
them (a second of a 4,096-rank run, spread over the phases that follow). So on the way out the
survivors go straight to the oldest generation (``gc.freeze`` then ``gc.unfreeze``: two list splices),
where a later full collection still finds any cycle among them.
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
            if gc.get_freeze_count() == 0:  # leave objects someone else froze where they are
                gc.freeze()
                gc.unfreeze()
            gc.enable()
