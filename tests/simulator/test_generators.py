"""Every generator x pass x workload on many grids: the interpreter's outputs equal dense float64."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.algorithms.registry import build_schedule, legal_grids
from simulator.ir.interpret import interpret
from simulator.ir.ops import AllReduce
from simulator.ir.validate import validate_schedule
from simulator.workloads.workload import Workload

PASSES = ("fwd", "bwd", "both")


def sizes_for(q: int, d: int) -> tuple[Workload, Workload]:
    """Non-square gemm and mlp sizes that a [q, q, d] grid divides."""
    return Workload.gemm(d * q * 5, q * 3, q * 2), Workload.mlp(d * q * 3, q * 5)


def check(algorithm: str, workload: Workload, passes: str, **grid) -> None:
    schedule = build_schedule(algorithm, workload, passes, "float64", **grid)
    validate_schedule(schedule)
    result = interpret(schedule, seed=11)
    assert result.ok(1e-10), result.errors


@pytest.mark.parametrize("passes", PASSES)
@pytest.mark.parametrize("p", range(1, 9))
def test_1d(p: int, passes: str) -> None:
    check("1d", Workload.gemm(7, 5, 3 * p), passes, gpus=p)
    check("1d", Workload.mlp(9, p), passes, gpus=p)  # 4h = 4p columns split p ways; X [9, p] is never square


@pytest.mark.parametrize("passes", PASSES)
@pytest.mark.parametrize("q", range(1, 5))
def test_2d(q: int, passes: str) -> None:
    for workload in sizes_for(q, 1):
        check("2d", workload, passes, grid=(q, q, 1))


@pytest.mark.parametrize("passes", PASSES)
@pytest.mark.parametrize("grid", [(2, 2, 2), (3, 3, 3), (4, 4, 2), (2, 2, 4), (4, 4, 4)])
def test_summa25d(grid: tuple[int, int, int], passes: str) -> None:
    for workload in sizes_for(grid[0], grid[2]):
        check("summa25d", workload, passes, grid=grid)


def test_the_interpreter_refuses_outputs_that_are_not_the_workload_s() -> None:
    """Each output of the pass is checked because the schedule must leave exactly those: one it drops or adds
    is refused, not skipped (interpret's errors are keyed by the workload's outputs, not the schedule's)."""
    schedule = build_schedule("2d", Workload.gemm(4, 4, 2), "both", "float64", grid=(2, 2, 1))
    dropped = dataclasses.replace(schedule, outputs=[b for b in schedule.outputs if b.tensor != "dB"])
    with pytest.raises(ValueError, match="pass both of gemm has outputs C, dA, dB, but the output blocks name C, dA$"):
        interpret(dropped)
    forward = build_schedule("2d", Workload.gemm(4, 4, 2), "fwd", "float64", grid=(2, 2, 1))
    added = dataclasses.replace(forward, outputs=forward.outputs + [b for b in schedule.outputs if b.tensor == "dA"],
                                tensors={**forward.tensors, "dA": schedule.tensors["dA"]})
    with pytest.raises(ValueError, match="pass fwd of gemm has outputs C, but the output blocks name C, dA$"):
        interpret(added)


def test_tesseract_is_an_alias() -> None:
    schedule = build_schedule("tesseract", Workload.gemm(8, 4, 4), "fwd", grid=(2, 2, 2))
    assert schedule.algorithm == "summa25d"


@pytest.mark.parametrize("workload", [Workload.gemm(16, 8, 8), Workload.mlp(16, 4)])
def test_dropping_the_depth_all_reduce_breaks_dw(workload: Workload) -> None:
    """The omission the issue warns about: without the depth all-reduce each layer's dW is a partial sum."""
    schedule = build_schedule("summa25d", workload, "bwd", "float64", grid=(2, 2, 2))
    assert interpret(schedule, seed=5).ok(1e-10)
    broken = dataclasses.replace(schedule, programs=[
        [op for op in program if not (isinstance(op, AllReduce) and op.group.startswith("depth"))]
        for program in schedule.programs])
    validate_schedule(broken)  # still a well-formed schedule: only the numbers can tell
    errors = interpret(broken, seed=5).errors
    weight_grads = [name for name in errors if name.startswith("dW") or name == "dB"]
    assert weight_grads and all(errors[name] > 1e-2 for name in weight_grads), errors
    activation_grads = [name for name in errors if name in ("dA", "dX")]
    assert all(errors[name] < 1e-10 for name in activation_grads)


@st.composite
def grid_and_workload(draw):
    algorithm = draw(st.sampled_from(["1d", "2d", "summa25d"]))
    p = draw(st.integers(1, 16))
    grids = legal_grids(algorithm, p)
    if not grids:
        p, grids = 1, legal_grids(algorithm, 1)
    shape = draw(st.sampled_from(grids))
    q, d = (1, p) if algorithm == "1d" else (shape[0], shape[2])
    rows = d * q * draw(st.integers(1, 3))
    if draw(st.booleans()):
        mult = p if algorithm == "1d" else q
        workload = Workload.gemm(rows, q * draw(st.integers(1, 3)), mult * draw(st.integers(1, 3)))
    else:
        workload = Workload.mlp(rows, q * draw(st.integers(1, 3)) if algorithm != "1d" else draw(st.integers(1, 3)) * p)
    grid = {"gpus": p} if algorithm == "1d" else {"grid": shape}
    return algorithm, workload, draw(st.sampled_from(PASSES)), grid


@settings(max_examples=40, deadline=None)
@given(grid_and_workload(), st.integers(0, 2**31 - 1))
def test_random_grids_and_shapes(case, seed: int) -> None:
    algorithm, workload, passes, grid = case
    schedule = build_schedule(algorithm, workload, passes, "float64", **grid)
    assert interpret(schedule, seed=seed).ok(1e-10)


@pytest.mark.parametrize("algorithm, grid, workload, message", [
    ("summa25d", {"grid": (4, 4, 2)}, Workload.gemm(12, 8, 8), r"M=12 must be divisible by d\*q = 8"),
    ("summa25d", {"grid": (4, 4, 2)}, Workload.gemm(16, 6, 8), r"K=6 must be divisible by q = 4"),
    ("summa25d", {"grid": (2, 2, 2), "gpus": 16}, Workload.gemm(8, 8, 8), r"q\*q\*d = 8 ranks but --gpus is 16"),
    ("2d", {"grid": (2, 2, 2)}, Workload.gemm(8, 8, 8), r"2d runs on \[q,q,1\]"),
    ("cannon25d", {"grid": (4, 4, 3)}, Workload.gemm(8, 8, 8), r"depth c=3 must divide q=4"),
    ("1d", {"gpus": 3}, Workload.gemm(8, 8, 8), r"N=8 must be divisible by p = 3"),
    ("1d", {"grid": (2, 2, 1)}, Workload.gemm(8, 8, 8), r"1d takes --gpus P"),
    ("summa25d", {"gpus": 64}, Workload.gemm(8, 8, 8), r"grids with q\*q\*d = 64: 8,8,1 4,4,4 2,2,16 1,1,64"),
    ("4d", {"gpus": 8}, Workload.gemm(8, 8, 8), r"unknown algorithm '4d'"),
])
def test_bad_arguments_name_the_constraint(algorithm, grid, workload, message) -> None:
    with pytest.raises(ValueError, match=message):
        build_schedule(algorithm, workload, "both", **grid)


def test_bad_workload_and_pass() -> None:
    with pytest.raises(ValueError, match="unknown workload 'conv'"):
        Workload("conv", 1, 1, 1)
    with pytest.raises(ValueError, match="unknown pass 'sideways'"):
        build_schedule("1d", Workload.gemm(2, 2, 2), "sideways", gpus=1)


def test_legal_grids() -> None:
    assert legal_grids("summa25d", 64) == [(8, 8, 1), (4, 4, 4), (2, 2, 16), (1, 1, 64)]
    assert legal_grids("cannon25d", 64) == [(8, 8, 1), (4, 4, 4)]
    assert legal_grids("2d", 64) == [(8, 8, 1)]
    assert legal_grids("2d", 8) == []
    assert legal_grids("1d", 8) == [(8,)]


@pytest.mark.parametrize("passes", PASSES)
@pytest.mark.parametrize("algorithm, grid", [("2d", (1, 1, 1)), ("2d", (3, 3, 1)), ("summa25d", (2, 2, 2)),
                                             ("summa25d", (4, 4, 2)), ("summa25d", (3, 3, 3))])
def test_overlapped_summa_is_correct_and_moves_the_same_bytes(algorithm, grid, passes) -> None:
    from simulator.ir.accounting import account
    from simulator.ir.ops import Wait

    for workload in sizes_for(grid[0], grid[2]):
        check(algorithm, workload, passes, grid=grid)
        overlapped = build_schedule(algorithm, workload, passes, "float64", grid=grid, overlap=True)
        assert overlapped.options == {"overlap": True}
        assert interpret(overlapped, seed=4).ok(1e-10)
        blocking = build_schedule(algorithm, workload, passes, "float64", grid=grid)
        assert [a.to_dict() for a in account(overlapped)] == [a.to_dict() for a in account(blocking)]
        assert any(isinstance(op, Wait) for op in overlapped.programs[0])


def test_overlap_is_only_for_summa() -> None:
    with pytest.raises(ValueError, match="--overlap applies to 2d and summa25d"):
        build_schedule("1d", Workload.gemm(4, 4, 4), "both", gpus=2, overlap=True)
