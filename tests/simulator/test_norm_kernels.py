"""``--norm-kernel``: Transformer Engine's and eager PyTorch's norms against the fused default, on numbers,
passes and kept memory (``simulator.workloads.kernels.norm_variants``)."""

from __future__ import annotations

import numpy as np
import pytest

from simulator.algorithms.registry import build_schedule
from simulator.errors import InputError, NotApplicable
from simulator.ir.ops import Local
from simulator.ir.serialize import schedule_to_dict
from simulator.memory.activations import layer_activations
from simulator.workloads.functions import FUNCTIONS
from simulator.workloads.kernels.norm_variants import VARIANTS
from simulator.workloads.workload import Workload
from tests.dispatch_bytes import byte_counter

R, C, EPS = 6, 8, 1e-5
PARAMS = {"n": C, "eps": EPS}
LLAMA = {"norm": "rmsnorm", "activation": "swiglu", "bias": False}


def _data():
    rng = np.random.default_rng(11)
    return rng.uniform(-2, 2, (R, C)), rng.uniform(-2, 2, (R, C)), rng.uniform(0.5, 1.5, (1, C))


def _norm_ops(schedule, rank: int) -> list[Local]:
    return [op for op in schedule.programs[rank] if isinstance(op, Local)
            and op.fn.startswith(("layernorm_", "rmsnorm_")) and op.fn.split("_")[1] in ("fused", "te", "eager")]


def _bytes(schedule, rank: int, backward: bool) -> int:
    """Bytes the norms' ops move in one pass direction (the backward's ops write gradients: ``d`` names)."""
    return sum(schedule.memory_bytes(rank, op) for op in _norm_ops(schedule, rank)
               if op.out.startswith("d") == backward)


def _schedule(norm: str, kernel: str, algo: str = "1d", **kw):
    extra = LLAMA if norm == "rmsnorm" else {}
    workload = Workload.transformer(4, 16, 32, 4, norm_kernel=kernel, **extra)
    return build_schedule(algo, workload, "both", "bfloat16", **(kw or {"gpus": 2}))


def test_every_variant_has_its_fused_functions_values():
    x, dy, gamma = _data()
    for name, (base, _) in VARIANTS.items():
        ours, fused = FUNCTIONS[name], FUNCTIONS[base]
        assert (ours.arity, ours.params) == (fused.arity, fused.params)
        stats = FUNCTIONS[base.split("_")[0] + "_fused_stats"].numpy(x)
        args = {1: (x,), 3: (x, stats, gamma) if ours.arity == 3 and "gamma" not in name else (dy, x, stats),
                4: (dy, x, stats, gamma)}[ours.arity]
        params = {} if name.endswith("stats") else PARAMS
        np.testing.assert_array_equal(ours.numpy(*args, **params), fused.numpy(*args, **params))


def test_eager_values_are_torchtitans_rmsnorm_under_autograd():
    """torchtitan's ``RMSNorm.forward`` op for op (``kernels.norm_variants``), in float64."""
    torch = pytest.importorskip("torch")
    x, dy, gamma = _data()
    s = FUNCTIONS["rmsnorm_eager_stats"].numpy(x)
    y = FUNCTIONS["rmsnorm_eager"].numpy(x, s, gamma, **PARAMS)
    dx = FUNCTIONS["rmsnorm_eager_backward"].numpy(dy, x, s, gamma, **PARAMS)
    dg = FUNCTIONS["rmsnorm_eager_gamma_grad"].numpy(dy, x, s, **PARAMS)
    tx, tg = torch.tensor(x, requires_grad=True), torch.tensor(gamma[0], requires_grad=True)
    xf = tx.double()  # x.float(): an upcast, the identity at float64
    ty = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS)).type_as(tx) * tg
    ty.backward(torch.from_numpy(dy))
    for ours, theirs in ((y, ty), (dx, tx.grad), (dg[0], tg.grad)):
        np.testing.assert_allclose(ours, theirs.detach().numpy(), rtol=1e-10, atol=1e-10)


def test_eager_work_is_what_torchs_dispatcher_runs():
    """Every aten op of torchtitan's eager RMSNorm on bf16 x and weight, forward and autograd's backward, its
    tensors' bytes read and written (a broadcast input at its stored size): the work rules' totals, exactly."""
    torch = pytest.importorskip("torch")
    Count = byte_counter(torch)

    r, c = 24, 64
    x = torch.randn(r, c, dtype=torch.bfloat16, requires_grad=True)
    w = torch.ones(c, dtype=torch.bfloat16, requires_grad=True)
    dy = torch.randn(r, c, dtype=torch.bfloat16)
    forward, backward = Count(), Count()
    with forward:
        xf = x.float()
        y = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).type_as(x) * w
    with backward:
        y.backward(dy)
    assert forward.ops == ["_to_copy", "pow", "mean", "add", "rsqrt", "mul", "_to_copy", "mul"]

    def charged(*names) -> int:
        works = [FUNCTIONS[n].work([(r, c)] * 4, (r, c), PARAMS) for n in names]
        return sum(2 * wk.elements + 4 * wk.fp32_elements for wk in works)

    # The [r, 1] statistic and [1, c] gamma buffers are tpsim's IR's; the ops' own bytes only.
    assert forward.nbytes == charged("rmsnorm_eager_stats", "rmsnorm_eager")
    gamma_grad = FUNCTIONS["rmsnorm_eager_gamma_grad"].work([(r, c)], (1, c), PARAMS)
    dx = FUNCTIONS["rmsnorm_eager_backward"].work([(r, c)] * 4, (r, c), PARAMS)
    assert backward.nbytes == 2 * (gamma_grad.elements + dx.elements) + 4 * (gamma_grad.fp32_elements + dx.fp32_elements)
    # per element 36 and 92, plus the [r, 1] fp32 terms (5 + 1 forward, 10 backward) and the [c] weight's reads
    assert forward.nbytes == 36 * r * c + 4 * 6 * r + 2 * c
    assert backward.nbytes == 92 * r * c + 4 * 10 * r + 2 * 2 * c


