"""Published compute figures of each GPU and the achievable rates the compute model uses, with sources.

The peaks (dense TFLOP/s per dtype, memory bandwidth and size) are the datasheets' and live in
``topologies.devices``. This file holds what a GPU actually reaches, each figure beside its source:

``gemm_tflops``
    The large-GEMM rate per dtype, with ``gemm_shape`` the (M, N, K) at which it was measured. The
    compute model reads it as the large-GEMM ceiling: its per-shape factors (``simulator.gemm_shape``)
    are normalised so that this shape on this device reaches exactly it. Two kinds of measurement:

    - *sustained*, where one is published: GEMMs run back to back on random operands, as a training
      step runs them, so the GPU sits at the clock its power limit sustains. A100 SXM: 258 TFLOP/s
      at 8192 x 8192 x 8192 in half precision, cuBLAS through PyTorch on ``torch.randn`` operands
      (H. He, "Strangely, Matrix Multiplications on GPUs Run Faster When Given 'Predictable' Data!",
      thonking.ai, 2024, measured in 2022; the same GEMM on zeros reaches 295, the difference being
      the switching power that holds the clock down). NVIDIA's own HPL rating of the A100 says the
      same from the other side: it computes Rpeak at 1,305 MHz, the clock the A100 sustains at its
      power limit under HPL's matrix products, not the 1,410 MHz boost clock (G. Lockwood, "Peak
      FLOPS", glennklockwood.com), 0.926 of it; 258 is 0.937 of what the maximum-achievable figure
      below gives at that shape.
    - *maximum achievable matmul* (MAMF), elsewhere: the best mean TFLOP/s of one ``torch.mm`` found
      by a brute-force search over shapes (S. Bekman, "Machine Learning Engineering",
      compute/accelerator/README.md, "Maximum Achievable Matmul FLOPS comparison table", BF16 and FP8
      tables; stas00/ml-engineering). It is a best case: its benchmark loop clears the L2 cache (a
      256 MB write) and rewrites the output between timed GEMMs (``mamf-finder.py``,
      ``benchmark_mm``), so the tensor cores rest between GEMMs, and the best of thousands of shapes
      is kept. Where a sustained figure replaces it, ``best_case_tflops`` keeps it for reference.
      No sustained figure was found for the H100, H200, B200 or GB200: their rates are best cases.
``mem_bandwidth_achievable_GBps``
    What a streaming kernel (copy, elementwise, normalization) reaches in device memory. Published
    measurements put it near 90% of the datasheet rate: an A100 80GB SXM read kernel stops at 1.80 of
    2.04 TB/s, 88% by Nsight Compute, and "the maximum memory bandwidth achieved by any kernel was
    around 90%" in NVIDIA's GTC talk the thread cites (NVIDIA developer forums, "Trouble to Reach Peak
    Bandwidth of A100", 2025). Where no measurement of a part was found, 90% of its datasheet rate is
    used and marked "assumed".
``sms``
    Streaming multiprocessors: what a GEMM's tiles are spread over, so a GEMM of few tiles or a last
    partial wave leaves SMs idle (NVIDIA, "Matrix Multiplication Background User's Guide", wave
    quantization). A100: 108 (NVIDIA A100 Tensor Core GPU Architecture whitepaper); H100 SXM5 and
    H200: 132 (NVIDIA H100 Tensor Core GPU Architecture whitepaper); B200 and GB200: 148, an assumption
    (NVIDIA's datasheets give no SM count; 148 is the count commonly reported for the B200); V100: 80;
    Quadro RTX 5000: 48 (datasheet). V100 and Quadro RTX 5000 carry no ``sms`` here (no achievable
    matmul figure either), so they keep the CPU-style thin-matrix factor.

==================  ====================  ===================  =================  ==========================
device              GEMM bf16 (fp8)       at M x N x K         achievable GB/s    source of the GEMM rate
==================  ====================  ===================  =================  ==========================
A100-SXM4-40GB      258.0 sustained       8192x8192x8192       1,400 (assumed)    He 2024 (the 80GB part has
                    (MAMF 271.2 at                                                the same SMs, clocks and
                    1024x10240x5120)                                              400 W limit; GEMMs of this
                                                                                  size are compute bound)
A100-SXM4-80GB      258.0 sustained       8192x8192x8192       1,800 (measured)   He 2024; MAMF: A100 SXM
                    (MAMF 271.2 ...)                                              row, torch 2.6
A100-PCIE-40GB      252.9                 2048x5120x6144       1,400 (assumed)    A100 PCIe row
H100-SXM5-80GB      794.5 (1,402.6)       2048x2048x13312      3,015 (assumed)    H100 SXM row
H200-SXM-141GB      794.5 (1,453.4)       2048x2048x13312      4,320 (assumed)    H100 SXM row ("H200 is the
                                                                                  same"); FP8: H200 row
B200-180GB          1,745.0 (3,432.5)     1792x16128x3072      7,200 (assumed)    B200 SXM row
GB200-186GB         1,822.0 (3,615.6)     4096x9728x2048       7,200 (assumed)    GB200 SXM row
==================  ====================  ===================  =================  ==========================

Where a device has no MAMF for a dtype the compute model falls back to ``ComputeConfig.gemm_efficiency``
of the dtype's peak (float16 takes the bfloat16 figure: the same tensor cores and the same peak on every
device here). V100, Quadro RTX 5000 and the CPU placeholder have no MAMF: they keep that fallback.

Example::

    >>> COMPUTE_RATES["A100-SXM4-80GB"].gemm_tflops["bfloat16"], COMPUTE_RATES["A100-SXM4-80GB"].best_case_tflops
    (258.0, 271.2)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

__all__ = ["ComputeRates", "COMPUTE_RATES", "ACHIEVABLE_MEMORY_FRACTION", "MAMF_SOURCE", "SUSTAINED_SOURCE"]

MAMF_SOURCE = ("S. Bekman, Machine Learning Engineering, compute/accelerator/README.md, "
               "Maximum Achievable Matmul FLOPS comparison table")
SUSTAINED_SOURCE = ("H. He, Strangely, Matrix Multiplications on GPUs Run Faster When Given 'Predictable' Data!, "
                    "thonking.ai, 2024: cuBLAS 8192^3 on randn operands, 258 TFLOP/s on an A100")
ACHIEVABLE_MEMORY_FRACTION = 0.9
"""Of the datasheet memory bandwidth, where no measurement of the part was found (module doc)."""


@dataclass(frozen=True)
class ComputeRates:
    """What one GPU reaches: achievable matmul throughput, its shape, memory bandwidth and SM count."""

    gemm_tflops: Mapping[str, float]
    """The large-GEMM TFLOP/s per dtype: sustained where published, else the MAMF (module doc)."""
    gemm_shape: tuple[int, int, int]
    """(M, N, K) at which the bfloat16 figure was measured."""
    mem_bandwidth_achievable_GBps: float
    """What a streaming kernel reaches in device memory, GB/s."""
    sms: int
    """Streaming multiprocessors."""
    source: str = field(default="", compare=False)
    best_case_tflops: float | None = None
    """The bfloat16 MAMF, where ``gemm_tflops`` is a sustained figure instead (module doc); None otherwise."""
    best_case_shape: tuple[int, int, int] | None = None
    """(M, N, K) at which ``best_case_tflops`` was measured."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "gemm_tflops", MappingProxyType(dict(self.gemm_tflops)))


