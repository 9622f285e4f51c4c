"""The Triton FlashAttention kernel's published throughput on the A100, by head dimension, sequence and mask.

Each row is the forward + backward TFLOP/s of the "FlashAttention Triton" bars of the same A100 figure
that ``topologies.attention_rates`` reads FlashAttention-2 from: Dao-AILab/flash-attention
``assets/flash2_a100_fwd_bwd_benchmark.png`` (commit 4f285b354796fb17df8636485b9a04df3ebbb7dc,
"FlashAttention-2 release"), Figure 4 of Dao 2023, "FlashAttention-2: Faster Attention with Better
Parallelism and Work Partitioning" (arXiv 2307.08691). Same measurement as the FlashAttention-2 rows
(fp16, model width 2048, 16k tokens per call, FLOPs counted by ``attention_rates.flash_flops``). Every
Triton label of the four panels is legible; none is hidden by the legend.

Which kernel: the figure's benchmark script (``benchmarks/benchmark_flash_attention.py``, commit
60499abcfda1fabd48e1b97341f4f888c66991a3, lines 17 and 112-128) times OpenAI Triton's own
``triton.ops.flash_attention.attention``, the faster of its two backward variants. MosaicML llm-foundry's
``attn_impl: triton`` runs Tri Dao's ``flash_attn_triton.py`` instead, another descendant of the same
Triton tutorial; no figure of that exact kernel is published, so this is the nearest published rate of
it (``experiments/README.md``, "Which attention kernel llm-foundry's benchmark rows ran").

Only the A100 is published: the H100 figure (``flash2_h100_fwd_bwd_benchmark.png``, the paper's Figure 7)
draws PyTorch, FlashAttention and FlashAttention-2 bars and no Triton ones. The FlashAttention-3 paper's
H100 forward figure (``assets/flash3_fp16_fwd.png``, commit 7ef24848cf2f855077cef88fe122775b727dcd74) has
"Triton" bars (OpenAI's Triton tutorial kernel of 2024, not llm-foundry's), but its backward figure is
not in the repository, so no H100 forward + backward or backward rate of it is transcribed. The A100 40GB SXM4 takes the
A100 80GB SXM4 row as it is (``SAME_CHIP``). Only head dimensions 64 and 128 are measured; nothing is
interpolated between them or extrapolated beyond them.

==================  ======  =====  =====  =====  =====  =====  =====  =====
device              causal  d      512    1k     2k     4k     8k     16k
==================  ======  =====  =====  =====  =====  =====  =====  =====
A100-SXM4-80GB      no      64     90     102    98     98     100    100
A100-SXM4-80GB      no      128    78     85     90     93     95     95
A100-SXM4-80GB      yes     64     59     75     79     76     79     80
A100-SXM4-80GB      yes     128    50     61     68     74     78     80
==================  ======  =====  =====  =====  =====  =====  =====  =====

Example::

    >>> triton_tflops("A100-SXM4-80GB", 128, 4096, causal=True)
    74.0
    >>> triton_tflops("H100-SXM5-80GB", 128, 4096) is None
    True
"""

from __future__ import annotations

from topologies.attention_rates import log2_interpolated

__all__ = ["TRITON_SOURCE", "TRITON_TFLOPS", "SAME_CHIP", "triton_devices", "triton_head_dims", "triton_tflops"]

TRITON_SOURCE = ("Dao 2023, FlashAttention-2 (arXiv 2307.08691), Figure 4, 'FlashAttention Triton' bars "
                 "(OpenAI Triton's triton.ops.flash_attention); Dao-AILab/flash-attention "
                 "assets/flash2_a100_fwd_bwd_benchmark.png at commit 4f285b354796fb17df8636485b9a04df3ebbb7dc")

TRITON_TFLOPS: dict[tuple[str, bool, int], tuple[float, ...]] = {
    ("A100-SXM4-80GB", False, 64): (90.0, 102.0, 98.0, 98.0, 100.0, 100.0),
    ("A100-SXM4-80GB", False, 128): (78.0, 85.0, 90.0, 93.0, 95.0, 95.0),
    ("A100-SXM4-80GB", True, 64): (59.0, 75.0, 79.0, 76.0, 79.0, 80.0),
    ("A100-SXM4-80GB", True, 128): (50.0, 61.0, 68.0, 74.0, 78.0, 80.0),
}
"""Forward + backward TFLOP/s of the Triton FlashAttention kernel by (device name, causal, head dimension),
at ``attention_rates.FA2_SEQ_LENS`` (512 .. 16k)."""

SAME_CHIP = {"A100-SXM4-40GB": "A100-SXM4-80GB"}
"""Devices that take a published device's row unchanged: the A100 40GB SXM4 is the same GA100 (108 SMs,
the same clocks and 312 TFLOP/s bf16 peak) with less and slower HBM (1,555 against 2,039 GB/s), which a
FlashAttention kernel, reading Q, K, V once per tile row, does not wait on at these sizes (an assumption)."""


def triton_devices() -> tuple[str, ...]:
    """The device names the kernel has a rate for: the published ones, then those of ``SAME_CHIP``."""
    return tuple(dict.fromkeys(name for name, _, _ in TRITON_TFLOPS)) + tuple(SAME_CHIP)


def triton_head_dims(device_name: str, causal: bool = True) -> tuple[int, ...]:
    """The head dimensions published for ``device_name`` and this mask; () when it has no row."""
    name = SAME_CHIP.get(device_name, device_name)
    return tuple(sorted(d for n, c, d in TRITON_TFLOPS if n == name and c == causal))


def triton_tflops(device_name: str, head_dim: int, seq: int, causal: bool = True) -> float | None:
    """The Triton kernel's forward + backward TFLOP/s on ``device_name``, or None where nothing is published.

    Only a published head dimension (``triton_head_dims``) has a rate. Between published sequence
    lengths the rate is interpolated linearly in log2 of the length, outside them held at the end
    figure, as ``attention_rates.published_tflops`` does.
    """
    if head_dim not in triton_head_dims(device_name, causal):
        return None
    return log2_interpolated(TRITON_TFLOPS[SAME_CHIP.get(device_name, device_name), causal, head_dim], seq)
