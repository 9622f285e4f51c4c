"""Each collective the transformer block needs is needed: deleting it from a generated schedule is caught.

A mutation deletes the matching ops from every rank's program (a collective from all its members, so
the schedule stays well formed and the validator passes it); the interpreter must then find the
outputs that depend on it wrong, and, where the collective feeds only one output, every other output
still exact (so the test names what the collective is for). As in ``test_generators``'s depth
all-reduce omission test, which this file extends to the block:

- LayerNorm's row all-reduces of the moments S1, S2 and of the backward's sums dS1, dS2 (2d, summa25d,
  cannon25d: the columns of a row are split over the row group);
- summa25d's depth all-reduces (d > 1) of every weight, bias and LayerNorm gradient: each layer saw
  only 1/d of the tokens;
- 1d-sp's all-gathers of the sequence shards (forward, the backward's re-gathers, the gradients of the
  row-parallel outputs) and its all-reduces of the gradients of the shard-local vectors (both
  LayerNorms' gamma and beta, the row-parallel biases bproj and b2);
- the broadcasts of the vectors (biases, LayerNorm gamma and beta) over the column groups, and the
  reduces of their gradients back to row 0.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import pytest

from simulator.algorithms.registry import build_schedule
from simulator.ir.interpret import interpret
from simulator.ir.ops import AllGather, AllReduce, Broadcast, Op, Reduce
from simulator.ir.schedule import Schedule
from simulator.ir.validate import validate_schedule
from simulator.workloads.workload import Workload

EXACT, WRONG = 1e-10, 1e-3
VECTORS = ("ln1_g", "ln1_b", "bqkv", "bproj", "ln2_g", "ln2_b", "b1", "b2")
GRADS = ("dWqkv", "dbqkv", "dWproj", "dbproj", "dW1", "db1", "dW2", "db2", "dln1_g", "dln1_b", "dln2_g", "dln2_b")

GRIDS = {  # algorithm and grid -> a block it divides (batch, seq, hidden, heads, ffn, dropout)
    ("2d", (3, 3, 1)): Workload.transformer(3, 3, 12, 6, ffn=9, dropout=0.2),
    ("summa25d", (2, 2, 2)): Workload.transformer(4, 3, 12, 6, ffn=10, dropout=0.2),
    ("summa25d", (2, 2, 3)): Workload.transformer(6, 3, 12, 6, ffn=10, dropout=0.0),
    ("cannon25d", (2, 2, 2)): Workload.transformer(2, 3, 12, 6, ffn=10, dropout=0.2),
}
SP = {2: Workload.transformer(1, 6, 12, 6, ffn=10, dropout=0.2),  # 1d-sp on P ranks
      3: Workload.transformer(2, 3, 12, 6, ffn=9, dropout=0.2)}


def schedule_of(algorithm: str, grid: tuple[int, ...], passes: str) -> Schedule:
    if algorithm == "1d-sp":
        return build_schedule(algorithm, SP[grid[0]], passes, "float64", gpus=grid[0])
    return build_schedule(algorithm, GRIDS[(algorithm, grid)], passes, "float64", grid=grid)


def without(schedule: Schedule, drop: Callable[[Op], bool]) -> Schedule:
    """``schedule`` with every op that ``drop`` matches deleted from every rank's program."""
    assert interpret(schedule, seed=3).max_error <= EXACT  # the unmutated schedule is right
    deleted = [sum(map(drop, program)) for program in schedule.programs]
    assert sum(deleted), "the mutation matches no op: the test would prove nothing"
    return dataclasses.replace(schedule, programs=[[op for op in program if not drop(op)]
                                                   for program in schedule.programs])


def assert_caught(broken: Schedule, wrong: set[str], only: bool) -> None:
    """The validator passes ``broken`` (the deletion was consistent), and the interpreter finds every
    output of ``wrong`` wrong; with ``only``, every other output still exact."""
    validate_schedule(broken)
    errors = interpret(broken, seed=3).errors
    assert all(errors[name] > WRONG for name in wrong), errors
    if only:
        assert all(error <= EXACT for name, error in errors.items() if name not in wrong), errors


def _group(op: Op) -> str:
    return getattr(op, "group", "")


# -- LayerNorm's row all-reduces ----------------------------------------------------------------------
@pytest.mark.parametrize("algorithm, grid", list(GRIDS), ids=str)
@pytest.mark.parametrize("buf, passes, wrong", [("S1", "fwd", "Y"), ("S2", "fwd", "Y"),
                                                ("dS1", "bwd", "dX"), ("dS2", "bwd", "dX")])
def test_the_layernorm_row_all_reduces_are_needed(algorithm, grid, buf, passes, wrong) -> None:
    schedule = schedule_of(algorithm, grid, passes)
    broken = without(schedule, lambda op: isinstance(op, AllReduce) and _group(op).startswith("row")
                     and op.buf == buf)
    assert_caught(broken, {wrong}, only=buf == "dS1")  # dS1 feeds dX alone; the others feed more


# -- summa25d's depth all-reduces of the weight, bias and LayerNorm gradients -------------------------
@pytest.mark.parametrize("grid", [(2, 2, 2), (2, 2, 3)], ids=str)
@pytest.mark.parametrize("gradient", GRADS)
def test_the_depth_all_reduce_of_each_gradient_is_needed(grid, gradient: str) -> None:
    schedule = schedule_of("summa25d", grid, "bwd")
    broken = without(schedule, lambda op: isinstance(op, AllReduce) and _group(op).startswith("depth")
                     and op.buf == gradient)
    assert_caught(broken, {gradient}, only=True)


