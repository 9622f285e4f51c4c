"""Time per layer part: a small exact fixture, the split summing to every rank's totals, the
``simulate`` JSON and text, traces named by part, and the parts surviving a schedule file."""

from __future__ import annotations

import json

import pytest
import simpy

from simulator.algorithms.registry import build_schedule
from simulator.cli import main
from simulator.compute import ComputeModel
from simulator.ir.ops import AllReduce, Local
from simulator.ir.schedule import BufferSpec, Schedule
from simulator.ir.serialize import load_schedule, save_schedule, schedule_from_dict, schedule_to_dict
from simulator.timing.critical_path import analyze, critical_path
from simulator.timing.engine import Engine
from simulator.timing.parts import PartTime, part_labels, part_times
from simulator.timing.plan import compile_schedule
from simulator.timing.simulation import NetworkBackend, plan_on_graph, simulate
from simulator.timing.trace import simulated_trace
from topologies import load_topology

DEVICE = {"name": "toy", "peak_tflops": {"float32": 1.0}, "mem_bandwidth_GBps": 1.0}  # 1 byte per ns
TRANSFORMER = dict(batch=4, seq=8, hidden=16, heads=2)


def _transformer(**options):
    from simulator.workloads.workload import Workload

    return build_schedule("summa25d", Workload.transformer(**TRANSFORMER, dropout=0.1), "both", "float32",
                          grid=(2, 2, 2), **options)


def _toy() -> Schedule:
    """Two ranks: rank 0 copies 250 elements (2 us) in part "a", rank 1 copies 500 (4 us) in "a" and
    250 (2 us) in "b"; both then all-reduce in part "b", then rank 0 copies once more, unlabelled."""
    small, big = BufferSpec((25, 10), "float32"), BufferSpec((50, 10), "float32")
    programs = [[Local(fn="copy", out="y", inputs=("x",)), AllReduce(group="world", buf="x"),
                 Local(fn="copy", out="y", inputs=("x",))],
                [Local(fn="copy", out="v", inputs=("u",)), Local(fn="copy", out="y", inputs=("x",)),
                 AllReduce(group="world", buf="x")]]
    buffers = [{"x": small, "y": small}, {"x": small, "y": small, "u": big, "v": big}]
    return Schedule("1d", (2,), {"name": "toy"}, "fwd", "float32", {"world": (0, 1)}, buffers, programs,
                    parts=[[(0, "a"), (1, "b"), (2, "")], [(0, "a"), (1, "b")]])


def test_toy_schedule_splits_exactly_by_part():
    schedule = _toy()
    assert part_labels(schedule, 0) == ["a", "b", ""] and part_labels(schedule, 1) == ["a", "b", "b"]
    plan = compile_schedule(schedule, ["g0", "g1"], [DEVICE, DEVICE], ComputeModel())
    walk = critical_path(plan, lambda inst: 1e-6)  # the all-reduce lasts 1 us
    # Rank 0 copies 2 us, waits 4 us for rank 1 to issue the all-reduce, blocks 1 us on it, copies 2 us.
    assert part_times(plan, walk.starts, walk.ends, walk.waits, 0) == {
        "a": PartTime(compute_s=pytest.approx(2e-6)), "b": PartTime(0.0, pytest.approx(1e-6), pytest.approx(4e-6)),
        "": PartTime(compute_s=pytest.approx(2e-6))}
    assert part_times(plan, walk.starts, walk.ends, walk.waits, 1) == {
        "a": PartTime(compute_s=pytest.approx(4e-6)), "b": PartTime(pytest.approx(2e-6), pytest.approx(1e-6), 0.0)}


def _assert_sums(parts: dict[str, PartTime], compute_s: float, comm_s: float, wait_s: float) -> None:
    assert sum(p.compute_s for p in parts.values()) == pytest.approx(compute_s, rel=1e-12, abs=1e-18)
    assert sum(p.comm_s for p in parts.values()) == pytest.approx(comm_s, rel=1e-12, abs=1e-18)
    assert sum(p.wait_s for p in parts.values()) == pytest.approx(wait_s, rel=1e-12, abs=1e-18)


