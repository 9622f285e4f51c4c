"""--dtype fp8: the linears' GEMMs at the FP8 rate (Transformer Engine's hybrid recipe), the rest as bfloat16.

The casts each FP8 GEMM adds are tests/simulator/test_fp8_cost.py's."""

from __future__ import annotations

import json

import pytest

from simulator.compute import ComputeConfig, ComputeModel
from simulator.ir.builder import ScheduleBuilder
from simulator.ir.ops import Gemm
from simulator.workloads.workload import Workload
from tests.cli_run import run
from topologies.devices import A100_SXM4_40GB, H100_SXM5_80GB

H100 = H100_SXM5_80GB.as_dict()


def _gemm_schedule(m: int, k: int, n: int):
    b = ScheduleBuilder("1d", (1,), Workload.gemm(m, k, n), "fwd", "bfloat16", 1, {"world": (0,)})
    for name, shape in (("A", (m, k)), ("B", (k, n)), ("C", (m, n))):
        b.buffer(0, name, shape)
    b.emit(0, Gemm(out="C", a="A", b="B"))
    return b.build()


def test_a_gemm_runs_at_the_fp8_peak_with_one_byte_operands() -> None:
    m = k = n = 8192
    schedule = _gemm_schedule(m, k, n)
    op = schedule.programs[0][0]
    model, fp8_model = ComputeModel(), ComputeModel(ComputeConfig(fp8_gemms=True))
    bf16 = model.op_time_s(schedule, 0, op, H100)
    fp8 = fp8_model.gemm_time_s(H100, "float8", m, k, n)  # the GEMM; the op adds A's cast (test_fp8_cost)
    assert fp8_model.op_time_s(schedule, 0, op, H100) > fp8
    shape = model.shape(H100, m, k, n)  # large and compute bound: the shape factor and each dtype's cap
    assert bf16 == pytest.approx(2 * m * k * n / (989.5e12 * model.cap(H100, "bfloat16") * shape), rel=1e-12)
    assert fp8 == pytest.approx(2 * m * k * n / (1979.0e12 * fp8_model.cap(H100, "float8") * shape), rel=1e-12)
    # ... which puts this large GEMM at the H100's published achievable rates, bf16 794.5 and FP8 1402.6 TFLOP/s
    assert 2 * m * k * n / bf16 == pytest.approx(794.5e12, rel=0.01)
    assert 2 * m * k * n / fp8 == pytest.approx(1402.6e12, rel=0.01)


def _plan(capsys, dtype: str) -> dict:
    status, out, err = run(capsys, "predict", "--gpus", "8", "--topology", "dgx-h100:1", "--model", "llama3-8b",
                           "--global-batch", "16", "--tp-sizes", "4", "--algos", "1d-sp", "--batch", "2",
                           "--simulate-top", "0", "--json", "--dtype", dtype)
    assert status == 0, err
    return next(r for r in json.loads(out) if r["tp"] == 4)


def test_fp8_speeds_the_linears_and_gathers_shrinks_the_kept_inputs_and_leaves_the_rest_as_bfloat16(capsys) -> None:
    bf16, fp8 = _plan(capsys, "bfloat16"), _plan(capsys, "fp8")
    # The states are bf16's; the linears' inputs are kept in FP8 (tests/simulator/test_fp8_memory.py).
    for key in ("params_bytes", "grads_bytes", "optimizer_bytes", "workspace_bytes"):
        assert fp8["memory"][key] == bf16["memory"][key]
    assert fp8["memory"]["activations_bytes"] < bf16["memory"]["activations_bytes"]
    assert any("FP8 copies of the linears' inputs" in item["what"] for item in fp8["memory"]["items"])
    # The gradient reduction is bfloat16 either way; the sequence-parallel gathers move FP8 (half the bytes:
    # tests/simulator/test_fp8_comm.py), the reduce-scatters bfloat16, so the TP traffic takes less time.
    assert fp8["comm"]["dp"]["total_s"] == pytest.approx(bf16["comm"]["dp"]["total_s"], rel=1e-12)
    assert fp8["dp_comm_s"] == pytest.approx(bf16["dp_comm_s"], rel=1e-12)
    assert fp8["comm"]["tp"]["total_s"] < bf16["comm"]["tp"]["total_s"]
    assert fp8["compute_s"] < bf16["compute_s"] and fp8["step_time_s"] < bf16["step_time_s"]
    assert fp8["flops_per_step"] == bf16["flops_per_step"]
    # MFU against each run's own peak: FP8's is twice bfloat16's on an H100
    assert fp8["mfu"] * fp8["step_time_s"] * 1979.0 == pytest.approx(bf16["mfu"] * bf16["step_time_s"] * 989.5)


def test_the_attention_core_stays_in_bfloat16_under_fp8() -> None:
    from simulator.algorithms.registry import build_schedule
    from simulator.ir.ops import Local
    schedule = build_schedule("1d", Workload.transformer(1, 256, 256, 4), "fwd", "bfloat16", gpus=1)
    op = next(op for op in schedule.programs[0] if isinstance(op, Local) and "attention" in op.fn)
    assert (ComputeModel(ComputeConfig(fp8_gemms=True)).op_time_s(schedule, 0, op, H100)
            == ComputeModel().op_time_s(schedule, 0, op, H100))


def test_fp8_on_an_a100_or_outside_predict_is_one_line_and_status_2(capsys) -> None:
    assert "float8" not in A100_SXM4_40GB.peak_tflops
    status, out, err = run(capsys, "predict", "--gpus", "8", "--topology", "dgx-a100:1", "--model", "llama3-8b",
                           "--global-batch", "16", "--dtype", "fp8")
    assert status == 2 and out == "" and len(err.splitlines()) == 1
    assert "--dtype fp8: A100-SXM4-40GB has no FP8 tensor cores" in err
    status, out, err = run(capsys, "schedule", "--algo", "1d", "--gpus", "2", "--model", "gpt3-125m", "--batch", "1",
                           "--dtype", "fp8")
    assert status == 2 and "--dtype fp8 is a training recipe" in err and len(err.splitlines()) == 1
