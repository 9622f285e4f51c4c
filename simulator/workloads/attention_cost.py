"""What the attention core costs under each kernel: FlashAttention-2, Triton's, cuDNN's or Megatron-LM's unfused one.

The values are the same either way (``kernels.attention``); the kernels differ in what they keep for the
backward and so in what the backward computes, and the time model (this module) and the memory model
(``simulator.memory.activations``) read the same choice off the schedule's op names:

- ``flash`` (``flash_attention``, Dao 2023, "FlashAttention-2", arXiv 2307.08691): the forward tiles
  Q K^T, the softmax and P V in on-chip memory, so no [s, s] tensor reaches the GPU's memory; it keeps
  the output and the softmax's log-sum-exp per row (fp32, [b, a, s]: linear in s) and the dropout's
  random state, not its mask. The backward recomputes S = Q K^T and P from them, tile by tile.
- ``triton`` (``triton_attention``, FlashAttention written in Triton: MosaicML llm-foundry's default
  ``attn_impl``): the same algorithm, so the same products, passes and memory as ``flash`` in every
  row below; only its time differs (next paragraph).
- ``cudnn`` (``cudnn_attention``, cuDNN's fused attention: what Transformer Engine, and so Megatron-Core,
  NeMo and Megatron-Bridge, runs on Hopper): a FlashAttention-style kernel, so again the same products,
  passes and memory as ``flash``; only its time differs.
- ``unfused`` (``attention``, Megatron-LM's kernel before FlashAttention, Korthikanti et al. 2022
  section 4.1): S, the softmax output P and the dropout output P' are written to memory; P, P' and the
  dropout mask are kept for the backward, which reads them instead of recomputing.

With ``count`` = sequences x heads in the block and ``scores`` = count * s * s elements (the products
run over the whole s x s, masked half included, as Megatron-LM counts model FLOPs), and ``io`` the
block's inputs read and output written once:

==================  ====================================  ==============================  ====================
kernel, pass        products (count, m, k, n)             elements (reads + writes)       elementwise FLOPs
==================  ====================================  ==============================  ====================
unfused forward     S: (c, s, d, s), O: (c, s, s, d)      io + (2 + 2[p>0]) scores        (5 + [p>0]) scores
unfused backward    dV, dQ, dK: (c, s, s, d);             io + (3 + 2[p>0]) scores        (4 + 2[p>0]) scores
                    dP': (c, s, d, s)
flash forward       as unfused                            io + 2 c s (log-sum-exp)        (5 + [p>0]) scores
flash backward      S again + the unfused four            io + 4 c s (log-sum-exp, D)     (9 + 2[p>0]) scores
==================  ====================================  ==============================  ====================

The unfused forward's passes: the softmax reads S and writes P, dropout reads P and writes P'. Its
backward: dropout of dP' (read, write) when p > 0, and dS = P (dP - rowsum(dP P)) reads P and dP and
writes dS. The flash kernels make no pass over the scores: their FLOPs run on data in on-chip memory;
the backward's extra product and softmax FLOPs are the recomputation (D = rowsum(dO O) per row).

Time: the unfused rows are timed from their products and passes (``simulator.compute``). A flash call
carries ``Work.flash`` and is timed from FlashAttention-2's published causal throughput instead
(``flash_time_s``: the paper's FLOPs, which skip the blocks above the diagonal, over its measured rate;
``topologies.attention_rates`` holds the figures), where the GPU and dtype have one; elsewhere from the
table's products and passes like the unfused kernel. A triton call carries ``Work.flash`` with
``Work.flash_kernel`` = ``triton`` and is timed the same way from the Triton kernel's published causal
throughput (``topologies.triton_rates``: the A100 only, head dimensions 64 and 128); where
none is published (another GPU or head dimension, a dtype other than fp16 / bf16) it raises
``InputError`` naming what is published, rather than borrow another kernel's rate. A cudnn call
(``Work.flash_kernel`` = ``cudnn``) is timed pass by pass, each from its own published causal figure
(``topologies.cudnn_rates``: H100, H200, B200 and GB200, head dimension 128), and refused the same way
elsewhere.
"""

from __future__ import annotations

