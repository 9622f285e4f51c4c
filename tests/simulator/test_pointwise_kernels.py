"""``--pointwise-kernel eager``: torchtitan's eager rotary (with ``repeat_kv``) and SwiGLU against the one-pass
default, on numbers, passes and kept memory (``simulator.workloads.kernels.pointwise_variants``)."""

from __future__ import annotations

import numpy as np
import pytest

from simulator.algorithms.registry import build_schedule
from simulator.errors import InputError
from simulator.ir.ops import Local
from simulator.ir.serialize import schedule_to_dict
from simulator.memory.activations import layer_activations
from simulator.workloads.functions import FUNCTIONS
from simulator.workloads.kernels.pointwise_variants import VARIANTS
from simulator.workloads.op_checkpoint import op_checkpoint
from simulator.workloads.workload import Workload
from tests.dispatch_bytes import byte_counter

LLAMA = {"norm": "rmsnorm", "activation": "swiglu", "position": "rotary", "bias": False}
SEQ, GROUP, D = 4, 3, 8  # one key/value group of three query heads
ROPE = {"seq": SEQ, "group": GROUP, "head_dim": D}


def _data(cols: int):
    rng = np.random.default_rng(5)
    return rng.uniform(-2, 2, (2 * SEQ, cols)), rng.uniform(-2, 2, (2 * SEQ, cols))


def _schedule(kernel: str, algo: str = "1d", batch: int = 2, **kw):
    workload = Workload.transformer(batch, 16, 64, 8, ffn=96, kv_heads=2, pointwise_kernel=kernel, **LLAMA)
    return build_schedule(algo, workload, "both", "bfloat16", **(kw or {"gpus": 2}))


def _ops(schedule, rank: int) -> list[Local]:
    return [op for op in schedule.programs[rank] if isinstance(op, Local) and op.fn.startswith(("rotary", "swiglu"))]


