"""Peer waits: hand-built schedules and start times with exact answers, and the engine's own accounting as
the oracle on real schedules."""

from __future__ import annotations

import pytest

from simulator.algorithms.registry import build_schedule
from simulator.compare.peer_wait import instance_keys, peer_waits
from simulator.ir.builder import ScheduleBuilder
from simulator.ir.ops import AllReduce, Broadcast, Gemm, Recv, Send, Wait
from simulator.timing.simulation import simulate
from simulator.workloads.workload import Workload
from topologies import load_topology


def _builder(world: int, groups=None) -> ScheduleBuilder:
    b = ScheduleBuilder("custom", (world,), Workload.gemm(2, 2, 2), "fwd", "float32", world,
                        groups or {"world": tuple(range(world))})
    for r in range(world):
        for name in ("A", "B", "C"):
            b.buffer(r, name, (2, 2))
    return b


def _records(starts: dict[tuple[int, int], float]) -> list[dict]:
    return [{"rank": rank, "step": step, "start_s": start} for (rank, step), start in starts.items()]


def test_a_collective_member_waits_for_the_last_one_to_issue_it():
    # Rank 1 issues first, rank 0 next, rank 2 last after a gemm; the gemm has no instance.
    b = _builder(3)
    b.emit(0, AllReduce(group="world", buf="A"))
    b.emit(1, AllReduce(group="world", buf="A"))
    b.emit(2, Gemm(out="C", a="A", b="B"))
    b.emit(2, AllReduce(group="world", buf="A"))
    s = b.build()
    assert instance_keys(s) == {(0, 0): ("group", "world", 0), (1, 0): ("group", "world", 0),
                                (2, 1): ("group", "world", 0)}
    records = _records({(0, 0): 1.0, (1, 0): 0.5, (2, 0): 0.0, (2, 1): 2.0})
    assert peer_waits(s, records) == {(0, 0): 1.0, (1, 0): 1.5, (2, 1): 0.0}
    # Rank-local clocks: rank 2's clock started 1.5 s after the others', so its 2.0 is 3.5 on theirs.
    assert peer_waits(s, records, offsets_s=[0.0, 0.0, 1.5]) == {(0, 0): 2.5, (1, 0): 3.0, (2, 1): 0.0}


def test_the_nth_op_on_a_group_meets_every_members_nth_whatever_its_kind_and_other_groups():
    groups = {"g01": (0, 1), "g12": (1, 2)}
    b = _builder(3, groups)
    b.emit(0, Broadcast(group="g01", root=0, buf="A"))
    b.emit(0, AllReduce(group="g01", buf="A"))
    b.emit(1, AllReduce(group="g12", buf="A"))
    b.emit(1, Broadcast(group="g01", root=0, buf="A"))
    b.emit(1, AllReduce(group="g01", buf="A"))
    b.emit(2, AllReduce(group="g12", buf="A"))
    s = b.build()
    keys = instance_keys(s)
    assert keys[(0, 1)] == keys[(1, 2)] == ("group", "g01", 1) and keys[(1, 0)] == keys[(2, 0)]
    records = _records({(0, 0): 0.0, (0, 1): 1.0, (1, 0): 0.0, (1, 1): 0.25, (1, 2): 3.0, (2, 0): 0.5})
    assert peer_waits(s, records) == {(0, 0): 0.25, (1, 1): 0.0, (0, 1): 2.0, (1, 2): 0.0, (1, 0): 0.5,
                                      (2, 0): 0.0}


def test_a_send_waits_for_its_recv_and_pairs_meet_in_order():
    # Two messages 0 -> 1 and one 1 -> 0; the async ops' waits have no instance of their own.
    b = _builder(2)
    b.emit(0, Send(peer=1, buf="A"))
    b.emit(0, Send(peer=1, buf="B", handle="s"))
    b.emit(0, Recv(peer=1, buf="C"))
    b.emit(0, Wait(handle="s"))
    b.emit(1, Recv(peer=0, buf="A"))
    b.emit(1, Send(peer=0, buf="C"))
    b.emit(1, Recv(peer=0, buf="B"))
    s = b.build()
    keys = instance_keys(s)
    assert keys[(0, 0)] == keys[(1, 0)] == ("p2p", 0, 1, 0)
    assert keys[(0, 1)] == keys[(1, 2)] == ("p2p", 0, 1, 1)
    assert keys[(0, 2)] == keys[(1, 1)] == ("p2p", 1, 0, 0) and (0, 3) not in keys
    records = _records({(0, 0): 0.25, (0, 1): 1.0, (0, 2): 1.0, (0, 3): 1.5, (1, 0): 1.0, (1, 1): 1.25,
                        (1, 2): 1.5})
    assert peer_waits(s, records) == {(0, 0): 0.75, (1, 0): 0.0, (0, 1): 0.5, (1, 2): 0.0, (0, 2): 0.25,
                                      (1, 1): 0.0}


def test_a_member_that_returns_before_its_peers_arrive_waited_only_while_it_ran():
    # A broadcast root (or an eager send) can return before the others issue: its wait ends with it.
    b = _builder(2)
    for r in range(2):
        b.emit(r, Broadcast(group="world", root=0, buf="A"))
    b.emit(0, Send(peer=1, buf="B"))
    b.emit(1, Recv(peer=0, buf="B"))
    s = b.build()
    records = [{"rank": 0, "step": 0, "start_s": 0.0, "end_s": 0.25}, {"rank": 1, "step": 0, "start_s": 1.0,
                                                                       "end_s": 1.5},
               {"rank": 0, "step": 1, "start_s": 0.25, "end_s": 2.0}, {"rank": 1, "step": 1, "start_s": 1.5,
                                                                       "end_s": 2.0}]
    assert peer_waits(s, records) == {(0, 0): 0.25, (1, 0): 0.0, (0, 1): 1.25, (1, 1): 0.0}


def test_an_instance_with_a_member_missing_from_the_records_is_left_out():
    b = _builder(3)
    for r in range(3):
        b.emit(r, AllReduce(group="world", buf="A"))
    b.emit(0, Send(peer=1, buf="B"))
    b.emit(1, Recv(peer=0, buf="B"))
    s = b.build()
    records = _records({(0, 0): 0.0, (1, 0): 1.0, (0, 1): 2.0, (1, 1): 2.5})  # no rank 2
    assert peer_waits(s, records) == {(0, 1): 0.5, (1, 1): 0.0}


@pytest.mark.parametrize("algo, kw", [("cannon25d", {"grid": (2, 2, 2)}), ("2d", {"grid": (2, 2, 1)})])
def test_a_blocking_ops_wait_is_what_the_engine_counted_as_waiting(algo, kw):
    schedule = build_schedule(algo, Workload.mlp(64, 16), "both", "float32", **kw)
    result = simulate(schedule, load_topology("loopback:8"), timeline=True)
    waits = peer_waits(schedule, result.op_records())
    blocking = {where: w for where, w in waits.items()
                if getattr(schedule.programs[where[0]][where[1]], "handle", None) is None}
    assert blocking and len(waits) == len(instance_keys(schedule))
    assert blocking == pytest.approx({(r, s): result.timeline.waits[r][s] for r, s in blocking}, abs=1e-15)


def test_ranks_doing_the_same_work_wait_for_nobody_in_the_simulation():
    schedule = build_schedule("summa25d", Workload.gemm(256, 256, 256), "both", "float32", grid=(2, 2, 2))
    waits = peer_waits(schedule, simulate(schedule, load_topology("loopback:8"), timeline=True).op_records())
    assert waits and max(waits.values()) == pytest.approx(0.0, abs=1e-12)
