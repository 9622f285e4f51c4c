"""ZeRO-3's parameter all-gathers as PyTorch FSDP runs them: one unit per transformer block, prefetched.

FSDP (``torch.distributed.fsdp``, FULL_SHARD, each transformer block wrapped as a unit and the root unit
holding the embedding, the final norm and the tied LM head) all-gathers a unit's parameters before it
computes and frees them after. Per micro-batch, with A the all-gather of one block, R the root's, C_f / C_b
one block's forward / backward and H_b the LM head's backward:

- forward: the root's all-gather, then block 0's, run before any block computes (nothing is in flight to
  hide them); block i's all-gather runs during block i-1's forward. FSDP's ``forward_prefetch`` (off by
  default) issues it explicitly; without it the CPU, which runs ahead of a GPU-bound step, reaches block i's
  pre-forward hook while block i-1 computes and issues it then, so the overlap is the same (the FSDP docs:
  explicit forward prefetch helps only CPU-bound workloads, which tpsim does not model). Exposed:

      R + A + (L - 1) x max(0, A - C_f)

- backward: the root keeps its parameters after the forward (FSDP does not free the root's in the
  post-forward, ``_post_forward_reshard``: they are needed at once in the backward). ``backward_prefetch``
  (``BackwardPrefetch``; default ``BACKWARD_PRE``) issues the next unit's all-gather in the current unit's
  pre-backward hook, so block L-1's runs beside the LM head's backward and block i-1's beside block i's:

      BACKWARD_PRE:   max(0, A - H_b) + (L - 1) x max(0, A - C_b)

  ``BACKWARD_POST`` issues it once the current unit's gradients are computed, and None not at all: either
  way the next unit waits for its whole all-gather (what POST gains, an all-gather started while the last
  kernels of a unit drain, is below what tpsim resolves):

      BACKWARD_POST, NONE:   L x A

Total all-gather time per micro-batch: R + 2 L A; hidden = total - exposed. The gradient reduce-scatter
after each micro-batch's backward is ``simulator.training.step``'s, unchanged.
"""

from __future__ import annotations

from simulator.errors import InputError

__all__ = ["BACKWARD_PREFETCH", "check_backward_prefetch", "gather_times"]

BACKWARD_PREFETCH = ("BACKWARD_PRE", "BACKWARD_POST", "NONE")
"""FSDP's ``BackwardPrefetch`` choices (None spelled NONE); the first is FSDP's default."""


def check_backward_prefetch(value: str) -> str:
    """``value`` if it is one of ``BACKWARD_PREFETCH``, else InputError naming them."""
    if value not in BACKWARD_PREFETCH:
        raise InputError(f"--backward-prefetch {value!r}: one of {', '.join(BACKWARD_PREFETCH)} (FSDP's BackwardPrefetch; "
                         f"default BACKWARD_PRE)")
    return value


def gather_times(unit_s: float, root_s: float, layers: int, fwd_s: float, bwd_s: float, head_bwd_s: float,
                 backward_prefetch: str = "BACKWARD_PRE") -> tuple[float, float, float]:
    """(exposed in the forward, exposed in the backward, total) all-gather seconds of one micro-batch
    (module docstring): ``unit_s`` one block's all-gather, ``root_s`` the root unit's, ``fwd_s`` / ``bwd_s``
    one block's passes, ``head_bwd_s`` the LM head's backward."""
    check_backward_prefetch(backward_prefetch)
    forward = root_s + unit_s + (layers - 1) * max(0.0, unit_s - fwd_s)
    if backward_prefetch == "BACKWARD_PRE":
        backward = max(0.0, unit_s - head_bwd_s) + (layers - 1) * max(0.0, unit_s - bwd_s)
    else:
        backward = layers * unit_s
    return forward, backward, root_s + 2 * layers * unit_s
