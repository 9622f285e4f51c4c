"""--dtype fp8 gathers the linears' operands in FP8 as Transformer Engine does (simulator/fp8_comm.py)."""

from __future__ import annotations

import doctest

import pytest

from simulator import fp8_comm
from simulator.algorithms.registry import build_schedule
from simulator.compute import ComputeConfig, ComputeModel
from simulator.fp8_comm import COLUMNWISE, FORWARDED, OTHER, ROWWISE, Fp8Wire, fp8_wire_bytes, operand_use
from simulator.ir.builder import ScheduleBuilder
from simulator.ir.ops import AllGather, Gemm, Recv, Send, Slice
from simulator.timing.plan import compile_schedule
from simulator.workloads.workload import Workload
from topologies.devices import B200_180GB, H100_SXM5_80GB

H100, B200 = H100_SXM5_80GB.as_dict(), B200_180GB.as_dict()
P = 4
WL = Workload.transformer(4, 64, 128, 4)


def test_the_modules_docstring_example_holds() -> None:
    assert doctest.testmod(fp8_comm).failed == 0


def test_operand_uses_follow_the_gemm_roles() -> None:
    fprop, dgrad, wgrad = Gemm(out="Y", a="X", b="W"), Gemm(out="dX", a="dY", b="W", trans_b=True), \
        Gemm(out="dW", a="X", b="dY", trans_a=True)
    assert (operand_use(fprop, "X"), operand_use(fprop, "W")) == (ROWWISE, OTHER)  # a weight stays bf16
    assert (operand_use(dgrad, "dY"), operand_use(dgrad, "W")) == (ROWWISE, OTHER)
    assert (operand_use(wgrad, "X"), operand_use(wgrad, "dY")) == (COLUMNWISE, COLUMNWISE)
    assert operand_use(Send(peer=1, buf="X"), "X") == FORWARDED
    assert operand_use(Gemm(out="Y", a="X", b="W", accumulate=True), "Y") == OTHER
    # One FP8 byte per element under per-tensor scaling (the scale is not sent); MXFP8 one copy per use,
    # each with an E8M0 scale per 32 elements; any other reader keeps the schedule's dtype.
    assert [fp8_wire_bytes(3200, u, "current") for u in (ROWWISE, COLUMNWISE | ROWWISE, FORWARDED)] == [3200] * 3
    assert [fp8_wire_bytes(3200, u, "mxfp8") for u in (ROWWISE, COLUMNWISE, ROWWISE | COLUMNWISE)] == \
        [3300, 3300, 6600]
    assert fp8_wire_bytes(3200, ROWWISE | OTHER, "delayed") is None and fp8_wire_bytes(3200, 0, "delayed") is None


def _instances(schedule, device, config):
    plan = compile_schedule(schedule, [f"g{r}" for r in range(P)], [device] * P, ComputeModel(config))
    return plan.instances


@pytest.mark.parametrize("async_dgrad", [False, True])
@pytest.mark.parametrize("device, recipe", [(H100, "delayed"), (H100, "current"), (B200, "current"), (B200, "mxfp8")])
def test_sequence_parallel_gathers_move_fp8_and_the_reductions_bf16(device, recipe, async_dgrad) -> None:
    s = build_schedule("1d-sp", WL, "both", "bfloat16", gpus=P, async_dgrad=async_dgrad)
    bf16 = _instances(s, device, ComputeConfig())
    fp8 = _instances(s, device, ComputeConfig(fp8_gemms=True, fp8_recipe=recipe))
    assert [i.kind for i in fp8] == [i.kind for i in bf16]
    M, h = WL.m, WL.hidden
    gathers = [(a.nbytes, b.nbytes) for a, b in zip(bf16, fp8) if a.kind == "all_gather"]
    assert len(gathers) == 6 and all(before == M * h * 2 for before, _ in gathers)  # [M, h] in bf16
    # Forward: QKV's and FC1's input, row-wise; backward: proj's and FC2's output gradient (both copies under
    # MXFP8), and QKV's and FC1's input again for the weight gradient (column-wise under MXFP8).
    one = M * h * (1 + 1 / 32) if recipe == "mxfp8" else M * h
    dy = 2 * one if recipe == "mxfp8" else one
    assert sorted(after for _, after in gathers) == sorted([one] * 4 + [dy] * 2)
    # The forward's reduce-scatters, the backward's input-gradient ones and the norms' all-reduces: bf16.
    assert all(a.nbytes == b.nbytes for a, b in zip(bf16, fp8) if a.kind != "all_gather")


