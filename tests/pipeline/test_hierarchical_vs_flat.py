"""Scale by hierarchy, checked by exactness: the planner's pipelined step, replayed from one block's simulated
passes (``simulator.pipeline.stage_step``), against the flat simulation of the whole step's lowered IR
(``simulator.pipeline.lower``: every block of every micro-batch on every rank, sends and receives as flows).

Data parallelism 1 and no LM head, so both time the same work, but for one thing: the IR accumulates each
micro-batch's weight gradients with explicit ``copy`` / ``add`` ops (part ``grad-acc``: the interpreter and
the executor need them to prove the sums), which Megatron-LM fuses into the weight-gradient GEMM
(``--gradient-accumulation-fusion``: dW accumulated in the GEMM's epilogue) and the planner therefore does
not charge. With those ops taken out of the flat schedule, the planner's step less its optimizer step
(which the IR does not hold) must equal the flat makespan within 1%; with them in, the flat step is
slower by about their streaming time. Both run Megatron-LM's asynchronous dX communication (the default), and
one case runs both without it."""

from __future__ import annotations

import dataclasses

import pytest

from simulator.algorithms.arrangement import Arrangement
from simulator.commands.sim_args import load_graph
from simulator.pipeline.lower import lower_pipeline
from simulator.timing.simulation import simulate
from simulator.training.arrangement import TrainingArrangement
from simulator.training.step import StepOptions, step_time
from simulator.workloads.workload import Workload

BLOCK = Workload.transformer(batch=1, seq=1024, hidden=1024, heads=16)
"""Large enough that a block's GEMMs take about a millisecond: launch-scale terms stay below the 1% bar."""


def _without_accumulation(schedule):
    """``schedule`` less its gradient-accumulation ops (the simulator reads no numbers, so it still runs)."""
    programs, parts = [], []
    for rank, program in enumerate(schedule.programs):
        kept, runs = [], []
        for step, op in enumerate(program):
            label = schedule.part_of(rank, step)
            if label == "grad-acc":
                continue
            if label and (not runs or runs[-1][1] != label):
                runs.append((len(kept), label))
            kept.append(op)
        programs.append(kept)
        parts.append(runs)
    return dataclasses.replace(schedule, programs=programs, parts=parts)


@pytest.mark.parametrize("algorithm, grid, pp, m, schedule, v, async_dgrad", [
    ("1d", (2,), 2, 4, "1f1b", 1, True),
    ("1d", (2,), 2, 4, "1f1b", 1, False),
    ("1d", (2,), 4, 4, "1f1b", 1, True),
    ("1d", (2,), 2, 4, "interleaved", 2, True),
    ("1d-sp", (2,), 3, 3, "gpipe", 1, True),
    ("2d", (2, 2, 1), 2, 2, "1f1b", 1, True),
])
def test_the_step_from_block_times_equals_the_flat_simulation(algorithm, grid, pp, m, schedule, v, async_dgrad):
    block = BLOCK if algorithm != "2d" else Workload.transformer(batch=2, seq=512, hidden=1024, heads=16)  # whole rows
    layers = pp * v * 2
    tp = 1
    for n in grid:
        tp *= n
    G = load_graph(f"dgx-a100:{max(1, tp * pp // 8)}")
    square = len(grid) == 3
    flat = lower_pipeline(algorithm, block, layers, pp, m, schedule, v, dtype="bfloat16",
                          grid=grid if square else None, gpus=None if square else tp, async_dgrad=async_dgrad)
    flat_s = simulate(_without_accumulation(flat), G, None).makespan_s
    a = TrainingArrangement(Arrangement(algorithm, grid), 1, pp=pp, schedule=schedule, virtual_stages=v)
    options = StepOptions(global_batch=m * block.batch, layers=layers, vocab=None, dtype="bfloat16",
                          async_dgrad=async_dgrad)
    planned = step_time(G, a, block, options)
    assert planned.dp_comm_s == 0.0
    assert planned.step_s - planned.optimizer_s == pytest.approx(flat_s, rel=0.01)
    # ... and the accumulation ops are what the full flat step adds: it is slower, by a few percent at most.
    full_s = simulate(flat, G, None).makespan_s
    assert flat_s < full_s < 1.05 * flat_s
