"""The attention kernel's time and memory agree, and recomputation composes with it without double counting.

For each kernel (flash, unfused) and recompute mode, count how many times the step computes the
attention scores S = Q K^T of one layer: the forward's product, the backward op's own recomputation
(FlashAttention's), and the forward part the recomputation mode adds. The memory model keeps the
[b, a, s, s] probabilities exactly when that count is 1 (nothing recomputes them), never counts them
twice, and the time model charges the recomputation exactly when the memory model does not keep them.
"""

from __future__ import annotations

import dataclasses

import pytest

from simulator.algorithms.arrangement import Arrangement
from simulator.algorithms.registry import build_schedule
from simulator.ir.ops import Local
from simulator.memory.activations import layer_activations
from simulator.training.arrangement import TrainingArrangement
from simulator.training.step import StepOptions, step_time
from simulator.workloads.workload import Workload
from topologies import load_topology

BLOCK = Workload.transformer(2, 128, 256, 4, dropout=0.1)
ARRANGEMENT = TrainingArrangement(Arrangement("1d-sp", (4,)), 2)
MODES = ("none", "selective", "full")


def _step(kernel: str, recompute: str):
    block = dataclasses.replace(BLOCK, attention=kernel)
    options = StepOptions(global_batch=8, layers=2, vocab=1000, recompute=recompute)
    return step_time(load_topology("dgx-a100:1"), ARRANGEMENT, block, options, bound=True)


def _score_products(kernel: str) -> tuple[int, int]:
    """(forward, backward) products of the scores' shape [s, d] x [d, s] in rank 0's attention ops, less
    the backward's dP' = dO V^T (the same shape, not a score)."""
    block = dataclasses.replace(BLOCK, attention=kernel)
    counts = []
    for passes in ("fwd", "bwd"):
        schedule = build_schedule("1d-sp", block, passes, "bfloat16", gpus=4)
        s, d = block.seq, block.hidden // block.heads
        n = sum(1 for op in schedule.programs[0] if isinstance(op, Local) and "attention" in op.fn
                for _, m, k, cols in schedule.local_work(0, op).gemms if (m, k, cols) == (s, d, s))
        counts.append(n - (passes == "bwd"))
    return counts[0], counts[1]


def _quadratic_bytes(kernel: str, recompute: str) -> int:
    schedule = build_schedule("1d-sp", dataclasses.replace(BLOCK, attention=kernel), "both", "bfloat16", gpus=4)
    kept = [k for k in layer_activations(schedule, 0, recompute) if k.kind == "attention"]
    return sum(k.nbytes for k in kept if "[b, a, s, s]" in k.what)


@pytest.mark.parametrize("kernel", ["flash", "unfused"])
@pytest.mark.parametrize("recompute", ["none", "selective"])
def test_the_probabilities_are_kept_exactly_when_nothing_recomputes_them(kernel, recompute) -> None:
    forward, backward = _score_products(kernel)
    added = 1 if (kernel, recompute) == ("unfused", "selective") else 0  # the attention forward again
    computed = forward + backward + added
    assert forward == 1 and computed in (1, 2)  # computed once, or recomputed once: never twice over
    assert (_quadratic_bytes(kernel, recompute) > 0) == (computed == 1)
    none, mode = _step(kernel, "none"), _step(kernel, recompute)
    extra = mode.passes["block_bwd"].time_s - none.passes["block_bwd"].time_s
    if added:
        assert extra > 0
    else:
        assert extra == 0.0


def test_selective_under_flash_changes_nothing_and_under_unfused_trades_memory_for_the_attention_forward() -> None:
    flash_none, flash_selective = _step("flash", "none"), _step("flash", "selective")
    assert flash_selective.step_s == flash_none.step_s
    assert _quadratic_bytes("flash", "none") == _quadratic_bytes("flash", "selective") == 0
    unfused_none, unfused_selective = _step("unfused", "none"), _step("unfused", "selective")
    assert unfused_selective.step_s > unfused_none.step_s
    assert _quadratic_bytes("unfused", "none") > 0 == _quadratic_bytes("unfused", "selective")


def test_the_flash_backward_costs_the_recomputation_the_unfused_one_reads_from_memory() -> None:
    """The flash kernel's backward has one more score product (S again) than the unfused one, which reads
    the kept probabilities instead; the forward's products are the same."""
    assert _score_products("flash") == (1, 1) and _score_products("unfused") == (1, 0)
    flash, unfused = _step("flash", "none"), _step("unfused", "none")
    assert flash.flops_per_step == unfused.flops_per_step  # model FLOPs do not count recomputation


def test_full_recomputation_adds_the_whole_forward_under_either_kernel() -> None:
    for kernel in ("flash", "unfused"):
        none, full = _step(kernel, "none"), _step(kernel, "full")
        assert full.passes["block_bwd"].time_s == pytest.approx(none.passes["block_bwd"].time_s
                                                                + none.passes["block_fwd"].time_s)
        assert _quadratic_bytes(kernel, "full") == 0
