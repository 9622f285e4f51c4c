"""The compute model on the transformer's kernels: each one's time, FLOPs and bytes against the formula
of ``simulator/compute.py``'s table, and a whole block's products against the dense count."""

from __future__ import annotations

import pytest

from simulator.algorithms.registry import build_schedule
from simulator.compute import ComputeConfig, ComputeModel
from simulator.gemm_shape import shape_factor
from simulator.ir.ops import Gemm, Local
from simulator.ir.schedule import BufferSpec, Schedule
from simulator.workloads.workload import Workload
from topologies.devices import H100_SXM5_80GB

H100 = H100_SXM5_80GB.as_dict()
BANDWIDTH = 0.9 * 3350e9  # the preset's achievable memory bandwidth (90% of the datasheet's), bytes per second
R, C = 256, 512  # the [rows, cols] block every non-attention kernel works on
LN = {"n": 4 * C, "eps": 1e-5}
DROP = {"p": 0.1, "stream": 1, "row0": 0, "col0": 0, "width": 4 * C}


def _one_op(fn: str, shapes: dict[str, tuple[int, int]], params: dict, dtype: str = "bfloat16") -> Schedule:
    """A one-rank schedule declaring ``shapes`` (the last one the output) and running one local op."""
    names = list(shapes)
    op = Local(fn=fn, out=names[-1], inputs=tuple(names[:-1]), params=tuple(params.items()))
    buffers = [{name: BufferSpec(shape, dtype) for name, shape in shapes.items()}]
    return Schedule("1d", (1,), {"name": "transformer"}, "fwd", dtype, {"world": (0,)}, buffers, [[op]])


def _gemm_s(m: int, k: int, n: int, half: float = 64.0, nbytes: int = 2) -> float:
    """The gemm closed form of compute.py, written out: 2mkn over peak times the lower of the two roofs, the
    cap being the H100's achievable 794.5 TFLOP/s at its measured shape 2048 x 2048 x 13312 (132 SMs)."""
    peak = H100["peak_tflops"]["bfloat16"] * 1e12
    cap = 794.5e12 / peak / shape_factor(2048, 2048, 13312, 132, 64.0)
    intensity = 2 * m * k * n / (nbytes * (m * k + k * n + m * n))
    return 2 * m * k * n / (peak * min(cap * shape_factor(m, n, k, 132, half), intensity * BANDWIDTH / peak))


row, col, moments = (R, C), (1, C), (R, 2)
# fn, buffers (inputs..., output), params, elements read + written, elementwise FLOPs: the docstring's table.
PASSES = [
    ("add", {"a": row, "b": row, "y": row}, {}, 3 * R * C, 2 * R * C),
    ("gelu", {"x": row, "y": row}, {}, 2 * R * C, R * C),
    ("gelu_backward", {"dy": row, "x": row, "dx": row}, {}, 3 * R * C, 2 * R * C),
    ("copy", {"x": row, "y": row}, {}, 2 * R * C, R * C),
    ("zero", {"y": row}, {}, R * C, 0),
    ("bias_add", {"x": row, "b": col, "y": row}, {}, 2 * R * C + C, 2 * R * C),
    ("dropout", {"x": row, "y": row}, DROP, 2 * R * C, R * C),
    ("col_sum", {"dy": row, "db": col}, {}, R * C + C, R * C),
    ("row_moments", {"x": row, "m": moments}, {}, R * C + 2 * R, 3 * R * C),
    ("layernorm", {"x": row, "m": moments, "g": col, "b": col, "y": row}, LN, 2 * R * C + 2 * R + 2 * C, 4 * R * C),
    ("layernorm_backward_moments", {"dy": row, "x": row, "m": moments, "g": col, "gm": moments}, LN,
     2 * R * C + 4 * R + C, 6 * R * C),
    ("layernorm_backward", {"dy": row, "x": row, "m": moments, "g": col, "gm": moments, "dx": row}, LN,
     3 * R * C + 4 * R + C, 7 * R * C),
    ("layernorm_gamma_grad", {"dy": row, "x": row, "m": moments, "dg": col}, LN, 2 * R * C + 2 * R + C, 4 * R * C),
    # the fused kernels on whole rows (apex's passes, kernels.fused_norm): x read once forward, dy and x twice back
    ("layernorm_fused_stats", {"x": row, "m": moments}, {}, 2 * R, 3 * R * C),
    ("layernorm_fused", {"x": row, "m": moments, "g": col, "b": col, "y": row}, LN, 2 * R * C + 2 * C, 4 * R * C),
    ("layernorm_fused_backward", {"dy": row, "x": row, "m": moments, "g": col, "dx": row}, LN,
     3 * R * C + C + 2 * R, 13 * R * C),
    ("layernorm_fused_gamma_grad", {"dy": row, "x": row, "m": moments, "dg": col}, LN, 2 * R * C + 2 * R + C,
     4 * R * C),
    ("layernorm_fused_beta_grad", {"dy": row, "db": col}, {}, C, R * C),
    ("rmsnorm_fused_stats", {"x": row, "s": (R, 1)}, {}, R, 2 * R * C),
    ("rmsnorm_fused", {"x": row, "s": (R, 1), "g": col, "y": row}, LN, 2 * R * C + C, 3 * R * C),
    ("rmsnorm_fused_backward", {"dy": row, "x": row, "s": (R, 1), "g": col, "dx": row}, LN, 3 * R * C + C + R,
     9 * R * C),
    ("rmsnorm_fused_gamma_grad", {"dy": row, "x": row, "s": (R, 1), "dg": col}, LN, 2 * R * C + R + C, 3 * R * C),
]


