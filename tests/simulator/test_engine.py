"""The simpy engine's lock-step semantics on whole timelines of 2-4 ranks, with exact, binary-exact times.

Compute and communication durations come from small fakes (gemm 1 s, elementwise 0.5 s, a collective
2 s, a send/recv 0.25 s), so every time below is exact in floating point and the assertions compare
whole (time, rank, event) lists.
"""

from __future__ import annotations

import pytest
import simpy

from simulator.algorithms.registry import build_schedule
from simulator.ir.builder import ScheduleBuilder
from simulator.ir.ops import AllReduce, Broadcast, Gemm, Local, Recv, Send, Wait
from simulator.simpy_internals import events_scheduled, insertion_counter, succeed_in_slot, succeed_later
from simulator.timing.critical_path import critical_path
from simulator.timing.engine import run_plan
from simulator.timing.plan import compile_schedule
from simulator.workloads.workload import Workload

GEMM_S, LOCAL_S, COLLECTIVE_S, P2P_S = 1.0, 0.5, 2.0, 0.25


class FakeCompute:
    """gemm 1 s, anything else that computes 0.5 s."""

    def op_time_s(self, schedule, rank, op, device, after_comm=False):
        return GEMM_S if isinstance(op, Gemm) else LOCAL_S


def comm_time(inst) -> float:
    return P2P_S if inst.kind == "p2p" else COLLECTIVE_S


class FakeBackend:
    """Every instance lasts ``comm_time``; records (time, kind, ranks) of each launch."""

    def __init__(self):
        self.launches = []

    def start(self, env, inst):
        self.launches.append((env.now, inst.kind, inst.ranks))
        return env.timeout(comm_time(inst))


def _builder(world: int, groups=None) -> ScheduleBuilder:
    b = ScheduleBuilder("custom", (world,), Workload.gemm(2, 2, 2), "fwd", "float32", world,
                        groups or {"world": tuple(range(world))})
    for r in range(world):
        for name in ("A", "B", "C"):
            b.buffer(r, name, (2, 2))
    return b


def _run(schedule):
    plan = compile_schedule(schedule, [f"gpu{r}" for r in range(schedule.world_size)],
                            [{}] * schedule.world_size, FakeCompute())
    backend = FakeBackend()
    engine = run_plan(plan, backend)
    return plan, engine, backend


def _events(schedule, engine) -> list[tuple[float, int, str]]:
    events = []
    for rank, program in enumerate(schedule.programs):
        for step, op in enumerate(program):
            events.append((engine.starts[rank][step], rank, f"start {op.kind}"))
            events.append((engine.ends[rank][step], rank, f"end {op.kind}"))
    return sorted(events)


def test_a_collective_starts_when_its_last_member_arrives():
    b = _builder(2)
    b.emit(0, Gemm(out="C", a="A", b="B"))
    b.emit(0, AllReduce(group="world", buf="C"))
    for _ in range(2):
        b.emit(1, Gemm(out="C", a="A", b="B", accumulate=True))
    b.emit(1, AllReduce(group="world", buf="C"))
    s = b.build()
    plan, engine, backend = _run(s)
    assert _events(s, engine) == [
        (0.0, 0, "start gemm"), (0.0, 1, "start gemm"),
        (1.0, 0, "end gemm"), (1.0, 0, "start all_reduce"), (1.0, 1, "end gemm"), (1.0, 1, "start gemm"),
        (2.0, 1, "end gemm"), (2.0, 1, "start all_reduce"),
        (4.0, 0, "end all_reduce"), (4.0, 1, "end all_reduce")]
    assert backend.launches == [(2.0, "all_reduce", (0, 1))]
    assert [engine.waits[0][1], engine.waits[1][2]] == [1.0, 0.0]
    assert (engine.wait_s, engine.comm_s, engine.finish_s) == ([1.0, 0.0], [2.0, 2.0], [4.0, 4.0])


