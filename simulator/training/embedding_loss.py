"""What one micro-batch spends in the embedding lookup and the vocabulary-parallel cross entropy, besides GEMMs.

The LM head's logit GEMM is timed as the algorithm's own parallel linear (``simulator.training.lm_head``).
Around it Megatron-LM runs memory-bound passes and small tensor-parallel collectives that scale with the
tokens and the vocabulary, not with the layers; they are timed here as bytes / achievable memory bandwidth
(``simulator.compute.achievable_memory_bandwidth``) and closed-form collectives on the tensor-parallel
group. Sources: Megatron-LM commit 7fccd6a (June 2022, the code of Korthikanti et al. 2022):
``megatron/mpu/cross_entropy.py`` ``_VocabParallelCrossEntropy``, ``megatron/model/gpt_model.py``
``post_language_model_processing`` (``output.float()`` unless ``--fp16-lm-cross-entropy``),
``megatron/mpu/layers.py`` ``VocabParallelEmbedding`` and ``megatron/model/language_model.py``
``Embedding``.

Cross entropy, N = tokens x V'/t logits per rank (fp32 after the cast; p bytes per activation element):

- forward: ``.float()`` (read p, write 4), ``max`` (read 4), ``sub_`` (8), ``exp`` (8), ``sum`` (read 4),
  ``div_`` into the saved softmax (8): (p + 36) N bytes; three all-reduces of [tokens] fp32 over the
  tensor-parallel group (the max, the target logit, the sum of exponentials);
- backward: ``grad_input.mul_`` (8) and the cast's backward to p bytes (4 + p): (12 + p) N bytes.

Embedding, T = tokens, h hidden, p bytes, one forward and one backward per micro-batch:

- forward: the word-embedding gather (read and write T h p), with t > 1 the out-of-shard rows zeroed
  (T h p) and the partial sums all-reduced over the tensor-parallel group (sequence parallelism:
  reduce-scattered, as Megatron-core's ``reduce_scatter_embeddings``), learned positions added (read
  2 T h p, write T h p), the [b, s, h] -> [s, b, h] transpose (2 T h p) and the embedding dropout when
  the block has one (read T h p, write T h p and a 1-byte mask);
- backward: the dropout's backward (2 T h p + T h), the transpose (2 T h p), ``embedding_dense_backward``
  (a dense [V'/t, h] gradient zeroed, T rows read and scatter-added: V'/t h p + 3 T h p), and the DDP hook's
  ``main_grad.add_`` of that dense gradient into the main-gradient buffer (V'/t h (p + 2 g)), the learned
  positions' likewise over [s, h] (a batch reduction, T h p + s h p, then s h (p + 2 g)).

The grid algorithms (2-D, 2.5-D, 3-D) shard the embedding their own way; the same bytes per rank are
charged, with the collectives of Megatron-LM's 1-D layout, an approximation (no published framework
times theirs). The loss's passes join the LM head's (the last pipeline stage), the embedding's are passes
of their own (``embed_fwd``, ``embed_bwd``: the first stage).
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
import simpy

from simulator.collectives import CollectiveParams
from simulator.collectives.closed_form import predict_collective_s
from simulator.compute import achievable_memory_bandwidth
from simulator.network.flow_network import FlowNetwork
from simulator.training.lm_head import padded_vocab
from simulator.workloads.workload import Workload

__all__ = ["HeadExtras", "cross_entropy_bytes", "embedding_bytes", "head_extras"]


@dataclass(frozen=True)
class HeadExtras:
    """Seconds one micro-batch spends around the logit GEMM: the loss's (on the LM head's stage) and the
    embedding's (on the first stage), each a ``PassTime``-like (time, memory passes, collectives) triple."""

    loss_fwd: tuple[float, float, float]
    loss_bwd: tuple[float, float, float]
    embed_fwd: tuple[float, float, float]
    embed_bwd: tuple[float, float, float]

    @property
    def total_s(self) -> float:
        """All four passes' seconds."""
        return self.loss_fwd[0] + self.loss_bwd[0] + self.embed_fwd[0] + self.embed_bwd[0]


def cross_entropy_bytes(tokens: int, vocab_shard: int, p: int) -> tuple[float, float]:
    """(forward, backward) bytes of the vocabulary-parallel cross entropy on one rank (module docstring)."""
    n = tokens * vocab_shard
    return float((p + 36) * n), float((12 + p) * n)


def embedding_bytes(block: Workload, vocab_shard: int, tp: int, p: int, g: int) -> tuple[float, float]:
    """(forward, backward) bytes of the embedding's passes on one rank (module docstring); ``g`` the bytes of
    a main gradient."""
    T, h, s = block.batch * block.seq, block.hidden, block.seq
    act = T * h * p
    learned = block.position == "learned"
    fwd = 2 * act + (act if tp > 1 else 0) + (3 * act if learned else 0) + 2 * act
    bwd = 2 * act + 3 * act + vocab_shard * h * p + vocab_shard * h * (p + 2 * g)
    if block.dropout > 0:
        fwd += 2 * act + T * h
        bwd += 2 * act + T * h
    if learned:
        bwd += act + s * h * p + s * h * (p + 2 * g)
    return float(fwd), float(bwd)


def _collectives_s(G: nx.DiGraph, gpus: list, block: Workload, algorithm: str, p: int,
                   router) -> tuple[float, float]:
    """Forward seconds of the loss's and the embedding's tensor-parallel collectives (module docstring)."""
    if len(gpus) == 1:
        return 0.0, 0.0
    net, params = FlowNetwork(simpy.Environment(), G, router=router), CollectiveParams.from_graph(G)
    tokens = block.batch * block.seq
    loss = 3 * predict_collective_s(net, "all_reduce", list(gpus), 4 * tokens, params=params)
    kind = "reduce_scatter" if algorithm == "1d-sp" else "all_reduce"
    embed = predict_collective_s(net, kind, list(gpus), tokens * block.hidden * p, params=params)
    return loss, embed


def head_extras(G: nx.DiGraph, gpus: list, block: Workload, vocab: int, tp: int, algorithm: str, p: int, g: int,
                memory_efficiency: float, router=None) -> HeadExtras:
    """One micro-batch's cross-entropy and embedding time on the tensor-parallel group ``gpus`` (module
    docstring); ``p`` bytes per activation element, ``g`` per main gradient."""
    shard = padded_vocab(vocab, tp) // tp
    rate = achievable_memory_bandwidth(G.nodes[gpus[0]]["device"], memory_efficiency)
    ce_f, ce_b = cross_entropy_bytes(block.batch * block.seq, shard, p)
    em_f, em_b = embedding_bytes(block, shard, tp, p, g)
    loss_comm, embed_comm = _collectives_s(G, gpus, block, algorithm, p, router)

    def part(nbytes: float, comm: float) -> tuple[float, float, float]:
        return nbytes / rate + comm, nbytes / rate, comm

    return HeadExtras(part(ce_f, loss_comm), part(ce_b, 0.0), part(em_f, embed_comm), part(em_b, 0.0))
