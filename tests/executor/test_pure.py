"""Executor parts that need no process group: error measure, op rules, fault hook, reports, GPU probes.

The reference blocks have their own tests (test_reference.py)."""

from __future__ import annotations

import math
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from executor_cases import gpu_count, make  # noqa: E402

from executor.check import check_rank, combine, reference_block  # noqa: E402
from executor.faults import Fault  # noqa: E402
from executor.job_report import failure_report  # noqa: E402
from executor.launch import gpu_names  # noqa: E402
from executor.measure import measured_record  # noqa: E402
from executor.ops_torch import TorchOps  # noqa: E402
from executor.run_rank import RunOptions  # noqa: E402
from simulator.errors import InputError  # noqa: E402
from simulator.ir.builder import ScheduleBuilder  # noqa: E402
from simulator.ir.interpret import run_schedule  # noqa: E402
from simulator.ir.ops import Gemm, Local, Slice  # noqa: E402
from simulator.workloads.workload import Workload  # noqa: E402


def _blocks_of(schedule, value_of):
    """Block records as check_rank makes them, with every rank's buffers given by ``value_of(block)``."""
    records = []
    for rank in range(schedule.world_size):
        buffers = {b.buffer: value_of(b) for b in schedule.outputs if b.rank == rank}
        records += check_rank(schedule, rank, buffers, seed=0)
    return records


def test_combine_measures_max_norm_error_and_flags_nan_and_gaps():
    schedule = make("2d", "gemm", "fwd")
    workload = Workload.from_dict(schedule.workload)
    exact = lambda b: reference_block(workload, 0, b.tensor, b.rows, b.cols)  # noqa: E731
    verdict = combine(schedule, _blocks_of(schedule, exact), 1e-12)
    assert verdict["ok"] and verdict["errors"] == {"C": 0.0}
    scale = float(np.abs(workload.reference(0, "fwd")["C"]).max())
    off = _blocks_of(schedule, lambda b: exact(b) + (1e-3 if b.rank == 3 else 0.0))
    verdict = combine(schedule, off, 1e-5)
    assert not verdict["ok"] and verdict["errors"]["C"] == pytest.approx(1e-3 / scale)
    assert [b["rank"] for b in off if not b["ok"]] == [3]
    nan = _blocks_of(schedule, lambda b: exact(b) * (math.nan if b.rank == 1 else 1.0))
    assert combine(schedule, nan, 1.0)["errors"]["C"] == math.inf
    schedule.outputs = [b for b in schedule.outputs if b.rank != 2]
    gap = combine(schedule, _blocks_of(schedule, exact), 1.0)
    assert gap["uncovered"] == ["C"] and gap["errors"]["C"] == math.inf and not gap["ok"]


@pytest.mark.parametrize("backend, hosts, origins, kept", [
    ("gloo", ["a"] * 4, [10.0, 10.5, 10.25, 10.0], True),
    ("gloo", ["a", "a", "b", "b"], [10.0, 10.5, 10.25, 10.0], False),  # two hosts' clocks are unrelated
    ("nccl", ["a"] * 4, [None] * 4, False),                            # CUDA events: no host reading
])
def test_clock_origins_are_kept_only_for_perf_counter_ranks_on_one_host(backend, hosts, origins, kept):
    schedule = make("2d", "gemm", "fwd")
    ranks = [{"rank": r, "device": "cpu", "host": hosts[r], "rank_time_s": [1.0], "clock_origin_s": origins[r],
              "blocks": [], "ops": []} for r in range(4)]
    result = {"iteration_time_s": [1.0], "median_iteration": 0, "ranks": ranks}
    record = measured_record(schedule, result, RunOptions(backend=backend))
    assert record["clock_origins_s"] == (origins if kept else None)


