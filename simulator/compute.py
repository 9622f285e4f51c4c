"""The compute model: how long one rank's gemm, elementwise or slice op takes on its GPU.

A gemm of shape (m, k, n) takes ``2mkn / (peak[dtype] * efficiency)`` seconds, with

    efficiency = min(cap * dim / (dim + half_efficiency_dim),  intensity * mem_bandwidth / peak)

- ``cap``: the best fraction of peak a large GEMM reaches (``G.graph["sim"]["gemm_efficiency"]``, else
  ``ComputeConfig.gemm_efficiency`` = 0.7 as in the presets): cuBLAS reaches about 85-90% of the A100's
  312 TFLOP/s bf16 and about 70-75% of the H100 SXM's 989 on large square GEMMs.
- ``dim / (dim + half_efficiency_dim)`` with ``dim = min(m, k, n)``: a saturating penalty for thin
  matrices, which fill few tensor-core tiles and waves (NVIDIA, "Matrix Multiplication Background
  User's Guide": tile and wave quantization). It is 1/2 at ``dim = half_efficiency_dim``.
- ``intensity * mem_bandwidth / peak``: the roofline's memory roof (Williams, Waterman, Patterson,
  CACM 2009), with arithmetic intensity ``2mkn / (dtype bytes * (mk + kn + mn))`` FLOP per byte (each
  operand read once, the result written once). A gemm under it is memory bound and takes exactly the
  time to stream its operands at ``mem_bandwidth_GBps``.

So the time is ``max(2mkn / (peak * cap * thin), bytes / mem_bandwidth)``, the larger of a compute
time and a memory time that each grow with every one of m, k, n: a larger gemm never takes less time,
and the efficiency is non-decreasing in every extent and never above ``cap``.

Ranks that share a host's cores (CPU ranks, more than cores): a gemm's rate depends on what the other
ranks do meanwhile. Back-to-back gemms run on every rank at once, at the rate a lock-step gemm phase
measures; a gemm that directly follows a communication op (or a wait) overlaps other ranks still
communicating (a collective releases its members apart), so it gets more of the cores. Where
``gemm_efficiency_after_comm`` is set (``tpsim calibrate`` fits it from ``tpsim bench --form
interleaved``), such a gemm uses it as its ``cap``; unset (every GPU preset), all gemms use
``gemm_efficiency``.

A ``local`` op costs what its function's ``work`` (``simulator.workloads.functions``) says for the
op's block shapes and parameters: a list of batched products ``(count, m, k, n)`` and the elements
its memory-bound passes read and write. Its time is

    sum over products of count * gemm_time_s(m, k, n)  +  elements * dtype bytes / (mem_bandwidth * memory_efficiency)

(a batch of products is timed as that many separate gemms: no credit for a batched kernel filling
more waves); ``Schedule.flops`` is ``sum 2 * count * m * k * n`` plus the work's elementwise FLOPs and
``Schedule.memory_bytes`` is ``elements * dtype bytes``. ``slice`` ops are one memory pass (read and
write of the copied region). Communication ops take no compute time.

The functions, on a block [r, c] (the output's shape unless said), with ``sc = nb * a * s * s`` the
attention scores of a block holding ``nb`` whole sequences of ``s`` tokens and ``a`` heads of width
``d``, and ``io`` the elements of the block's inputs plus its output:

==========================  ===============================  =========================  =================
function                    products (count, m, k, n)        elements (reads + writes)  elementwise FLOPs
==========================  ===============================  =========================  =================
add, gelu_backward          --                               3rc                        2rc
gelu, copy                  --                               2rc                        rc
zero                        --                               rc                         0
bias_add                    --                               2rc + c                    2rc (as add)
dropout                     --                               2rc                        rc
col_sum [r,c] -> [1,c]      --                               rc + c                     rc
row_moments [r,c] -> [r,2]  --                               rc + 2r                    3rc
layernorm                   --                               2rc + 2r + 2c              4rc
layernorm_backward_moments  --                               2rc + 4r + c               6rc
layernorm_backward          --                               3rc + 4r + c               7rc
layernorm_gamma_grad        --                               2rc + 2r + c               4rc
attention                   S: (nb a, s, d, s)               io + (2 + 2[p>0]) sc       (5 + [p>0]) sc
                            O: (nb a, s, s, d)
attention_backward          S again: (nb a, s, d, s)         io + (5 + 4[p>0]) sc       (9 + 2[p>0]) sc
                            dP': (nb a, s, d, s)
                            dV, dQ, dK: 3 x (nb a, s, s, d)
==========================  ===============================  =========================  =================

Every non-attention row is one pass: each input read once, the output written once. The attention
rows follow ``simulator.workloads.kernels.attention`` (unfused, recomputing in the backward as
FlashAttention does): the forward's two products per sequence and head, S = Q K^T ([s, d] x [d, s]) and
O = P V ([s, s] x [s, d]); softmax reads S and writes P (2 passes over the scores), dropout (only
when p > 0) reads P and writes P' (2 more). The backward recomputes S (one product) and P (2 passes),
runs 4 products (dV = P'^T dO, dP' = dO V^T, dQ = dS K, dK = dS^T Q), drops out P and dP' (4 passes
when p > 0) and forms dS = P (dP - rowsum(dP P)) (3 passes). The products run over the whole s x s,
the causal mask's zero half included, as an unfused kernel computes them: the attention products of
a block of b sequences are ``4 b a s^2 d`` FLOPs forward and ``10 b a s^2 d`` backward.

Example::

    >>> model = ComputeModel(ComputeConfig(gemm_efficiency=0.8))
    >>> a100 = {"name": "A100", "peak_tflops": {"bfloat16": 312.0}, "mem_bandwidth_GBps": 1555.0}
    >>> round(model.gemm_time_s(a100, "bfloat16", 8192, 8192, 8192) * 1e3, 3)  # ms
    4.44
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from simulator.errors import InputError
from simulator.ir.ops import Gemm, Local, Op, Slice
from simulator.ir.schedule import DTYPE_BYTES, Schedule
from simulator.workloads.functions import Work

__all__ = ["FP8", "ComputeConfig", "ComputeModel"]


FP8 = "float8"
"""The devices' key for their dense FP8 tensor-core rate (``topologies.devices``)."""
_OPERAND_BYTES = {**DTYPE_BYTES, FP8: 1}


