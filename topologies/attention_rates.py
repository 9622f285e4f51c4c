"""FlashAttention-2's published throughput by device, head dimension, sequence length and mask, with sources.

Each row is the forward + backward TFLOP/s of the FlashAttention-2 kernel at sequence lengths 512, 1k,
2k, 4k, 8k and 16k, read off the bar labels of the benchmark figures in Dao-AILab/flash-attention
(``assets/flash2_a100_fwd_bwd_benchmark.png`` and ``assets/flash2_h100_fwd_bwd_benchmark.png``, added
by commit 4f285b354796fb17df8636485b9a04df3ebbb7dc, "FlashAttention-2 release", and shown in the
repository's README). The A100 figure is Figure 4 of Dao 2023, "FlashAttention-2: Faster Attention
with Better Parallelism and Work Partitioning" (arXiv 2307.08691); the H100 figure is its Figure 7.

How the figures were measured (``benchmarks/benchmark_flash_attention.py``, commit
60499abcfda1fabd48e1b97341f4f888c66991a3): fp16, model width 2048 (so 32 heads of 64 or 16 of 128),
16k tokens per call (batch 32 x 512 ... 1 x 16k), no dropout; FLOPs counted as
``4 * batch * seqlen^2 * heads * head_dim``, halved when causal, times 3.5 for forward + backward
(the backward counted as 2.5 times the forward): ``flash_flops`` below.

Which rows are here: every FlashAttention-2 bar of both figures whose label can be read. Two labels of
the A100 non-causal head-dimension-128 panel (512 and 1k) and one of its head-dimension-64 panel (1k)
are hidden behind the legend: those rows are absent (``None``) rather than guessed. The paper's
forward-only and backward-only figures (Figures 5 and 6) are not in the repository and are not
transcribed: a row gives the forward + backward rate only.

==================  ======  =====  =====  =====  =====  =====  =====  ===================
device              causal  d      512    1k     2k     4k     8k     16k
==================  ======  =====  =====  =====  =====  =====  =====  ===================
A100-SXM4-80GB      no      64     132    --     162    171    175    176
A100-SXM4-80GB      no      128    --     --     187    196    201    203
A100-SXM4-80GB      yes     64     88     119    140    156    165    171
A100-SXM4-80GB      yes     128    99     133    155    173    182    189
H100-SXM5-80GB      no      64     215    254    274    288    294    296
H100-SXM5-80GB      no      128    248    294    320    326    335    338
H100-SXM5-80GB      yes     64     141    192    232    257    273    284
H100-SXM5-80GB      yes     128    163    221    265    294    308    328
==================  ======  =====  =====  =====  =====  =====  =====  ===================

Example::

    >>> published_tflops("A100-SXM4-80GB", 128, 2048, causal=True)
    155.0
    >>> round(published_tflops("A100-SXM4-80GB", 128, 2896, causal=True), 1)  # halfway in log s
    164.0
"""

from __future__ import annotations

import math

__all__ = ["FA2_SEQ_LENS", "FA2_TFLOPS", "FA2_SOURCE", "flash_flops", "log2_interpolated", "published_tflops",
           "published_devices"]

FA2_SOURCE = ("Dao 2023, FlashAttention-2 (arXiv 2307.08691), Figures 4 (A100) and 7 (H100); "
              "Dao-AILab/flash-attention assets/flash2_{a100,h100}_fwd_bwd_benchmark.png at commit "
              "4f285b354796fb17df8636485b9a04df3ebbb7dc")

FA2_SEQ_LENS = (512, 1024, 2048, 4096, 8192, 16384)
"""The sequence lengths of the published benchmark (16k tokens per call)."""

FA2_TFLOPS: dict[tuple[str, bool, int], tuple[float | None, ...]] = {
    ("A100-SXM4-80GB", False, 64): (132.0, None, 162.0, 171.0, 175.0, 176.0),
    ("A100-SXM4-80GB", False, 128): (None, None, 187.0, 196.0, 201.0, 203.0),
    ("A100-SXM4-80GB", True, 64): (88.0, 119.0, 140.0, 156.0, 165.0, 171.0),
    ("A100-SXM4-80GB", True, 128): (99.0, 133.0, 155.0, 173.0, 182.0, 189.0),
    ("H100-SXM5-80GB", False, 64): (215.0, 254.0, 274.0, 288.0, 294.0, 296.0),
    ("H100-SXM5-80GB", False, 128): (248.0, 294.0, 320.0, 326.0, 335.0, 338.0),
    ("H100-SXM5-80GB", True, 64): (141.0, 192.0, 232.0, 257.0, 273.0, 284.0),
    ("H100-SXM5-80GB", True, 128): (163.0, 221.0, 265.0, 294.0, 308.0, 328.0),
}
"""Forward + backward TFLOP/s of FlashAttention-2 by (device name, causal, head dimension), at
``FA2_SEQ_LENS``; ``None`` where the figure's label is hidden (module doc)."""


def flash_flops(count: int, seq: int, head_dim: int, causal: bool = True, mode: str = "forward") -> float:
    """FLOPs of ``count`` (sequence, head) pairs as FlashAttention-2's benchmark counts them.

    ``4 s^2 d`` per pair forward (the two products Q K^T and P V), halved when causal (the blocks above
    the diagonal are skipped), 2.5 times that backward, 3.5 times for forward + backward.
    """
    factor = {"forward": 1.0, "backward": 2.5, "forward_backward": 3.5}[mode]
    return factor * 4.0 * count * seq * seq * head_dim / (2 if causal else 1)


def published_devices() -> tuple[str, ...]:
    """The device names with published rows, in table order."""
    return tuple(dict.fromkeys(name for name, _, _ in FA2_TFLOPS))


def published_tflops(device_name: str, head_dim: int, seq: int, causal: bool = True) -> float | None:
    """FlashAttention-2's forward + backward TFLOP/s on ``device_name`` for this head dimension and sequence.

    The row of the nearest published head dimension (64 or 128; a tie takes the larger), interpolated
    linearly in log2 of the sequence length between the published lengths that have a figure and held at
    the end figures outside them (no extrapolation: a sequence shorter than 512 gets the 512 rate, which
    is optimistic for it). None when the device has no row.
    """
    dims = sorted({d for name, c, d in FA2_TFLOPS if name == device_name and c == causal})
    if not dims:
        return None
    dim = min(dims, key=lambda d: (abs(math.log2(d) - math.log2(max(head_dim, 1))), -d))
    return log2_interpolated(FA2_TFLOPS[device_name, causal, dim], seq)


def log2_interpolated(row: tuple[float | None, ...], seq: int) -> float:
    """A rate at ``seq`` from a row of rates at ``FA2_SEQ_LENS`` (``None``: not published): linear in log2 of
    the length between the published lengths, held at the end figures outside them."""
    points = [(math.log2(s), r) for s, r in zip(FA2_SEQ_LENS, row) if r is not None]
    x = math.log2(max(seq, 1))
    if x <= points[0][0]:
        return points[0][1]
    for (x0, r0), (x1, r1) in zip(points, points[1:]):
        if x <= x1:
            return r0 + (r1 - r0) * (x - x0) / (x1 - x0)
    return points[-1][1]
