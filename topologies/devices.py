"""Device specs for GPU nodes: peak dense TFLOP/s per dtype, memory bandwidth and memory size.

A GPU node stores ``DeviceSpec.as_dict()`` in its ``device`` attribute. ``peak_tflops`` holds dense
(no 2:4 sparsity) rates; where the hardware has tensor cores for a dtype the tensor-core rate is given
(float64 on A100/H100 is the FP64 tensor-core rate). ``float32`` is plain FP32 (CUDA cores); the TF32
tensor-core rate, which PyTorch uses only when TF32 matmul is enabled, is the extra key ``tfloat32``.

Sources (NVIDIA datasheets; the sparse figures they headline are halved here):

- A100 SXM4 / PCIe: NVIDIA A100 Tensor Core GPU datasheet (nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf):
  FP64 9.7, FP64 TC 19.5, FP32 19.5, TF32 156, BF16/FP16 312; 40 GB HBM2 at 1,555 GB/s.
- H100 SXM5: NVIDIA H100 datasheet: FP64 34, FP64 TC 67, FP32 67, TF32 989*, BF16/FP16 1,979*, FP8 3,958*
  (*with sparsity); 80 GB HBM3 at 3.35 TB/s.
- H200 SXM: NVIDIA H200 datasheet: the H100's compute, 141 GB HBM3e at 4.8 TB/s.
- A100 SXM4 80GB: NVIDIA A100 datasheet (the 80GB column): the 40GB part's compute, 80 GB HBM2e at
  2,039 GB/s.
- B200 (DGX B200): NVIDIA DGX B200 datasheet, 8 GPUs: FP8 72 PF*, FP16/BF16 36 PF*, TF32 18 PF*,
  FP64 296 TF; 1,440 GB HBM3e at 64 TB/s; per GPU (halving the sparse rates): FP8 4,500, BF16 2,250,
  TF32 1,125, FP64 37 TF; 180 GB at 8 TB/s. FP32 (CUDA cores) is not in the datasheet; FP64's 37 is
  given (an assumption, as Hopper's FP32 equals its FP64 rate).
- GB200 (GB200 NVL72): NVIDIA GB200 NVL72 datasheet, 72 GPUs: FP8 720 PF*, FP16/BF16 360 PF*, TF32
  180 PF*, FP64 3,240 TF; up to 13.4 TB HBM3e at 576 TB/s; per GPU: FP8 5,000, BF16 2,500, TF32 1,250,
  FP64 45 TF; 186 GB at 8 TB/s. FP32 as FP64 (the same assumption).
- V100 SXM2 16GB / 32GB: NVIDIA Tesla V100 datasheet (SXM2 column): FP64 7.8, FP32 15.7, tensor
  (FP16 in, FP32 accumulate) 125; HBM2 at 900 GB/s, 16 or 32 GB. Volta has no bfloat16 (tensor cores or
  otherwise): the ``bfloat16`` entry is the FP32 rate, an assumption standing for code that computes
  bfloat16 in float32 on it; the papers run on V100s used float16 mixed precision.
- V100 SXM3 32GB (DGX-2H): NVIDIA's DGX-2H is quoted at 2.1 PFLOPS tensor for 16 GPUs (the DGX-2's 2.0 at
  a higher clock and 450 W per GPU; Tom's Hardware, "Nvidia's DGX-2 ... Just Got Faster"): 131.25 per GPU.
  FP64 and FP32 are the SXM2 figures scaled by the same 2.1/2.0 (an assumption: one clock for every unit);
  HBM2 at 900 GB/s as SXM2 (an assumption: no DGX-2H memory clock was found), 32 GB.
- Quadro RTX 5000 (Turing TU104): NVIDIA Quadro RTX 5000 datasheet: FP32 11.2, tensor (FP16) 89.2; 16 GB
  GDDR6 at 448 GB/s. FP64 is 1/32 of FP32 (48 SMs x 2 FMA per cycle at 1.815 GHz = 0.35; Cornell CVW,
  "GPUs on Frontera: RTX 5000", and the CUDA programming guide's throughput table for compute capability
  7.5). Turing has no bfloat16: FP32's rate, as for Volta.

The compute side beyond the peaks (achievable matmul throughput and the shape it was measured at,
achievable memory bandwidth, SM count) comes from ``topologies.compute_rates`` by device name, with
its sources there; ``as_dict`` adds those keys for the devices listed there. ``reserve_GB`` is the
memory a training framework cannot use (``simulator.memory.device``: 2 GB of CUDA context, library
workspaces and NCCL buffers plus 5% for the caching allocator's fragmentation), listed per device so
a planner sees usable = ``memory_GB - reserve_GB``.

Example::

    >>> A100_SXM4_40GB.as_dict()["peak_tflops"]["bfloat16"]
    312.0
    >>> A100_SXM4_80GB.as_dict()["gemm_tflops"]["bfloat16"], A100_SXM4_80GB.as_dict()["sms"]
    (258.0, 108)
    >>> A100_SXM4_80GB.reserve_GB
    6.0
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from topologies.compute_rates import COMPUTE_RATES
from topologies.kinds import DTYPES

__all__ = [
    "DeviceSpec",
    "A100_SXM4_40GB",
    "A100_PCIE_40GB",
    "H100_SXM5_80GB",
    "H200_SXM_141GB",
    "A100_SXM4_80GB",
    "B200_180GB",
    "GB200_186GB",
    "V100_SXM2_16GB",
    "V100_SXM2_32GB",
    "V100_SXM3_32GB",
    "QUADRO_RTX5000_16GB",
    "CPU_CORE",
    "DEVICES",
]


@dataclass(frozen=True)
class DeviceSpec:
    """One accelerator (or CPU rank slot): the figures the compute model reads."""

    name: str
    """Device name as it appears in nvidia-smi or a datasheet, e.g. "A100-SXM4-40GB"."""
    peak_tflops: Mapping[str, float]
    """Dense peak TFLOP/s per dtype; must cover float64, float32, bfloat16, float16."""
    mem_bandwidth_GBps: float
    """Peak device-memory bandwidth in GB/s (1 GB = 1e9 B)."""
    memory_GB: float
    """Device memory size in GB."""
    notes: str = field(default="", compare=False)
    """Where the figures come from (not stored on graph nodes)."""

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("DeviceSpec name must be non-empty")
        missing = [dtype for dtype in DTYPES if dtype not in self.peak_tflops]
        if missing:
            raise ValueError(f"DeviceSpec {self.name}: peak_tflops lacks {', '.join(missing)}")
        for dtype, rate in self.peak_tflops.items():
            if not (isinstance(rate, (int, float)) and math.isfinite(rate) and rate > 0):
                raise ValueError(f"DeviceSpec {self.name}: peak_tflops[{dtype}] must be > 0, got {rate!r}")
        for label, value in (("mem_bandwidth_GBps", self.mem_bandwidth_GBps), ("memory_GB", self.memory_GB)):
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise ValueError(f"DeviceSpec {self.name}: {label} must be > 0, got {value!r}")
        # Read-only view, so a shared spec cannot be changed through one graph.
        rates = {dtype: float(rate) for dtype, rate in self.peak_tflops.items()}
        object.__setattr__(self, "peak_tflops", MappingProxyType(rates))

    @property
    def reserve_GB(self) -> float:
        """Memory a training framework cannot use: 2 GB plus 5% of ``memory_GB`` (module doc)."""
        return round(2.0 + 0.05 * self.memory_GB, 3)

    def as_dict(self) -> dict:
        """The plain dict stored on GPU nodes (a fresh copy each call), with the achievable rates of
        ``topologies.compute_rates`` where it lists this device."""
        out = {
            "name": self.name,
            "peak_tflops": dict(self.peak_tflops),
            "mem_bandwidth_GBps": float(self.mem_bandwidth_GBps),
            "memory_GB": float(self.memory_GB),
        }
        rates = COMPUTE_RATES.get(self.name)
        if rates is not None:
            out.update(gemm_tflops=dict(rates.gemm_tflops), gemm_shape=list(rates.gemm_shape),
                       mem_bandwidth_achievable_GBps=float(rates.mem_bandwidth_achievable_GBps), sms=rates.sms)
        return out


_A100_RATES = {"float64": 19.5, "float32": 19.5, "tfloat32": 156.0, "bfloat16": 312.0, "float16": 312.0}
_HOPPER_RATES = {
    "float64": 67.0,
    "float32": 67.0,
    "tfloat32": 494.5,
    "bfloat16": 989.5,
    "float16": 989.5,
    "float8": 1979.0,
}

A100_SXM4_40GB = DeviceSpec("A100-SXM4-40GB", _A100_RATES, 1555.0, 40.0, "NVIDIA A100 datasheet")
A100_PCIE_40GB = DeviceSpec("A100-PCIE-40GB", _A100_RATES, 1555.0, 40.0, "NVIDIA A100 datasheet")
H100_SXM5_80GB = DeviceSpec("H100-SXM5-80GB", _HOPPER_RATES, 3350.0, 80.0, "NVIDIA H100 datasheet")
H200_SXM_141GB = DeviceSpec("H200-SXM-141GB", _HOPPER_RATES, 4800.0, 141.0, "NVIDIA H200 datasheet")

A100_SXM4_80GB = DeviceSpec("A100-SXM4-80GB", _A100_RATES, 2039.0, 80.0, "NVIDIA A100 datasheet (80GB)")
B200_180GB = DeviceSpec("B200-180GB", {"float64": 37.0, "float32": 37.0, "tfloat32": 1125.0, "bfloat16": 2250.0,
                                       "float16": 2250.0, "float8": 4500.0}, 8000.0, 180.0, "NVIDIA DGX B200 datasheet")
GB200_186GB = DeviceSpec("GB200-186GB", {"float64": 45.0, "float32": 45.0, "tfloat32": 1250.0, "bfloat16": 2500.0,
                                         "float16": 2500.0, "float8": 5000.0}, 8000.0, 186.0,
                         "NVIDIA GB200 NVL72 datasheet")
_VOLTA_RATES = {"float64": 7.8, "float32": 15.7, "bfloat16": 15.7, "float16": 125.0}
V100_SXM2_16GB = DeviceSpec("V100-SXM2-16GB", _VOLTA_RATES, 900.0, 16.0, "NVIDIA Tesla V100 datasheet (SXM2)")
V100_SXM2_32GB = DeviceSpec("V100-SXM2-32GB", _VOLTA_RATES, 900.0, 32.0, "NVIDIA Tesla V100 datasheet (SXM2)")
# DGX-2H: the SXM2 rates at 2.1/2.0 of the clock.
_VOLTA_H_RATES = {dtype: round(rate * 2.1 / 2.0, 2) for dtype, rate in _VOLTA_RATES.items()}
V100_SXM3_32GB = DeviceSpec("V100-SXM3-32GB", _VOLTA_H_RATES, 900.0, 32.0, "DGX-2H: 2.1 PFLOPS tensor over 16 GPUs")
QUADRO_RTX5000_16GB = DeviceSpec("Quadro-RTX-5000-16GB", {"float64": 0.35, "float32": 11.2, "bfloat16": 11.2,
                                                          "float16": 89.2}, 448.0, 16.0,
                                 "NVIDIA Quadro RTX 5000 datasheet")

# A nominal x86 core for gloo rank slots: 3 GHz x 2 AVX2 FMA units x (4 doubles | 8 floats) x 2 FLOP.
# bfloat16/float16 get the float32 rate because CPUs without AMX compute them in float32. A placeholder
# that calibration overwrites from measurements.
CPU_CORE = DeviceSpec(
    "cpu-core",
    {"float64": 0.048, "float32": 0.096, "bfloat16": 0.096, "float16": 0.096},
    10.0,
    4.0,
    "nominal AVX2 core at 3 GHz; placeholder until calibrated",
)

DEVICES = {spec.name: spec for spec in (A100_SXM4_40GB, A100_PCIE_40GB, H100_SXM5_80GB, H200_SXM_141GB, A100_SXM4_80GB,
                                        B200_180GB, GB200_186GB, V100_SXM2_16GB, V100_SXM2_32GB, V100_SXM3_32GB,
                                        QUADRO_RTX5000_16GB, CPU_CORE)}