@dataclass(frozen=True)
class ComputeConfig:
    """Parameters of the compute model; ``from_sim`` reads overrides from ``G.graph["sim"]``."""

    gemm_efficiency: float = 0.7
    """Fraction of dense peak a large, compute-bound gemm reaches (0 < x <= 1)."""
    half_efficiency_dim: float = 64.0
    """Smallest gemm extent, in elements, at which the thin-matrix factor halves the rate (>= 0)."""
    gemm_efficiency_after_comm: float | None = None
    """``cap`` of a gemm that directly follows a communication op or wait, on a host whose ranks share
    cores (module doc); None: ``gemm_efficiency``."""
    memory_efficiency: float = 1.0
    """Fraction of peak memory bandwidth elementwise and slice ops reach (0 < x <= 1)."""
    allow_tf32: bool = False
    """Time float32 gemms at the ``tfloat32`` tensor-core rate where the device lists one (PyTorch's
    ``torch.backends.cuda.matmul.allow_tf32``; off by default, as in PyTorch)."""
    fp8_gemms: bool = False
    """Time the linears' gemms (``gemm`` ops) at the device's dense ``float8`` rate with 1-byte operands:
    Transformer Engine's hybrid FP8 recipe (E4M3 forward, E5M2 gradients), under which everything else
    (the attention core, the elementwise ops, communication, master weights) stays at the schedule's
    dtype. The casts to FP8 and their scaling factors are not timed."""

    def __post_init__(self) -> None:
        for name in ("gemm_efficiency", "memory_efficiency"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and 0 < value <= 1):
                raise InputError(f"compute model: {name} must be in (0, 1], got {value!r}")
        after = self.gemm_efficiency_after_comm
        if after is not None and not (isinstance(after, (int, float)) and 0 < after <= 1):
            raise InputError(f"compute model: gemm_efficiency_after_comm must be in (0, 1] or unset, got {after!r}")
        if not (isinstance(self.half_efficiency_dim, (int, float)) and self.half_efficiency_dim >= 0):
            raise InputError(f"compute model: half_efficiency_dim must be >= 0, got {self.half_efficiency_dim!r}")

    @classmethod
    def from_sim(cls, sim: dict | None, **overrides) -> "ComputeConfig":
        """The config with any of its field names found in a topology's ``sim`` dict, then ``overrides``."""
        values = {f.name: sim[f.name] for f in fields(cls) if sim and f.name in sim}
        values.update(overrides)
        return cls(**values)


