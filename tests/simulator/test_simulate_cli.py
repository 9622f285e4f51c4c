"""`tpsim simulate`: the JSON contract, per-op records, traces, and one-line errors with exit status 2."""

from __future__ import annotations

import json

import pytest

import simulator.commands.simulate as simulate_command
from simulator.algorithms.registry import build_schedule
from simulator.commands.schedule_args import DEFAULT_DTYPE
from simulator.timing.results import OP_RECORD_KEYS
from simulator.workloads.workload import Workload
from tests.cli_run import run

GEN = ("--algo", "summa25d", "--grid", "2,2,2", "--workload", "mlp", "--m", "64", "--hidden", "16")


def test_human_summary(capsys):
    status, out, _ = run(capsys, "simulate", *GEN, "--topology", "dgx-a100", "--analytic")
    assert status == 0
    assert out.startswith("summa25d grid [2, 2, 2] mlp (m=64, hidden=16) both bfloat16 on dgx-a100, 8 GPUs")
    for label in ("makespan", "analytic, contention-free", "critical rank", "busiest links", "simulated"):
        assert label in out


def test_json_contract_and_per_op_records(capsys):
    status, out, _ = run(capsys, "simulate", *GEN, "--topology", "dgx-a100", "--json", "--analytic")
    assert status == 0
    data = json.loads(out)
    assert {"makespan_s", "compute_s", "comm_s", "wait_s", "per_rank", "links", "ops", "analytic_makespan_s"} <= set(data)
    assert data["makespan_s"] >= data["analytic_makespan_s"] * (1 - 1e-12)
    critical = data["per_rank"][data["critical_rank"]]
    assert critical["finish_s"] == data["makespan_s"]
    assert data["compute_s"] + data["comm_s"] + data["wait_s"] == pytest.approx(data["makespan_s"], rel=1e-12)
    assert data["links"] and {"link", "bytes", "busy_fraction"} <= set(data["links"][0])
    schedule = build_schedule("summa25d", Workload.mlp(64, 16), "both", DEFAULT_DTYPE, grid=(2, 2, 2))
    assert len(data["ops"]) == sum(len(p) for p in schedule.programs)
    for record in data["ops"]:
        assert tuple(record) == OP_RECORD_KEYS
        op = schedule.programs[record["rank"]][record["step"]]
        assert record["kind"] == op.kind
        assert record["bytes"] == schedule.payload_bytes(record["rank"], op)
        assert record["flops"] == schedule.flops(record["rank"], op)
        assert record["end_s"] - record["start_s"] == record["duration_s"] >= 0
        assert record["end_s"] <= data["makespan_s"]


def test_large_runs_leave_ops_out_unless_asked(capsys, monkeypatch):
    monkeypatch.setattr(simulate_command, "OPS_INLINE_LIMIT", 10)
    status, out, _ = run(capsys, "simulate", *GEN, "--topology", "dgx-a100", "--json")
    data = json.loads(out)
    assert status == 0 and "ops" not in data and "pass --ops" in data["ops_omitted"]
    status, out, _ = run(capsys, "simulate", *GEN, "--topology", "dgx-a100", "--json", "--ops")
    assert status == 0 and len(json.loads(out)["ops"]) > 10


def test_collector_paused_for_the_whole_command(capsys, monkeypatch):
    # Loading, building, checking, simulating and printing all run with the cyclic collector off
    # (a full collection in between walked millions of objects at 4,096 GPUs); it is back on after.
    import gc

    seen = []
    real_summary = simulate_command.summary_lines
    monkeypatch.setattr(simulate_command, "summary_lines", lambda *a: seen.append(gc.isenabled()) or real_summary(*a))
    status, _, _ = run(capsys, "simulate", *GEN, "--topology", "dgx-a100")
    assert status == 0 and seen == [False] and gc.isenabled()


def test_trace_file_and_overrides(capsys, tmp_path):
    path = tmp_path / "t.json"
    status, out, _ = run(capsys, "simulate", "--algo", "1d", "--gpus", "4", "--workload", "gemm", "--m", "32",
                         "--k", "16", "--n", "8", "--topology", "a100-4gpu", "--trace", str(path),
                         "--algo-override", "all_reduce=direct")
    assert status == 0 and str(path) in out
    trace = json.loads(path.read_text())
    assert any(e["ph"] == "X" for e in trace["traceEvents"])
    assert trace["otherData"]["algorithm_overrides"] == {"all_reduce": "direct"}


def test_schedule_file_and_placement(capsys, tmp_path):
    path = tmp_path / "s.json"
    assert run(capsys, "schedule", *GEN, "--out", str(path))[0] == 0
    status, out, _ = run(capsys, "simulate", "--schedule", str(path), "--topology", "a100-4gpu:2",
                         "--placement", "depth-major", "--json")
    data = json.loads(out)
    assert status == 0 and data["meta"]["placement"] == "depth-major"
    assert [r["gpu"] for r in data["per_rank"]] == ["gpu0", "gpu2", "gpu4", "gpu6", "gpu1", "gpu3", "gpu5", "gpu7"]


@pytest.mark.parametrize("argv, message", [
    (("--topology", "no-such-machine"), "preset"),
    (("--topology", "dgx-a100", "--grid", "2,3,1"), "square"),
    (("--topology", "loopback:4"), "world size 8 needs 8 GPUs"),
    (("--topology", "dgx-a100", "--algo-override", "all_reduce=fast"), "all_reduce has no algorithm 'fast'"),
    (("--topology", "dgx-a100", "--algo-override", "scatter=ring"), "unknown collective kind 'scatter'"),
])
def test_user_errors_are_one_line_and_exit_2(capsys, argv, message):
    base = [a for a in GEN]
    if "--grid" in argv:
        i = base.index("--grid")
        del base[i:i + 2]
    status, out, err = run(capsys, "simulate", *base, *argv)
    assert status == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith("tpsim simulate: error:")
    assert message in err


@pytest.mark.parametrize("sim, message", [
    ({"gemm_efficiency": 2}, "compute model: gemm_efficiency must be in (0, 1], got 2"),
    ({"half_efficiency_dim": -1}, "compute model: half_efficiency_dim must be >= 0, got -1"),
    ({"collective_nccl_arch": "pascal"}, "CollectiveParams.nccl_arch must be one of '', 'volta', 'ampere', 'hopper', "
                                         "'blackwell', got 'pascal'"),
])
def test_a_topology_files_bad_sim_settings_are_one_line_and_exit_2(capsys, tmp_path, sim, message):
    """Compute and collective settings alike: read when the schedule is compiled or timed, after the file has loaded."""
    path = tmp_path / "t.json"
    assert run(capsys, "topology", "save", "a100-4gpu:2", str(path))[0] == 0
    document = json.loads(path.read_text())
    document["sim"] = {**document.get("sim", {}), **sim}
    path.write_text(json.dumps(document))
    status, out, err = run(capsys, "simulate", *GEN, "--topology", str(path))
    assert (status, out, err) == (2, "", f"tpsim simulate: error: {message}\n")