@pytest.mark.parametrize("fn, shapes, params, elements, flops", PASSES, ids=[p[0] for p in PASSES])
def test_memory_bound_kernel_is_one_pass_at_the_memory_bandwidth(fn, shapes, params, elements, flops):
    schedule = _one_op(fn, shapes, params)
    op = schedule.programs[0][0]
    assert schedule.memory_bytes(0, op) == 2 * elements
    assert schedule.flops(0, op) == flops
    assert ComputeModel().op_time_s(schedule, 0, op, H100) == pytest.approx(2 * elements / BANDWIDTH, rel=1e-12)
    # memory_efficiency scales the bandwidth, nothing else.
    slower = ComputeModel(ComputeConfig(memory_efficiency=0.5)).op_time_s(schedule, 0, op, H100)
    assert slower == pytest.approx(2 * 2 * elements / BANDWIDTH, rel=1e-12)


def _attention_params(p: float, seq: int, heads: int, head_dim: int) -> dict:
    return {"p": p, "stream": 0, "seq": seq, "heads": heads, "head_dim": head_dim, "batch0": 0, "head0": 0,
            "heads_total": heads}


@pytest.mark.parametrize("p", [0.0, 0.1])
def test_attention_forward_is_two_batched_products_and_the_score_passes(p):
    nb, s, a, d = 2, 512, 4, 64
    params = _attention_params(p, s, a, d)
    schedule = _one_op("attention", {"qkv": (nb * s, 3 * a * d), "ctx": (nb * s, a * d)}, params)
    op = schedule.programs[0][0]
    count, scores = nb * a, nb * a * s * s
    io = nb * s * 3 * a * d + nb * s * a * d
    elements = io + (4 if p else 2) * scores  # softmax 2 passes, dropout 2 more when p > 0
    assert schedule.memory_bytes(0, op) == 2 * elements
    assert schedule.flops(0, op) == 2 * (2 * count * s * s * d) + (6 if p else 5) * scores
    expected = count * _gemm_s(s, d, s) + count * _gemm_s(s, s, d) + 2 * elements / BANDWIDTH
    assert ComputeModel().op_time_s(schedule, 0, op, H100) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("p", [0.0, 0.1])
def test_unfused_attention_backward_reads_the_kept_probabilities_and_runs_four_products(p):
    nb, s, a, d = 2, 512, 4, 64
    params = _attention_params(p, s, a, d)
    shapes = {"dctx": (nb * s, a * d), "qkv": (nb * s, 3 * a * d), "dqkv": (nb * s, 3 * a * d)}
    schedule = _one_op("attention_backward", shapes, params)
    op = schedule.programs[0][0]
    count, scores = nb * a, nb * a * s * s
    io = nb * s * a * d + 2 * nb * s * 3 * a * d
    elements = io + (5 if p else 3) * scores  # dS: 3 passes; dropout of dP': 2 more when p > 0
    assert schedule.memory_bytes(0, op) == 2 * elements
    assert schedule.flops(0, op) == 4 * (2 * count * s * s * d) + (6 if p else 4) * scores
    # dP' is [s, d] x [d, s]; dV, dQ and dK are [s, s] x [s, d]; no S again.
    expected = count * _gemm_s(s, d, s) + 3 * count * _gemm_s(s, s, d) + 2 * elements / BANDWIDTH
    assert ComputeModel().op_time_s(schedule, 0, op, H100) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("p", [0.0, 0.1])
