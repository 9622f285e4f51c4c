"""cuDNN's fused attention (the kernel Transformer Engine runs on Hopper and Blackwell): published rates per pass.

Megatron-Core, NeMo and Megatron-Bridge run the attention core through Transformer Engine's
``DotProductAttention``, which on compute capability 9.0 and later drops FlashAttention whenever
cuDNN's fused attention (``FusedAttention``, sub-backend ``F16_arbitrary_seqlen``) also supports the
call: "Disabling FlashAttention to give FusedAttention preference on Hopper+ for performance reasons"
(NVIDIA/TransformerEngine ``transformer_engine/pytorch/attention.py`` at v1.7 and v1.8, between which
lies NeMo 24.07's 1.8.0.dev0, there for sm90 only; ``transformer_engine/pytorch/attention/
dot_product_attention/utils.py`` at v2.9, commit 70f536662ae10a62a54f4ed1ba92e3314c5cfd69, the version
Megatron-Bridge's ``uv.lock`` pins at its 25.11 commit 1804c076f, for every capability >= 9.0 as since
v2.0; still there at v2.15, 26.04.01's).

Each pass is timed from its own published figure (better than the pair rate FlashAttention-2's rows
give), causal, every source counting FLOPs as ``attention_rates.flash_flops`` does (``4 s^2 d`` per
sequence and query head forward, 2.5 times that backward, halved under the causal mask). Sources:

- H100 forward: the cuDNN bars of the forward-speed figure of Shah et al. 2024, "FlashAttention-3: Fast
  and Accurate Attention with Asynchrony and Low-precision" (arXiv 2407.08608), panels (b), (d) and
  (f), "Forward, with causal mask, head dim 64 / 128 / 256", H100 80GB SXM5, 16k tokens per call, as
  committed to Dao-AILab/flash-attention (``assets/flash3_fp16_fwd.png``, commit
  7ef24848cf2f855077cef88fe122775b727dcd74, "Add FA3 image"). Every causal cuDNN label is legible.
- H200 backward: NVIDIA's cuDNN SDPA benchmark, NVIDIA/cudnn-frontend ``benchmark/benchmark_results.csv``
  (commit b740542818f36857acf7f9853f749bbad4118c65, May 2024; cuDNN 9.1.0 by its README's sample
  output), "cudnn BF16 (TFlops/s bwd)", causal rows: head dimension 128, 16 heads, 4 x 4k ... 1 x 16k
  per call, on the H200 (the README locks an H200's clocks, 3201 MHz memory and 1980 MHz SMs). The
  FlashAttention-3 paper's backward figure is not in the repository, and it has no causal panel.
- B200: cudnn-frontend ``benchmark/sdpa_benchmark_training/artifacts/sdpa_bf16_benchmark_results_NVIDIA_B200.csv``
  (commit 0b1577c8c83401237d601d0d0db5210506705396, October 2025; cuDNN 9.13.1, NGC PyTorch 25.09),
  backend ``pyt_cudnn`` (PyTorch's SDPA on cuDNN), bf16, causal, 1 x 128 query heads (8 key/value
  heads) x d 128 per call.
- GB200: the same benchmark's ``sdpa_bf16_benchmark_results_NVIDIA_GB200.csv`` (commit
  b372d39879d44c91a8d5b342022e74802b6a8da2, December 2025; cuDNN 9.17.0, NGC PyTorch 25.11), backend
  ``cudnn_fe`` (cuDNN's frontend, as Transformer Engine calls it), the same shapes.

The H100 SXM5 and the H200 are one chip, GH100 with 132 SMs at up to 1,980 MHz (1,979 dense bf16
TFLOP/s); the H200 adds memory bandwidth (4.8 against 3.35 TB/s), which a fused attention kernel,
reading Q, K and V once per tile row, does not wait on at these sizes (an assumption). So both take
both GH100 rows (``CHIP``): the H100 borrows the backward, the H200 the forward. The H200 CSV's own
causal forward (542.3, 572.9, 586.8 at 4k, 8k, 16k) is 5-9% above the paper's H100 bars, so the
H100's backward may be a few percent optimistic; a September 2024 rerun of the CSV (commit de355c7)
gives the backward within 2% (438.5, 461.9, 488.6). Below 4k the GH100 backward is held at its 4k
figure (no extrapolation; optimistic at 2k, where the forward is 7% slower than at 4k). The Blackwell
rows are batch-1 calls: at 512 and 1k they are too small to fill the GPU (84 TFLOP/s forward on the
B200 at 512), so there they understate a training step's larger calls. The B200 and GB200 rows come
from different cuDNN versions and front ends; the GB200's is 35% faster forward at 8k for an 11%
higher dense peak, which says more about cuDNN 9.13 against 9.17 than about the chips.

Only head dimension 128 has both passes on every chip; d 64 and 256 have an H100 forward only and
are refused.

==============  ========  ====  ======  ======  ======  ======  ======  ======
chip            pass      d     512     1k      2k      4k      8k      16k
==============  ========  ====  ======  ======  ======  ======  ======  ======
GH100           forward   64    225     288     334     363     379     388
GH100           forward   128   315     410     484     518     529     539
GH100           forward   256   308     391     450     483     497     509
GH100           backward  128   --      --      --      443.6   463.5   497.7
B200-180GB      forward   128   84.0    254.5   478.9   855.7   1171.3  1332.4
B200-180GB      backward  128   134.2   308.5   371.5   701.3   942.5   1074.8
GB200-186GB     forward   128   408     733     1069    1386    1584    1668
GB200-186GB     backward  128   329     527     655     1054    1211    1304
==============  ========  ====  ======  ======  ======  ======  ======  ======

Example::

    >>> cudnn_tflops("H100-SXM5-80GB", 128, 4096, "forward")
    518.0
    >>> cudnn_tflops("H100-SXM5-80GB", 128, 2048, "backward")  # held at the 4k figure
    443.6
    >>> cudnn_tflops("GB200-186GB", 128, 8192, "backward")
    1211.0
    >>> cudnn_tflops("A100-SXM4-80GB", 128, 4096, "forward") is None
    True
"""

