"""Megatron-LM's asynchronous input-gradient communication (``async_dgrad``) on 1d and 1d-sp: proven on
numbers against the dense reference, the same collectives and bytes, and each handle waited for after the
dW GEMM it runs beside."""

from __future__ import annotations

import pytest

from simulator.algorithms.registry import build_schedule
from simulator.ir.accounting import account
from simulator.ir.interpret import interpret
from simulator.ir.ops import AllGather, AllReduce, Gemm, ReduceScatter, Wait
from simulator.ir.validate import validate_schedule
from simulator.workloads.workload import Workload

PASSES = ("bwd", "both")


def workloads(p: int) -> list[Workload]:
    return [Workload.gemm(4 * p, 5, 3 * p), Workload.mlp(3 * p, p),
            Workload.transformer(2, 3 * p, 4 * p, p, ffn=8 * p, dropout=0.2)]


@pytest.mark.parametrize("passes", PASSES)
@pytest.mark.parametrize("algorithm", ["1d", "1d-sp"])
@pytest.mark.parametrize("p", [1, 2, 3, 4])
def test_async_schedules_match_the_dense_reference_and_move_the_same_bytes(algorithm, p, passes) -> None:
    for workload in workloads(p):
        overlapped = build_schedule(algorithm, workload, passes, "float64", gpus=p, async_dgrad=True)
        validate_schedule(overlapped)
        assert overlapped.options == {"async_dgrad": True}
        result = interpret(overlapped, seed=5)
        assert result.ok(1e-10), result.errors
        blocking = build_schedule(algorithm, workload, passes, "float64", gpus=p)
        assert [a.to_dict() for a in account(overlapped)] == [a.to_dict() for a in account(blocking)]
        # One rank has nothing to communicate: Megatron-LM overlaps only on more than one
        assert any(isinstance(op, Wait) for op in overlapped.programs[0]) == (p > 1)
        assert not any(isinstance(op, Wait) for op in blocking.programs[0])


@pytest.mark.parametrize("algorithm, comm", [("1d", AllReduce), ("1d-sp", ReduceScatter)])
def test_the_dx_collective_runs_beside_the_dw_gemm_and_is_waited_for_after_it(algorithm, comm) -> None:
    """A column-parallel gemm's backward: dX GEMM, dX collective issued with a handle, dW GEMM, wait (with
    sequence parallelism the re-gather of X first, waited for after the dX GEMM)."""
    s = build_schedule(algorithm, Workload.gemm(8, 4, 6), "bwd", "float64", gpus=2, async_dgrad=True)
    kinds = [type(op) for op in s.programs[0]]
    expected = [Gemm, comm, Gemm, Wait]
    if algorithm == "1d-sp":
        expected = [AllGather, Gemm, Wait, comm, Gemm, Wait]
    assert kinds == expected
    handles = [op.handle for op in s.programs[0] if not isinstance(op, Gemm)]
    assert handles == (["C.xgather", "C.xgather", "C.dgrad", "C.dgrad"] if algorithm == "1d-sp"
                       else ["C.dgrad", "C.dgrad"])


def test_other_algorithms_ignore_it() -> None:
    s = build_schedule("2d", Workload.gemm(4, 4, 4), "both", "float64", grid=(2, 2, 1), async_dgrad=True)
    assert s.options == {}
