"""The compute side of each device preset: its achievable figures are attached, its reserve is the memory model's."""

import pytest

from simulator.memory.device import usable_device_bytes
from topologies.compute_rates import COMPUTE_RATES
from topologies.devices import DEVICES


@pytest.mark.parametrize("name", sorted(DEVICES))
def test_each_presets_listed_reserve_is_the_one_the_memory_model_takes_off(name):
    spec = DEVICES[name]
    assert usable_device_bytes(spec.as_dict()) == pytest.approx((spec.memory_GB - spec.reserve_GB) * 1e9, abs=1)


@pytest.mark.parametrize("name", sorted(COMPUTE_RATES))
def test_achievable_figures_sit_below_the_datasheet_peaks(name):
    device = DEVICES[name].as_dict()
    assert device["sms"] > 0 and 0 < device["mem_bandwidth_achievable_GBps"] < device["mem_bandwidth_GBps"]
    for dtype, tflops in device["gemm_tflops"].items():
        assert 0.6 * device["peak_tflops"][dtype] < tflops < device["peak_tflops"][dtype]
