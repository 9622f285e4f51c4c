"""What the attention core costs under each kernel: FlashAttention-2, or Megatron-LM's unfused kernel.

The values are the same either way (``kernels.attention``); the kernels differ in what they keep for the
backward and so in what the backward computes, and the time model (this module) and the memory model
(``simulator.memory.activations``) read the same choice off the schedule's op names:

- ``flash`` (``flash_attention``, Dao 2023, "FlashAttention-2", arXiv 2307.08691): the forward tiles
  Q K^T, the softmax and P V in on-chip memory, so no [s, s] tensor reaches the GPU's memory; it keeps
  the output and the softmax's log-sum-exp per row (fp32, [b, a, s]: linear in s) and the dropout's
  random state, not its mask. The backward recomputes S = Q K^T and P from them, tile by tile.
- ``unfused`` (``attention``, Megatron-LM's kernel before FlashAttention, Korthikanti et al. 2022
  section 4.1): S, the softmax output P and the dropout output P' are written to memory; P, P' and the
  dropout mask are kept for the backward, which reads them instead of recomputing.

With ``count`` = sequences x heads in the block and ``scores`` = count * s * s elements (the products
run over the whole s x s, masked half included: FlashAttention-2's skipping of the blocks above the
diagonal is not modelled), and ``io`` the block's inputs read and output written once:

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
"""

from __future__ import annotations

import math

from simulator.workloads.work import Work

__all__ = ["KERNELS", "attention_work", "selective_note"]

KERNELS = ("flash", "unfused")
"""The attention kernels ``--attention`` chooses from; ``flash`` is the default."""


def attention_work(shapes: list[tuple[int, ...]], out: tuple[int, ...], params: dict, backward: bool = False,
                   flash: bool = False) -> Work:
    """The products, passes and FLOPs of one attention op (module table)."""
    s, d = params["seq"], params["head_dim"]
    count = (shapes[-1][0] // s) * params["heads"]
    scores = count * s * s
    dropped = params["p"] > 0
    io = sum(math.prod(shape) for shape in shapes) + math.prod(out)
    qk, pv = (count, s, d, s), (count, s, s, d)
    if not backward:
        passes = 2 * count * s if flash else (2 + 2 * dropped) * scores
        return Work(gemms=(qk, pv), elements=passes + io, flops=(5 + dropped) * scores)
    if flash:
        return Work(gemms=(qk, pv, qk, pv, pv), elements=4 * count * s + io, flops=(9 + 2 * dropped) * scores)
    return Work(gemms=(pv, qk, pv, pv), elements=(3 + 2 * dropped) * scores + io, flops=(4 + 2 * dropped) * scores)


def selective_note(kernel: str, recompute: str) -> str | None:
    """The line a command prints when ``--recompute selective`` does nothing for the attention (flash)."""
    if recompute != "selective" or kernel != "flash":
        return None
    return ("--recompute selective recomputes the attention core, which FlashAttention's backward recomputes "
            "anyway: it adds no time and frees no memory here (--attention unfused keeps the probabilities it frees)")
