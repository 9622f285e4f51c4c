"""SwiGLU (Shazeer 2020, arXiv 2002.05202; Llama's MLP): z = silu(gate) * up on a block of the gate/up product.

The MLP's first linear is one [h, 2f] weight whose output columns **interleave** gate and up column by
column: column 2j is gate j, column 2j + 1 is up j, and z's column j is silu(gate j) * up j. Any equal
split of the 2f columns into parts of even width (every algorithm's split, f being divisible by its
ways) then holds matching gate and up columns, so the product is local wherever the algorithm left the
block, and z's block is the same rows with half the columns. (Megatron-LM stacks each tensor-parallel
rank's [gate | up] shard instead; the two layouts differ only by a fixed permutation of the weight's
columns, which changes no cost and no value of z.)

silu(x) = x sigmoid(x); backward, with sg = sigmoid(gate): dgate = dz up sg (1 + gate (1 - sg)),
dup = dz silu(gate). The backward reads the saved gate/up block.
"""

from __future__ import annotations

import numpy as np

__all__ = ["swiglu", "swiglu_backward", "TORCH"]


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def swiglu(h: np.ndarray) -> np.ndarray:
    """silu(h[:, 0::2]) * h[:, 1::2]: [rows, cols / 2]."""
    gate, up = h[:, 0::2], h[:, 1::2]
    return gate * _sigmoid(gate) * up


def swiglu_backward(dz: np.ndarray, h: np.ndarray) -> np.ndarray:
    """dh [rows, 2 cols] from dz [rows, cols], gate and up interleaved as in h."""
    gate, up = h[:, 0::2], h[:, 1::2]
    sg = _sigmoid(gate)
    dh = np.empty_like(h)
    dh[:, 0::2] = dz * up * sg * (1.0 + gate * (1.0 - sg))
    dh[:, 1::2] = dz * gate * sg
    return dh


def _torch_swiglu(out, h) -> None:
    import torch  # keeps torch out of the simulator: only the executor calls this

    gate, up = h[:, 0::2], h[:, 1::2]
    out.copy_(torch.nn.functional.silu(gate) * up)


def _torch_swiglu_backward(out, dz, h) -> None:
    import torch  # keeps torch out of the simulator: only the executor calls this

    gate, up = h[:, 0::2], h[:, 1::2]
    sg = torch.sigmoid(gate)
    out[:, 0::2] = dz * up * sg * (1.0 + gate * (1.0 - sg))
    out[:, 1::2] = dz * gate * sg


TORCH = {"swiglu": _torch_swiglu, "swiglu_backward": _torch_swiglu_backward}
"""The torch version of each kernel, by its function-table name."""