from __future__ import annotations

from topologies.attention_rates import log2_interpolated

__all__ = ["CUDNN_SOURCE", "CUDNN_TFLOPS", "CHIP", "cudnn_devices", "cudnn_head_dims", "cudnn_tflops"]

CUDNN_SOURCE = {
    ("GH100", "forward"): ("Shah et al. 2024, FlashAttention-3 (arXiv 2407.08608), forward-speed figure, causal "
                           "panels, cuDNN bars, H100 80GB SXM5; Dao-AILab/flash-attention assets/flash3_fp16_fwd.png "
                           "at commit 7ef24848cf2f855077cef88fe122775b727dcd74"),
    ("GH100", "backward"): ("NVIDIA/cudnn-frontend benchmark/benchmark_results.csv at commit "
                            "b740542818f36857acf7f9853f749bbad4118c65 (cuDNN 9.1.0, bf16, causal, H200)"),
    ("B200-180GB", "forward"): ("NVIDIA/cudnn-frontend benchmark/sdpa_benchmark_training/artifacts/"
                                "sdpa_bf16_benchmark_results_NVIDIA_B200.csv at commit "
                                "0b1577c8c83401237d601d0d0db5210506705396 (cuDNN 9.13.1, pyt_cudnn)"),
    ("GB200-186GB", "forward"): ("NVIDIA/cudnn-frontend benchmark/sdpa_benchmark_training/artifacts/"
                                 "sdpa_bf16_benchmark_results_NVIDIA_GB200.csv at commit "
                                 "b372d39879d44c91a8d5b342022e74802b6a8da2 (cuDNN 9.17.0, cudnn_fe)"),
}
"""Where each (chip, pass) row comes from (module doc); a Blackwell backward row shares its forward's file."""
CUDNN_SOURCE["B200-180GB", "backward"] = CUDNN_SOURCE["B200-180GB", "forward"]
CUDNN_SOURCE["GB200-186GB", "backward"] = CUDNN_SOURCE["GB200-186GB", "forward"]

CUDNN_TFLOPS: dict[tuple[str, str, bool, int], tuple[float | None, ...]] = {
    ("GH100", "forward", True, 64): (225.0, 288.0, 334.0, 363.0, 379.0, 388.0),
    ("GH100", "forward", True, 128): (315.0, 410.0, 484.0, 518.0, 529.0, 539.0),
    ("GH100", "forward", True, 256): (308.0, 391.0, 450.0, 483.0, 497.0, 509.0),
    ("GH100", "backward", True, 128): (None, None, None, 443.6, 463.5, 497.7),
    ("B200-180GB", "forward", True, 128): (84.0, 254.5, 478.9, 855.7, 1171.3, 1332.4),
    ("B200-180GB", "backward", True, 128): (134.2, 308.5, 371.5, 701.3, 942.5, 1074.8),
    ("GB200-186GB", "forward", True, 128): (408.0, 733.0, 1069.0, 1386.0, 1584.0, 1668.0),
    ("GB200-186GB", "backward", True, 128): (329.0, 527.0, 655.0, 1054.0, 1211.0, 1304.0),
}
"""TFLOP/s of cuDNN's fused attention by (chip, pass, causal, head dimension), at
``attention_rates.FA2_SEQ_LENS`` (512 .. 16k); ``None`` where nothing is published (module doc)."""

CHIP = {"H100-SXM5-80GB": "GH100", "H200-SXM-141GB": "GH100", "B200-180GB": "B200-180GB",
        "GB200-186GB": "GB200-186GB"}
"""The rows each device takes: the H100 SXM5 (the GH100 forward's) and the H200 (its backward's) are one
chip; each Blackwell device its own."""


def cudnn_devices() -> tuple[str, ...]:
    """The device names the kernel has rates for."""
    return tuple(CHIP)


def cudnn_head_dims(device_name: str, causal: bool = True) -> tuple[int, ...]:
    """The head dimensions with both a forward and a backward figure for ``device_name``; () when none."""
    chip = CHIP.get(device_name)
    forward = {d for c, mode, m, d in CUDNN_TFLOPS if c == chip and mode == "forward" and m == causal}
    return tuple(sorted(d for c, mode, m, d in CUDNN_TFLOPS
                        if c == chip and mode == "backward" and m == causal and d in forward))


def cudnn_tflops(device_name: str, head_dim: int, seq: int, mode: str, causal: bool = True) -> float | None:
    """cuDNN's fused attention TFLOP/s for one pass (``forward`` or ``backward``), or None where nothing is
    published.

    Only a head dimension with both passes (``cudnn_head_dims``) has a rate. Between published sequence
    lengths the rate is interpolated linearly in log2 of the length, outside them held at the end
    figure, as ``attention_rates.published_tflops`` does.
    """
    if head_dim not in cudnn_head_dims(device_name, causal):
        return None
    return log2_interpolated(CUDNN_TFLOPS[CHIP[device_name], mode, causal, head_dim], seq)