def test_an_async_op_overlaps_compute_until_its_wait():
    b = _builder(2)
    b.emit(0, Broadcast(group="world", root=0, buf="A", handle="h"))
    b.emit(0, Gemm(out="C", a="B", b="B"))
    b.emit(0, Local(fn="copy", out="B", inputs=("C",)))
    b.emit(0, Wait(handle="h"))
    b.emit(1, Gemm(out="C", a="B", b="B"))
    b.emit(1, Broadcast(group="world", root=0, buf="A"))
    s = b.build()
    plan, engine, _ = _run(s)
    assert _events(s, engine) == [
        (0.0, 0, "start broadcast"), (0.0, 0, "start gemm"), (0.0, 1, "start gemm"),
        (1.0, 0, "end gemm"), (1.0, 0, "start local"), (1.0, 1, "end gemm"), (1.0, 1, "start broadcast"),
        (1.5, 0, "end local"), (1.5, 0, "start wait"),
        (3.0, 0, "end broadcast"), (3.0, 0, "end wait"), (3.0, 1, "end broadcast")]
    # Rank 0 blocks 1.5 s at its wait, all of it while the broadcast is in flight.
    assert (plan.compute_s[0], engine.comm_s[0], engine.wait_s[0]) == (1.5, 1.5, 0.0)


def test_a_wait_before_the_peer_arrives_counts_as_waiting_then_communication():
    b = _builder(2)
    b.emit(0, AllReduce(group="world", buf="A", handle="h"))
    b.emit(0, Wait(handle="h"))
    for _ in range(3):
        b.emit(1, Gemm(out="C", a="B", b="B"))
    b.emit(1, AllReduce(group="world", buf="A"))
    s = b.build()
    _, engine, _ = _run(s)
    assert engine.waits[0][1] == 3.0
    assert (engine.wait_s[0], engine.comm_s[0], engine.finish_s[0]) == (3.0, 2.0, 5.0)


def test_send_recv_pairs_meet_in_order_and_both_sides_end_together():
    # A ring shift on 3 ranks: async send right, recv from the left, wait both; rank 2 computes first.
    b = _builder(3)
    for r in range(3):
        if r == 2:
            b.emit(r, Gemm(out="C", a="A", b="B"))
        b.emit(r, Send(peer=(r + 1) % 3, buf="A", handle="s"))
        b.emit(r, Recv(peer=(r - 1) % 3, buf="B", handle="r"))
        b.emit(r, Wait(handle="s"))
        b.emit(r, Wait(handle="r"))
    s = b.build()
    _, engine, backend = _run(s)
    assert sorted(backend.launches) == [(0.0, "p2p", (0, 1)), (1.0, "p2p", (1, 2)), (1.0, "p2p", (2, 0))]
    assert engine.finish_s == [1.25, 1.25, 1.25]
    # Rank 1 waits for its send (done at 1.25) first; its recv had completed at 0.25, but an async op's
    # record ends when its wait returns, as a measurement sees it.
    assert [list(engine.ends[r][-2:]) for r in range(3)] == [[0.25, 1.25], [1.25, 1.25], [1.25, 1.25]]
    assert [list(engine.ends[r][:2]) for r in range(2)] == [[0.25, 1.25], [1.25, 1.25]]


def test_the_nth_collective_on_a_group_is_every_members_nth():
    # Two groups sharing rank 1: its program order decides which instance waits for which.
    groups = {"g01": (0, 1), "g12": (1, 2)}
    b = _builder(3, groups)
    b.emit(0, AllReduce(group="g01", buf="A"))
    b.emit(1, AllReduce(group="g12", buf="A"))
    b.emit(1, AllReduce(group="g01", buf="A"))
    b.emit(2, Gemm(out="C", a="A", b="B"))
    b.emit(2, AllReduce(group="g12", buf="A"))
    s = b.build()
    _, engine, backend = _run(s)
    assert backend.launches == [(1.0, "all_reduce", (1, 2)), (3.0, "all_reduce", (0, 1))]
    assert engine.finish_s == [5.0, 5.0, 3.0]
    assert engine.wait_s == [3.0, 1.0, 0.0]


def test_a_deadlock_names_the_stuck_rank_and_op():
    b = _builder(2)
    b.emit(0, AllReduce(group="world", buf="A"))
    s = b.build()
    with pytest.raises(ValueError, match=r"deadlock: rank 0 is blocked at step 0 \(ar world A\)"):
        _run(s)


@pytest.mark.parametrize("algo, grid, gpus", [("1d", None, 4), ("2d", (2, 2, 1), None), ("summa25d", (2, 2, 2), None),
                                              ("cannon25d", (2, 2, 2), None), ("cannon25d", (4, 4, 2), None)])
