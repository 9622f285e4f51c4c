"""Kept activations per rank against Korthikanti et al. 2022 (arXiv 2205.05198), Table 2, exactly.

Per layer with dropout and 2-byte activations, under the unfused attention kernel the paper assumes:
tensor parallel sbh(10 + 24/t + 5as/(ht)), with sequence parallelism sbh(34 + 5as/h)/t; selective
recompute sbh(10 + 24/t) and 34sbh/t; full recompute 2sbh (the layer input; with sequence parallelism
the input is the rank's shard, 2sbh/t). Under FlashAttention-2 the 5as/h term is FlashAttention's
log-sum-exp, 4 B per row of [b, a, s] (linear in s), under both none and selective. The LayerNorm
moments, which the paper neglects, are their own kind and left out of the comparison.
"""

from __future__ import annotations

import dataclasses

import pytest

from simulator.algorithms.registry import build_schedule
from simulator.memory.activations import PAPER_KINDS, layer_activations
from simulator.workloads.workload import Workload

# (s, b, h, a, t): several shapes, head counts and tensor-parallel sizes.
SHAPES = [(16, 2, 64, 8, 4), (32, 3, 128, 16, 8), (64, 1, 96, 4, 2), (8, 4, 32, 4, 4), (128, 2, 64, 2, 2)]


def paper_bytes(schedule, recompute: str, rank: int = 0) -> int:
    return sum(k.nbytes for k in layer_activations(schedule, rank, recompute) if k.kind in PAPER_KINDS + ("input",))


def korthikanti(s, b, h, a, t, sp: bool, recompute: str, attention: str = "unfused") -> float:
    sbh = s * b * h
    if recompute == "full":
        return 2 * sbh / (t if sp else 1)
    core = 0 if recompute == "selective" else 5 * a * s / h
    if attention == "flash":
        core = 4 * a / h  # FlashAttention-2's fp32 log-sum-exp per row, b a s, whatever the mode
    return sbh * (34 + core) / t if sp else sbh * (10 + 24 / t + core / t)


@pytest.mark.parametrize("s,b,h,a,t", SHAPES)
@pytest.mark.parametrize("algo", ["1d", "1d-sp"])
@pytest.mark.parametrize("recompute", ["none", "selective", "full"])
def test_megatron_layers_hold_korthikanti_table_2_exactly(s, b, h, a, t, algo, recompute):
    workload = Workload.transformer(b, s, h, a, dropout=0.1, attention="unfused")
    schedule = build_schedule(algo, workload, "both", "bfloat16", gpus=t)
    expected = korthikanti(s, b, h, a, t, algo == "1d-sp", recompute)
    for rank in range(t):
        assert paper_bytes(schedule, recompute, rank) == expected


@pytest.mark.parametrize("s,b,h,a,t", SHAPES)
@pytest.mark.parametrize("algo", ["1d", "1d-sp"])
@pytest.mark.parametrize("recompute", ["none", "selective", "full"])
def test_flash_attention_keeps_nothing_quadratic_in_the_sequence(s, b, h, a, t, algo, recompute):
    schedule = build_schedule(algo, Workload.transformer(b, s, h, a, dropout=0.1), "both", "bfloat16", gpus=t)
    expected = korthikanti(s, b, h, a, t, algo == "1d-sp", recompute, "flash")
    for rank in range(t):
        assert paper_bytes(schedule, recompute, rank) == expected
    if recompute != "full":  # selective recomputation frees nothing more under flash
        assert paper_bytes(schedule, recompute) == paper_bytes(schedule, "none")


def test_flash_memory_is_linear_in_the_sequence_and_unfused_is_not():
    """Doubling s doubles what a flash layer keeps (FlashAttention-2's memory behaviour); the unfused one's
    [b, a, s, s] term more than doubles it."""
    def kept(s, attention):
        workload = Workload.transformer(1, s, 64, 8, dropout=0.1, attention=attention)
        return paper_bytes(build_schedule("1d", workload, "both", "bfloat16", gpus=2), "none")
    assert [kept(s, "flash") for s in (64, 128, 256)] == [kept(64, "flash") * k for k in (1, 2, 4)]
    assert kept(128, "unfused") > 2 * kept(64, "unfused") and kept(256, "unfused") > 2 * kept(128, "unfused")


