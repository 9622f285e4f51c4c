"""The attention core of a GPT block on one rank's heads and whole sequences: softmax(Q K^T / sqrt(d)) V.

A rank's block of the QKV activation is [nb * s, heads * 3 * d]: ``nb`` whole sequences of ``s`` tokens
(rows token-major within a sequence) and ``heads`` whole heads of width d = h/a, each head's columns
being its Q, K and V in that order (Megatron-LM's per-head interleaved QKV layout, so that splitting
the 3h columns into equal parts gives each part whole heads with their Q, K and V). The context it makes
is [nb * s, heads * d], head by head, which is the out-projection's input in the same column order.

Per sequence and head: S = Q K^T / sqrt(d), causal (position i attends to positions <= i), P =
softmax(S) by rows, P' = dropout(P), O = P' V. The dropout mask of P'[i, t] is that of element
((batch * a + head) * s + i) * s + t of the global [b, a, s, s] probabilities (``kernels.dropout``), with
``batch0`` / ``head0`` the block's first sequence and head and ``heads_total`` = a.

Grouped-query attention (Ainslie et al. 2023, arXiv 2305.13245; multi-query at one group): with
``group`` = r query heads per key/value head, the block's columns are whole key/value groups, each
its r query heads, its key head and its value head, d wide each (Megatron-LM's query-group layout; r =
1 is the per-head [Q, K, V] above). Every query head of a group attends with the group's key and value
head; in the backward each key and value head's gradient sums its r query heads' contributions.

Backward (from dO): dV = P'^T dO, dP' = dO V^T, dP = dropout(dP'), dS = P (dP - rowsum(dP P)),
dQ = dS K / sqrt(d), dK = dS^T Q / sqrt(d). The backward **recomputes** S and P from Q and K (as
FlashAttention does) instead of keeping the [s, s] probabilities of every head, so what the forward
leaves for it is the QKV activation alone.
"""

from __future__ import annotations

import numpy as np

from simulator.workloads.kernels.dropout import keep_mask, keep_mask_torch

__all__ = ["attention", "attention_backward", "TORCH"]


