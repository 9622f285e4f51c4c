"""paused_gc: the collector is off inside, back on after, and what the block made skips the young generations."""

import gc
import weakref

from simulator.gcpause import paused_gc


class _Node:
    def __init__(self):
        self.other = None


def _young_ids() -> set[int]:
    return {id(o) for generation in (0, 1) for o in gc.get_objects(generation=generation)}


def test_paused_inside_and_enabled_after():
    assert gc.isenabled()
    with paused_gc():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_stays_disabled_when_it_was_disabled():
    gc.disable()
    try:
        with paused_gc():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_survivors_go_to_the_oldest_generation():
    # Otherwise the next young collections walk every object the block made (seconds at 4,096 ranks).
    with paused_gc():
        made = [[i] for i in range(10_000)]
    young = _young_ids()
    assert not any(id(o) in young for o in made)


def test_cycles_made_while_paused_are_still_collected():
    with paused_gc():
        a, b = _Node(), _Node()
        a.other, b.other = b, a
        probe = weakref.ref(a)
        del a, b
    assert probe() is not None
    gc.collect()
    assert probe() is None


def test_objects_someone_froze_stay_frozen():
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with paused_gc():
            pass
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()