@pytest.mark.parametrize("norm", ["layernorm", "rmsnorm"])
def test_te_backward_is_three_passes_and_its_forward_the_fused_one(norm):
    fused, te = _schedule(norm, "fused"), _schedule(norm, "te")
    rows, h, stats = 64, 32, 2 if norm == "layernorm" else 1
    assert _bytes(te, 0, backward=False) == _bytes(fused, 0, backward=False)
    # per norm: dx reads dy, x, stats, gamma and writes dx; the gamma (and beta) sums write [1, h] only
    per_norm = 3 * rows * h + h + stats * rows + (2 if norm == "layernorm" else 1) * h
    assert _bytes(te, 0, backward=True) == 2 * 2 * per_norm
    assert _bytes(te, 0, backward=True) < _bytes(fused, 0, backward=True)
    saved = (2 * rows * h + stats * rows) * 2 * 2  # the gamma kernel's second read of dy and x, and the stats
    assert _bytes(fused, 0, backward=True) - _bytes(te, 0, backward=True) == saved


def test_eager_forward_and_backward_bytes_per_element():
    """36 and 92 bytes per element of each norm's [rows, h] block, plus its [rows] and [h] terms."""
    schedule = _schedule("rmsnorm", "eager")
    rows, h = 64, 32
    assert {op.fn for op in _norm_ops(schedule, 0)} == {"rmsnorm_eager_stats", "rmsnorm_eager",
                                                         "rmsnorm_eager_backward", "rmsnorm_eager_gamma_grad"}
    assert _bytes(schedule, 0, backward=False) == 2 * (36 * rows * h + 2 * h + 4 * 6 * rows)
    assert _bytes(schedule, 0, backward=True) == 2 * (92 * rows * h + 2 * 2 * h + 4 * 10 * rows)


def test_eager_keeps_autograds_fp32_tensors_and_nothing_under_recomputation():
    fused, eager = _schedule("rmsnorm", "fused"), _schedule("rmsnorm", "eager")
    rows, h = 64, 32

    def kinds(schedule, mode):
        return {k.kind: k.nbytes for k in layer_activations(schedule, 0, mode)}

    a, b = kinds(fused, "none"), kinds(eager, "none")
    assert "eager" not in a and "moments" not in b
    assert b["eager"] == 2 * (rows * h * (4 + 2) + 4 * rows)  # x.float(), the bf16 normalised, 1/rms
    # X and X2 (the norms' inputs) are no longer kept in bf16; nothing else changes
    assert a["kept"] - b["kept"] == 2 * rows * h * 2
    for mode in ("selective-op", "full"):
        assert layer_activations(eager, 0, mode) == layer_activations(fused, 0, mode)


def test_eager_is_recomputed_under_the_per_op_policy():
    from simulator.workloads.op_checkpoint import op_checkpoint
    w = Workload.transformer(1, 64, 64, 4, ffn=128, kv_heads=2, position="rotary", norm_kernel="eager", **LLAMA)
    assert {"ln1", "ln2"} <= {part for part, share in op_checkpoint(w).recomputed if share == 1}


@pytest.mark.parametrize("kernel", ["te", "eager"])
@pytest.mark.parametrize("algo, kw", [("2d", {"grid": (2, 2, 1)}), ("summa25d", {"grid": (2, 2, 2)}),
                                      ("3d", {"grid": (2, 2, 2)})])
def test_split_algorithms_reject_a_norm_kernel(kernel, algo, kw):
    with pytest.raises(NotApplicable, match=f"--norm-kernel {kernel}: {algo} splits the rmsnorm's columns"):
        _schedule("rmsnorm", kernel, algo, **kw)


def test_split_algorithms_keep_the_pieces_by_default():
    assert not _norm_ops(_schedule("rmsnorm", "fused", "2d", grid=(2, 2, 1)), 0)


def test_eager_layernorm_is_refused():
    with pytest.raises(InputError, match="eager is torchtitan's RMSNorm"):
        Workload.transformer(4, 16, 32, 4, norm_kernel="eager")


def test_the_default_is_byte_identical():
    w = Workload.transformer(4, 16, 32, 4, **LLAMA)
    assert "norm_kernel" not in w.to_dict() and w.architecture_label() == Workload.transformer(
        4, 16, 32, 4, norm_kernel="fused", **LLAMA).architecture_label()
    assert Workload.from_dict({**w.to_dict(), "norm_kernel": "te"}).norm_kernel == "te"
    assert schedule_to_dict(_schedule("rmsnorm", "fused")) == schedule_to_dict(
        build_schedule("1d", w, "both", "bfloat16", gpus=2))
