"""Dropout with masks from the seed: a counter-based hash of (seed, stream, global element index).

A mask element depends only on the run's seed, the dropout's ``stream`` (one per dropout site of the
workload) and the element's index in the *global* tensor, never on how the tensor is split. So every
algorithm, the dense reference, the numpy interpreter and the torch executor drop exactly the same
elements, on any grid, and a replicated block (1-D's replicated region) gets the same mask on every rank.

The hash is integer arithmetic on int64 whose products stay below 2^63 (32-bit values times a 27-bit
multiplier), so numpy and torch, on CPU or GPU, compute bit-identical masks. An element is kept when its
32-bit hash is at least ``p * 2^32``, and kept values are scaled by 1/(1-p) (inverted dropout, as
``torch.nn.functional.dropout``), so the expectation is unchanged.
"""

from __future__ import annotations

import numpy as np

__all__ = ["keep_mask", "keep_mask_torch", "dropout", "dropout_torch"]

_M32 = 0xFFFFFFFF
_MULTIPLIER = 0x45D9F3B  # < 2^27: a 32-bit value times it stays inside int64


def _mix(x):
    """A 32-bit integer hash (two multiply-xorshift rounds) of int64 values in [0, 2^32)."""
    x = x ^ (x >> 16)
    x = (x * _MULTIPLIER) & _M32
    x = x ^ (x >> 16)
    x = (x * _MULTIPLIER) & _M32
    return x ^ (x >> 16)


def _key(seed: int, stream: int) -> int:
    return int(_mix(np.int64((_mix(np.int64(seed & _M32)) ^ (stream & _M32)) & _M32)))


def _threshold(p: float) -> int:
    return int(round(p * 2.0**32))


def keep_mask(seed: int, stream: int, p: float, index: np.ndarray) -> np.ndarray:
    """True where the element of global ``index`` (an int64 array) survives dropout ``p``."""
    key = _key(seed, stream)
    h = _mix((index >> 32) ^ key)
    h = _mix((index & _M32) ^ h)
    return h >= _threshold(p)


def keep_mask_torch(seed: int, stream: int, p: float, index):
    """``keep_mask`` on a torch int64 tensor (any device): bit-identical to the numpy version."""
    key = _key(seed, stream)
    h = _mix((index >> 32) ^ key)
    h = _mix((index & _M32) ^ h)
    return h >= _threshold(p)


def block_index(rows: int, cols: int, row0: int, col0: int, width: int) -> np.ndarray:
    """Global indices (row-major, ``width`` columns) of the block [rows, cols] at (row0, col0)."""
    r = np.arange(row0, row0 + rows, dtype=np.int64)[:, None]
    c = np.arange(col0, col0 + cols, dtype=np.int64)[None, :]
    return r * width + c


def block_index_torch(rows: int, cols: int, row0: int, col0: int, width: int, device):
    """``block_index`` as a torch int64 tensor on ``device``."""
    import torch  # keeps torch out of the simulator: only the executor calls this

    r = torch.arange(row0, row0 + rows, dtype=torch.int64, device=device)[:, None]
    c = torch.arange(col0, col0 + cols, dtype=torch.int64, device=device)[None, :]
    return r * width + c


def dropout(x: np.ndarray, *, seed: int, stream: int, p: float, row0: int, col0: int, width: int) -> np.ndarray:
    """Inverted dropout of the block ``x`` at (row0, col0) of a tensor ``width`` columns wide."""
    if p == 0:
        return x.copy()
    keep = keep_mask(seed, stream, p, block_index(*x.shape, row0, col0, width))
    return np.where(keep, x / (1.0 - p), 0.0)


def dropout_torch(out, x, *, seed: int, stream: int, p: float, row0: int, col0: int, width: int) -> None:
    """``dropout`` into the torch tensor ``out``."""
    if p == 0:
        out.copy_(x)
        return
    keep = keep_mask_torch(seed, stream, p, block_index_torch(*x.shape, row0, col0, width, x.device))
    out.copy_(x * keep / (1.0 - p))
