"""The reference interpreter: runs any valid Schedule on all ranks in one process with numpy arrays.

It is tpsim's oracle. Arithmetic is float64 whatever the schedule's dtype (the dtype only sizes
messages), so a correct schedule matches the dense reference to rounding (~1e-14). Every buffer starts
as NaN: a schedule that reads a block it never received or accumulates into an unzeroed buffer
produces NaN and fails, instead of passing by luck on zeros.

A collective moves data when its last member issues it (``simulator.ir.walk``); the validator's hazard
rule (no use of an in-flight async op's buffers before its wait) makes that equal to any legal timing.

Error measure, per output tensor: ``max |x - ref| / max |ref|`` over every block the schedule leaves
(replicas included, each checked), i.e. a max-norm relative error that is stable where ref is ~0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulator.ir.checks import check_static, check_workload
from simulator.ir.ops import AllGather, AllReduce, Broadcast, Gemm, Local, Op, Recv, Reduce, ReduceScatter, Slice
from simulator.ir.schedule import Schedule
from simulator.ir.walk import Instance, Walker
from simulator.workloads.functions import FUNCTIONS

DEFAULT_TOLERANCE = 1e-10


@dataclass
class InterpretResult:
    """What a run produced: each output tensor assembled, and its max-norm relative error."""

    outputs: dict[str, np.ndarray]
    errors: dict[str, float]

    @property
    def max_error(self) -> float:
        return max(self.errors.values(), default=0.0)

    def ok(self, tolerance: float = DEFAULT_TOLERANCE) -> bool:
        """True when every output is within ``tolerance`` (NaN never is)."""
        return all(error <= tolerance for error in self.errors.values())


def run_schedule(schedule: Schedule, inputs: dict[str, np.ndarray], seed: int = 0) -> list[dict[str, np.ndarray]]:
    """Execute ``schedule`` from global ``inputs`` (name -> array); return every rank's final buffers.
    ``seed`` draws the dropout masks (the seed the inputs came from)."""
    check_static(schedule)
    memory = [{name: np.full(spec.shape, np.nan) for name, spec in declared.items()}
              for declared in schedule.buffers]
    for block in schedule.inputs:
        source = inputs[block.tensor]
        memory[block.rank][block.buffer][...] = source[block.rows[0]:block.rows[1], block.cols[0]:block.cols[1]]
    Walker(schedule, on_compute=lambda rank, op: _compute(memory[rank], op, seed),
           on_complete=lambda instance: _communicate(schedule, memory, instance)).run()
    return memory


def interpret(schedule: Schedule, seed: int = 0) -> InterpretResult:
    """Run ``schedule`` on its workload's seeded inputs and compare every output block with float64."""
    workload = check_workload(schedule)
    shapes = workload.shapes()
    inputs = {name: workload.input_block(seed, name, (0, shapes[name][0]), (0, shapes[name][1]))
              for name in workload.input_names(schedule.passes)}
    memory = run_schedule(schedule, inputs, seed)
    return compare_outputs(schedule, memory, workload.reference(seed, schedule.passes))


def compare_outputs(schedule: Schedule, memory: list[dict[str, np.ndarray]],
                    reference: dict[str, np.ndarray]) -> InterpretResult:
    """Every output block ``run_schedule`` left in ``memory`` against ``reference`` (tensor name -> whole
    array): the assembled outputs and each tensor's max-norm relative error (inf where NaN or missing)."""
    outputs = {name: np.full(np.shape(value), np.nan) for name, value in reference.items()}
    worst = {name: 0.0 for name in reference}
    for block in schedule.outputs:
        value = memory[block.rank][block.buffer]
        rows, cols = slice(*block.rows), slice(*block.cols)
        expected = reference[block.tensor][rows, cols]
        scale = float(np.max(np.abs(reference[block.tensor]))) or 1.0
        error = float(np.max(np.abs(value - expected))) / scale
        worst[block.tensor] = max(worst[block.tensor], error if np.isfinite(error) else np.inf)
        outputs[block.tensor][rows, cols] = value
    for name, assembled in outputs.items():
        if np.isnan(assembled).any():  # a part of the output no rank holds
            worst[name] = np.inf
    return InterpretResult(outputs, worst)


def float64_bytes(schedule: Schedule) -> int:
    """A lower bound on the memory ``interpret`` holds at once: every rank's buffers and every global
    tensor of the workload (inputs and the dense reference), all in float64."""
    shapes = check_workload(schedule).shapes().values()
    elements = sum(spec.numel for declared in schedule.buffers for spec in declared.values())
    return 8 * (elements + sum(rows * cols for rows, cols in shapes))


def _operand(memory: dict[str, np.ndarray], name: str, transpose: bool) -> np.ndarray:
    return memory[name].T if transpose else memory[name]


def _compute(memory: dict[str, np.ndarray], op: Op, seed: int) -> None:
    if isinstance(op, Gemm):
        product = _operand(memory, op.a, op.trans_a) @ _operand(memory, op.b, op.trans_b)
        if op.accumulate:
            memory[op.out] += product
        else:
            memory[op.out][...] = product
    elif isinstance(op, Local):
        function = FUNCTIONS[op.fn]
        params = {**op.param_dict(), **({"seed": seed} if function.seeded else {})}
        memory[op.out][...] = function.numpy(*(memory[name] for name in op.inputs), **params)
    elif isinstance(op, Slice):
        src, out = memory[op.src], memory[op.out]
        rows_in, cols_in = _index(op.src_rows), _index(op.src_cols)
        out[_index(op.out_rows), _index(op.out_cols)] = src[rows_in, cols_in]
    else:
        raise AssertionError(f"interpreter has no rule for {op.kind}")


def _index(region: tuple[int, int] | None) -> slice:
    return slice(None) if region is None else slice(region[0], region[1])


def _communicate(schedule: Schedule, memory: list[dict[str, np.ndarray]], instance: Instance) -> None:
    arrived = {rank: op for rank, (_, op, _) in instance.arrived.items()}
    some = next(iter(arrived.values()))
    if some.kind in ("send", "recv"):
        (a, op_a), (b, op_b) = arrived.items()
        (src, send), (dst, recv) = ((a, op_a), (b, op_b)) if isinstance(op_b, Recv) else ((b, op_b), (a, op_a))
        memory[dst][recv.buf][...] = memory[src][send.buf]
        return
    members = schedule.groups[some.group]
    if isinstance(some, Broadcast):
        root = members[some.root]
        data = memory[root][arrived[root].buf].copy()
        for rank in members:
            memory[rank][arrived[rank].buf][...] = data
    elif isinstance(some, Reduce):
        root = members[some.root]
        memory[root][arrived[root].out][...] = sum(memory[rank][arrived[rank].buf] for rank in members)
    elif isinstance(some, AllReduce):
        total = sum(memory[rank][arrived[rank].buf] for rank in members)
        for rank in members:
            memory[rank][arrived[rank].buf][...] = total
    elif isinstance(some, AllGather):
        whole = np.concatenate([memory[rank][arrived[rank].inp] for rank in members], axis=some.axis)
        for rank in members:
            memory[rank][arrived[rank].out][...] = whole
    elif isinstance(some, ReduceScatter):
        total = sum(memory[rank][arrived[rank].inp] for rank in members)
        for part, rank in zip(np.split(total, len(members), axis=some.axis), members):
            memory[rank][arrived[rank].out][...] = part
    else:
        raise AssertionError(f"interpreter has no rule for {some.kind}")
