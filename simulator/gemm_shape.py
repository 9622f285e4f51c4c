"""How a GEMM's shape sets the fraction of a GPU's large-GEMM rate it reaches: tiles, waves and depth.

A GPU GEMM kernel (cuBLAS, CUTLASS) splits the output [M, N] into tiles of tm x tn, runs one tile per
thread block on a streaming multiprocessor (SM), and walks the K dimension in steps inside each tile.
NVIDIA's "Matrix Multiplication Background User's Guide" (Deep Learning Performance documentation)
names the three losses this module counts:

- **tile quantization**: an output not a multiple of the tile still computes whole tiles, so a GEMM of
  M = 257 with 256-row tiles does the work of 512 rows. Fill = M N / (ceil(M/tm) tm ceil(N/tn) tn).
- **wave quantization**: tiles run in waves of one per SM; the last wave of a GEMM whose tile count is
  not a multiple of the SM count leaves SMs idle ("a GEMM with 109 tiles on a 108-SM A100 takes two
  waves, nearly twice as long as 108 tiles"). Wave = T / (ceil(T / sms) sms) for T tiles.
- **tile efficiency**: larger tiles reuse each loaded operand more, and cuBLAS's heuristics choose among
  several tile sizes (the guide lists 256x128, 128x256, 128x128, 256x64, 64x256, 128x64, 64x128, 64x64),
  trading tile efficiency against quantization. A tile's operand traffic per FLOP is (tm + tn) / (tm tn)
  per element, so its intensity against the L2 cache is tm tn / (tm + tn) FLOP per byte of 2-byte
  operands; an A100 needs ``TILE_INTENSITY`` = 43 FLOP/B to keep its tensor cores fed from L2 (312
  TFLOP/s over 5,120 B/clock x 1.41 GHz = 7.2 TB/s, NVIDIA A100 whitepaper), so a tile's rate relative to
  the large tiles is min(1, intensity / 43): 64x64 tiles reach 0.74 of it, 128x64 and larger all of
  it. The same balance is assumed for other generations and dtypes (their peaks and L2 rates scale
  together to within the accuracy this needs).

The model takes, over those tiles, the best of tile efficiency x fill x wave, as a heuristic that picks
well would. A GEMM with fewer tiles than SMs may be split along K (cuBLAS's split-K) into up to as
many slices as fill the SMs once, the depth factor below charging each slice its own pipeline fill;
the cost of summing the partial results is not counted. Depth: each tile's main
loop is preceded by the pipeline's fill and followed by the epilogue, so a tile of depth k reaches
k / (k + k0) of its steady rate, with k0 the compute model's ``half_efficiency_dim`` (64 by default:
a 3-stage pipeline of 32-deep steps, CUTLASS's default for Ampere bf16 tiles, fills 2 x 32 before its
first multiply).

The product is a factor in (0, 1]; ``simulator.compute`` multiplies it into the device's large-GEMM
efficiency, normalised so the shape at which the device's achievable figure was measured reaches
exactly that figure.

Example (an A100's 108 SMs)::

    >>> round(shape_factor(8192, 8192, 8192, 108, 64.0), 3)
    0.99
    >>> round(shape_factor(8192, 128, 8192, 108, 64.0), 3)  # thin: 64 tiles of 128x128 on 108 SMs
    0.869
"""

from __future__ import annotations

import math

__all__ = ["TILES", "TILE_INTENSITY", "tile_efficiency", "shape_factor"]

TILES = ((256, 128), (128, 256), (128, 128), (256, 64), (64, 256), (128, 64), (64, 128), (64, 64))
"""Tile shapes (tm, tn) cuBLAS chooses among (NVIDIA, Matrix Multiplication Background User's Guide)."""
TILE_INTENSITY = 312.0 / (5120 * 1.41e9 / 1e12)
"""FLOP per byte a tile needs to run at the tensor cores' rate from L2 (A100: 312 TFLOP/s / 7.2 TB/s)."""
def tile_efficiency(tm: int, tn: int) -> float:
    """A tile's steady rate relative to the largest tiles': min(1, (tm tn / (tm + tn)) / TILE_INTENSITY)."""
    return min(1.0, tm * tn / (tm + tn) / TILE_INTENSITY)


def _one_tile(m: int, n: int, k: int, sms: int, k0: float, tm: int, tn: int) -> float:
    rows, cols = math.ceil(m / tm), math.ceil(n / tn)
    tiles = rows * cols
    fill = m * n / (rows * tm * cols * tn)
    best = 0.0
    # split-K: s slices of depth k/s per tile, s up to what fills the SMs once; the best s is taken, as
    # a heuristic would choose it (the set of choices depends on m and n only, so time stays monotone in k).
    for split in range(1, max(1, sms // tiles) + 1):
        blocks = tiles * split
        wave = blocks / (math.ceil(blocks / sms) * sms)
        depth = k / split
        best = max(best, wave * depth / (depth + k0))
    return tile_efficiency(tm, tn) * fill * best


def shape_factor(m: int, n: int, k: int, sms: int, k0: float) -> float:
    """The fraction of the large-GEMM rate an (m x k) @ (k x n) GEMM reaches on ``sms`` SMs (module doc)."""
    if min(m, n, k) < 1 or sms < 1:
        raise ValueError(f"shape_factor needs positive extents and SMs, got m={m} n={n} k={k} sms={sms}")
    return max(_one_tile(m, n, k, sms, k0, tm, tn) for tm, tn in TILES)