import math

from simulator.errors import InputError
from simulator.workloads.work import Work

__all__ = ["FLASH_DTYPES", "FUSED_FUNCTIONS", "KERNELS", "attention_work", "flash_time_s", "flash_tflops",
           "selective_note", "triton_rate", "cudnn_rate"]

FLASH_DTYPES = ("bfloat16", "float16")
"""The dtypes FlashAttention-2 computes in; a schedule of another dtype keeps the product model."""

KERNELS = ("flash", "triton", "cudnn", "unfused")
"""The attention kernels ``--attention`` chooses from; ``flash`` is the default."""

FUSED_FUNCTIONS = {"flash": "flash_attention", "triton": "triton_attention", "cudnn": "cudnn_attention"}
"""The kernels that keep nothing of [s, s] (the backward recomputes the probabilities), and the ``local``
function of each; its backward is the name plus ``_backward``."""


def attention_work(shapes: list[tuple[int, ...]], out: tuple[int, ...], params: dict, backward: bool = False,
                   flash: bool = False, kernel: str = "flash") -> Work:
    """The products, passes and FLOPs of one attention op (module table); ``kernel`` names the fused kernel
    whose published rate times a ``flash`` call (``flash``, ``triton`` or ``cudnn``)."""
    s, d = params["seq"], params["head_dim"]
    count = (shapes[-1][0] // s) * params["heads"]
    scores = count * s * s
    dropped = params["p"] > 0
    io = sum(math.prod(shape) for shape in shapes) + math.prod(out)
    qk, pv = (count, s, d, s), (count, s, s, d)
    call = ("backward" if backward else "forward", count, s, d) if flash else None
    if not backward:
        passes = 2 * count * s if flash else (2 + 2 * dropped) * scores
        return Work(gemms=(qk, pv), elements=passes + io, flops=(5 + dropped) * scores, flash=call,
                    flash_kernel=kernel)
    if flash:
        return Work(gemms=(qk, pv, qk, pv, pv), elements=4 * count * s + io, flops=(9 + 2 * dropped) * scores,
                    flash=call, flash_kernel=kernel)
    return Work(gemms=(pv, qk, pv, pv), elements=(3 + 2 * dropped) * scores + io, flops=(4 + 2 * dropped) * scores)


def flash_tflops(device: dict, dtype: str, head_dim: int, seq: int) -> float | None:
    """FlashAttention-2's causal forward + backward TFLOP/s on ``device`` (module doc), or None.

    A device with a published row (A100 80GB, H100) reads it; another GPU of the compute model (one
    listing ``sms``: Ampere or newer here) scales the row of the published device whose dense peak
    for ``dtype`` is nearest its own by the ratio of the two peaks (A100 40GB and PCIe take the A100
    row as it is, H200 the H100 row as it is, B200 and GB200 the H100 row times 2.27 and 2.53: an
    assumption, FlashAttention-2 having no published Blackwell figure). None for dtypes the kernel does
    not run (it computes in fp16 or bf16 only) and for devices it does not run on (pre-Ampere, CPU).
    """
    from topologies.attention_rates import published_devices, published_tflops  # function-level: keeps the IR free of networkx
    from topologies.devices import DEVICES

    if dtype not in FLASH_DTYPES or not device.get("sms") or dtype not in device.get("peak_tflops", {}):
        return None
    rate = published_tflops(device.get("name", ""), head_dim, seq, causal=True)
    if rate is not None:
        return rate
    peak = float(device["peak_tflops"][dtype])
    reference = min(published_devices(), key=lambda name: abs(math.log(DEVICES[name].peak_tflops[dtype] / peak)))
    return published_tflops(reference, head_dim, seq, causal=True) * peak / DEVICES[reference].peak_tflops[dtype]


def triton_rate(device: dict, dtype: str, head_dim: int, seq: int) -> float:
    """The Triton kernel's causal forward + backward TFLOP/s on ``device`` (module doc).

    Raises ``InputError`` naming what is published where nothing is: another device, another head
    dimension, or a dtype the kernel does not compute in.
    """
    from topologies.triton_rates import triton_devices, triton_head_dims, triton_tflops  # as flash_tflops

    name = device.get("name", "")
    where = (f"the Triton FlashAttention kernel's throughput is published for {', '.join(triton_devices())} only, "
             f"head dimensions {' and '.join(str(d) for d in triton_head_dims(triton_devices()[0]))}, fp16 or bf16")
    if dtype not in FLASH_DTYPES:
        raise InputError(f"--attention triton with dtype {dtype}: {where}; use --attention flash or unfused")
    rate = triton_tflops(name, head_dim, seq, causal=True)
    if rate is None:
        got = f"head dimension {head_dim} on {name}" if triton_head_dims(name) else f"device {name or '(unnamed)'}"
        raise InputError(f"--attention triton on {got}: {where}; use --attention flash or unfused")
    return rate


def cudnn_rate(device: dict, dtype: str, head_dim: int, seq: int, mode: str) -> float:
    """cuDNN's fused attention causal TFLOP/s for one pass (``forward`` or ``backward``) on ``device``.

    Raises ``InputError`` naming what is published where nothing is: another device (the A100
    included: TE prefers cuDNN on Hopper and later only), another head dimension, or a dtype other than
    fp16 / bf16.
    """
    from topologies.cudnn_rates import cudnn_devices, cudnn_head_dims, cudnn_tflops  # as flash_tflops

    name = device.get("name", "")
    dims = cudnn_head_dims(cudnn_devices()[0])
    where = (f"cuDNN's fused attention throughput is published for {', '.join(cudnn_devices())} only, "
             f"head dimension{'s' if len(dims) > 1 else ''} {' and '.join(str(d) for d in dims)}, fp16 or bf16")
    if dtype not in FLASH_DTYPES:
        raise InputError(f"--attention cudnn with dtype {dtype}: {where}; use --attention flash or unfused")
    rate = cudnn_tflops(name, head_dim, seq, mode)
    if rate is None:
        got = f"head dimension {head_dim} on {name}" if cudnn_head_dims(name) else f"device {name or '(unnamed)'}"
        raise InputError(f"--attention cudnn on {got}: {where}; use --attention flash or unfused")
    return rate


def flash_time_s(device: dict, dtype: str, call: tuple[str, int, int, int], kernel: str = "flash") -> float | None:
    """Seconds of one FlashAttention-2 (``kernel`` ``triton``: Triton FlashAttention; ``cudnn``: cuDNN's
    fused attention) call ``(mode, count, seq, head_dim)`` (``Work.flash``), or None.

    Its FLOPs as the paper counts them (``topologies.attention_rates.flash_flops``: ``4 s^2 d`` per
    sequence and head forward, 2.5 times that backward, halved for the causal mask) over the published
    forward + backward rate (``flash_tflops``). Both passes take that one rate: the published rows give
    the pair, not each pass, so the forward + backward time is the published one and the split between
    the two passes follows the FLOPs (the paper's separate figures show the forward somewhat faster
    per FLOP than the backward). None where ``flash_tflops`` is None; the triton kernel's rate is
    ``triton_rate``, which raises ``InputError`` where none is published. The cudnn kernel has a figure
    per pass: each pass takes its own (``cudnn_rate``, which raises likewise).
    """
    from topologies.attention_rates import flash_flops  # function-level: as flash_tflops

    mode, count, seq, head_dim = call
    if kernel == "triton":
        rate = triton_rate(device, dtype, head_dim, seq)
    elif kernel == "cudnn":
        rate = cudnn_rate(device, dtype, head_dim, seq, mode)
    else:
        rate = flash_tflops(device, dtype, head_dim, seq)
    if rate is None:
        return None
    return flash_flops(count, seq, head_dim, causal=True, mode=mode) / (rate * 1e12)


def selective_note(kernel: str, recompute: str) -> str | None:
    """The line a command prints when ``--recompute selective`` does nothing for the attention (flash)."""
    if recompute != "selective" or kernel not in FUSED_FUNCTIONS:
        return None
    return ("--recompute selective recomputes the attention core, which FlashAttention's backward recomputes "
            "anyway: it adds no time and frees no memory here (--attention unfused keeps the probabilities it frees)")
