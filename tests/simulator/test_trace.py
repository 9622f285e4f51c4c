"""Chrome/Perfetto traces: the event layout shared with the executor, and a simulated run's trace."""

from __future__ import annotations

import json

from simulator.algorithms.registry import build_schedule
from simulator.timing.simulation import simulate
from simulator.timing.trace import chrome_trace, simulated_trace, write_trace
from simulator.workloads.workload import Workload
from topologies.builders import nvswitch_node


def _record(rank, step, kind, start, end, group=None, **extra):
    return {"rank": rank, "step": step, "kind": kind, "group": group, "bytes": 0, "flops": 0,
            "start_s": start, "end_s": end, "duration_s": end - start, **extra}


def test_layout_pids_tids_units_and_names():
    trace = chrome_trace([
        _record(1, 0, "gemm", 0.0, 2e-6),
        _record(1, 1, "broadcast", 2e-6, 5e-6, group="row", name="bc row@0 A"),
        _record(0, 0, "all_reduce", 0.0, 1e-6, group="world", wait_s=2.5e-7),
    ], metadata={"source": "test"})
    events = trace["traceEvents"]
    names = {(e["pid"], e["tid"], e["args"]["name"]) for e in events if e["ph"] == "M" and e["name"] != "process_sort_index"}
    assert {(0, 0, "rank 0"), (1, 0, "rank 1"), (1, 0, "compute"), (1, 1, "communication")} <= names
    slices = [e for e in events if e["ph"] == "X"]
    assert [(e["pid"], e["tid"], e["name"], e["ts"], e["dur"]) for e in slices] == [
        (0, 1, "all_reduce world", 0.0, 1.0), (1, 0, "gemm", 0.0, 2.0), (1, 1, "bc row@0 A", 2.0, 3.0)]
    assert slices[0]["args"]["wait_us"] == 0.25
    assert trace["otherData"] == {"source": "test"}


def test_async_ops_get_lanes_where_they_overlap_nothing():
    trace = chrome_trace([
        _record(0, 0, "broadcast", 0.0, 4e-6, group="row", **{"async": True}),
        _record(0, 1, "broadcast", 1e-6, 3e-6, group="col", **{"async": True}),
        _record(0, 2, "reduce", 4e-6, 6e-6, group="row", **{"async": True}),
    ])
    lanes = [(e["ts"], e["tid"]) for e in trace["traceEvents"] if e["ph"] == "X"]
    assert lanes == [(0.0, 2), (1.0, 3), (4.0, 2)]
    threads = [e["args"]["name"] for e in trace["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"]
    assert threads == ["compute", "communication", "async comm 1", "async comm 2"]


def test_counters_go_on_a_links_process():
    trace = chrome_trace([_record(0, 0, "gemm", 0.0, 1e-6)], counters={"a->b": [(0.0, 0.5), (1e-6, 0.0)]},
                         world_size=2)
    counters = [e for e in trace["traceEvents"] if e["ph"] == "C"]
    assert [(e["pid"], e["name"], e["ts"], e["args"]["utilisation"]) for e in counters] == [
        (2, "a->b", 0.0, 0.5), (2, "a->b", 1.0, 0.0)]
    assert any(e["ph"] == "M" and e["pid"] == 2 and e["args"].get("name") == "links" for e in trace["traceEvents"])


def test_a_simulated_trace_has_every_op_and_loads_back(tmp_path):
    s = build_schedule("summa25d", Workload.mlp(64, 32), "both", "float32", grid=(2, 2, 1), overlap=True)
    result = simulate(s, nvswitch_node(4), link_samples=20)
    trace = simulated_trace(result)
    path = tmp_path / "trace.json"
    write_trace(path, trace)
    loaded = json.loads(path.read_text())
    slices = [e for e in loaded["traceEvents"] if e["ph"] == "X"]
    assert len(slices) == sum(len(p) for p in s.programs)
    for e in slices:
        op = s.programs[e["pid"]][e["args"]["step"]]
        assert e["name"] == op.short()
        assert (e["tid"] == 0) == (op.kind in ("gemm", "local", "slice"))
        assert (e["tid"] >= 2) == bool(getattr(op, "handle", None))
        assert e["dur"] >= 0
    assert any(e["ph"] == "C" for e in loaded["traceEvents"])
    assert loaded["otherData"]["makespan_s"] == result.makespan_s