def _bf16(tflops: float, fp8: float | None = None) -> dict:
    rates = {"bfloat16": tflops, "float16": tflops}  # same tensor cores, same peak (module doc)
    if fp8 is not None:
        rates["float8"] = fp8
    return rates


COMPUTE_RATES: dict[str, ComputeRates] = {
    # Sustained, not the MAMF (module doc): 258 back to back against the search's best 271.2.
    "A100-SXM4-40GB": ComputeRates(_bf16(258.0), (8192, 8192, 8192), 0.9 * 1555.0, 108,
                                   SUSTAINED_SOURCE + "; MAMF: " + MAMF_SOURCE + ": A100 SXM (torch 2.6.0+cu126); "
                                   "memory assumed 90%", best_case_tflops=271.2,
                                   best_case_shape=(1024, 10240, 5120)),
    "A100-SXM4-80GB": ComputeRates(_bf16(258.0), (8192, 8192, 8192), 1800.0, 108,
                                   SUSTAINED_SOURCE + "; MAMF: " + MAMF_SOURCE + ": A100 SXM (torch 2.6.0+cu126); "
                                   "memory 1.80 TB/s measured (NVIDIA developer forums, Trouble to Reach Peak "
                                   "Bandwidth of A100)", best_case_tflops=271.2,
                                   best_case_shape=(1024, 10240, 5120)),
    "A100-PCIE-40GB": ComputeRates(_bf16(252.9), (2048, 5120, 6144), 0.9 * 1555.0, 108,
                                   MAMF_SOURCE + ": A100 PCIe (torch 2.5.1+cu124); memory assumed 90%"),
    "H100-SXM5-80GB": ComputeRates(_bf16(794.5, 1402.6), (2048, 2048, 13312), 0.9 * 3350.0, 132,
                                   MAMF_SOURCE + ": H100 SXM (torch 2.7.0+cu126); memory assumed 90%"),
    "H200-SXM-141GB": ComputeRates(_bf16(794.5, 1453.4), (2048, 2048, 13312), 0.9 * 4800.0, 132,
                                   MAMF_SOURCE + ": H100 SXM row, 'H200 is the same'; FP8 H200 SXM row; "
                                   "memory assumed 90%"),
    "B200-180GB": ComputeRates(_bf16(1745.0, 3432.5), (1792, 16128, 3072), 0.9 * 8000.0, 148,
                               MAMF_SOURCE + ": B200 SXM (torch 2.7.1+cu128); memory assumed 90%"),
    "GB200-186GB": ComputeRates(_bf16(1822.0, 3615.6), (4096, 9728, 2048), 0.9 * 8000.0, 148,
                                MAMF_SOURCE + ": GB200 SXM (torch 2.10 nightly, cu130); memory assumed 90%"),
}
"""Achievable rates by ``DeviceSpec.name``; devices absent here keep the flat fallback (module doc)."""
