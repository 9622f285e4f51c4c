"""The per-shape GEMM model: thin and misfitting shapes lose rate, shards keep it, the published ceiling is met."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.compute import ComputeConfig, ComputeModel
from simulator.gemm_shape import shape_factor, tile_efficiency
from simulator.ir.schedule import DTYPE_BYTES
from topologies.compute_rates import COMPUTE_RATES
from topologies.devices import A100_SXM4_80GB, DEVICES, H100_SXM5_80GB
from topologies.errors import TopologyError
from topologies.validate import check_device

A100 = A100_SXM4_80GB.as_dict()
H100 = H100_SXM5_80GB.as_dict()
MODEL = ComputeModel()


@pytest.mark.parametrize("device", [A100, H100], ids=["A100", "H100"])
def test_a_thin_gemm_is_slower_per_flop_than_a_square_one(device):
    square = MODEL.gemm_efficiency(device, "bfloat16", 8192, 8192, 8192)
    for m, k, n in ((8192, 8192, 64), (64, 8192, 8192), (8192, 96, 8192)):
        assert MODEL.gemm_efficiency(device, "bfloat16", m, k, n) < 0.9 * square


@pytest.mark.parametrize("device", [A100, H100], ids=["A100", "H100"])
def test_a_tensor_parallel_shard_keeps_its_efficiency_until_it_is_thin(device):
    # GPT-3's MLP up-projection (8,192 tokens, 12,288 -> 49,152) split by columns over t ranks.
    full = MODEL.gemm_efficiency(device, "bfloat16", 8192, 12288, 49152)
    for t in (2, 4, 8, 16):
        assert MODEL.gemm_efficiency(device, "bfloat16", 8192, 12288, 49152 // t) == pytest.approx(full, rel=0.05)
    thin = MODEL.gemm_efficiency(device, "bfloat16", 8192, 12288, 49152 // 768)  # 64 columns per rank
    assert thin < 0.8 * full


def test_one_tile_past_a_full_wave_costs_a_second_wave():
    one_wave = shape_factor(108 * 256, 128, 8192, 108, 64.0)  # 108 tiles of 256 x 128
    assert one_wave == pytest.approx(tile_efficiency(256, 128) * 8192 / (8192 + 64))
    assert shape_factor(109 * 256, 128, 8192, 108, 64.0) < 0.95 * one_wave


@pytest.mark.parametrize("name", sorted(COMPUTE_RATES))
def test_each_device_reaches_its_published_achievable_rate_at_its_measured_shape(name):
    device = DEVICES[name].as_dict()
    rates = COMPUTE_RATES[name]
    m, n, k = rates.gemm_shape
    for dtype, tflops in rates.gemm_tflops.items():
        if dtype not in DTYPE_BYTES:  # float8: listed for the presets, not an IR dtype
            continue
        achieved = 2 * m * n * k / MODEL.gemm_time_s(device, dtype, m, k, n) / 1e12
        assert achieved == pytest.approx(tflops, rel=1e-9)
        # and no shape beats it by more than the shape model's spread
        assert MODEL.gemm_efficiency(device, dtype, 16384, 16384, 16384) * device["peak_tflops"][dtype] < 1.05 * tflops



@pytest.mark.parametrize("name", sorted(n for n, r in COMPUTE_RATES.items() if r.best_case_tflops))
def test_a_sustained_rate_sits_below_the_best_case_search_at_the_search_shape(name):
    # The sustained figure (back-to-back GEMMs at the power limit's clock) replaces the MAMF only
    # where it is the slower of the two: read at the MAMF's own best shape it must not exceed it.
    device = DEVICES[name].as_dict()
    m, n, k = COMPUTE_RATES[name].best_case_shape
    at_best_shape = 2 * m * n * k / MODEL.gemm_time_s(device, "bfloat16", m, k, n) / 1e12
    assert at_best_shape < COMPUTE_RATES[name].best_case_tflops

@settings(max_examples=150, deadline=None)
@given(st.integers(1, 1 << 14), st.integers(1, 1 << 14), st.integers(1, 1 << 14), st.sampled_from(["m", "k", "n"]))
def test_more_work_never_takes_less_time_on_a_gpu(m, k, n, grow):
    shape = {"m": m, "k": k, "n": n}
    bigger = dict(shape, **{grow: shape[grow] + 1})
    assert MODEL.gemm_time_s(A100, "bfloat16", **bigger) >= MODEL.gemm_time_s(A100, "bfloat16", **shape) * (1 - 1e-12)
    assert 0 < MODEL.gemm_efficiency(A100, "bfloat16", **shape) <= MODEL.cap(A100, "bfloat16")


def test_a_shallow_gemm_streams_at_the_achievable_bandwidth_not_the_datasheet_rate():
    m, k, n = 65536, 8, 65536
    streamed = 2 * (m * k + k * n + m * n) / (A100["mem_bandwidth_achievable_GBps"] * 1e9)
    assert MODEL.gemm_time_s(A100, "bfloat16", m, k, n) == pytest.approx(streamed, rel=1e-12)
    assert A100["mem_bandwidth_achievable_GBps"] < A100["mem_bandwidth_GBps"]


def test_a_calibrated_cap_overrides_the_published_one_and_a_device_without_one_falls_back():
    assert ComputeModel(ComputeConfig(gemm_efficiency=0.5)).cap(A100, "bfloat16") == 0.5
    v100 = DEVICES["V100-SXM2-32GB"].as_dict()
    assert "gemm_tflops" not in v100 and MODEL.cap(v100, "float16") == 0.7


@pytest.mark.parametrize("key, value, match", [
    ("sms", 0, "sms must be an integer > 0"),
    ("gemm_shape", [1, 2], r"gemm_shape must be \[M, N, K\]"),
    ("gemm_tflops", {"bfloat16": -1}, "gemm_tflops must map"),
    ("mem_bandwidth_achievable_GBps", 0, "mem_bandwidth_achievable_GBps must be > 0"),
])
def test_a_bad_achievable_figure_in_a_device_is_named(key, value, match):
    with pytest.raises(TopologyError, match=match):
        check_device({**A100, key: value}, "GPU gpu0")