def test_dropping_every_depth_all_reduce_breaks_every_parameter_gradient_and_no_activation_gradient() -> None:
    schedule = schedule_of("summa25d", (2, 2, 2), "both")
    broken = without(schedule, lambda op: isinstance(op, AllReduce) and _group(op).startswith("depth"))
    assert_caught(broken, set(GRADS), only=True)


# -- 1d-sp: the all-gathers of the sequence shards and the all-reduces of the vectors' gradients --------
@pytest.mark.parametrize("p", list(SP))
@pytest.mark.parametrize("passes, shard, wrong, only", [
    ("fwd", "A1", {"Y"}, False),          # QKV's input
    ("fwd", "A2", {"Y"}, False),          # FC1's input
    ("both", "A1", {"Y", "dWqkv"}, False),
    ("bwd", "A1", {"dWqkv"}, True),       # the backward's re-gather, for dWqkv alone
    ("bwd", "A2", {"dW1"}, True),         # likewise for dW1
    ("bwd", "dP", {"dWproj", "dX"}, False),   # proj's output gradient, gathered for dCTX and dWproj
    ("bwd", "dF", {"dW2", "dX"}, False),      # FC2's
])
def test_the_sequence_parallel_all_gathers_are_needed(p: int, passes, shard, wrong, only) -> None:
    schedule = schedule_of("1d-sp", (p,), passes)
    broken = without(schedule, lambda op: isinstance(op, AllGather) and op.inp == shard)
    assert_caught(broken, wrong, only)


@pytest.mark.parametrize("p", list(SP))
@pytest.mark.parametrize("gradient", ["dln1_g", "dln1_b", "dln2_g", "dln2_b", "dbproj", "db2"])
def test_the_sequence_parallel_vector_gradient_all_reduces_are_needed(p: int, gradient: str) -> None:
    schedule = schedule_of("1d-sp", (p,), "bwd")
    broken = without(schedule, lambda op: isinstance(op, AllReduce) and op.buf == gradient)
    assert_caught(broken, {gradient}, only=True)


def test_the_column_parallel_biases_need_no_all_reduce_under_1d_sp() -> None:
    """bqkv and b1 follow column-split outputs whose rows are whole: their gradients are complete."""
    schedule = schedule_of("1d-sp", (3,), "bwd")
    reduced = {op.buf for program in schedule.programs for op in program if isinstance(op, AllReduce)}
    assert reduced == {"dln1_g", "dln1_b", "dln2_g", "dln2_b", "dbproj", "db2"}


# -- the vectors' broadcasts over the column groups, and their gradients' reduces -----------------------
def _vector_broadcast(name: str) -> Callable[[Op], bool]:
    return lambda op: (isinstance(op, Broadcast) and _group(op).startswith("col")
                       and op.buf.removesuffix("_ws") == name)


@pytest.mark.parametrize("algorithm, grid", [("2d", (3, 3, 1)), ("summa25d", (2, 2, 2)), ("cannon25d", (2, 2, 2))],
                         ids=str)
@pytest.mark.parametrize("vector", VECTORS)
def test_the_vector_broadcasts_over_column_groups_are_needed(algorithm, grid, vector: str) -> None:
    schedule = schedule_of(algorithm, grid, "fwd")
    assert_caught(without(schedule, _vector_broadcast(vector)), {"Y"}, only=True)


@pytest.mark.parametrize("algorithm, grid", [("summa25d", (2, 2, 2)), ("cannon25d", (2, 2, 2))], ids=str)
@pytest.mark.parametrize("vector", ["ln1_g", "ln2_g"])
def test_the_backward_needs_the_gamma_broadcast(algorithm, grid, vector: str) -> None:
    schedule = schedule_of(algorithm, grid, "bwd")
    assert_caught(without(schedule, _vector_broadcast(vector)), {"dX"}, only=False)


@pytest.mark.parametrize("algorithm, grid", [("2d", (3, 3, 1)), ("summa25d", (2, 2, 2)), ("cannon25d", (2, 2, 2))],
                         ids=str)
@pytest.mark.parametrize("gradient", [g for g in GRADS if not g.startswith("dW")])
def test_the_vector_gradient_reduces_over_column_groups_are_needed(algorithm, grid, gradient: str) -> None:
    schedule = schedule_of(algorithm, grid, "bwd")
    broken = without(schedule, lambda op: isinstance(op, Reduce) and _group(op).startswith("col")
                     and op.buf == f"{gradient}_part")
    assert_caught(broken, {gradient}, only=True)


def test_1d_sp_re_gathers_in_the_backward_though_the_interpreter_cannot_miss_them() -> None:
    """In a fwd+bwd schedule the forward's gathered A1_full and A2_full buffers survive to the backward,
    so deleting the backward's re-gathers leaves the numbers exact: the interpreter cannot hold the
    schedule to Megatron-LM's memory-saving re-gather, so the op counts do (per rank, per the module
    docstring of ``megatron_1d_sp``: 2 + 2 gathers of the inputs, 2 of the output gradients, 4
    reduce-scatters)."""
    schedule = schedule_of("1d-sp", (3,), "both")
    for program in schedule.programs:
        gathered = [op.inp for op in program if isinstance(op, AllGather)]
        assert sorted(gathered) == ["A1", "A1", "A2", "A2", "dF", "dP"]
        assert sum(op.kind == "reduce_scatter" for op in program) == 4
