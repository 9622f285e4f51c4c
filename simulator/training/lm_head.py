"""The embedding / LM head "layer": the output projection as the algorithm's own parallel linear.

Every GPT preset ties the input embedding to the output layer (``simulator.workloads.models``), so
one weight [h, V] serves both: the LM head computes the logits [b s, V] = X [b s, h] W [h, V] forward
and dX, dW backward, and the embedding lookup reads rows of the same weight. The LM head is modelled as
``build_schedule(algorithm, Workload.gemm(b*s, h, V'), ...)`` on the tensor-parallel grid: for 1-D
this is Megatron-LM's column-parallel output layer (W split by vocabulary, its backward all-reduce of
dX), for the grid algorithms their own partition of the one linear. Approximations, all small next to
the logit GEMMs: the lookup itself (a gather), the vocabulary-parallel cross entropy (its [b s]
all-reduces of the max and the sum) and the softmax pass over the logits are not timed.

V' is the vocabulary padded as Megatron-LM pads it (``_vocab_size_with_padding``: up to a multiple of
``--make-vocab-size-divisible-by`` (128) x the tensor-parallel size), so that every rank holds an equal
share: GPT-3's 50257 becomes 50304 on one GPU and 51200 on eight.

Example::

    >>> padded_vocab(50257, 1), padded_vocab(50257, 8)
    (50304, 51200)
"""

from __future__ import annotations

from simulator.workloads.workload import Workload

__all__ = ["VOCAB_DIVISOR", "padded_vocab", "lm_head_workload"]

VOCAB_DIVISOR = 128
"""Megatron-LM's ``--make-vocab-size-divisible-by`` default."""


def padded_vocab(vocab: int, tp: int) -> int:
    """``vocab`` rounded up to a multiple of 128 x ``tp`` (Megatron-LM's padding)."""
    multiple = VOCAB_DIVISOR * tp
    return -(-vocab // multiple) * multiple


def lm_head_workload(block: Workload, vocab: int, tp: int) -> Workload:
    """The logit GEMM of ``block``'s tokens: [batch x seq, hidden] x [hidden, padded vocab]."""
    return Workload.gemm(block.batch * block.seq, block.hidden, padded_vocab(vocab, tp))