class ComputeModel:
    """Op durations in seconds for a device dict (a GPU node's ``device`` attribute)."""

    def __init__(self, config: ComputeConfig | None = None):
        self.config = config or ComputeConfig()
        self._cache: dict[tuple, float] = {}

    def peak_flops(self, device: dict, dtype: str) -> float:
        """Dense peak FLOP/s of ``device`` for ``dtype``; InputError when the device lists none."""
        rates = device.get("peak_tflops", {})
        if dtype == "float32" and self.config.allow_tf32 and "tfloat32" in rates:
            dtype = "tfloat32"
        if dtype not in rates:
            raise InputError(f"device {device.get('name', '?')} has no peak_tflops for {dtype}; "
                             f"it lists: {', '.join(rates) or 'none'}")
        return float(rates[dtype]) * 1e12

    def gemm_efficiency(self, device: dict, dtype: str, m: int, k: int, n: int, after_comm: bool = False) -> float:
        """The fraction of peak a gemm of this shape reaches (see the module docstring); ``after_comm``:
        it directly follows a communication op or wait."""
        dim = min(m, k, n)
        cap = self.config.gemm_efficiency
        if after_comm and self.config.gemm_efficiency_after_comm is not None:
            cap = self.config.gemm_efficiency_after_comm
        compute_roof = cap * dim / (dim + self.config.half_efficiency_dim)
        intensity = 2.0 * m * k * n / (_OPERAND_BYTES[dtype] * (m * k + k * n + m * n))
        memory_roof = intensity * float(device["mem_bandwidth_GBps"]) * 1e9 / self.peak_flops(device, dtype)
        return min(compute_roof, memory_roof)

    def gemm_time_s(self, device: dict, dtype: str, m: int, k: int, n: int, after_comm: bool = False) -> float:
        """Seconds for ``out[m, n] = a[m, k] @ b[k, n]`` (``after_comm``: see ``gemm_efficiency``)."""
        after_comm = after_comm and self.config.gemm_efficiency_after_comm is not None
        key = ("gemm", device.get("name"), dtype, m, k, n, after_comm)
        cached = self._cache.get(key)
        if cached is None:
            flops = 2.0 * m * k * n
            cached = self._cache[key] = flops / (self.peak_flops(device, dtype) *
                                                 self.gemm_efficiency(device, dtype, m, k, n, after_comm))
        return cached

    def memory_time_s(self, device: dict, nbytes: int) -> float:
        """Seconds to stream ``nbytes`` through device memory."""
        bandwidth = float(device["mem_bandwidth_GBps"]) * 1e9 * self.config.memory_efficiency
        return nbytes / bandwidth

    def op_time_s(self, schedule: Schedule, rank: int, op: Op, device: dict, after_comm: bool = False) -> float:
        """Seconds ``op`` keeps ``rank`` busy computing; 0 for communication and wait ops. ``after_comm``:
        the rank's previous op communicated or waited (module doc)."""
        if isinstance(op, Gemm):
            m, k, n = schedule.gemm_shape(rank, op)
            dtype = FP8 if self.config.fp8_gemms else schedule.spec(rank, op.out).dtype
            return self.gemm_time_s(device, dtype, m, k, n, after_comm)
        if isinstance(op, Local):
            dtype = schedule.spec(rank, op.out).dtype
            return self.work_time_s(device, dtype, schedule.local_work(rank, op), after_comm)
        if isinstance(op, Slice):
            return self.memory_time_s(device, schedule.memory_bytes(rank, op))
        return 0.0

    def work_time_s(self, device: dict, dtype: str, work: Work, after_comm: bool = False) -> float:
        """Seconds for a local function's ``work``: its products as gemms plus its memory passes."""
        products = sum(count * self.gemm_time_s(device, dtype, m, k, n, after_comm) for count, m, k, n in work.gemms)
        return products + self.memory_time_s(device, work.elements * DTYPE_BYTES[dtype])