def test_flash_attention_makes_no_pass_over_the_scores_and_its_backward_recomputes_them(p):
    nb, s, a, d = 2, 512, 4, 64
    params = {**_attention_params(p, s, a, d), "group": 1}
    count, scores = nb * a, nb * a * s * s
    forward = _one_op("flash_attention", {"qkv": (nb * s, 3 * a * d), "ctx": (nb * s, a * d)}, params)
    op = forward.programs[0][0]
    elements = nb * s * 3 * a * d + nb * s * a * d + 2 * count * s  # io, and the log-sum-exp written and read
    assert forward.memory_bytes(0, op) == 2 * elements
    assert forward.flops(0, op) == 2 * (2 * count * s * s * d) + (6 if p else 5) * scores
    # timed from FlashAttention-2's published causal rate (H100, d 64, s 512: 141 TFLOP/s forward +
    # backward, Dao 2023 Fig. 7c) on the causal half of the products, not from the product model
    expected = 4 * count * s * s * d / 2 / 141e12
    assert ComputeModel().op_time_s(forward, 0, op, H100) == pytest.approx(expected, rel=1e-12)
    shapes = {"dctx": (nb * s, a * d), "qkv": (nb * s, 3 * a * d), "dqkv": (nb * s, 3 * a * d)}
    backward = _one_op("flash_attention_backward", shapes, params)
    op = backward.programs[0][0]
    elements = nb * s * a * d + 2 * nb * s * 3 * a * d + 4 * count * s
    assert backward.memory_bytes(0, op) == 2 * elements
    assert backward.flops(0, op) == 5 * (2 * count * s * s * d) + (11 if p else 9) * scores
    assert ComputeModel().op_time_s(backward, 0, op, H100) == pytest.approx(2.5 * expected, rel=1e-12)


def _products_flops(schedule: Schedule) -> int:
    """Every rank's gemm FLOPs plus the attention kernels' product FLOPs, summed over ranks."""
    total = 0
    for rank, program in enumerate(schedule.programs):
        for op in program:
            if isinstance(op, Gemm):
                total += schedule.flops(rank, op)
            elif isinstance(op, Local):
                total += sum(2 * c * m * k * n for c, m, k, n in schedule.local_work(rank, op).gemms)
    return total


GRIDS = [("1d", {"gpus": 4}), ("1d-sp", {"gpus": 4}), ("2d", {"grid": (2, 2, 1)}), ("summa25d", {"grid": (2, 2, 2)}),
         ("cannon25d", {"grid": (2, 2, 2)})]


@pytest.mark.parametrize("passes", ["fwd", "bwd", "both"])
@pytest.mark.parametrize("algorithm, grid", GRIDS, ids=[g[0] for g in GRIDS])
def test_block_products_sum_over_ranks_to_the_dense_count(algorithm, grid, passes):
    """Linears: forward 2 M (h 3h + h h + h f + f h); backward twice that (dX and dW of each). Attention,
    over the full s x s (the causal mask's zero half included): 2 products of 2 s^2 d per sequence and
    head forward, 5 backward (S recomputed, then dV, dP', dQ, dK)."""
    b, s, h, a = 4, 8, 16, 4
    workload = Workload.transformer(b, s, h, a, dropout=0.1)
    f, d, M = 4 * h, h // a, b * s
    linears = 2 * M * (h * 3 * h + h * h + h * f + f * h)
    attention = 2 * b * a * s * s * d
    dense = {"fwd": linears + 2 * attention, "bwd": 2 * linears + 5 * attention,
             "both": 3 * linears + 7 * attention}[passes]
    assert _products_flops(build_schedule(algorithm, workload, passes, "bfloat16", **grid)) == dense
