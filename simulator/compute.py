"""The compute model: how long one rank's gemm, elementwise or slice op takes on its GPU.

A gemm of shape (m, k, n) takes ``2mkn / (peak[dtype] * efficiency)`` seconds, with

    efficiency = min(cap * shape(m, k, n),  intensity * achievable memory bandwidth / peak)

- ``cap``: the fraction of the dtype's dense peak a large, well-shaped GEMM reaches. By default it
  comes from the device's published large-GEMM throughput (``gemm_tflops``, sustained where published,
  else the maximum achievable matmul search's best case, with the shape ``gemm_shape`` it was measured
  at; ``topologies.compute_rates`` has the figures and their sources), normalised so that this shape
  reaches exactly that throughput:
  ``cap = gemm_tflops / peak / shape(gemm_shape)``. ``G.graph["sim"]["gemm_efficiency"]`` (set by
  ``tpsim calibrate``, or by hand) overrides it; a device with no achievable figure for the dtype
  uses ``FALLBACK_GEMM_EFFICIENCY`` = 0.7.
- ``shape``: on a GPU (a device listing its SM count ``sms``), ``simulator.gemm_shape.shape_factor``:
  tile and wave quantization over the SMs with the tile sizes cuBLAS chooses among, split-K for
  GEMMs too small to fill the SMs, and the depth factor ``k / (k + half_efficiency_dim)`` of each
  tile's pipeline fill. On a device without ``sms`` (CPU ranks), the saturating thin-matrix factor
  ``dim / (dim + half_efficiency_dim)`` with ``dim = min(m, k, n)``.
- ``intensity * bandwidth / peak``: the roofline's memory roof (Williams, Waterman, Patterson, CACM
  2009), with arithmetic intensity ``2mkn / (dtype bytes * (mk + kn + mn))`` FLOP per byte (each
  operand read once, the result written once), against the device's *achievable* memory bandwidth
  (``mem_bandwidth_achievable_GBps``, else the datasheet's ``mem_bandwidth_GBps``; either times
  ``memory_efficiency``). A gemm under it is memory bound and takes the time to stream its operands.

So a thin or misaligned GEMM is slower per FLOP than a square one (fewer, emptier tiles and waves),
a tensor-parallel shard of a large GEMM keeps its efficiency until its tiles stop filling the SMs,
and a GEMM of small K or N falls onto the memory roof.

Ranks that share a host's cores (CPU ranks, more than cores): a gemm's rate depends on what the other
ranks do meanwhile. Back-to-back gemms run on every rank at once, at the rate a lock-step gemm phase
measures; a gemm that directly follows a communication op (or a wait) overlaps other ranks still
communicating (a collective releases its members apart), so it gets more of the cores. Where
``gemm_efficiency_after_comm`` is set (``tpsim calibrate`` fits it from ``tpsim bench --form
interleaved``), such a gemm uses it as its ``cap``; unset (every GPU preset), all gemms use
the ordinary cap.

A ``local`` op costs what its function's ``work`` (``simulator.workloads.functions``) says for the
op's block shapes and parameters: a list of batched products ``(count, m, k, n)`` and the elements
its memory-bound passes read and write. Its time is

    sum over products of count * gemm_time_s(m, k, n)
        +  (elements * dtype bytes + mask bytes) / (achievable bandwidth * memory_efficiency)

(a batch of products is timed as that many separate gemms: no credit for a batched kernel filling
more waves); ``Schedule.flops`` is ``sum 2 * count * m * k * n`` plus the work's elementwise FLOPs and
``Schedule.memory_bytes`` is ``elements * dtype bytes``. ``slice`` ops are one memory pass (read and
write of the copied region), ``in_place`` ones none (rows the kernels address where they lie). Communication ops take no compute time.

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
bias_gelu                   --                               2rc + c                    3rc
bias_gelu_backward          --                               3rc + c                    3rc
bias_dropout_add            --                               3rc + c, rc mask bytes     5rc
dropout_backward            --                               2rc, rc mask bytes         rc
col_sum [r,c] -> [1,c]      --                               rc + c                     rc
row_moments [r,c] -> [r,2]  --                               rc + 2r                    3rc
layernorm                   --                               2rc + 2r + 2c              4rc
layernorm_backward_moments  --                               2rc + 4r + c               6rc
layernorm_backward          --                               3rc + 4r + c               7rc
layernorm_gamma_grad        --                               2rc + 2r + c               4rc
layernorm_fused_stats       --                               2r                         3rc
layernorm_fused             --                               2rc + 2c                   4rc
layernorm_fused_backward    --                               3rc + 2r + c               13rc
layernorm_fused_gamma_grad  --                               2rc + 2r + c               4rc
layernorm_fused_beta_grad   --                               c                          rc
attention                   S: (nb a, s, d, s)               io + (2 + 2[p>0]) sc       (5 + [p>0]) sc
                            O: (nb a, s, s, d)
attention_backward          S again: (nb a, s, d, s)         io + (5 + 4[p>0]) sc       (9 + 2[p>0]) sc
                            dP': (nb a, s, d, s)
                            dV, dQ, dK: 3 x (nb a, s, s, d)
==========================  ===============================  =========================  =================

Every non-attention row is one pass: each input read once, the output written once, except the fused
norms (``kernels.fused_norm``, on ranks holding whole rows: apex's kernels), whose statistics and beta
ops are charged only what they write, their reads being the neighbouring op's (RMSNorm's fused rows
likewise, with r for 2r, no beta and 2, 3, 9, 3 rc FLOPs). The fused
bias-GeLU and bias-dropout-add (Megatron-LM's kernels, ``simulator.workloads.kernels.fused_bias``) write
and read their dropout mask at 1 byte an element whatever the dtype (none when p = 0). The attention
rows follow ``simulator.workloads.kernels.attention`` (unfused, recomputing in the backward as
FlashAttention does): the forward's two products per sequence and head, S = Q K^T ([s, d] x [d, s]) and
O = P V ([s, s] x [s, d]); softmax reads S and writes P (2 passes over the scores), dropout (only
when p > 0) reads P and writes P' (2 more). The backward recomputes S (one product) and P (2 passes),
runs 4 products (dV = P'^T dO, dP' = dO V^T, dQ = dS K, dK = dS^T Q), drops out P and dP' (4 passes
when p > 0) and forms dS = P (dP - rowsum(dP P)) (3 passes). The products run over the whole s x s,
the causal mask's zero half included, as an unfused kernel computes them: the attention products of
a block of b sequences are ``4 b a s^2 d`` FLOPs forward and ``10 b a s^2 d`` backward.

The FlashAttention-2 ops (``flash_attention`` and its backward, ``--attention flash``, the default) are
timed otherwise where the kernel runs (a GPU of the compute model, bf16 or fp16): from its published
forward + backward throughput per device, head dimension and sequence length, on the causal mask's
half of the products (``simulator.workloads.attention_cost.flash_time_s``; the figures and their sources
are in ``topologies.attention_rates``). The Triton FlashAttention ops (``triton_attention``, ``--attention
triton``) are timed the same way from that kernel's published rate (``topologies.triton_rates``),
and refused with ``InputError`` on a GPU, head dimension or dtype it has none for; cuDNN's fused
attention ops (``cudnn_attention``, ``--attention cudnn``) likewise, each pass from its own published
figure (``topologies.cudnn_rates``). Their FLOPs in
``Schedule.flops`` stay the whole s x s, as Megatron-LM counts model FLOPs.

Example (an A100 80GB: 258 TFLOP/s sustained on 8192 x 8192 x 8192; a thinner GEMM reaches less)::

    >>> from topologies.devices import A100_SXM4_80GB
    >>> a100 = A100_SXM4_80GB.as_dict()
    >>> model = ComputeModel()
    >>> round(2 * 8192 ** 3 / model.gemm_time_s(a100, "bfloat16", 8192, 8192, 8192) / 1e12, 1)
    258.0
    >>> round(2 * 1024 * 5120 * 10240 / model.gemm_time_s(a100, "bfloat16", 1024, 5120, 10240) / 1e12, 1)
    254.1
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from simulator.errors import InputError
from simulator.fp8_cost import RECIPES, gemm_quantise_bytes, sources
from simulator.gemm_shape import shape_factor
from simulator.ir.ops import Gemm, Local, Op, Slice
from simulator.ir.schedule import DTYPE_BYTES, Schedule
from simulator.workloads.attention_cost import flash_time_s
from simulator.workloads.functions import Work

__all__ = ["FP8", "ComputeConfig", "ComputeModel", "FALLBACK_GEMM_EFFICIENCY", "achievable_memory_bandwidth"]

FP8 = "float8"
"""The devices' key for their dense FP8 tensor-core rate (``topologies.devices``)."""
_OPERAND_BYTES = {**DTYPE_BYTES, FP8: 1}

