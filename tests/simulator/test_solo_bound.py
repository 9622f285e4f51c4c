"""The solo-rank bound: exact on hand-built schedules, below the analytic makespan on every generator's."""

from __future__ import annotations

import pytest

import simulator.predict as predict_module
from simulator.algorithms.arrangement import arrangements
from simulator.errors import NotApplicable, ScheduleError
from simulator.ir.builder import ScheduleBuilder
from simulator.ir.ops import AllReduce, Gemm, Recv, Send, Wait
from simulator.predict import _build, predict
from simulator.timing.critical_path import ClosedForms, analyze
from simulator.timing.solo_bound import solo_bound
from simulator.workloads.workload import Workload
from topologies import load_topology


def _two_ranks() -> ScheduleBuilder:
    b = ScheduleBuilder("custom", (2,), Workload.gemm(2048, 2048, 2048), "fwd", "float32", 2, {"world": (0, 1)})
    for r in range(2):
        for name in ("A", "B", "C"):
            b.buffer(r, name, (2048, 2048))
    return b


def _bounds(schedule, G):
    closed = ClosedForms(G)
    return [solo_bound(schedule, G, closed_forms=closed, ranks=[r]) for r in range(schedule.world_size)]


def test_a_rank_walked_alone_does_not_wait_for_a_late_peer():
    # Rank 1 computes before the all-reduce; rank 0 alone would start it at once.
    b = _two_ranks()
    b.emit(0, AllReduce(group="world", buf="A"))
    b.emit(1, Gemm(out="C", a="A", b="B"))
    b.emit(1, AllReduce(group="world", buf="A"))
    s = b.build()
    G = load_topology("dgx-a100")
    full = analyze(s, G, timeline=False)
    alone = _bounds(s, G)
    gemm_s = full.per_rank[1].compute_s
    assert alone[1] == full.makespan_s == full.per_rank[0].finish_s  # the late rank walks its own critical path
    assert alone[0] == pytest.approx(full.makespan_s - gemm_s, rel=1e-12) and alone[0] < full.makespan_s
    assert solo_bound(s, G, closed_forms=ClosedForms(G)) == full.makespan_s  # every rank of two walked


def test_asynchronous_ops_end_at_their_wait_and_send_meets_recv():
    b = _two_ranks()
    b.emit(0, Send(peer=1, buf="A", handle="s"))
    b.emit(0, Gemm(out="C", a="B", b="B"))
    b.emit(0, Wait(handle="s"))
    b.emit(1, Recv(peer=0, buf="A"))
    s = b.build()
    G = load_topology("dgx-a100")
    full = analyze(s, G, timeline=False)
    alone = _bounds(s, G)
    assert alone == [full.per_rank[0].finish_s, full.per_rank[1].finish_s]
    assert alone[0] == max(full.per_rank[0].compute_s, alone[1])  # the gemm overlaps the send


def test_a_wait_for_a_handle_never_issued_is_a_schedule_error():
    b = _two_ranks()
    b.emit(0, Wait(handle="nothing"))
    G = load_topology("dgx-a100")
    with pytest.raises(ScheduleError, match="wait for handle 'nothing'"):
        solo_bound(b.build(), G, closed_forms=ClosedForms(G), ranks=[0])


@pytest.mark.parametrize("topology, workload, gpus, placements", [
    ("dgx-a100:8", Workload.mlp(32768, 4096), 64, (None,)),
    ("a100-4gpu:4", Workload.mlp(8192, 2048), 16, (None, "depth-major")),
    ("dgx-a100", Workload.transformer(8, 64, 256, 8, None, 0.0), 8, (None,)),
])
def test_every_generator_is_bounded_from_below_and_tightly(topology, workload, gpus, placements):
    G = load_topology(topology)
    closed = ClosedForms(G)
    checked = 0
    for a in arrangements(gpus, placements=placements):
        try:
            schedule = _build(a, workload, "both", "bfloat16")
            bound = solo_bound(schedule, G, a.placement, closed_forms=closed)
        except NotApplicable:
            continue
        exact = analyze(schedule, G, a.placement, timeline=False).makespan_s
        assert bound <= exact, a.label  # the same float sums: no rounding slack
        # Not a law, a measurement: generators are near symmetric, so a few ranks come within 1%.
        assert bound >= 0.99 * exact, a.label
        checked += 1
    assert checked >= 5


@pytest.mark.parametrize("workers", [1, 2])
def test_pruning_on_a_weaker_bound_stops_some_rows_at_the_analytic_one(monkeypatch, workers):
    G = load_topology("dgx-a100:8")
    workload = Workload.mlp(32768, 4096)
    full = {r.arrangement.label: r for r in predict(G, workload, 64)}
    real = predict_module.solo_bound
    monkeypatch.setattr(predict_module, "solo_bound", lambda *args, **kw: 0.6 * real(*args, **kw))
    rows = predict(G, workload, 64, prune=True, workers=workers)
    assert rows[0].time_s == min(r.time_s for r in full.values() if r.time_s is not None)
    stopped = [r for r in rows if r.status == "bound" and r.analytic_s is not None]
    assert stopped, "a bound at 0.6 of the real one lets some rows through to the analytic bound"
    for row in rows:
        if row.status in ("ok", "bound") and row.analytic_s is not None:
            assert row.analytic_s == full[row.arrangement.label].analytic_s
        if row.status == "ok":
            assert row.time_s == full[row.arrangement.label].time_s
        if row.status == "bound":
            assert row.time_s is None and row.bound_s > rows[0].time_s
