"""``simulator.workloads.op_checkpoint`` against PyTorch's own selective checkpointing under torchtitan's policy.

The oracle is the real thing on CPU: a small Llama block written as torchtitan's ``model.py`` writes it
(wq, wk, wv, rotary by complex products, repeat_kv, SDPA, wo; RMSNorm; w2(silu(w1(x)) * w3(x))), wrapped
in ``torch.utils.checkpoint`` with torchtitan's ``_custom_policy`` and ``_save_list`` (parallelize_llama.py
at 9dec370ad). On CPU the flash SDPA op is ``_scaled_dot_product_flash_attention_for_cpu``, which stands in
for the CUDA op the list names. The backward's recomputed ops are read from the SAC cache mode.
"""

from __future__ import annotations

from collections import defaultdict

import pytest

from simulator.workloads.op_checkpoint import op_checkpoint
from simulator.workloads.workload import Workload

torch = pytest.importorskip("torch")
nn, F = torch.nn, torch.nn.functional
checkpoint = pytest.importorskip("torch.utils.checkpoint")

B, S, DIM, HEADS, KV, FFN = 2, 16, 64, 4, 2, 96
HD = DIM // HEADS


class Block(nn.Module):
    """torchtitan's TransformerBlock, small (no TP, no compile)."""

    def __init__(self) -> None:
        super().__init__()
        self.g1, self.g2 = nn.Parameter(torch.ones(DIM)), nn.Parameter(torch.ones(DIM))
        self.wq, self.wk = nn.Linear(DIM, HEADS * HD, bias=False), nn.Linear(DIM, KV * HD, bias=False)
        self.wv, self.wo = nn.Linear(DIM, KV * HD, bias=False), nn.Linear(HEADS * HD, DIM, bias=False)
        self.w1, self.w2, self.w3 = (nn.Linear(DIM, FFN, bias=False), nn.Linear(FFN, DIM, bias=False),
                                     nn.Linear(DIM, FFN, bias=False))
        self.freqs = torch.polar(torch.ones(S, HD // 2), torch.rand(S, HD // 2)).view(1, S, 1, HD // 2)

    @staticmethod
    def norm(x, g):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * g

    def rope(self, x, heads):
        z = torch.view_as_complex(x.view(B, S, heads, HD).reshape(B, S, heads, -1, 2))
        return torch.view_as_real(z * self.freqs).flatten(3)

    def forward(self, x):
        a = self.norm(x, self.g1)
        xq, xk, xv = self.wq(a), self.wk(a), self.wv(a)
        xq, xk = self.rope(xq, HEADS), self.rope(xk, KV)
        rep = HEADS // KV  # repeat_kv
        keys = xk.unsqueeze(3).expand(B, S, KV, rep, HD).reshape(B, S, HEADS, HD)
        values = xv.view(B, S, KV, HD).unsqueeze(3).expand(B, S, KV, rep, HD).reshape(B, S, HEADS, HD)
        o = F.scaled_dot_product_attention(xq.transpose(1, 2), keys.transpose(1, 2), values.transpose(1, 2),
                                           is_causal=True)
        h = x + self.wo(o.transpose(1, 2).contiguous().view(B, S, -1))
        n = self.norm(h, self.g2)
        return h + self.w2(F.silu(self.w1(n)) * self.w3(n))


def _run():
    """(forward mm ops as (out columns, kept)), (ops the backward ran again as (name, shapes))."""
    ops = torch.ops
    save = {ops.aten.mm.default, ops.aten._scaled_dot_product_efficient_attention.default,
            ops.aten._scaled_dot_product_flash_attention.default, ops.aten.abs.default, ops.aten.max.default,
            ops.aten._scaled_dot_product_flash_attention_for_cpu.default}  # the CPU build's flash op
    forward = []

    def context():
        meta = defaultdict(int)

        def policy(ctx, func, *args, **kwargs):  # torchtitan's _custom_policy
            key = f"{'recompute' if ctx.is_recompute else 'forward'}_mm_count"
            if func == ops.aten.mm.default:
                meta[key] += 1
            keep = func in save and not (func == ops.aten.mm.default and meta[key] % 2 == 0)
            if func == ops.aten.mm.default and not ctx.is_recompute:
                forward.append((args[1].shape[1], keep))
            return checkpoint.CheckpointPolicy.MUST_SAVE if keep else checkpoint.CheckpointPolicy.PREFER_RECOMPUTE
        return checkpoint.create_selective_checkpoint_contexts(policy)

    cached = checkpoint._CachedTorchDispatchMode
    original, again = cached.__torch_dispatch__, []

    def dispatch(self, func, types, args=(), kwargs=None):
        if func not in checkpoint.SAC_IGNORED_OPS:
            key = checkpoint._sac_storage_key(func, args)
            entry = (self.storage.get(key) or {}).get(self.func_counter[key])
            if entry is checkpoint._RECOMPUTE:
                again.append((str(func), tuple(tuple(getattr(a, "shape", ())) for a in args[:2])))
        return original(self, func, types, args, kwargs)

    torch.manual_seed(0)
    block, x = Block(), torch.randn(B, S, DIM, requires_grad=True)
    cached.__torch_dispatch__ = dispatch
    try:
        checkpoint.checkpoint(block, x, use_reentrant=False, context_fn=context).sum().backward()
    finally:
        cached.__torch_dispatch__ = original
    return forward, again


def test_torch_recomputes_what_op_checkpoint_derives_from_the_layer_list() -> None:
    if not hasattr(checkpoint, "_CachedTorchDispatchMode"):
        pytest.skip("this torch has no selective-checkpoint cache mode to read")
    forward, again = _run()
    w = Workload.transformer(B, S, DIM, HEADS, FFN, kv_heads=KV, norm="rmsnorm", activation="swiglu",
                             position="rotary", bias=False)
    policy = op_checkpoint(w)
    assert forward == [(p.cols, p.kept) for p in policy.products]
    # The matmuls run again: the unkept products (wk, wo, w3), by their output columns.
    assert sorted(shapes[1][1] for name, shapes in again if name == "aten.mm.default") == sorted(
        p.cols for p in policy.products if not p.kept)
    recomputed = dict(policy.recomputed)
    # Both norms (one pow each), the SwiGLU's silu, the first residual add and not the last (checkpoint's
    # early stop), the rotary products, and no attention op.
    assert sum(name == "aten.pow.Tensor_Scalar" for name, _ in again) == 2 and {"ln1", "ln2"} <= set(recomputed)
    assert any(name == "aten.silu.default" for name, _ in again) and "swiglu" in recomputed
    residual = [s for name, s in again if name == "aten.add.Tensor" and s == ((B, S, DIM), (B, S, DIM))]
    assert len(residual) == 1 and "res1" in recomputed and "res2" not in recomputed
    assert any(name == "aten.view_as_complex.default" for name, _ in again) and "rope" in recomputed
    assert not any("attention" in name for name, _ in again) and "attn" not in recomputed
