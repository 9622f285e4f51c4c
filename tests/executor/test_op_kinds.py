"""Every op kind of the IR, and every function a ``local`` op may name, is handled by each consumer: the
planner, the compute model, the interpreter and the torch executor. A new op kind or function fails here
until every one of them has its rule.

The hand-made ``mixed_schedule`` must use every kind and every function (``executor_cases.function_chain``,
parameterised and seeded ones with their parameters); it runs on gloo in ``test_gloo_runs`` (and its
collectives are checked call by call in ``test_accounting``), and through the interpreter here.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from simulator.compute import ComputeModel
from simulator.errors import InputError
from simulator.ir.interpret import run_schedule
from simulator.ir.ops import OP_TYPES, Local, Wait
from simulator.timing import plan
from simulator.workloads.functions import FUNCTIONS
from simulator.workloads.workload import Workload
from topologies import gpu_nodes, load_topology


def test_the_mixed_schedule_uses_every_op_kind(mixed):
    used = {op.kind for program in mixed.programs for op in program}
    assert used == set(OP_TYPES), f"missing from executor_cases.mixed_schedule: {set(OP_TYPES) - used}"


def test_the_mixed_schedule_uses_every_local_function(mixed):
    used = {op.fn for program in mixed.programs for op in program if isinstance(op, Local)}
    assert used == set(FUNCTIONS), f"missing from executor_cases.function_chain: {set(FUNCTIONS) - used}"


def test_the_planner_has_a_role_for_every_op_type():
    assert set(plan.OP_ROLE) == set(OP_TYPES.values())


def test_the_compute_model_times_every_compute_op(mixed):
    G = load_topology("dgx-a100")
    device = G.nodes[gpu_nodes(G)[0]]["device"]
    model = ComputeModel()
    for rank, program in enumerate(mixed.programs):
        for op in program:
            if isinstance(op, Local) and op.fn.startswith(("triton_attention", "cudnn_attention")):
                # No published rate of either kernel in float32 (this schedule's dtype): refused, not guessed.
                kernel = op.fn.split("_")[0]
                with pytest.raises(InputError, match=f"--attention {kernel} with dtype float32"):
                    model.op_time_s(mixed, rank, op, device)
                continue
            seconds = model.op_time_s(mixed, rank, op, device)
            assert math.isfinite(seconds) and seconds >= 0, op
            assert (seconds > 0) == (not op.is_comm and not isinstance(op, Wait)), op


def test_the_interpreter_runs_every_op_kind(mixed):
    workload = Workload.gemm(6, 6, 6)
    inputs = {name: workload.input_block(0, name, (0, 6), (0, 6)) for name in ("A", "B")}
    memory = run_schedule(mixed, inputs)
    product = inputs["A"] @ inputs["B"]
    for block in mixed.outputs:
        expected = product[slice(*block.rows), slice(*block.cols)]
        np.testing.assert_allclose(memory[block.rank][block.buffer], expected, rtol=1e-12, err_msg=str(block))


def test_the_torch_executor_has_a_rule_for_every_compute_op(mixed):
    torch = pytest.importorskip("torch")
    from executor.ops_torch import TorchOps

    for rank, program in enumerate(mixed.programs):
        buffers = {name: torch.ones(spec.shape, dtype=torch.float64) for name, spec in mixed.buffers[rank].items()}
        ops = TorchOps(mixed, rank, buffers, groups={}, reduce_clobbers_input=False, seed=0)
        for step, op in enumerate(program):
            if not op.is_comm and not isinstance(op, Wait):
                ops.run(step, op)  # an AssertionError names a kind without a rule


def _final(program: list, step: int) -> bool:
    """Whether what step ``step`` reads and writes is never written again, so that the interpreter's final
    buffers hold the very values it computed with and made."""
    op = program[step]
    touched = {*op.reads(), *op.writes()}
    return not any(touched & set(later.writes()) for later in program[step + 1:])


def test_the_torch_executor_computes_every_local_function_as_the_interpreter_seed_included(mixed):
    torch = pytest.importorskip("torch")
    from executor.ops_torch import TorchOps

    workload, seed = Workload.gemm(6, 6, 6), 5
    inputs = {name: workload.input_block(seed, name, (0, 6), (0, 6)) for name in ("A", "B")}
    memory = run_schedule(mixed, inputs, seed)
    other_seed = run_schedule(mixed, inputs, seed + 1)
    checked = set()
    for rank, program in enumerate(mixed.programs):
        buffers = {name: torch.from_numpy(value.copy()) for name, value in memory[rank].items()}
        ops = TorchOps(mixed, rank, buffers, groups={}, reduce_clobbers_input=False, seed=seed)
        for step, op in enumerate(program):
            if not isinstance(op, Local) or not _final(program, step):
                continue
            buffers[op.out].fill_(float("nan"))
            ops.run(step, op)
            np.testing.assert_allclose(buffers[op.out].numpy(), memory[rank][op.out], rtol=1e-12, atol=1e-12,
                                       err_msg=f"rank {rank} {op.short()}")
            checked.add(op.fn)
            if FUNCTIONS[op.fn].seeded:  # the seed matters here: an executor that dropped it would differ
                assert not np.allclose(other_seed[rank][op.out], memory[rank][op.out]), op.short()
    assert checked == set(FUNCTIONS)
