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

Backward (from dO): dV = P'^T dO, dP' = dO V^T, dP = dropout(dP'), dS = P (dP - rowsum(dP P)),
dQ = dS K / sqrt(d), dK = dS^T Q / sqrt(d). The backward **recomputes** S and P from Q and K (as
FlashAttention does) instead of keeping the [s, s] probabilities of every head, so what the forward
leaves for it is the QKV activation alone.
"""

from __future__ import annotations

import numpy as np

from simulator.workloads.kernels.dropout import keep_mask, keep_mask_torch

__all__ = ["attention", "attention_backward", "TORCH"]


def _heads(qkv, seq: int, heads: int, head_dim: int, swap):
    """Q, K, V as [nb, heads, s, d] views of the block."""
    nb = qkv.shape[0] // seq
    t = qkv.reshape(nb, seq, heads, 3, head_dim)
    return [swap(t[:, :, :, i]) for i in range(3)]


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


def attention(qkv, *, seed: int, stream: int, p: float, seq: int, heads: int, head_dim: int, batch0: int,
              head0: int, heads_total: int) -> np.ndarray:
    """The context [nb * s, heads * d] of the block ``qkv`` (module doc)."""
    q, k, v = _heads(qkv, seq, heads, head_dim, _np_swap)
    probs = _probabilities(q, k, 1.0 / np.sqrt(head_dim))
    if p > 0:
        probs = probs * _keep(p, seed, stream, q.shape[0], heads, seq, batch0, head0, heads_total)
    return _np_swap(probs @ v).reshape(qkv.shape[0], heads * head_dim)


def attention_backward(dctx, qkv, *, seed: int, stream: int, p: float, seq: int, heads: int, head_dim: int,
                       batch0: int, head0: int, heads_total: int) -> np.ndarray:
    """dQKV [nb * s, heads * 3 * d] from the context's gradient ``dctx`` (module doc)."""
    q, k, v = _heads(qkv, seq, heads, head_dim, _np_swap)
    nb, scale = q.shape[0], 1.0 / np.sqrt(head_dim)
    probs = _probabilities(q, k, scale)
    keep = _keep(p, seed, stream, nb, heads, seq, batch0, head0, heads_total) if p > 0 else 1.0
    d_out = _np_swap(dctx.reshape(nb, seq, heads, head_dim))
    dv = (probs * keep).swapaxes(-1, -2) @ d_out
    dp = (d_out @ v.swapaxes(-1, -2)) * keep
    ds = probs * (dp - (dp * probs).sum(axis=-1, keepdims=True))
    dq, dk = (ds @ k) * scale, (ds.swapaxes(-1, -2) @ q) * scale
    out = np.stack([_np_swap(t) for t in (dq, dk, dv)], axis=3)  # [nb, s, heads, 3, d]
    return out.reshape(qkv.shape)


# -- torch versions: the same steps on tensors, written into ``out`` -------------------------------
def _torch_parts(qkv, seed, stream, p, seq, heads, head_dim, batch0, head0, heads_total):
    import torch  # keeps torch out of the simulator: only the executor calls this

    swap = lambda t: t.permute(0, 2, 1, 3)  # noqa: E731 - the one reshuffle, named once
    q, k, v = _heads(qkv, seq, heads, head_dim, swap)
    scale = 1.0 / float(np.sqrt(head_dim))
    causal = torch.ones(seq, seq, dtype=torch.bool, device=qkv.device).triu(1)
    probs = torch.softmax(((q @ k.transpose(-1, -2)) * scale).masked_fill(causal, float("-inf")), dim=-1)
    keep = None
    if p > 0:
        arange = lambda n: torch.arange(n, dtype=torch.int64, device=qkv.device)  # noqa: E731
        index = _prob_index(q.shape[0], heads, seq, batch0, head0, heads_total, arange)
        keep = keep_mask_torch(seed, stream, p, index).to(qkv.dtype) / (1.0 - p)
    return swap, q, k, v, scale, probs, keep


def _torch_attention(out, qkv, *, seed, stream, p, seq, heads, head_dim, batch0, head0, heads_total) -> None:
    swap, q, k, v, scale, probs, keep = _torch_parts(qkv, seed, stream, p, seq, heads, head_dim, batch0, head0,
                                                     heads_total)
    if keep is not None:
        probs = probs * keep
    out.copy_(swap(probs @ v).reshape(out.shape))


def _torch_attention_backward(out, dctx, qkv, *, seed, stream, p, seq, heads, head_dim, batch0, head0,
                              heads_total) -> None:
    import torch  # keeps torch out of the simulator: only the executor calls this

    swap, q, k, v, scale, probs, keep = _torch_parts(qkv, seed, stream, p, seq, heads, head_dim, batch0, head0,
                                                     heads_total)
    d_out = swap(dctx.reshape(q.shape[0], seq, heads, head_dim))
    dropped = probs if keep is None else probs * keep
    dv = dropped.transpose(-1, -2) @ d_out
    dp = d_out @ v.transpose(-1, -2)
    if keep is not None:
        dp = dp * keep
    ds = probs * (dp - (dp * probs).sum(dim=-1, keepdim=True))
    dq, dk = (ds @ k) * scale, (ds.transpose(-1, -2) @ q) * scale
    out.copy_(torch.stack([swap(t) for t in (dq, dk, dv)], dim=3).reshape(out.shape))


TORCH = {"attention": _torch_attention, "attention_backward": _torch_attention_backward}
"""The torch version of each kernel, by its function-table name."""