def test_compute_ops_follow_the_interpreter():
    w = Workload.gemm(4, 3, 5)
    b = ScheduleBuilder("t", (1,), w, "fwd", "float64", 1, {})
    for name, shape in (("a", (4, 3)), ("bt", (5, 3)), ("c", (4, 5)), ("h", (4, 5)), ("g", (4, 5)), ("s", (4, 5)),
                        ("z", (4, 5)), ("cut", (2, 5))):
        b.buffer(0, name, shape)
    for op in (Gemm(out="c", a="a", b="bt", trans_b=True), Gemm(out="c", a="a", b="bt", trans_b=True, accumulate=True),
               Local(fn="gelu", out="h", inputs=("c",)), Local(fn="gelu_backward", out="g", inputs=("h", "c")),
               Local(fn="add", out="s", inputs=("g", "h")), Local(fn="copy", out="z", inputs=("s",)),
               Local(fn="zero", out="h"), Slice(out="cut", src="z", src_rows=(1, 3)),
               Slice(out="z", src="cut", src_cols=(0, 2), out_rows=(2, 4), out_cols=(3, 5))):
        b.emit(0, op)
    schedule = b.build()
    rng = np.random.default_rng(1)
    start = {"a": rng.uniform(-2, 2, (4, 3)), "bt": rng.uniform(-2, 2, (5, 3))}
    schedule.inputs = []
    expected = _interpret_one_rank(schedule, start)
    buffers = {name: torch.full(spec.shape, math.nan, dtype=torch.float64)
               for name, spec in schedule.buffers[0].items()}
    for name, value in start.items():
        buffers[name].copy_(torch.from_numpy(value))
    ops = TorchOps(schedule, 0, buffers, {}, reduce_clobbers_input=False, seed=0)
    for step, op in enumerate(schedule.programs[0]):
        assert ops.run(step, op) is None
    for name, value in expected.items():
        np.testing.assert_allclose(buffers[name].numpy(), value, rtol=1e-13, atol=1e-13, err_msg=name)


def _interpret_one_rank(schedule, start):
    """Run a compute-only one-rank schedule in the numpy interpreter from ``start`` buffers."""
    from simulator.ir.schedule import TensorBlock

    schedule.tensors = {name: value.shape for name, value in start.items()}
    schedule.inputs = [TensorBlock(0, name, name, (0, v.shape[0]), (0, v.shape[1])) for name, v in start.items()]
    return run_schedule(schedule, start)[0]


@pytest.mark.parametrize("text, fault", [("3:7", Fault(3, 7, "raise")), ("0:init", Fault(0, None, "raise")),
                                         ("2:5:hang", Fault(2, 5, "hang")), ("1:init:hang", Fault(1, None, "hang"))])
def test_fault_hook_parses(text, fault):
    assert Fault.parse(text) == fault


@pytest.mark.parametrize("text", ["3", "x:1", "1:-2", "1:2:explode", "1:2:hang:now"])
def test_fault_hook_rejects_bad_forms(text):
    with pytest.raises(InputError, match="expected RANK:STEP"):
        Fault.parse(text)


def test_fault_fires_only_on_its_rank_and_step():
    fault = Fault(2, 4)
    fault.fire(1, 4)
    fault.fire(2, 3)
    fault.fire(2, None)
    with pytest.raises(RuntimeError, match="injected fault on rank 2 at step 4"):
        fault.fire(2, 4)


def test_failure_report_puts_the_real_error_before_connection_after_effects(tmp_path):
    errors = {0: ("DistBackendError: Connection closed by peer [127.0.0.1]:1234", 10.0),
              3: ("RuntimeError: the real problem", 10.5),
              5: ("RuntimeError: Connection reset by peer", 10.2)}
    for rank, (summary, when) in errors.items():
        with open(tmp_path / f"rank{rank}.err", "wb") as handle:
            pickle.dump({"rank": rank, "time": when, "summary": summary,
                         "traceback": f"Traceback (most recent call last):\n  ...\n{summary}\n"}, handle)
    report, reason, ranks = failure_report({0: (1, 11.0)}, str(tmp_path), 8)
    assert reason == "error" and ranks[0] == 3
    assert report.startswith("rank 3 failed first")
    assert report.index("the real problem") < report.index("Connection closed")


