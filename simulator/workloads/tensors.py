"""Seeded tensor values that any rank can generate block by block, without the full matrix.

Element (r, c) of tensor ``name`` under seed ``s`` is a pure function of (s, name, r, c): a splitmix64
hash of its flat index, keyed by the seed and a CRC of the name, mapped to [-1, 1). So the executor's
ranks, the interpreter and the reference all see the same numbers, and a rank builds only its blocks.
"""

from __future__ import annotations

import zlib

import numpy as np

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


def _splitmix64(x: np.ndarray) -> np.ndarray:
    """The splitmix64 finaliser (Steele, Lea and Flood 2014), vectorised; wraps modulo 2**64."""
    with np.errstate(over="ignore"):
        z = x + _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * _MIX1
        z = (z ^ (z >> np.uint64(27))) * _MIX2
        return z ^ (z >> np.uint64(31))


def random_block(seed: int, name: str, shape: tuple[int, int], rows: tuple[int, int],
                 cols: tuple[int, int]) -> np.ndarray:
    """Block ``[rows, cols]`` of the seeded tensor ``name`` of global ``shape``, float64 in [-1, 1)."""
    key = _splitmix64(np.array([(seed & 0xFFFFFFFF) << 32 | zlib.crc32(name.encode())], dtype=np.uint64))[0]
    r = np.arange(rows[0], rows[1], dtype=np.uint64)[:, None]
    c = np.arange(cols[0], cols[1], dtype=np.uint64)[None, :]
    with np.errstate(over="ignore"):
        flat = r * np.uint64(shape[1]) + c
    bits = _splitmix64(flat ^ key) >> np.uint64(11)  # 53 random bits: exact in a float64
    return bits.astype(np.float64) * (2.0 / 2.0**53) - 1.0
