"""The compute model: the closed form, its monotonicity, the roofline bound, and config validation."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.compute import ComputeConfig, ComputeModel
from simulator.ir.ops import AllReduce, Gemm, Local, Slice
from simulator.ir.schedule import BufferSpec, Schedule

A100 = {"name": "A100", "peak_tflops": {"float64": 19.5, "float32": 19.5, "tfloat32": 156.0, "bfloat16": 312.0,
                                        "float16": 312.0}, "mem_bandwidth_GBps": 1555.0, "memory_GB": 40.0}


def test_large_square_gemm_runs_at_the_cap_times_the_thin_factor():
    model = ComputeModel(ComputeConfig(gemm_efficiency=0.8, half_efficiency_dim=64))
    t = model.gemm_time_s(A100, "bfloat16", 8192, 8192, 8192)
    expected = 2 * 8192**3 / (312e12 * 0.8 * 8192 / (8192 + 64))
    assert t == pytest.approx(expected, rel=1e-12)


def test_memory_bound_gemm_is_never_faster_than_streaming_its_operands():
    model = ComputeModel(ComputeConfig(half_efficiency_dim=0))
    m, k, n = 65536, 8, 65536  # an outer product: 2 flops per output element
    t = model.gemm_time_s(A100, "bfloat16", m, k, n)
    streamed = 2 * (m * k + k * n + m * n) / 1555e9
    assert t == pytest.approx(streamed, rel=1e-12)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 1 << 14), st.integers(1, 1 << 14), st.integers(1, 1 << 14), st.sampled_from(["m", "k", "n"]),
       st.sampled_from(["float32", "bfloat16", "float64"]))
def test_efficiency_is_monotone_and_capped(m, k, n, grow, dtype):
    model = ComputeModel(ComputeConfig(gemm_efficiency=0.7))
    shape = {"m": m, "k": k, "n": n}
    bigger = dict(shape, **{grow: shape[grow] * 2})
    e0 = model.gemm_efficiency(A100, dtype, **shape)
    e1 = model.gemm_efficiency(A100, dtype, **bigger)
    assert 0 < e0 <= e1 <= 0.7
    # More work never takes less time.
    assert model.gemm_time_s(A100, dtype, **bigger) >= model.gemm_time_s(A100, dtype, **shape)


def test_tf32_only_when_allowed():
    plain = ComputeModel().gemm_time_s(A100, "float32", 4096, 4096, 4096)
    tf32 = ComputeModel(ComputeConfig(allow_tf32=True)).gemm_time_s(A100, "float32", 4096, 4096, 4096)
    assert plain / tf32 == pytest.approx(156.0 / 19.5, rel=0.05)


def _schedule() -> Schedule:
    spec = BufferSpec((256, 512), "bfloat16")
    w = BufferSpec((512, 128), "bfloat16")
    out = BufferSpec((256, 128), "bfloat16")
    buffers = [{"X": spec, "W": w, "Y": out, "Z": out}]
    return Schedule("1d", (1,), {"name": "gemm", "m": 256, "k": 512, "n": 128}, "fwd", "bfloat16",
                    {"world": (0,)}, buffers, [[]])


def test_op_times_follow_the_ir_sizes():
    s = _schedule()
    model = ComputeModel()
    gemm = model.op_time_s(s, 0, Gemm(out="Y", a="X", b="W"), A100)
    assert gemm == model.gemm_time_s(A100, "bfloat16", 256, 512, 128)
    gelu = model.op_time_s(s, 0, Local(fn="gelu", out="Z", inputs=("Y",)), A100)
    assert gelu == pytest.approx(2 * 256 * 128 * 2 / 1555e9, rel=1e-12)
    copy = model.op_time_s(s, 0, Slice(out="Z", src="Y", out_rows=(0, 64)), A100)
    assert copy == pytest.approx(2 * 64 * 128 * 2 / 1555e9, rel=1e-12)
    assert model.op_time_s(s, 0, AllReduce(group="world", buf="Y"), A100) == 0.0


def test_config_from_sim_and_overrides():
    config = ComputeConfig.from_sim({"gemm_efficiency": 0.55, "collective_base_latency_us": 8.0},
                                    memory_efficiency=0.9)
    assert (config.gemm_efficiency, config.memory_efficiency) == (0.55, 0.9)
    assert ComputeConfig.from_sim(None) == ComputeConfig()


@pytest.mark.parametrize("field, value, match", [
    ("gemm_efficiency", 0.0, "gemm_efficiency must be in"),
    ("gemm_efficiency", 1.5, "gemm_efficiency must be in"),
    ("memory_efficiency", -1, "memory_efficiency must be in"),
    ("half_efficiency_dim", -2, "half_efficiency_dim must be >= 0"),
])
def test_bad_config_is_named(field, value, match):
    with pytest.raises(ValueError, match=match):
        ComputeConfig(**{field: value})


def test_missing_dtype_rate_is_named():
    with pytest.raises(ValueError, match="has no peak_tflops for float16"):
        ComputeModel().gemm_time_s({"name": "X", "peak_tflops": {"float32": 1.0}, "mem_bandwidth_GBps": 1.0},
                                   "float16", 8, 8, 8)


def test_a_gemm_after_communication_uses_its_own_cap_only_where_one_is_set():
    plain = ComputeModel(ComputeConfig(gemm_efficiency=0.4))
    shared = ComputeModel(ComputeConfig(gemm_efficiency=0.4, gemm_efficiency_after_comm=0.6))
    t = plain.gemm_time_s(A100, "bfloat16", 4096, 4096, 4096)
    assert plain.gemm_time_s(A100, "bfloat16", 4096, 4096, 4096, after_comm=True) == t
    assert shared.gemm_time_s(A100, "bfloat16", 4096, 4096, 4096) == t
    assert shared.gemm_time_s(A100, "bfloat16", 4096, 4096, 4096, after_comm=True) == pytest.approx(t * 0.4 / 0.6)
    with pytest.raises(ValueError, match="gemm_efficiency_after_comm must be in"):
        ComputeConfig(gemm_efficiency_after_comm=1.2)


def test_the_simulator_times_a_gemm_after_a_collective_at_the_after_comm_cap():
    from simulator.algorithms.registry import build_schedule
    from simulator.timing.simulation import simulate
    from simulator.workloads.workload import Workload
    from topologies import load_topology

    # 1d gemm backward on 2 ranks: dA's gemm, its all_reduce, then dB's gemm (after the collective).
    schedule = build_schedule("1d", Workload.gemm(256, 256, 256), "bwd", gpus=2)
    kinds = [op.kind for op in schedule.programs[0]]
    G = load_topology("loopback:2")

    def gemm_durations(sim: dict) -> list[float]:
        G.graph["sim"].update(sim)
        records = simulate(schedule, G).op_records()
        return [r["duration_s"] for r in records if r["rank"] == 0 and r["kind"] == "gemm"]

    first, after = gemm_durations({"gemm_efficiency": 0.4})
    assert kinds.index("all_reduce") < len(kinds) - 1 and first == pytest.approx(after)
    first, after = gemm_durations({"gemm_efficiency": 0.4, "gemm_efficiency_after_comm": 0.8})
    assert after == pytest.approx(first / 2)
