"""FlashAttention-2 kernel times from its published throughput (topologies.attention_rates)."""

from __future__ import annotations

import math

import pytest

from simulator.compute import ComputeModel
from simulator.workloads.attention_cost import attention_work, flash_time_s, flash_tflops
from topologies.attention_rates import FA2_SEQ_LENS, FA2_TFLOPS, flash_flops, published_tflops
from topologies.devices import DEVICES

A100 = DEVICES["A100-SXM4-80GB"].as_dict()
H100 = DEVICES["H100-SXM5-80GB"].as_dict()


def _work(seq, head_dim=128, heads=16, sequences=2, backward=False):
    """The flash op's work on a [sequences * seq, 3 * heads * head_dim] QKV block."""
    shape = (sequences * seq, 3 * heads * head_dim)
    params = {"seq": seq, "head_dim": head_dim, "heads": heads, "p": 0.0}
    shapes = [(sequences * seq, heads * head_dim), shape] if backward else [shape]
    return attention_work(shapes, (sequences * seq, heads * head_dim), params, backward=backward, flash=True)


def test_a_published_row_reproduces_its_figure():
    """Fig. 4(d) of the paper, A100 80GB, causal, d 128, 2k: 155 TFLOP/s forward + backward."""
    count, seq, d = 8 * 16, 2048, 128  # the benchmark's batch 8 x 16 heads at 2k
    fwd = flash_time_s(A100, "bfloat16", ("forward", count, seq, d))
    bwd = flash_time_s(A100, "bfloat16", ("backward", count, seq, d))
    assert flash_flops(count, seq, d, mode="forward_backward") / (fwd + bwd) / 1e12 == pytest.approx(155.0)
    assert flash_flops(count, seq, d, mode="forward_backward") / (fwd + bwd) / 1e12 == pytest.approx(
        FA2_TFLOPS["A100-SXM4-80GB", True, 128][FA2_SEQ_LENS.index(2048)])
    # Fig. 7(c), H100, causal, d 64, 8k: 273
    assert published_tflops("H100-SXM5-80GB", 64, 8192) == 273.0


def test_causal_takes_half_the_flops():
    assert flash_flops(4, 1024, 64, causal=True) * 2 == flash_flops(4, 1024, 64, causal=False) == 4 * 4 * 1024**2 * 64
    assert flash_flops(4, 1024, 64, mode="backward") == 2.5 * flash_flops(4, 1024, 64)


def test_longer_sequences_are_faster_per_flop():
    """Per FLOP (time over the causal FLOPs), each longer sequence takes less time, also between rows."""
    for device in (A100, H100, DEVICES["B200-180GB"].as_dict()):
        for d in (64, 128):
            per_flop = [flash_time_s(device, "bfloat16", ("forward", 8, s, d)) / flash_flops(8, s, d)
                        for s in (512, 768, 1024, 3000, 4096, 16384)]
            assert all(a > b for a, b in zip(per_flop, per_flop[1:])), (device["name"], d, per_flop)


def test_interpolation_is_linear_in_log_sequence_and_held_at_the_ends():
    row = FA2_TFLOPS["A100-SXM4-80GB", True, 64]
    assert published_tflops("A100-SXM4-80GB", 64, int(round(2 ** 11.25))) == pytest.approx(
        row[2] + (row[3] - row[2]) * (math.log2(round(2 ** 11.25)) - 11), rel=1e-12)
    assert published_tflops("A100-SXM4-80GB", 64, 128) == row[0]
    assert published_tflops("A100-SXM4-80GB", 64, 65536) == row[-1]
    # the hidden labels of the non-causal d 128 row are skipped, not guessed
    assert published_tflops("A100-SXM4-80GB", 128, 512, causal=False) == 187.0


def test_nearest_head_dimension():
    assert published_tflops("H100-SXM5-80GB", 80, 4096) == published_tflops("H100-SXM5-80GB", 64, 4096)
    assert published_tflops("H100-SXM5-80GB", 96, 4096) == published_tflops("H100-SXM5-80GB", 128, 4096)
    assert published_tflops("H100-SXM5-80GB", 256, 4096) == 294.0


def test_devices_without_figures_scale_by_peak_and_others_keep_the_product_model():
    assert flash_tflops(DEVICES["A100-SXM4-40GB"].as_dict(), "bfloat16", 128, 4096) == 173.0
    assert flash_tflops(DEVICES["H200-SXM-141GB"].as_dict(), "float16", 128, 4096) == 294.0
    b200 = DEVICES["B200-180GB"].as_dict()
    assert flash_tflops(b200, "bfloat16", 128, 4096) == pytest.approx(294.0 * 2250.0 / H100["peak_tflops"]["bfloat16"])
    assert flash_tflops(DEVICES["V100-SXM2-32GB"].as_dict(), "float16", 128, 4096) is None  # no FA2 before Ampere
    assert flash_tflops(A100, "float32", 128, 4096) is None  # FA2 computes in fp16 / bf16 only
    assert flash_tflops(DEVICES["cpu-core"].as_dict(), "bfloat16", 128, 4096) is None


def test_the_compute_model_times_flash_ops_from_the_table_and_unfused_as_before():
    model = ComputeModel()
    work = _work(4096)
    expected = flash_flops(2 * 16, 4096, 128) / (173.0e12)
    assert model.work_time_s(A100, "bfloat16", work) == pytest.approx(expected)
    backward = _work(4096, backward=True)
    assert model.work_time_s(A100, "bfloat16", backward) == pytest.approx(2.5 * expected)
    # the unfused kernel keeps the product model; so does flash where there is no published rate
    unfused = attention_work([(2 * 4096, 3 * 2048)], (2 * 4096, 2048), {"seq": 4096, "head_dim": 128, "heads": 16,
                                                                        "p": 0.0})
    assert unfused.flash is None
    products = sum(c * model.gemm_time_s(A100, "float32", m, k, n) for c, m, k, n in work.gemms)
    assert model.work_time_s(A100, "float32", work) > products
