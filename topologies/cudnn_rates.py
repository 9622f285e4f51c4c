"""cuDNN's fused attention (the kernel Transformer Engine runs on Hopper): published throughput per pass.

Megatron-Core, NeMo and Megatron-Bridge run the attention core through Transformer Engine's
``DotProductAttention``, which on compute capability 9.0 and later drops FlashAttention whenever
cuDNN's fused attention (``FusedAttention``, sub-backend ``F16_arbitrary_seqlen``) also supports the
call: "Disabling FlashAttention to give FusedAttention preference on Hopper+ for performance reasons"
(NVIDIA/TransformerEngine ``transformer_engine/pytorch/attention.py`` at v1.7 and v1.8, between which
lies NeMo 24.07's 1.8.0.dev0; ``transformer_engine/pytorch/attention/dot_product_attention/utils.py``
at v2.9, commit 70f536662ae10a62a54f4ed1ba92e3314c5cfd69, the version Megatron-Bridge's ``uv.lock``
pins at its 25.11 commit 1804c076f; still there at v2.15, 26.04.01's).

Each pass is timed from its own published figure (better than the pair rate FlashAttention-2's rows
give), both causal, both counting FLOPs as ``attention_rates.flash_flops`` does (``4 s^2 d`` per
sequence and head forward, 2.5 times that backward, halved under the causal mask):

- forward: the cuDNN bars of the forward-speed figure of Shah et al. 2024, "FlashAttention-3: Fast and
  Accurate Attention with Asynchrony and Low-precision" (arXiv 2407.08608), panels (b), (d) and (f),
  "Forward, with causal mask, head dim 64 / 128 / 256", H100 80GB SXM5, 16k tokens per call; the
  figure as committed to Dao-AILab/flash-attention (``assets/flash3_fp16_fwd.png``, commit
  7ef24848cf2f855077cef88fe122775b727dcd74, "Add FA3 image"). Every causal cuDNN label is legible.
- backward: NVIDIA's own cuDNN SDPA benchmark, NVIDIA/cudnn-frontend ``benchmark/benchmark_results.csv``
  (commit b740542818f36857acf7f9853f749bbad4118c65, May 2024; cuDNN 9.1.0 by its README's sample
  output), column "cudnn BF16 (TFlops/s bwd)", causal rows: head dimension 128, 16 heads, 4k to 64k
  tokens (4 x 4k ... 1 x 16k per call), on the H200 (the README locks an H200's clocks, 3201 MHz memory
  and 1980 MHz SMs). The FlashAttention-3 paper's backward figure is not in the repository, and it
  has no causal panel. The rows at 32k and 64k (499.7, 503.8) lie past the table's 16k.

The H100 SXM5 and the H200 are one chip, GH100 with 132 SMs at up to 1,980 MHz (1,979 dense bf16
TFLOP/s); the H200 adds memory bandwidth (4.8 against 3.35 TB/s), which a fused attention kernel,
reading Q, K and V once per tile row, does not wait on at these sizes (an assumption). So both devices
take both rows (``SAME_CHIP``): the H100 borrows the backward, the H200 the forward. The same CSV's
causal forward (542.3, 572.9, 586.8 at 4k, 8k, 16k) is 5-9% above the paper's H100 bars, so the H100's
backward may be a few percent optimistic. A September 2024 rerun of the CSV (commit de355c7)
gives the backward within 2% (438.5, 461.9, 488.6).

Only head dimension 128 has both passes; 64 and 256 have a forward only and are refused. Below 4k the
backward is held at its 4k figure (no extrapolation; optimistic at 2k, where the forward is 7% slower
than at 4k). Blackwell is refused: no published figure of cuDNN's attention on the B200 or GB200 is
transcribed here.

==========  ======  ====  =====  =====  =====  =====  =====  =====
pass        causal  d     512    1k     2k     4k     8k     16k
==========  ======  ====  =====  =====  =====  =====  =====  =====
forward     yes     64    225    288    334    363    379    388
forward     yes     128   315    410    484    518    529    539
forward     yes     256   308    391    450    483    497    509
backward    yes     128   --     --     --     443.6  463.5  497.7
==========  ======  ====  =====  =====  =====  =====  =====  =====

Example::

    >>> cudnn_tflops("H100-SXM5-80GB", 128, 4096, "forward")
    518.0
    >>> cudnn_tflops("H100-SXM5-80GB", 128, 2048, "backward")  # held at the 4k figure
    443.6
    >>> cudnn_tflops("B200-180GB", 128, 4096, "forward") is None
    True
"""

from __future__ import annotations

from topologies.attention_rates import log2_interpolated

__all__ = ["CUDNN_SOURCE", "CUDNN_TFLOPS", "SAME_CHIP", "cudnn_devices", "cudnn_head_dims", "cudnn_tflops"]

CUDNN_SOURCE = {
    "forward": ("Shah et al. 2024, FlashAttention-3 (arXiv 2407.08608), forward-speed figure, causal panels, "
                "cuDNN bars, H100 80GB SXM5; Dao-AILab/flash-attention assets/flash3_fp16_fwd.png at commit "
                "7ef24848cf2f855077cef88fe122775b727dcd74"),
    "backward": ("NVIDIA/cudnn-frontend benchmark/benchmark_results.csv at commit "
                 "b740542818f36857acf7f9853f749bbad4118c65 (cuDNN 9.1.0, bf16, causal, H200)"),
}

CUDNN_TFLOPS: dict[tuple[str, bool, int], tuple[float | None, ...]] = {
    ("forward", True, 64): (225.0, 288.0, 334.0, 363.0, 379.0, 388.0),
    ("forward", True, 128): (315.0, 410.0, 484.0, 518.0, 529.0, 539.0),
    ("forward", True, 256): (308.0, 391.0, 450.0, 483.0, 497.0, 509.0),
    ("backward", True, 128): (None, None, None, 443.6, 463.5, 497.7),
}
"""TFLOP/s of cuDNN's fused attention on the GH100 chip by (pass, causal, head dimension), at
``attention_rates.FA2_SEQ_LENS`` (512 .. 16k); ``None`` where nothing is published (module doc)."""

SAME_CHIP = ("H100-SXM5-80GB", "H200-SXM-141GB")
"""The devices that take the rows: the H100 SXM5 (the forward's) and the H200 (the backward's), one chip."""


def cudnn_devices() -> tuple[str, ...]:
    """The device names the kernel has rates for."""
    return SAME_CHIP


def cudnn_head_dims(device_name: str, causal: bool = True) -> tuple[int, ...]:
    """The head dimensions with both a forward and a backward figure for ``device_name``; () when none."""
    if device_name not in SAME_CHIP:
        return ()
    forward = {d for mode, c, d in CUDNN_TFLOPS if mode == "forward" and c == causal}
    return tuple(sorted(d for mode, c, d in CUDNN_TFLOPS if mode == "backward" and c == causal and d in forward))


def cudnn_tflops(device_name: str, head_dim: int, seq: int, mode: str, causal: bool = True) -> float | None:
    """cuDNN's fused attention TFLOP/s for one pass (``forward`` or ``backward``), or None where nothing is
    published.

    Only a head dimension with both passes (``cudnn_head_dims``) has a rate. Between published sequence
    lengths the rate is interpolated linearly in log2 of the length, outside them held at the end
    figure, as ``attention_rates.published_tflops`` does.
    """
    if head_dim not in cudnn_head_dims(device_name, causal):
        return None
    return log2_interpolated(CUDNN_TFLOPS[mode, causal, head_dim], seq)