@pytest.mark.parametrize("device, recipe", [(H100, "delayed"), (B200, "mxfp8")])
def test_the_overlap_ring_sends_fp8_chunks_and_both_sides_agree(device, recipe) -> None:
    s = build_schedule("1d-sp", WL, "fwd", "bfloat16", gpus=P, tp_comm_overlap=True)
    wire = Fp8Wire(s, [device] * P, recipe)
    chunk = WL.m // P * WL.hidden
    expected = chunk * (1 + 1 / 32) if recipe == "mxfp8" else chunk
    pairs = 0
    for rank, program in enumerate(s.programs):
        for step, op in enumerate(program):
            if isinstance(op, (Send, Recv)):
                assert s.spec(rank, op.buf).nbytes == chunk * 2
                assert wire.nbytes(rank, step, -1) == expected
                pairs += 1
    assert pairs == 2 * P * (P - 1) * 2  # QKV's and FC1's rings: p - 1 sends and receives per rank each
    bf16 = _instances(s, device, ComputeConfig())
    fp8 = _instances(s, device, ComputeConfig(fp8_gemms=True, fp8_recipe=recipe))
    assert {b.nbytes for a, b in zip(bf16, fp8) if a.kind == "p2p"} == {expected}


@pytest.mark.parametrize("device, recipe, copies", [(H100, "delayed", 1), (B200, "mxfp8", 2)])
def test_the_backward_ring_sends_fp8_dy_chunks_kept_for_the_weight_gradient(device, recipe, copies) -> None:
    """proj's and FC2's dY ring: each chunk read by the input-gradient GEMM (row-wise), sent on and copied
    into the kept gather the weight gradient reads (column-wise): one FP8 copy per element, both MXFP8 ones
    (TE's row-wise ring plus its second, column-wise gather: the same bytes)."""
    s = build_schedule("1d-sp", WL, "bwd", "bfloat16", gpus=P, tp_comm_overlap=True)
    wire = Fp8Wire(s, [device] * P, recipe)
    chunk = WL.m // P * WL.hidden
    sizes = {wire.nbytes(rank, step, -1) for rank, program in enumerate(s.programs)
             for step, op in enumerate(program) if isinstance(op, (Send, Recv))}
    assert sizes == {chunk * copies * (1 + 1 / 32) if recipe == "mxfp8" else chunk}


def test_a_gather_read_by_anything_but_an_fp8_gemm_operand_stays_bf16() -> None:
    s = build_schedule("1d-sp", WL, "both", "bfloat16", gpus=P)
    wire = Fp8Wire(s, [H100] * P, "delayed")
    # Two ranks gather X and W: X feeds a forward GEMM as its activation (FP8), W as its weight (bf16: a
    # weight gather is not TE's), and a second copy of X is also read by a copy (bf16: another reader).
    b = ScheduleBuilder("1d", (2,), Workload.gemm(8, 16, 4), "fwd", "bfloat16", 2, {"world": (0, 1)})
    for r in range(2):
        for name, shape in (("x", (4, 16)), ("w", (8, 4)), ("X", (8, 16)), ("W", (16, 4)), ("X2", (8, 16)),
                            ("Y", (8, 4)), ("C", (8, 16))):
            b.buffer(r, name, shape)
        for op in (AllGather(group="world", inp="x", out="X"), AllGather(group="world", inp="w", out="W"),
                   AllGather(group="world", inp="x", out="X2"), Gemm(out="Y", a="X", b="W"),
                   Gemm(out="Y", a="X2", b="W", accumulate=True), Slice(out="C", src="X2")):
            b.emit(r, op)
    small = b.build()
    assert [Fp8Wire(small, [H100] * 2, "delayed").nbytes(0, step, -1) for step in range(3)] == [8 * 16, -1, -1]
    # The grid algorithms broadcast bf16: TE does not run them (module doc).
    summa = build_schedule("2d", Workload.gemm(64, 64, 64), "both", "bfloat16", grid=(2, 2, 1))
    grid_wire = Fp8Wire(summa, [H100] * 4, "delayed")
    for rank, program in enumerate(summa.programs):
        for step, op in enumerate(program):
            if not isinstance(op, Gemm):
                assert grid_wire.nbytes(rank, step, -1) == -1
    # Every 1d-sp gather output is read only by GEMMs: each is FP8 here.
    gathers = [(r, i) for r, prog in enumerate(s.programs) for i, op in enumerate(prog) if isinstance(op, AllGather)]
    assert all(wire.nbytes(r, i, -1) > 0 for r, i in gathers)