def _heads(qkv, seq: int, heads: int, head_dim: int, swap, group: int = 1, repeat=None):
    """Q, K, V as [nb, heads, s, d] views of the block; with ``group`` > 1 query heads per key/value
    head, each key and value head repeated for its group (``repeat(t, r)`` along the head axis)."""
    nb = qkv.shape[0] // seq
    if group == 1:
        t = qkv.reshape(nb, seq, heads, 3, head_dim)
        return [swap(t[:, :, :, i]) for i in range(3)]
    t = qkv.reshape(nb, seq, heads // group, group + 2, head_dim)
    q = swap(t[:, :, :, :group].reshape(nb, seq, heads, head_dim))
    return [q, repeat(swap(t[:, :, :, group]), group), repeat(swap(t[:, :, :, group + 1]), group)]


def _merge(dq, dk, dv, shape, group: int, swap, stack, cat):
    """dQKV in the block's layout from dQ [nb, heads, s, d] and the repeated dK, dV (summed per group)."""
    nb, heads, seq, d = dq.shape
    if group == 1:
        return stack([swap(t) for t in (dq, dk, dv)], 3).reshape(shape)
    per_group = [swap(t.reshape(nb, heads // group, group, seq, d).sum(2)).reshape(nb, seq, heads // group, 1, d)
                 for t in (dk, dv)]
    q = swap(dq).reshape(nb, seq, heads // group, group, d)
    return cat([q, *per_group], 3).reshape(shape)


def _prob_index(nb: int, heads: int, seq: int, batch0: int, head0: int, heads_total: int, arange):
    """Global indices of the block's probabilities in [b, a, s, s], shaped [nb, heads, s, s]."""
    base = (batch0 + arange(nb))[:, None] * heads_total + head0 + arange(heads)[None, :]
    return (base * (seq * seq))[:, :, None, None] + arange(seq * seq).reshape(seq, seq)


def _np_arange(n: int) -> np.ndarray:
    return np.arange(n, dtype=np.int64)


def _np_swap(t):
    return t.transpose(0, 2, 1, 3)


def _probabilities(q, k, scale: float):
    s = q.shape[2]
    scores = (q @ k.swapaxes(-1, -2)) * scale
    scores = np.where(np.triu(np.ones((s, s), dtype=bool), 1), -np.inf, scores)
    scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return scores / scores.sum(axis=-1, keepdims=True)


def _keep(p, seed, stream, nb, heads, seq, batch0, head0, heads_total):
    index = _prob_index(nb, heads, seq, batch0, head0, heads_total, _np_arange)
    return keep_mask(seed, stream, p, index) / (1.0 - p)


def _np_repeat(t, group: int):
    return np.repeat(t, group, axis=1)


def attention(qkv, *, seed: int, stream: int, p: float, seq: int, heads: int, head_dim: int, batch0: int,
              head0: int, heads_total: int, group: int = 1) -> np.ndarray:
    """The context [nb * s, heads * d] of the block ``qkv`` (module doc)."""
    q, k, v = _heads(qkv, seq, heads, head_dim, _np_swap, group, _np_repeat)
    probs = _probabilities(q, k, 1.0 / np.sqrt(head_dim))
    if p > 0:
        probs = probs * _keep(p, seed, stream, q.shape[0], heads, seq, batch0, head0, heads_total)
    return _np_swap(probs @ v).reshape(qkv.shape[0], heads * head_dim)


def attention_backward(dctx, qkv, *, seed: int, stream: int, p: float, seq: int, heads: int, head_dim: int,
                       batch0: int, head0: int, heads_total: int, group: int = 1) -> np.ndarray:
    """dQKV [nb * s, heads * 3 * d] from the context's gradient ``dctx`` (module doc)."""
    q, k, v = _heads(qkv, seq, heads, head_dim, _np_swap, group, _np_repeat)
    nb, scale = q.shape[0], 1.0 / np.sqrt(head_dim)
    probs = _probabilities(q, k, scale)
    keep = _keep(p, seed, stream, nb, heads, seq, batch0, head0, heads_total) if p > 0 else 1.0
    d_out = _np_swap(dctx.reshape(nb, seq, heads, head_dim))
    dv = (probs * keep).swapaxes(-1, -2) @ d_out
    dp = (d_out @ v.swapaxes(-1, -2)) * keep
    ds = probs * (dp - (dp * probs).sum(axis=-1, keepdims=True))
    dq, dk = (ds @ k) * scale, (ds.swapaxes(-1, -2) @ q) * scale
    return _merge(dq, dk, dv, qkv.shape, group, _np_swap, np.stack, np.concatenate)


# -- torch versions: the same steps on tensors, written into ``out`` -------------------------------
def _torch_parts(qkv, seed, stream, p, seq, heads, head_dim, batch0, head0, heads_total, group=1):
    import torch  # keeps torch out of the simulator: only the executor calls this

    swap = lambda t: t.permute(0, 2, 1, 3)  # noqa: E731 - the one reshuffle, named once
    q, k, v = _heads(qkv, seq, heads, head_dim, swap, group, lambda t, r: t.repeat_interleave(r, dim=1))
    scale = 1.0 / float(np.sqrt(head_dim))
    causal = torch.ones(seq, seq, dtype=torch.bool, device=qkv.device).triu(1)
    probs = torch.softmax(((q @ k.transpose(-1, -2)) * scale).masked_fill(causal, float("-inf")), dim=-1)
    keep = None
    if p > 0:
        arange = lambda n: torch.arange(n, dtype=torch.int64, device=qkv.device)  # noqa: E731
        index = _prob_index(q.shape[0], heads, seq, batch0, head0, heads_total, arange)
        keep = keep_mask_torch(seed, stream, p, index).to(qkv.dtype) / (1.0 - p)
    return swap, q, k, v, scale, probs, keep


def _torch_attention(out, qkv, *, seed, stream, p, seq, heads, head_dim, batch0, head0, heads_total,
                     group=1) -> None:
    swap, q, k, v, scale, probs, keep = _torch_parts(qkv, seed, stream, p, seq, heads, head_dim, batch0, head0,
                                                     heads_total, group)
    if keep is not None:
        probs = probs * keep
    out.copy_(swap(probs @ v).reshape(out.shape))


def _torch_attention_backward(out, dctx, qkv, *, seed, stream, p, seq, heads, head_dim, batch0, head0,
                              heads_total, group=1) -> None:
    import torch  # keeps torch out of the simulator: only the executor calls this

    swap, q, k, v, scale, probs, keep = _torch_parts(qkv, seed, stream, p, seq, heads, head_dim, batch0, head0,
                                                     heads_total, group)
    d_out = swap(dctx.reshape(q.shape[0], seq, heads, head_dim))
    dropped = probs if keep is None else probs * keep
    dv = dropped.transpose(-1, -2) @ d_out
    dp = d_out @ v.transpose(-1, -2)
    if keep is not None:
        dp = dp * keep
    ds = probs * (dp - (dp * probs).sum(dim=-1, keepdim=True))
    dq, dk = (ds @ k) * scale, (ds.transpose(-1, -2) @ q) * scale
    out.copy_(_merge(dq, dk, dv, out.shape, group, swap, torch.stack, torch.cat))


TORCH = {"attention": _torch_attention, "attention_backward": _torch_attention_backward,
         "attention_gqa": _torch_attention, "attention_gqa_backward": _torch_attention_backward}
"""The torch version of each kernel, by its function-table name."""