@pytest.mark.parametrize("overlap", [False, True], ids=["blocking", "overlap"])
def test_every_ranks_parts_sum_to_its_split(overlap):
    """With overlap, asynchronous broadcasts block only at their waits: the split still adds up."""
    schedule = _transformer(overlap=overlap)
    G = load_topology("dgx-a100")
    plan = plan_on_graph(schedule, G)
    env = simpy.Environment()
    engine = Engine(plan, NetworkBackend(env, G), env)
    engine.run()
    for rank in range(schedule.world_size):
        parts = part_times(plan, engine.starts, engine.ends, engine.waits, rank)
        labels = list(dict.fromkeys(label for _, label in schedule.parts[rank]))
        assert list(parts) == labels
        _assert_sums(parts, plan.compute_s[rank], engine.comm_s[rank], engine.wait_s[rank])
        assert parts["attn"].compute_s > 0 and parts["qkv"].comm_s > 0


@pytest.mark.parametrize("model", [simulate, analyze], ids=["simulated", "analytic"])
def test_result_parts_are_the_critical_ranks(model):
    result = model(_transformer(), load_topology("dgx-a100"), timeline=False)
    critical = result.critical
    _assert_sums(result.parts, critical.compute_s, critical.comm_s, critical.wait_s)
    assert result.to_dict()["parts"] == {label: p.to_dict() for label, p in result.parts.items()}


def test_unlabelled_schedules_have_no_parts():
    from simulator.workloads.workload import Workload

    schedule = build_schedule("summa25d", Workload.mlp(64, 16), "both", "float32", grid=(2, 2, 2))
    result = simulate(schedule, load_topology("dgx-a100"))
    assert result.parts == {} and "parts" not in result.to_dict()
    events = [e for e in simulated_trace(result)["traceEvents"] if e["ph"] == "X"]
    assert not any("part" in e["args"] or ": " in e["name"] for e in events)


def test_trace_names_and_args_carry_the_part():
    schedule = _transformer()
    events = [e for e in simulated_trace(simulate(schedule, load_topology("dgx-a100")))["traceEvents"] if e["ph"] == "X"]
    assert len(events) == sum(len(p) for p in schedule.programs)
    for event in events:
        rank, step = event["pid"], event["args"]["step"]
        part = schedule.part_of(rank, step)
        assert event["args"]["part"] == part
        assert event["name"] == f"{part}: {schedule.programs[rank][step].short()}"


def test_simulate_command_prints_and_reports_parts(tmp_path, capsys):
    path = tmp_path / "transformer.json"
    save_schedule(_transformer(), path)
    assert main(["simulate", "--schedule", str(path), "--topology", "dgx-a100", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    labels = ["ln1", "qkv", "attn", "proj", "bda1", "ln2", "fc1", "bias_gelu", "fc2", "bda2"]
    assert list(data["parts"]) == labels
    for key in ("compute_s", "comm_s", "wait_s"):
        assert sum(p[key] for p in data["parts"].values()) == pytest.approx(data[key], rel=1e-12, abs=1e-18)
    assert main(["simulate", "--schedule", str(path), "--topology", "dgx-a100"]) == 0
    out = capsys.readouterr().out.splitlines()
    header = next(i for i, line in enumerate(out) if line.startswith("  per part"))
    assert "compute" in out[header] and f"(critical rank {data['critical_rank']})" in out[header]
    assert [line.split()[0] for line in out[header + 1:header + 1 + len(labels)]] == labels


def test_parts_survive_a_schedule_file(tmp_path):
    schedule = _transformer()
    assert schedule.parts and schedule_from_dict(schedule_to_dict(schedule)).parts == schedule.parts
    save_schedule(schedule, tmp_path / "s.json")
    loaded = load_schedule(tmp_path / "s.json")
    assert loaded.parts == schedule.parts
    assert [loaded.part_of(0, step) for step in range(len(loaded.programs[0]))] == part_labels(schedule, 0)