FALLBACK_GEMM_EFFICIENCY = 0.7
"""``cap`` of a device without a published achievable matmul figure for the dtype (an assumption: about
what cuBLAS reaches of the A100's and H100's peaks on the large shapes of a training step)."""


def achievable_memory_bandwidth(device: dict, memory_efficiency: float = 1.0) -> float:
    """Bytes per second a streaming kernel reaches on ``device``: its achievable rate where listed, else
    the datasheet rate, times ``memory_efficiency``."""
    rate = device.get("mem_bandwidth_achievable_GBps", device["mem_bandwidth_GBps"])
    return float(rate) * 1e9 * memory_efficiency


@dataclass(frozen=True)
class ComputeConfig:
    """Parameters of the compute model; ``from_sim`` reads overrides from ``G.graph["sim"]``."""

    gemm_efficiency: float | None = None
    """``cap``: fraction of dense peak a large, well-shaped gemm reaches (0 < x <= 1); None: from the
    device's achievable matmul figure (module doc)."""
    half_efficiency_dim: float = 64.0
    """Depth (GPU: k; CPU: the smallest extent), in elements, at which the depth factor halves the rate (>= 0)."""
    gemm_efficiency_after_comm: float | None = None
    """``cap`` of a gemm that directly follows a communication op or wait, on a host whose ranks share
    cores (module doc); None: ``gemm_efficiency``."""
    memory_efficiency: float = 1.0
    """Fraction of the device's achievable memory bandwidth elementwise and slice ops reach (0 < x <= 1)."""
    allow_tf32: bool = False
    """Time float32 gemms at the ``tfloat32`` tensor-core rate where the device lists one (PyTorch's
    ``torch.backends.cuda.matmul.allow_tf32``; off by default, as in PyTorch)."""
    fp8_gemms: bool = False
    """Time the linears' gemms (``gemm`` ops) at the device's dense ``float8`` rate with 1-byte operands:
    Transformer Engine's hybrid FP8 recipe (E4M3 forward, E5M2 gradients), under which everything else
    (the attention core, the elementwise ops, communication, master weights) stays at the schedule's
    dtype. Each such gemm also pays its operands' quantisation passes (``simulator.fp8_cost``)."""
    fp8_recipe: str | None = None
    """Transformer Engine's scaling recipe under ``fp8_gemms``: ``delayed``, ``current`` or ``mxfp8``
    (``simulator.fp8_cost.RECIPES``); None: TE's default for the device (MXFP8 on Blackwell, else delayed)."""

    def __post_init__(self) -> None:
        for name in ("gemm_efficiency", "memory_efficiency"):
            value = getattr(self, name)
            if name == "gemm_efficiency" and value is None:
                continue
            if not (isinstance(value, (int, float)) and 0 < value <= 1):
                raise InputError(f"compute model: {name} must be in (0, 1], got {value!r}")
        after = self.gemm_efficiency_after_comm
        if after is not None and not (isinstance(after, (int, float)) and 0 < after <= 1):
            raise InputError(f"compute model: gemm_efficiency_after_comm must be in (0, 1] or unset, got {after!r}")
        if self.fp8_recipe is not None and self.fp8_recipe not in RECIPES:
            raise InputError(f"compute model: fp8_recipe must be one of {', '.join(RECIPES)} or unset, "
                             f"got {self.fp8_recipe!r}")
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

    def _rate_dtype(self, device: dict, dtype: str) -> str:
        rates = device.get("peak_tflops", {})
        return "tfloat32" if dtype == "float32" and self.config.allow_tf32 and "tfloat32" in rates else dtype

    def shape(self, device: dict, m: int, k: int, n: int) -> float:
        """The shape factor of an (m x k) @ (k x n) gemm on ``device`` (module docstring), in (0, 1]."""
        h = self.config.half_efficiency_dim
        sms = device.get("sms")
        if sms:
            return shape_factor(m, n, k, int(sms), h)
        dim = min(m, k, n)
        return dim / (dim + h) if dim + h > 0 else 1.0

    def cap(self, device: dict, dtype: str, after_comm: bool = False) -> float:
        """The large-gemm fraction of peak (module docstring): the config's, else the device's achievable
        figure normalised by its shape, else ``FALLBACK_GEMM_EFFICIENCY``."""
        if after_comm and self.config.gemm_efficiency_after_comm is not None:
            return self.config.gemm_efficiency_after_comm
        if self.config.gemm_efficiency is not None:
            return self.config.gemm_efficiency
        key = ("cap", device.get("name"), dtype)
        cached = self._cache.get(key)
        if cached is None:
            cached = FALLBACK_GEMM_EFFICIENCY
            achievable = device.get("gemm_tflops", {}).get(self._rate_dtype(device, dtype))
            if achievable is not None:
                m, n, k = device.get("gemm_shape", (8192, 8192, 8192))
                cached = min(1.0, float(achievable) * 1e12 / self.peak_flops(device, dtype) / self.shape(device, m, k, n))
            self._cache[key] = cached
        return cached

    def gemm_efficiency(self, device: dict, dtype: str, m: int, k: int, n: int, after_comm: bool = False) -> float:
        """The fraction of peak a gemm of this shape reaches (see the module docstring); ``after_comm``:
        it directly follows a communication op or wait."""
        compute_roof = self.cap(device, dtype, after_comm) * self.shape(device, m, k, n)
        intensity = 2.0 * m * k * n / (_OPERAND_BYTES[dtype] * (m * k + k * n + m * n))
        memory_roof = intensity * achievable_memory_bandwidth(device) / self.peak_flops(device, dtype)
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
        """Seconds to stream ``nbytes`` through device memory at its achievable bandwidth."""
        return nbytes / achievable_memory_bandwidth(device, self.config.memory_efficiency)

    def op_time_s(self, schedule: Schedule, rank: int, op: Op, device: dict, after_comm: bool = False) -> float:
        """Seconds ``op`` keeps ``rank`` busy computing; 0 for communication and wait ops. ``after_comm``:
        the rank's previous op communicated or waited (module doc)."""
        if isinstance(op, Gemm):
            m, k, n = schedule.gemm_shape(rank, op)
            if self.config.fp8_gemms:  # the FP8 GEMM and the passes that quantise its operands
                quantise = gemm_quantise_bytes(schedule, rank, op, device, self.config.fp8_recipe,
                                               self._sources(schedule, rank))
                return self.gemm_time_s(device, FP8, m, k, n, after_comm) + self.memory_time_s(device, quantise)
            return self.gemm_time_s(device, schedule.spec(rank, op.out).dtype, m, k, n, after_comm)
        if isinstance(op, Local):
            dtype = schedule.spec(rank, op.out).dtype
            return self.work_time_s(device, dtype, schedule.local_work(rank, op), after_comm)
        if isinstance(op, Slice):
            return self.memory_time_s(device, schedule.memory_bytes(rank, op))
        return 0.0

    def _sources(self, schedule: Schedule, rank: int) -> dict:
        """``simulator.fp8_cost.sources`` of ``rank``, once per schedule (kept with it: ids are reused)."""
        key = ("sources", id(schedule), rank)
        hit = self._cache.get(key)
        if hit is None or hit[0] is not schedule:
            hit = self._cache[key] = (schedule, sources(schedule, rank))
        return hit[1]

    def work_time_s(self, device: dict, dtype: str, work: Work, after_comm: bool = False) -> float:
        """Seconds for a local function's ``work``: its products as gemms plus its memory passes; a
        FlashAttention-2 or Triton FlashAttention call from the kernel's published throughput (module doc)."""
        if work.flash is not None:
            key = ("flash", device.get("name"), dtype, work.flash, work.flash_kernel)
            if key not in self._cache:
                self._cache[key] = flash_time_s(device, dtype, work.flash, work.flash_kernel)
            if self._cache[key] is not None:
                return self._cache[key]
        products = sum(count * self.gemm_time_s(device, dtype, m, k, n, after_comm) for count, m, k, n in work.gemms)
        return products + self.memory_time_s(device, work.elements * DTYPE_BYTES[dtype] + work.mask_bytes
                                                    + 4 * work.fp32_elements)