def test_failure_report_of_a_rank_killed_by_a_signal(tmp_path):
    (tmp_path / "rank2.log").write_text("some output\nlast words\n")
    report, _, ranks = failure_report({2: (-9, 1.0)}, str(tmp_path), 4)
    assert ranks == [2] and report.startswith("rank 2 was killed by SIGKILL (signal 9) without a Python traceback")
    assert "last words" in report


def test_a_rank_killed_without_a_trace_leads_its_peers_secondary_errors(tmp_path):
    # rank 3 was killed (OOM-killed, say) and wrote nothing; its peers wrote "Connection closed" errors,
    # earlier than the launcher reaped rank 3, and one of them was reaped before it
    for rank, when in ((0, 10.0), (1, 10.1)):
        summary = "DistBackendError: Connection closed by peer [127.0.0.1]:1234"
        with open(tmp_path / f"rank{rank}.err", "wb") as handle:
            pickle.dump({"rank": rank, "time": when, "summary": summary,
                         "traceback": f"Traceback (most recent call last):\n  ...\n{summary}\n"}, handle)
    (tmp_path / "rank3.log").write_text("computing\n")
    report, reason, ranks = failure_report({0: (1, 10.2), 3: (-9, 10.3), 2: (-15, 10.4)}, str(tmp_path), 4)
    assert reason == "error" and ranks == [3, 2, 0, 1]
    lines = report.splitlines()
    assert lines[0] == ("rank 3 was killed by SIGKILL (signal 9) without a Python traceback (the kernel's "
                        "out-of-memory killer sends SIGKILL); the other ranks were stopped")
    assert lines[1:3] == ["last lines of its output:", "computing"]
    assert lines[3] == "rank 2 also failed: was killed by SIGTERM (signal 15) without a Python traceback"
    assert lines[4].startswith("rank 0 also failed: DistBackendError: Connection closed")


def test_registering_tpsim_run_does_not_import_torch():
    code = ("import sys, simulator.cli as cli; parser = cli.build_parser(); "
            "assert 'run' in parser._subparsers._group_actions[0].choices; "
            "assert 'torch' not in sys.modules, 'registration imported torch'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=os.path.dirname(__file__))


def test_gpu_checks_never_ask_cuda_in_this_process(monkeypatch):
    # Stand-ins for the calls that initialise CUDA, on a (pretended) CUDA build with 3 GPUs: the forked
    # probe must make them, and this process, which forks the ranks of later tests, never.
    asked = []

    def count(*_args, **_kwargs):
        asked.append(os.getpid())
        return 3

    def name(index):
        asked.append(os.getpid())
        return f"GPU {index}"

    monkeypatch.setattr(torch.version, "cuda", "12.8")
    for attribute in ("is_available", "device_count", "init"):
        monkeypatch.setattr(torch.cuda, attribute, count)
    monkeypatch.setattr(torch.cuda, "get_device_name", name)
    monkeypatch.setattr(torch._C, "_cuda_getDeviceCount", count, raising=False)
    assert gpu_count() == 3 and gpu_names() == ["GPU 0", "GPU 1", "GPU 2"]  # the probe asked...
    assert asked == [] and not torch.cuda.is_initialized()  # ...this process did not


def test_no_executor_test_module_asks_cuda_directly():
    folder = os.path.dirname(__file__)
    for name in sorted(os.listdir(folder)):
        if name.endswith(".py"):
            with open(os.path.join(folder, name)) as handle:
                text = handle.read()
            for call in ("is_available(", "device_count("):  # written apart so this file passes too
                assert f"torch.cuda.{call}" not in text, f"{name} calls torch.cuda.{call}): use gpu_count()"
