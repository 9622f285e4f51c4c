"""Every op kind of the IR is handled by each consumer: the planner, the compute model, the interpreter and
the torch executor. A new op kind fails here until every one of them has its rule.

The hand-made ``mixed_schedule`` must use every kind; it runs on gloo in ``test_gloo_runs`` (and its
collectives are checked call by call in ``test_accounting``), and through the interpreter here.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from simulator.compute import ComputeModel
from simulator.ir.interpret import run_schedule
from simulator.ir.ops import OP_TYPES, Wait
from simulator.timing import plan
from simulator.workloads.workload import Workload
from topologies import gpu_nodes, load_topology


def test_the_mixed_schedule_uses_every_op_kind(mixed):
    used = {op.kind for program in mixed.programs for op in program}
    assert used == set(OP_TYPES), f"missing from executor_cases.mixed_schedule: {set(OP_TYPES) - used}"


def test_the_planner_has_a_role_for_every_op_type():
    assert set(plan._ROLE) == set(OP_TYPES.values())


def test_the_compute_model_times_every_compute_op(mixed):
    G = load_topology("dgx-a100")
    device = G.nodes[gpu_nodes(G)[0]]["device"]
    model = ComputeModel()
    for rank, program in enumerate(mixed.programs):
        for op in program:
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