@pytest.mark.parametrize("workload", [Workload.gemm(32, 16, 24), Workload.mlp(32, 16)], ids=["gemm", "mlp"])
def test_engine_and_critical_path_agree_op_for_op(algo, grid, gpus, workload):
    # The same plan, the same instance durations: the simpy run and the analytic walk must coincide.
    s = build_schedule(algo, workload, "both", "float32", grid=grid, gpus=gpus)
    plan, engine, _ = _run(s)
    walk = critical_path(plan, comm_time)
    assert (engine.starts, engine.ends, engine.waits) == (walk.starts, walk.ends, walk.waits)
    assert (engine.comm_s, engine.wait_s, engine.finish_s) == (walk.comm_s, walk.wait_s, walk.finish_s)
    for rank in range(s.world_size):
        assert engine.finish_s[rank] == plan.compute_s[rank] + engine.comm_s[rank] + engine.wait_s[rank]


def _processing_order(make_event) -> tuple[list[tuple], int]:
    """(time, label, ok, value) in the order simpy processes a mix of equal-time events: plain timeouts,
    two processes' steps, and events from ``make_event(env, delay, value)``; and the events scheduled."""
    env = simpy.Environment()
    seen = []

    def note(label):
        return lambda event: seen.append((env.now, label, event.ok, event.value))

    def process(name):
        yield env.timeout(1.0)
        seen.append((env.now, name, True, None))
        yield env.timeout(0.0)
        seen.append((env.now, name + "'", True, None))

    env.process(process("p0"))
    for i, delay in enumerate((1.0, 0.0, 1.0, 2.0, 1.0)):
        make_event(env, delay, i).callbacks.append(note(f"e{i}"))
        env.timeout(delay).callbacks.append(note(f"t{i}"))
    env.process(process("p1"))
    env.run()
    return seen, events_scheduled(env)


def test_succeed_later_is_processed_where_a_simpy_timeout_would_be_among_ties():
    """The flow network's pre-made events must keep simpy's (time, priority, counter) order exactly."""
    def premade(env, delay, value):
        event = env.event()
        succeed_later(env, event, value, delay)
        assert event.triggered and event.ok and event.value == value and not event.processed
        return event

    ours, theirs = _processing_order(premade), _processing_order(lambda env, delay, value: env.timeout(delay, value))
    assert ours == theirs
    seen, scheduled = theirs
    assert [label for _, label, _, _ in seen[:4]] == ["e1", "t1", "e0", "t0"]  # ties in scheduling order
    assert seen[-2:] == [(2.0, "e3", True, 3), (2.0, "t3", True, None)]
    assert scheduled == 2 + 10 + 2 * 2 + 2  # two Initialize, ten events, each process's two timeouts and end


def test_succeed_in_slot_with_a_number_taken_at_once_is_a_simpy_timeout():
    def slotted(env, delay, value):
        event = env.event()
        succeed_in_slot(env, event, value, env.now + delay, next(insertion_counter(env)))
        assert event.triggered and event.ok and event.value == value and not event.processed
        return event

    assert _processing_order(slotted) == _processing_order(lambda env, delay, value: env.timeout(delay, value))


def _slot_taken_early(late: bool):
    """Events at t = 1 and 2 around x (due at 2, numbered at 0): x a Timeout, or (``late``) its number
    taken at 0 and the event scheduled in that slot at 1.5, as a phase of flows schedules its last arrival."""
    env = simpy.Environment()
    seen = []

    def note(label):
        return lambda event: seen.append((env.now, label, event.value))

    env.timeout(2.0, "before").callbacks.append(note("before"))
    if late:
        numbers = insertion_counter(env)
        eid, when = next(numbers), env.now + 2.0
        x = env.event()
        env.timeout(1.5).callbacks.append(lambda _event: succeed_in_slot(env, x, "x", when, eid))
    else:
        x = env.timeout(2.0, "x")
        env.timeout(1.5)
    x.callbacks.append(note("x"))
    env.timeout(2.0, "after").callbacks.append(note("after"))
    env.timeout(1.0, "one").callbacks.append(note("one"))
    env.run()
    return seen, events_scheduled(env)


def test_a_number_taken_early_puts_an_event_scheduled_later_where_a_timeout_would_have_been():
    assert _slot_taken_early(True) == _slot_taken_early(False)
    seen, scheduled = _slot_taken_early(True)
    assert [label for _, label, _ in seen] == ["one", "before", "x", "after"] and scheduled == 5


def test_events_scheduled_reads_simpys_counter_without_advancing_it():
    env = simpy.Environment()
    assert events_scheduled(env) == 0
    for delay in (1.0, 0.0, 1.0):
        env.timeout(delay)
    assert events_scheduled(env) == events_scheduled(env) == 3
    env.run()
    assert events_scheduled(env) == 3
    assert events_scheduled(object()) is None  # no counter to read: the stats say "unknown"