def test_without_dropout_no_masks_and_only_the_softmax_is_kept():
    s, b, h, a, t = 32, 2, 64, 8, 4
    workload = Workload.transformer(b, s, h, a, dropout=0.0, attention="unfused")
    schedule = build_schedule("1d", workload, "both", "bfloat16", gpus=t)
    kinds = {k.kind: k.nbytes for k in layer_activations(schedule, 0, "none")}
    assert "mask" not in kinds
    assert kinds["attention"] == 2 * a * s * s * b // t  # the softmax output alone, 2 B
    assert kinds["kept"] == s * b * h * (8 + 24 / t)  # Table 2 less the two dropout masks (sbh each)


def test_layernorm_moments_are_rows_by_two_at_the_schedule_dtype():
    s, b, h, a, t = 16, 2, 64, 8, 4
    for algo, rows in (("1d", s * b), ("1d-sp", s * b // t)):
        schedule = build_schedule(algo, Workload.transformer(b, s, h, a, dropout=0.1), "both", "bfloat16", gpus=t)
        kinds = {k.kind: k.nbytes for k in layer_activations(schedule, 0, "none")}
        assert kinds["moments"] == 2 * rows * 2 * 2  # S1 and S2, [rows, 2] at 2 B


GRIDS = [("1d", dict(gpus=4)), ("1d-sp", dict(gpus=4)), ("2d", dict(grid=(2, 2, 1))),
         ("summa25d", dict(grid=(2, 2, 2))), ("cannon25d", dict(grid=(2, 2, 2))), ("3d", dict(grid=(2, 2, 2)))]


@pytest.mark.parametrize("algo,kw", GRIDS, ids=[g[0] for g in GRIDS])
def test_kept_blocks_are_the_backward_schedules_inputs(algo, kw):
    """What a rank keeps is what the bwd-only schedule of the same arrangement starts from."""
    workload = Workload.transformer(4, 8, 32, 4, dropout=0.1)
    both = build_schedule(algo, workload, "both", "bfloat16", **kw)
    bwd = build_schedule(algo, workload, "bwd", "bfloat16", **kw)
    saved = {name for layer in workload.layers() for name in layer.saved}
    assert sum(k.nbytes for k in layer_activations(both, 0, "selective")) > 0
    for rank in range(both.world_size):  # Cannon's depth layers keep nothing: their bwd inputs are none
        inputs = sum(bwd.spec(rank, block.buffer).nbytes for block in bwd.inputs
                     if block.rank == rank and block.tensor in saved)
        kept = sum(k.nbytes for k in layer_activations(both, rank, "selective") if k.kind in ("kept", "moments"))
        assert kept == inputs


@pytest.mark.parametrize("algo,kw", GRIDS, ids=[g[0] for g in GRIDS])
def test_every_algorithm_has_a_positive_figure_ordered_by_recomputation(algo, kw):
    workload = Workload.transformer(4, 8, 32, 4, dropout=0.1, attention="unfused")
    schedule = build_schedule(algo, workload, "both", "bfloat16", **kw)
    none, selective, full = (sum(k.nbytes for k in layer_activations(schedule, 0, r))
                             for r in ("none", "selective", "full"))
    assert none > selective > full > 0
    flash = build_schedule(algo, dataclasses.replace(workload, attention="flash"), "both", "bfloat16", **kw)
    none, selective, full = (sum(k.nbytes for k in layer_activations(flash, 0, r))
                             for r in ("none", "selective", "full"))
    assert none == selective > full > 0


def test_depth_splits_tokens_so_summa25d_keeps_less_per_rank_as_d_grows():
    """[2,2,1] and [2,2,2] hold the same weight blocks (replicated over depth) but split tokens d ways."""
    workload = Workload.transformer(4, 8, 32, 4, dropout=0.1)
    flat = build_schedule("summa25d", workload, "both", "bfloat16", grid=(2, 2, 1))
    deep = build_schedule("summa25d", workload, "both", "bfloat16", grid=(2, 2, 2))
    for recompute in ("none", "selective", "full"):
        assert (sum(k.nbytes for k in layer_activations(flat, 0, recompute))
                == 2 * sum(k.nbytes for k in layer_activations(deep, 0, recompute)))


def test_megatron_1d_replicates_what_sequence_parallelism_shards():
    s, b, h, a, t = 16, 2, 64, 8, 4
    workload = Workload.transformer(b, s, h, a, dropout=0.1)
    tp = build_schedule("1d", workload, "both", "bfloat16", gpus=t)
    sp = build_schedule("1d-sp", workload, "both", "bfloat16", gpus=t)
    # X, A1, X2, A2 (2 B each) and the two dropout masks (1 B each) are whole on every 1-D rank.
    assert paper_bytes(tp, "selective") - paper_bytes(sp, "selective") == s * b * h * 10 * (1 - 1 / t)
