"""`tpsim compare`: a run compared with itself is exact, the JSON/trace/PNG contracts, and bad input."""

from __future__ import annotations

import json
import re

import pytest

from simulator.algorithms.registry import build_schedule
from simulator.cli import main
from simulator.commands.compare import table_lines
from simulator.compare.measured import CLASS_ORDER, compare_record, load_measured, op_class
from simulator.ir.serialize import schedule_to_dict
from simulator.timing.simulation import simulate
from simulator.workloads.workload import Workload
from topologies import load_topology


def _record_from_simulation(schedule, topology: str) -> dict:
    """A tpsim-measured record whose 'measurements' are the simulator's own times on ``topology``."""
    result = simulate(schedule, load_topology(topology), timeline=True)
    return {"format": "tpsim-measured", "version": 1, "algorithm": schedule.algorithm,
            "grid": list(schedule.grid), "backend": "gloo", "world_size": schedule.world_size,
            "time_s": result.makespan_s, "median_iteration": 0,
            "iterations": [{"iteration": 0, "time_s": result.makespan_s}], "ops": result.op_records(),
            "schedule": schedule_to_dict(schedule)}


@pytest.fixture
def measured(tmp_path):
    """A 2-D SUMMA [2,2,1] MLP record (gemm, local, broadcast, reduce) 'measured' on loopback:4."""
    schedule = build_schedule("2d", Workload.mlp(64, 16), "both", "float32", grid=(2, 2, 1))
    record = _record_from_simulation(schedule, "loopback:4")
    path = tmp_path / "measured.json"
    path.write_text(json.dumps(record))
    return path, record


def test_a_run_compared_on_its_own_topology_has_zero_error_everywhere(measured):
    path, record = measured
    comparison = compare_record(load_measured(str(path)), load_topology("loopback:4"), source=str(path))
    assert comparison.measured_s == comparison.predicted_s == record["time_s"]
    assert comparison.rel_error == 0.0
    names = [row.name for row in comparison.classes]
    assert names == [c for c in CLASS_ORDER if c in names] and {"gemm", "local/slice", "broadcast"} <= set(names)
    assert all(row.rel_error == 0.0 for row in comparison.classes)
    assert sum(row.ops for row in comparison.classes) == len(record["ops"])


def test_a_slower_topology_is_predicted_slower():
    schedule = build_schedule("1d", Workload.gemm(256, 256, 256), "both", "float32", gpus=4)
    record = _record_from_simulation(schedule, "loopback:4")
    comparison = compare_record(record, load_topology("loopback:8"))  # same links: same answer
    assert comparison.rel_error == pytest.approx(0.0, abs=1e-12)
    G = load_topology("loopback:4")
    for _, _, data in G.edges(data=True):
        data["bandwidth_GBps"] /= 10
    slower = compare_record(record, G)
    assert slower.rel_error > 0
    assert next(r for r in slower.classes if r.name == "all_reduce").rel_error > 0
    assert next(r for r in slower.classes if r.name == "gemm").rel_error == 0.0


def test_op_classes_group_kinds_as_documented():
    assert [op_class(k) for k in ("gemm", "local", "slice", "send", "recv", "wait", "all_gather")] == [
        "gemm", "local/slice", "local/slice", "send/recv", "send/recv", "wait", "all_gather"]


