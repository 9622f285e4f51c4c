"""A pipelined training step lowered into one Schedule, proven on numbers for every algorithm and order."""

from __future__ import annotations

import pytest

from simulator.algorithms.registry import ALGORITHMS
from simulator.errors import InputError
from simulator.ir.accounting import account
from simulator.ir.ops import Recv, Send, Wait
from simulator.ir.printout import format_schedule
from simulator.ir.serialize import load_schedule, save_schedule
from simulator.ir.validate import validate_schedule
from simulator.pipeline.lower import lower_pipeline
from simulator.pipeline.order import pipeline_order
from simulator.pipeline.proof import prove_pipeline
from simulator.workloads.workload import Workload

# batch 4: summa25d on [2,2,2] needs whole sequences on d*q = 4 row blocks.
BLOCK = Workload.transformer(batch=4, seq=2, hidden=8, heads=2)
GRIDS = {"1d": dict(gpus=2), "1d-sp": dict(gpus=2), "2d": dict(grid=(2, 2, 1)), "cannon25d": dict(grid=(2, 2, 2)),
         "summa25d": dict(grid=(2, 2, 2)), "3d": dict(grid=(2, 2, 2))}
ORDERS = [("gpipe", 2, 3, 1, 2), ("1f1b", 3, 4, 1, 3), ("interleaved", 2, 2, 2, 4)]
"""(schedule, pp, micro-batches, virtual stages, layers)."""


def test_every_registered_algorithm_is_covered():
    assert set(GRIDS) == set(ALGORITHMS)


@pytest.mark.parametrize("algorithm", list(GRIDS))
@pytest.mark.parametrize("schedule,pp,m,v,layers", ORDERS)
def test_pipelined_step_equals_the_dense_reference(algorithm, schedule, pp, m, v, layers):
    step = lower_pipeline(algorithm, BLOCK, layers, pp, m, schedule, v, "float32", **GRIDS[algorithm])
    validate_schedule(step)
    result = prove_pipeline(step, seed=3)
    weights = len(BLOCK.weights())
    assert len(result.errors) == 2 * m + weights * layers  # every Y.m, dX.m and accumulated weight gradient
    assert result.ok(1e-12), {k: v for k, v in result.errors.items() if v > 1e-12}


