"""The norms as fused kernels on whole-row ranks: their values against torch's own autograd, the split
pieces they replace, and the passes a schedule charges where rows are whole and where columns are split."""

from __future__ import annotations

import numpy as np
import pytest

from simulator.algorithms.registry import build_schedule
from simulator.ir.ops import Local
from simulator.workloads.functions import FUNCTIONS
from simulator.workloads.kernels import layernorm as ln, rmsnorm as rms
from simulator.workloads.workload import Workload

R, C, EPS = 6, 8, 1e-5
PARAMS = {"n": C, "eps": EPS}


def _data():
    rng = np.random.default_rng(7)
    return (rng.uniform(-2, 2, (R, C)), rng.uniform(-2, 2, (R, C)), rng.uniform(0.5, 1.5, (1, C)),
            rng.uniform(-1, 1, (1, C)))


def _call(name: str, *inputs, **params):
    return FUNCTIONS[name].numpy(*inputs, **params)


def test_fused_layernorm_is_the_split_composition_and_torchs_autograd():
    torch = pytest.importorskip("torch")
    x, dy, gamma, beta = _data()
    m = _call("layernorm_fused_stats", x)
    y = _call("layernorm_fused", x, m, gamma, beta, **PARAMS)
    dx = _call("layernorm_fused_backward", dy, x, m, gamma, **PARAMS)
    dg, db = _call("layernorm_fused_gamma_grad", dy, x, m, **PARAMS), _call("layernorm_fused_beta_grad", dy)
    sums = ln.layernorm_backward_moments(dy, x, ln.row_moments(x), gamma, **PARAMS)
    np.testing.assert_allclose(dx, ln.layernorm_backward(dy, x, ln.row_moments(x), gamma, sums, **PARAMS),
                               rtol=0, atol=1e-12)
    tx, tg, tb = (torch.tensor(a, requires_grad=True) for a in (x, gamma[0], beta[0]))
    ty = torch.nn.functional.layer_norm(tx, (C,), tg, tb, EPS)
    ty.backward(torch.from_numpy(dy))
    for ours, theirs in ((y, ty), (dx, tx.grad), (dg[0], tg.grad), (db[0], tb.grad)):
        np.testing.assert_allclose(ours, theirs.detach().numpy(), rtol=1e-10, atol=1e-10)


def test_fused_rmsnorm_is_the_split_composition_and_torchs_autograd():
    torch = pytest.importorskip("torch")
    x, dy, gamma, _ = _data()
    s = _call("rmsnorm_fused_stats", x)
    y = _call("rmsnorm_fused", x, s, gamma, **PARAMS)
    dx = _call("rmsnorm_fused_backward", dy, x, s, gamma, **PARAMS)
    dg = _call("rmsnorm_fused_gamma_grad", dy, x, s, **PARAMS)
    total = rms.rmsnorm_backward_sum(dy, x, rms.row_sumsq(x), gamma, **PARAMS)
    np.testing.assert_allclose(dx, rms.rmsnorm_backward(dy, x, rms.row_sumsq(x), gamma, total, **PARAMS),
                               rtol=0, atol=1e-12)
    tx, tg = (torch.tensor(a, requires_grad=True) for a in (x, gamma[0]))
    ty = tx * torch.rsqrt((tx * tx).mean(-1, keepdim=True) + EPS) * tg
    ty.backward(torch.from_numpy(dy))
    for ours, theirs in ((y, ty), (dx, tx.grad), (dg[0], tg.grad)):
        np.testing.assert_allclose(ours, theirs.detach().numpy(), rtol=1e-10, atol=1e-10)


NORM_FNS = {"row_moments", "layernorm", "layernorm_backward_moments", "layernorm_backward", "layernorm_gamma_grad",
            "row_sumsq", "rmsnorm", "rmsnorm_backward_sum", "rmsnorm_backward", "rmsnorm_gamma_grad"}


def _norm_ops(schedule, rank: int) -> list[Local]:
    """The ops of the block's norms on ``rank`` (``col_sum`` only where it is LayerNorm's beta gradient)."""
    return [op for op in schedule.programs[rank] if isinstance(op, Local)
            and (op.fn in NORM_FNS or op.fn.startswith(("layernorm_fused", "rmsnorm_fused"))
                 or (op.fn == "col_sum" and op.out.startswith("dLN")))]


def _elements(schedule, rank: int) -> int:
    return sum(schedule.memory_bytes(rank, op) for op in _norm_ops(schedule, rank)) // 2  # bf16


@pytest.mark.parametrize("norm", ["layernorm", "rmsnorm"])
@pytest.mark.parametrize("algo, kw, rows", [("1d", {"gpus": 4}, 64), ("1d-sp", {"gpus": 4}, 16)])
def test_a_whole_row_schedule_charges_the_fused_kernels_passes(norm, algo, kw, rows):
    """Two norms per block, each 1 read + 1 write forward and 3 + 2 backward of its [rows, h] block, plus the
    [1, h] vectors and the [rows] statistics: 7 passes where the split pieces took 11."""
    h = 32
    extra = {} if norm == "layernorm" else {"norm": "rmsnorm", "activation": "swiglu", "bias": False}
    workload = Workload.transformer(4, 16, h, 4, **extra)
    schedule = build_schedule(algo, workload, "both", "bfloat16", **kw)
    fns = {op.fn for op in _norm_ops(schedule, 0)}
    assert fns and all("fused" in fn for fn in fns), fns
    stats, vectors = (2, 2) if norm == "layernorm" else (1, 1)
    per_norm = (2 * rows * h + vectors * h + stats * rows  # forward: x read, y and the statistics written
                + 3 * rows * h + h + stats * rows  # dx: dy, x, stats, gamma read, dx written
                + 2 * rows * h + stats * rows + vectors * h)  # gamma (beta): dy, x, stats read, [1, h] written
    assert _elements(schedule, 0) == 2 * per_norm


def test_a_column_split_schedule_keeps_the_split_pieces():
    """2-D splits the hidden columns: the moments are all-reduced over the row group, so the pieces stay."""
    workload = Workload.transformer(4, 16, 32, 4)
    schedule = build_schedule("2d", workload, "both", "bfloat16", grid=(2, 2, 1))
    fns = {op.fn for op in _norm_ops(schedule, 0)}
    assert {"row_moments", "layernorm", "layernorm_backward_moments", "layernorm_backward"} <= fns
    assert not any("fused" in fn for fn in fns)
