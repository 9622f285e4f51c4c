"""Rotary position embeddings (Su et al. 2021, arXiv 2104.09864) on one rank's block of the QKV activation.

The block is [nb * s, groups * (r + 2) * d]: ``nb`` whole sequences of ``s`` tokens and ``groups`` whole
key/value groups, each group's columns being its r query heads, then its key head, then its value head,
d wide each (``kernels.attention``'s layout; r = 1 is the GPT block's per-head [Q, K, V]). Every query
and key head is rotated by its token's position t in the sequence; the values pass unchanged.

Within a head, column i < d/2 pairs with column i + d/2 (the "rotate half" convention of Llama's
Hugging Face and Megatron-LM implementations), turned by the angle t theta_i with theta_i =
BASE^(-2i/d):

    y1 = x1 cos - x2 sin,   y2 = x2 cos + x1 sin.

The backward turns the gradient back: dx1 = dy1 cos + dy2 sin, dx2 = dy2 cos - dy1 sin. Rotation needs
no saved tensor, so the backward reads only the gradient. Positions come from the row within the block,
which starts on a sequence boundary (the attention core needs whole sequences, so every algorithm's
QKV blocks do).
"""

from __future__ import annotations

import numpy as np

__all__ = ["BASE", "rotary", "rotary_backward", "TORCH"]

BASE = 10000.0
"""The angle base theta of Su et al. and Llama 2 (Llama 3 uses 500000): the cost and the memory do not
depend on it, and the interpreter's proof holds for any base."""


def _angles(seq: int, head_dim: int):
    """cos and sin of t theta_i, each [s, d/2]."""
    inv = BASE ** (-np.arange(0, head_dim // 2, dtype=np.float64) * 2.0 / head_dim)
    angle = np.arange(seq, dtype=np.float64)[:, None] * inv[None, :]
    return np.cos(angle), np.sin(angle)


def _turn(x, seq: int, group: int, head_dim: int, sign: float, lib):
    """x turned by +angle (sign 1) or back (sign -1); numpy or torch arrays alike."""
    rows, cols = x.shape
    nb, half = rows // seq, head_dim // 2
    t = x.reshape(nb, seq, cols // ((group + 2) * head_dim), group + 2, head_dim)
    cos, sin = _angles(seq, head_dim)
    if lib is not np:
        cos, sin = (lib.as_tensor(a, dtype=x.dtype, device=x.device) for a in (cos, sin))
    cos, sin = cos[None, :, None, None, :], sin[None, :, None, None, :] * sign
    heads = t[:, :, :, : group + 1]  # the query heads and the key head; the value head passes
    x1, x2 = heads[..., :half], heads[..., half:]
    cat = np.concatenate if lib is np else lib.cat
    out = cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1)
    return cat([out, t[:, :, :, group + 1:]], 3).reshape(rows, cols)


def rotary(x, *, seq: int, group: int, head_dim: int) -> np.ndarray:
    """The block with every query and key head rotated by its position (module doc)."""
    return _turn(x, seq, group, head_dim, 1.0, np)


def rotary_backward(dy, *, seq: int, group: int, head_dim: int) -> np.ndarray:
    """The gradient turned back: the transpose of the rotation."""
    return _turn(dy, seq, group, head_dim, -1.0, np)


def _torch_rotary(out, x, *, seq: int, group: int, head_dim: int) -> None:
    import torch  # keeps torch out of the simulator: only the executor calls this

    out.copy_(_turn(x, seq, group, head_dim, 1.0, torch))


def _torch_rotary_backward(out, dy, *, seq: int, group: int, head_dim: int) -> None:
    import torch  # keeps torch out of the simulator: only the executor calls this

    out.copy_(_turn(dy, seq, group, head_dim, -1.0, torch))


TORCH = {"rotary": _torch_rotary, "rotary_backward": _torch_rotary_backward}
"""The torch version of each kernel, by its function-table name."""