def test_json_has_the_end_to_end_figures_and_one_object_per_class(measured, capsys):
    path, record = measured
    assert main(["compare", str(path), "--topology", "loopback:4", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {"measured_s", "predicted_s", "rel_error", "measured_median_s", "measured_min_s", "measured_max_s",
            "classes", "algorithm", "grid", "topology"} <= set(data)
    assert (data["measured_s"], data["rel_error"], data["topology"]) == (record["time_s"], 0.0, "loopback:4")
    assert all(set(c) == {"class", "ops", "measured_s", "predicted_s", "rel_error", "measured_wait_s",
                          "predicted_wait_s"} for c in data["classes"])


def test_the_trace_holds_both_runs_as_separate_processes_and_the_png_is_drawn(measured, tmp_path, capsys):
    path, record = measured
    trace, png = tmp_path / "both.json", tmp_path / "bars.png"
    assert main(["compare", str(path), "--topology", "loopback:4", "--trace", str(trace), "--png", str(png)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[2].split()[:2] == ["end", "to"] and "+0.0%" in out.splitlines()[2]
    assert out.rstrip().endswith(f"wrote plot {png}, trace {trace}")
    events = json.loads(trace.read_text())["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    assert {names[r] for r in range(4)} == {f"measured rank {r}" for r in range(4)}
    assert {names[4 + r] for r in range(4)} == {f"simulated rank {r}" for r in range(4)}
    slices = [e for e in events if e["ph"] == "X"]
    assert sum(e["pid"] < 4 for e in slices) == sum(e["pid"] >= 4 for e in slices) == len(record["ops"])
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("change, drop, message", [
    ({"format": "tpsim-bench"}, None, "not a measured run (format 'tpsim-bench'"),
    ({"version": 0}, None, "measured-run version 0; this tpsim reads version 1"),
    ({}, "ops", "measured run lacks ops"),
    ({"time_s": "fast"}, None, "bad.json: time_s: expected a number of seconds, got 'fast'"),
    ({"iterations": [{"time_s": None}]}, None, "bad.json: iterations[0] time_s: expected a number of seconds"),
    ({"iterations": 3}, None, "bad.json: iterations must be a list of {time_s, ...} objects"),
])
def test_other_formats_and_older_versions_are_one_line_and_exit_2(measured, tmp_path, capsys, change, drop,
                                                                  message):
    _, record = measured
    record = {k: v for k, v in dict(record, **change).items() if k != drop}
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(record))
    assert main(["compare", str(bad), "--topology", "loopback:4"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tpsim compare: error: ") and message in err and err.count("\n") == 1


def test_missing_files_bad_json_and_small_topologies_are_one_line_and_exit_2(measured, tmp_path, capsys):
    path, _ = measured
    garbage = tmp_path / "garbage.json"
    garbage.write_text("{not json")
    cases = [([str(tmp_path / "missing.json"), "--topology", "loopback:4"], "cannot read measured run"),
             ([str(garbage), "--topology", "loopback:4"], "not valid JSON"),
             ([str(path), "--topology", "loopback:2"], "topology loopback:2 has 2 GPUs but the measured run has 4"),
             ([str(path), "--topology", "no-such-preset"], "unknown preset")]
    for argv, message in cases:
        assert main(["compare", *argv]) == 2
        err = capsys.readouterr().err
        assert err.startswith("tpsim compare: error: ") and message in err and err.count("\n") == 1, err


def _on_rank_clocks(record: dict, skew_s: list[float]) -> dict:
    """``record`` as rank-local clocks would give it: rank r's clock started ``skew_s[r]`` late, which
    ``clock_origins_s`` says."""
    ops = [dict(op, start_s=op["start_s"] - skew_s[op["rank"]], end_s=op["end_s"] - skew_s[op["rank"]])
           for op in record["ops"]]
    return dict(record, ops=ops, clock_origins_s=[1000.0 + skew for skew in skew_s])


def test_peer_waits_are_split_out_of_each_communication_class_on_both_sides(capsys):
    # cannon25d's ranks wait for each other; shifted rank clocks plus their origins give the same waits.
    schedule = build_schedule("cannon25d", Workload.mlp(64, 16), "both", "float32", grid=(2, 2, 2))
    record = _on_rank_clocks(_record_from_simulation(schedule, "loopback:8"),
                             [0.0, 0.5e-3, 0.25e-3, 1e-3, 0.0, 2e-3, 0.125e-3, 0.0])
    comparison = compare_record(record, load_topology("loopback:8"))
    rows = {row.name: row for row in comparison.classes}
    comm = [name for name in rows if name not in ("gemm", "local/slice", "wait")]
    assert {"broadcast", "reduce", "send/recv"} <= set(comm)
    for name in comm:
        assert rows[name].measured_wait_s == pytest.approx(rows[name].predicted_wait_s, abs=1e-12)
        assert 0 <= rows[name].predicted_wait_s <= rows[name].predicted_s
    assert rows["reduce"].predicted_wait_s > 0
    assert all(rows[name].measured_wait_s is rows[name].predicted_wait_s is None
               for name in ("gemm", "local/slice", "wait"))
    lines = table_lines(comparison)
    waits = [i for i, line in enumerate(lines) if line.startswith("    waiting on peers")]
    assert [lines[i - 1].split()[0] for i in waits] == comm
    for i in waits:  # measured and predicted end in the class row's columns
        ends = [[m.end() for m in re.finditer(r"\d \S?s\b", lines[j])][:2] for j in (i - 1, i)]
        assert ends[0] == ends[1] and len(ends[1]) == 2, lines[i - 1:i + 1]
    assert sum(line.startswith("  (waiting on peers:") for line in lines) == 1 and lines[-1].startswith("  (")


def test_a_measured_run_without_one_clock_has_no_measured_wait_and_no_wait_rows(measured, capsys):
    path, record = measured
    assert "clock_origins_s" not in record
    comparison = compare_record(load_measured(str(path)), load_topology("loopback:4"))
    rows = {row.name: row for row in comparison.classes}
    assert all(row.measured_wait_s is None for row in comparison.classes)
    assert rows["broadcast"].predicted_wait_s == pytest.approx(0.0, abs=1e-12) and rows["gemm"].predicted_wait_s is None
    assert compare_record(dict(record, clock_origins_s=None), load_topology("loopback:4")).classes == \
        comparison.classes
    assert main(["compare", str(path), "--topology", "loopback:4"]) == 0
    out = capsys.readouterr().out
    assert "waiting on peers" not in out
    assert out.splitlines()[4:] == table_lines(comparison)[4:]