@pytest.mark.parametrize("algorithm", list(GRIDS))
def test_the_lm_head_on_the_last_stage_equals_the_reference(algorithm):
    """logits = Y Whead per micro-batch; the last block's output gradient is dlogits Whead^T; dWhead summed."""
    step = lower_pipeline(algorithm, BLOCK, 2, 2, 3, "1f1b", 1, "float32", vocab=100, **GRIDS[algorithm])
    assert step.options["pipeline"]["vocab"] == 128 * len(step.programs) // 2  # padded to 128 x T columns
    validate_schedule(step)
    result = prove_pipeline(step, seed=5)
    assert {"logits.m0", "logits.m2", "dWhead"} <= set(result.errors) and "Y.m0" not in result.errors
    assert result.ok(1e-12), {k: v for k, v in result.errors.items() if v > 1e-12}
    last_stage = range(step.world_size // 2, step.world_size)
    assert {b.rank for b in step.outputs if b.tensor.startswith("logits")} <= set(last_stage)


@pytest.mark.parametrize("algorithm", ["1d", "2d"])
def test_four_stages_of_1f1b_with_dropout(algorithm):
    block = Workload.transformer(batch=2, seq=2, hidden=8, heads=2, dropout=0.25)
    step = lower_pipeline(algorithm, block, 4, 4, 5, "1f1b", 1, "float32", **GRIDS[algorithm])
    assert prove_pipeline(step, seed=1).ok(1e-12)


def test_ranks_follow_megatrons_order_and_run_the_pipeline_order():
    """Rank = stage * T + t; each rank's forward/backward receives come in its pipeline order's order."""
    step = lower_pipeline("2d", BLOCK, 4, 2, 4, "interleaved", 2, "float32", grid=(2, 2, 1))
    assert step.world_size == 8
    assert step.groups["pp1.row_j0_k0"] == (4, 5)
    order = pipeline_order("interleaved", 2, 4, 2)
    for rank in range(8):
        waited = [op.handle.split(".", 2)[2] for op in step.programs[rank]
                  if isinstance(op, Wait) and op.handle.startswith("pp.r")]
        expected = [str(a) for a in order[rank // 4]
                    if (a.kind == "F" and a.stage > 0) or (a.kind == "B" and a.stage < 3)]
        assert waited == expected
        peers = {op.peer for op in step.programs[rank] if isinstance(op, (Send, Recv))}
        assert peers == {(rank + 4) % 8}  # the same tensor-parallel coordinates on the other stage


@pytest.mark.parametrize("algorithm,shape", [("1d", (8, 8)), ("1d-sp", (4, 8)), ("2d", (4, 4)), ("cannon25d", (4, 4)),
                                             ("summa25d", (2, 4)), ("3d", (2, 4))])
def test_stage_boundary_carries_the_layout_the_algorithm_leaves(algorithm, shape):
    """[b s, h] for 1d, the 1/T sequence shard for 1d-sp, the blocks of 2-D and 3-D; cannon25d sends from
    its first depth layer only (the others hold no activation)."""
    step = lower_pipeline(algorithm, BLOCK, 2, 2, 2, "1f1b", 1, "float32", **GRIDS[algorithm])
    sent = {step.spec(rank, op.buf).shape for rank, program in enumerate(step.programs) for op in program
            if isinstance(op, Send) and op.handle.startswith("pp.")}
    assert sent == {shape}


def test_cannon_sends_only_from_ranks_that_hold_the_activation():
    step = lower_pipeline("cannon25d", BLOCK, 2, 2, 2, "1f1b", 1, "float32", grid=(2, 2, 2))
    senders = sorted({rank for rank, program in enumerate(step.programs) for op in program
                      if isinstance(op, Send) and op.handle.startswith("pp.")})  # not Cannon's own shifts
    assert senders == [0, 1, 2, 3, 8, 9, 10, 11]


def test_accounting_counts_each_boundary_message():
    """1d on 2 GPUs, 1F1B, pp 3, m 4: the middle stage receives and sends m activations and m gradients of
    [b s, h] on each rank; the ends half of that; the collectives are L/pp blocks' worth per micro-batch."""
    step = lower_pipeline("1d", BLOCK, 3, 3, 4, "1f1b", 1, "float32", gpus=2)
    accounts = account(step)
    assert [a.p2p_messages for a in accounts] == [8, 8, 16, 16, 8, 8]
    one = account(lower_pipeline("1d", BLOCK, 1, 1, 1, "1f1b", 1, "float32", gpus=2))[0]
    assert all(a.collectives == 4 * one.collectives for a in accounts)  # 4 micro-batches x 1 block each
    message = 8 * 8 * 4
    assert accounts[2].payload_bytes - 4 * one.payload_bytes == 16 * message


def test_saved_schedule_loads_and_proves_again(tmp_path):
    step = lower_pipeline("1d-sp", BLOCK, 2, 2, 2, "gpipe", 1, "float32", gpus=2)
    save_schedule(step, tmp_path / "pp.json")
    loaded = load_schedule(tmp_path / "pp.json")
    assert loaded.options["pipeline"] == {"layers": 2, "pp": 2, "micro_batches": 2, "schedule": "gpipe",
                                          "virtual_stages": 1, "tp": 2, "vocab": None}
    assert prove_pipeline(loaded).ok(1e-12)
    assert "send>2 Y.m0.l0" in format_schedule(loaded, [0, 2])


@pytest.mark.parametrize("kwargs,message", [
    (dict(layers=3, pp=2), "3 layers do not divide into --pp 2 stages"),
    (dict(virtual_stages=2), "--virtual-stages 2 needs --schedule interleaved"),
    (dict(schedule="interleaved", virtual_stages=2, layers=4, micro_batches=3), "a multiple of --pp"),
    (dict(workload=Workload.mlp(8, 8)), "--pp pipelines transformer blocks; --workload mlp has none"),
])
def test_bad_sizes_are_one_clear_error(kwargs, message):
    args = dict(algorithm="1d", workload=BLOCK, layers=2, pp=2, micro_batches=2, schedule="1f1b", gpus=2)
    args.update(kwargs)
    with pytest.raises(InputError, match=message):
        lower_pipeline(**args)