def test_every_variant_has_its_fused_functions_values():
    qkv, dy = _data((GROUP + 2) * D)
    for name, (base, _) in VARIANTS.items():
        ours, fused = FUNCTIONS[name], FUNCTIONS[base]
        assert (ours.arity, ours.params) == (fused.arity, fused.params)
        args = {"rotary_eager": (qkv,), "rotary_eager_backward": (dy,), "swiglu_eager": (qkv,),
                "swiglu_eager_backward": (dy[:, :qkv.shape[1] // 2], qkv)}[name]
        params = ROPE if name.startswith("rotary") else {}
        np.testing.assert_array_equal(ours.numpy(*args, **params), fused.numpy(*args, **params))


def _titan_rotary(torch, xq, xk, freqs_cis):
    """torchtitan's ``apply_rotary_emb`` at 9dec370ad, its ``.float()`` an upcast (the identity at float64)."""
    xq_ = torch.view_as_complex(xq.double().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.double().reshape(*xk.shape[:-1], -1, 2))
    freqs = freqs_cis[0:xq.shape[1]].view(1, xq.shape[1], 1, xq_.shape[-1])
    return (torch.view_as_real(xq_ * freqs).flatten(3).type_as(xq),
            torch.view_as_real(xk_ * freqs).flatten(3).type_as(xk))


def test_rotary_values_are_torchtitans_under_autograd():
    """tpsim's rotate-half pairs (i, i + d/2) are torchtitan's interleaved (2i, 2i + 1) under a fixed permutation
    of each head's columns (of wq's and wk's rows): the same rotation, forward and backward, in float64."""
    torch = pytest.importorskip("torch")
    qkv, dy = _data((GROUP + 2) * D)
    y = FUNCTIONS["rotary_eager"].numpy(qkv, **ROPE)
    dx = FUNCTIONS["rotary_eager_backward"].numpy(dy, **ROPE)
    perm = np.stack([np.arange(D // 2), np.arange(D // 2) + D // 2], 1).ravel()  # interleaved <- halves

    def heads(a):  # [b, s, group + 1, d] of the query and key heads, interleaved
        return torch.tensor(np.ascontiguousarray(a.reshape(2, SEQ, GROUP + 2, D)[:, :, :GROUP + 1][..., perm]))

    theta = 10000.0 ** (-torch.arange(0, D, 2, dtype=torch.float64) / D)
    freqs = torch.polar(torch.ones(SEQ, D // 2, dtype=torch.float64), torch.outer(torch.arange(SEQ).double(), theta))
    x = heads(qkv).requires_grad_()
    q, k = _titan_rotary(torch, x[:, :, :GROUP], x[:, :, GROUP:], freqs)
    ours = heads(y)
    np.testing.assert_allclose(torch.cat([q, k], 2).detach().numpy(), ours.numpy(), rtol=1e-12, atol=1e-12)
    g = heads(dy)
    torch.autograd.backward([q, k], [g[:, :, :GROUP], g[:, :, GROUP:]])
    np.testing.assert_allclose(x.grad.numpy(), heads(dx).numpy(), rtol=1e-12, atol=1e-12)
    for out, block in ((y, qkv), (dx, dy)):  # V passes unchanged both ways
        np.testing.assert_array_equal(out.reshape(2, SEQ, GROUP + 2, D)[:, :, -1], block.reshape(2, SEQ, GROUP + 2, D)[:, :, -1])


def test_swiglu_values_are_torchtitans_under_autograd():
    torch = pytest.importorskip("torch")
    h, dy = _data(12)
    z = FUNCTIONS["swiglu_eager"].numpy(h)
    dh = FUNCTIONS["swiglu_eager_backward"].numpy(dy[:, :6], h)
    gate, up = (torch.tensor(h[:, i::2], requires_grad=True) for i in (0, 1))
    tz = torch.nn.functional.silu(gate) * up  # FeedForward.forward's product on w1(x), w3(x)
    tz.backward(torch.tensor(dy[:, :6]))
    np.testing.assert_allclose(z, tz.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(dh[:, 0::2], gate.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(dh[:, 1::2], up.grad.numpy(), rtol=1e-12)


def _counter(torch):
    """The dispatcher byte count (``tests.dispatch_bytes``), complex views and slices not counted."""
    return byte_counter(torch, ("view_as_complex", "view_as_real", "slice", "_conj", "transpose"))


def _charged(name: str, shapes, out, params) -> int:
    work = FUNCTIONS[name].work(shapes, out, params)
    return 2 * work.elements + 4 * work.fp32_elements


@pytest.mark.parametrize("kv", [2, 6])  # grouped (repeat_kv copies) and multi-head (none)
def test_rotary_work_is_what_torchs_dispatcher_runs(kv):
    """torchtitan's attention from its linears' outputs to SDPA's inputs (rotary on xq and xk, ``repeat_kv`` on
    keys and values, the transposes), bf16, forward and autograd's backward: the work rules' totals, exactly."""
    torch = pytest.importorskip("torch")
    Count = _counter(torch)
    b, heads, d = 2, 6, 8
    rep = heads // kv
    xq, xk, xv = (torch.randn(b, SEQ, n, d, dtype=torch.bfloat16, requires_grad=True) for n in (heads, kv, kv))
    freqs = torch.polar(torch.ones(SEQ, d // 2), torch.randn(SEQ, d // 2))

    def repeat_kv(x):  # torchtitan's, lines 116-125
        return x if rep == 1 else torch.unsqueeze(x, 3).expand(b, SEQ, kv, rep, d).reshape(b, SEQ, kv * rep, d)

    forward, backward = Count(), Count()
    with forward:
        xq2, xk2 = _titan_rotary_bf16(torch, xq, xk, freqs)
        q, keys, values = (t.transpose(1, 2) for t in (xq2, repeat_kv(xk2), repeat_kv(xv)))
    grads = [torch.randn_like(t) for t in (q, keys, values)]
    with backward:
        torch.autograd.backward([q, keys, values], grads)
    assert [op for op in forward.ops if op != "clone"] == ["_to_copy", "_to_copy", "mul", "_to_copy", "mul", "_to_copy"]
    assert forward.ops.count("clone") == (2 if rep > 1 else 0)  # repeat_kv's reshape of the expanded keys, values
    shape, params = (b * SEQ, (heads + 2 * kv) * d), {"seq": SEQ, "group": rep, "head_dim": d}
    assert forward.nbytes == _charged("rotary_eager", [shape], shape, params)
    assert backward.nbytes == _charged("rotary_eager_backward", [shape], shape, params)
    qk = b * SEQ * (heads + kv) * d
    copies = 0 if rep == 1 else 2 * 2 * b * SEQ * kv * d * (1 + rep)
    assert forward.nbytes == 20 * qk + copies + 2 * 4 * SEQ * d  # and the two muls' reads of freqs_cis


def _titan_rotary_bf16(torch, xq, xk, freqs_cis):
    """torchtitan's ``apply_rotary_emb`` at 9dec370ad, as is (lines 108-113)."""
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    freqs = freqs_cis[0:xq.shape[1]].view(1, xq.shape[1], 1, xq_.shape[-1])
    return (torch.view_as_real(xq_ * freqs).flatten(3).type_as(xq),
            torch.view_as_real(xk_ * freqs).flatten(3).type_as(xk))


def test_swiglu_work_is_what_torchs_dispatcher_runs():
    torch = pytest.importorskip("torch")
    Count = _counter(torch)
    rows, f = 24, 40
    gate, up = (torch.randn(rows, f, dtype=torch.bfloat16, requires_grad=True) for _ in range(2))
    forward, backward = Count(), Count()
    with forward:
        z = torch.nn.functional.silu(gate) * up
    dz = torch.randn_like(z)
    with backward:
        z.backward(dz)
    assert forward.ops == ["silu", "mul"] and sorted(backward.ops) == ["mul", "mul", "silu_backward"]
    assert forward.nbytes == _charged("swiglu_eager", [(rows, 2 * f)], (rows, f), {}) == 10 * rows * f
    assert backward.nbytes == _charged("swiglu_eager_backward", [(rows, f), (rows, 2 * f)], (rows, 2 * f), {}) \
        == 18 * rows * f


def test_eager_bytes_in_a_schedule():
    """On 1-D over 2 ranks (4 query heads, 1 key/value head per rank, d 8; 32 rows; ffn 48 per rank)."""
    fused, eager = _schedule("fused"), _schedule("eager")
    moved = {op.fn: eager.memory_bytes(0, op) for op in _ops(eager, 0)}
    assert set(moved) == set(VARIANTS)
    rows, qk, kv, table = 32, 5 * 8, 8, 16 * 8
    copies = 2 * 2 * rows * kv * (1 + 4)
    assert moved["rotary_eager"] == 20 * rows * qk + copies + 4 * 2 * table
    assert moved["rotary_eager_backward"] == 20 * rows * qk + copies + 4 * 6 * table
    assert moved["swiglu_eager"] == 10 * rows * 48 and moved["swiglu_eager_backward"] == 18 * rows * 48
    assert {op.fn: fused.memory_bytes(0, op) for op in _ops(fused, 0)} == {
        "rotary": 4 * rows * 48, "rotary_backward": 4 * rows * 48,
        "swiglu": 6 * rows * 48, "swiglu_backward": 10 * rows * 48}


def test_eager_keeps_silu_and_the_expanded_keys_and_values_and_nothing_under_recomputation():
    fused, eager = _schedule("fused"), _schedule("eager")

    def kinds(schedule, mode):
        return {k.kind: k.nbytes for k in layer_activations(schedule, 0, mode)}

    a, b = kinds(fused, "none"), kinds(eager, "none")
    assert "pointwise" not in a and {k: v for k, v in b.items() if k != "pointwise"} == a
    # silu(gate) [32, 48]; keys and values for 4 query heads where the rotated block holds 1 each, d 8
    assert b["pointwise"] == 2 * (32 * 48 + 2 * 3 * 32 * 8)
    for mode in ("selective-op", "full"):
        assert layer_activations(eager, 0, mode) == layer_activations(fused, 0, mode)


def test_eager_is_recomputed_under_the_per_op_policy():
    w = Workload.transformer(1, 64, 64, 4, ffn=128, kv_heads=2, pointwise_kernel="eager", **LLAMA)
    assert {"rope", "swiglu"} <= {part for part, share in op_checkpoint(w).recomputed if share == 1}


@pytest.mark.parametrize("algo, kw", [("1d-sp", {"gpus": 2}), ("2d", {"grid": (2, 2, 1)}),
                                      ("summa25d", {"grid": (2, 2, 2)})])
def test_eager_runs_on_every_algorithm(algo, kw):
    """Rotary blocks hold whole key/value groups and SwiGLU blocks whole gate/up pairs on every algorithm."""
    schedule = _schedule("eager", algo, batch=4, **kw)
    assert {op.fn for op in _ops(schedule, 0)} == set(VARIANTS)


def test_eager_without_rotary_or_swiglu_is_refused():
    with pytest.raises(InputError, match="has neither"):
        Workload.transformer(4, 16, 32, 4, pointwise_kernel="eager")


def test_the_default_is_byte_identical():
    w = Workload.transformer(2, 16, 64, 8, ffn=96, kv_heads=2, **LLAMA)
    assert "pointwise_kernel" not in w.to_dict()
    assert Workload.from_dict({**w.to_dict(), "pointwise_kernel": "eager"}).pointwise_kernel == "eager"
    assert schedule_to_dict(_schedule("fused")) == schedule_to_dict(build_schedule("1d", w, "both", "bfloat16", gpus=2))


@pytest.mark.parametrize("algo, kw, norm_kernel", [("1d", {"gpus": 2}, "eager"), ("1d-sp", {"gpus": 2}, "fused"),
                                                   ("2d", {"grid": (2, 2, 1)}, "fused"),
                                                   ("summa25d", {"grid": (2, 2, 2)}, "fused")])
def test_eager_schedules_are_proven_on_numbers(algo, kw, norm_kernel):
    """The interpreter against the dense reference, forward and backward, torchtitan's whole eager block on 1d."""
    from simulator.ir.interpret import interpret
    from simulator.ir.validate import validate_schedule
    workload = Workload.transformer(4, 4, 32, 4, ffn=12, kv_heads=2, dropout=0.1, pointwise_kernel="eager",
                                    norm_kernel=norm_kernel, **LLAMA)
    schedule = build_schedule(algo, workload, "both", "float64", **kw)
    validate_schedule(schedule)
    assert {op.fn for op in _ops(schedule, 0)} == set(VARIANTS)
    result = interpret(schedule, seed=7)
    assert set(result.errors) == set(workload.output_names("both")) and result.max_error <= 1e-10, result.errors
