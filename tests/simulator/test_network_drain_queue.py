"""DrainQueue answers as the heap of every (time, flow number, version, flow) prediction it replaced."""

import heapq

from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.network.drain_queue import DrainQueue


class Flow:
    def __init__(self, fid):
        self.fid, self.version = fid, 0


class HeapOfAll:
    """The flow network's former queue: a heap entry per prediction, stale ones popped when on top."""

    def __init__(self):
        self.heap = []

    def push(self, when, flow):
        heapq.heappush(self.heap, (when, flow.fid, flow.version, flow))

    def first(self):
        while self.heap and self.heap[0][3].version != self.heap[0][2]:
            heapq.heappop(self.heap)
        return (self.heap[0][0], self.heap[0][3]) if self.heap else None

    def pop_until(self, horizon):
        flows = []
        while self.heap and self.heap[0][0] <= horizon:
            _, _, version, flow = heapq.heappop(self.heap)
            if flow.version == version:
                flows.append(flow)
        return flows


# (what, flow, time): predict a flow's drain (at a new version, as the network does), ask for the first,
# or drain up to a time.
steps = st.lists(st.tuples(st.sampled_from(["push", "push", "first", "pop"]), st.integers(0, 5),
                           st.sampled_from([0.5, 1.0, 1.0, 2.0, 3.0, 3.0 + 1e-15])), max_size=60)


@settings(max_examples=300, deadline=None)
@given(steps)
def test_a_drain_queue_gives_the_answers_of_a_heap_of_every_prediction(script):
    flows = [Flow(fid) for fid in range(6)]
    ours, theirs = DrainQueue(), HeapOfAll()
    for what, i, when in script:
        flow = flows[i]
        if what == "push":
            flow.version += 1  # a new rate: every earlier prediction of it is stale
            ours.push(when, flow)
            theirs.push(when, flow)
        elif what == "first":
            assert ours.first() == theirs.first()
        else:
            drained = ours.pop_until(when)
            assert sorted(drained, key=lambda f: f.fid) == sorted(theirs.pop_until(when), key=lambda f: f.fid)
            for flow in drained:
                flow.version += 1  # drained: no prediction of it is current any more
    assert ours.first() == theirs.first()


def test_the_first_prediction_skips_a_stale_least_one_at_its_time():
    a, b, c = Flow(0), Flow(1), Flow(2)
    queue = DrainQueue()
    for flow in (b, a, c):
        queue.push(1.0, flow)
    assert queue.first() == (1.0, a)
    a.version += 1
    assert queue.first() == (1.0, b)
    b.version += 1
    c.version += 1
    queue.push(2.0, c)
    assert queue.first() == (2.0, c)
    assert queue.pop_until(2.0) == [c]
    assert queue.first() is None
