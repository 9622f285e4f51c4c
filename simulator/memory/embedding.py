"""The embedding and LM head of a GPT on one rank: their parameters and what they keep for the backward.

As Megatron-LM does for every tensor-parallel size t (Shoeybi et al. 2019, arXiv 1909.08053, section 3;
``VocabParallelEmbedding``): the word embedding [V, h] is split by vocabulary rows over the t ranks of
the tensor-parallel group and tied to the output layer (the logits GEMM reuses it: its parameters
count once); V is first padded to a multiple of 128 t (Megatron-LM's ``--make-vocab-size-divisible-by``
128, ``_vocab_size_with_padding``). The position embedding [s, h] and the final LayerNorm (2h) are
replicated on every rank. tpsim's 2-D, 2.5-D and 3-D algorithms have no embedding of their own here:
they are given Megatron's vocabulary-parallel one over all their ranks, an approximation (Colossal-AI's
2-D / 2.5-D / 3-D embeddings split the hidden dimension as well).

Activations (Korthikanti et al. 2022, arXiv 2205.05198, section 4.3, with pipeline size 1), on a rank
that holds the fraction r of each layer input X (r = 1 for 1-D, 1/t with sequence parallelism, the
rank's X block / [M, h] for the others):

- the embedding's dropout mask, 1 B per element of r [M, h] (none when dropout is 0);
- the final LayerNorm's input, r [M, h] at the schedule's element type, and its moments r [M, 2];
- the output layer's input (the LayerNorm's output, read by the logits GEMM's weight gradient), r [M, h];
- the logits [M, V/t] in fp32, which the vocabulary-parallel cross entropy keeps for its backward
  (4 B each: Korthikanti's 4sbv/t; the cross entropy computes in fp32).

Together the paper's 4sbh/t (1 + v/h) plus the dropout mask sbh/t, for sequence parallelism. These are
kept under every ``recompute`` mode: Megatron-LM recomputes transformer layers, not the embedding or
the output layer.
"""

from __future__ import annotations

import math

from simulator.ir.schedule import DTYPE_BYTES, Schedule
from simulator.memory.activations import MASK_BYTES, Kept
from simulator.workloads.workload import Workload

__all__ = ["LOGIT_BYTES", "VOCAB_MULTIPLE", "embedding_activations", "embedding_parameters", "padded_vocab"]

VOCAB_MULTIPLE = 128
"""Megatron-LM's default ``--make-vocab-size-divisible-by``: V is padded to a multiple of this times t."""
LOGIT_BYTES = 4
"""The logits the cross entropy keeps are fp32."""


def padded_vocab(vocab: int, tp: int) -> int:
    """V rounded up to a multiple of 128 t, as Megatron-LM pads it: 50257 on t = 8 -> 51200."""
    step = VOCAB_MULTIPLE * tp
    return math.ceil(vocab / step) * step


def embedding_parameters(schedule: Schedule, vocab: int, workload: Workload | None = None,
                         tied: bool = True) -> list[tuple[str, int]]:
    """(what, elements on each rank) of the word embedding shard, the output layer's own shard where it is
    not tied (split by vocabulary as Megatron-LM's untied output layer), the position embedding (learned
    positions only: rotary ones have no weights) and the final norm (LayerNorm 2h, RMSNorm h)."""
    workload = Workload.from_dict(schedule.workload) if workload is None else workload
    h, t = workload.hidden, schedule.world_size
    rows = padded_vocab(vocab, t) // t
    out = [(f"embedding [{rows}, {h}] (V={vocab} padded, / t={t})", rows * h)]
    if not tied:
        out.append((f"output layer [{h}, {rows}] (untied)", rows * h))
    if workload.position == "learned":
        out.append((f"positions [{workload.seq}, {h}]", workload.seq * h))
    return out + ([("final LayerNorm", 2 * h)] if workload.norm == "layernorm" else [("final RMSNorm", h)])


def embedding_activations(schedule: Schedule, rank: int, vocab: int, workload: Workload | None = None) -> list[Kept]:
    """What the embedding, the final LayerNorm, the output layer and the loss keep on ``rank``."""
    workload = Workload.from_dict(schedule.workload) if workload is None else workload
    m, h, t = workload.m, workload.hidden, schedule.world_size
    x = workload.layers()[0].inputs[0]
    held = schedule.buffers[rank][x].numel if x in schedule.buffers[rank] else 0
    rows = held / h  # r M: the token rows' worth of X this rank holds
    size = DTYPE_BYTES[schedule.dtype]
    out = []
    if workload.dropout > 0:
        out.append(Kept("mask", "embedding dropout mask", held * MASK_BYTES))
    norm, stats = ("LayerNorm", 2) if workload.norm == "layernorm" else ("RMSNorm", 1)
    out.append(Kept("kept", f"final {norm} input, output layer input", 2 * held * size))
    out.append(Kept("moments", f"final {norm} {'moments' if stats == 2 else 'sum of squares'}",
                    round(rows * stats * size)))
    logits = m * (padded_vocab(vocab, t) // t)
    out.append(Kept("logits", f"fp32 logits [{m}, {padded_vocab(vocab, t) // t}] for the cross entropy",
                    logits * LOGIT_BYTES))
    return out
