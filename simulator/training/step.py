"""The time of one training step of a whole model on a tensor x data arrangement.

    step = m x (L x (fwd + bwd of one block) + fwd + bwd of the LM head) + exposed DP reduction + optimizer
           (+ under --dtype fp8, the layers' weights quantised once: ``simulator.fp8_cost.weight_cast_s``)

with m = G / (B x D) micro-batches (``simulator.training.batching``). One block's forward and backward
are simulated (``simulator.timing.simulation.simulate``) on the first tensor-parallel group's GPUs
(``simulator.training.placement``), each pass as its own schedule, and so is the LM head
(``simulator.training.lm_head``); the L layers and m micro-batches repeat them rather than being
simulated again. The groups of other replicas run the same at the same time; they are not simulated
with it, which is exact where groups share no link (groups of up to a server's GPUs, or whole
servers on a non-blocking fabric).

Recomputation (``--recompute``) adds to each backward what it recomputes: ``full`` the whole forward
of the block (Megatron-LM's full recomputation, its tensor-parallel communication included),
``selective`` the forward of the attention core (the ``attn`` part of the forward's timing;
Korthikanti et al. 2022, section 4.2) under the unfused attention kernel, and nothing under
FlashAttention (the default), whose backward op already recomputes the probabilities and is timed so
in every mode (``simulator.workloads.attention_cost``; the memory model frees nothing for it either).
``selective-op`` (torchtitan's per-op policy, ``simulator.workloads.op_checkpoint``) adds the forward of
the layer parts the policy does not keep, each part's time times the share of it recomputed (a split
linear's unkept columns: Llama's K of QKV, the up half of the gate/up GEMM), on a tensor-parallel size of
1 only (NotApplicable otherwise: the policy keeps reduce-scatters and recomputes all-gathers, which a
part's communication does not separate).

The data-parallel reduction (``simulator.training.dp_reduce``) overlaps the last micro-batch's backward;
what runs past the backward's end is exposed. What runs under the compute is not free: its NCCL kernels hold SMs
(channels / SMs of the device) that the GEMMs beside them lack, charged as ``terms["dp_overlap_sms"]``
(``simulator.timing.sm_sharing``; pipelined steps count their reduction as exposed and charge nothing). ZeRO (Rajbhandari et al. 2019): stage 0 all-reduces the
gradients once per step; stage 1 (Megatron-LM's distributed optimizer) reduce-scatters them once per
step and all-gathers the updated parameters after the optimizer step (exposed: Megatron-LM overlaps it
only with ``--overlap-param-gather``); stages 2 and 3 keep only their shard of the gradients, so they
reduce-scatter after every micro-batch's backward (DeepSpeed's ZeRO-2/3, each micro-batch's tail
exposed); stage 3 also all-gathers every layer's parameters in each micro-batch's forward and backward,
unit by unit as PyTorch FSDP does (one unit per block, the next one's all-gather beside the current one's
compute; ``simulator.training.fsdp_prefetch``), and needs no all-gather after the update. With an fp32
reduction at ZeRO 2/3 (``--accumulate-allreduce-grads-in-fp32``: FSDP's ``reduce_dtype``) the reduce-scatter
moves 4-byte elements and each backward pays FSDP's cast of the unit's gradients into its input
(``main_grads.copy_in_bytes``); the optimizer reads fp32 shard gradients. ZeRO 2/3's other memory passes are
PyTorch FSDP's, per micro-batch and per step, FSDP1 or 2 (``--fsdp-version``; ``fsdp_passes``).

``bound=True`` is the contention-free analytic model: ``simulator.timing.critical_path.analyze`` for the
passes and closed-form collectives (``dp_reduce.bound_stream``) for the reduction, for ranking at scale.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace

import networkx as nx

from simulator.algorithms.registry import algorithm_class, build_schedule
from simulator.algorithms.ub_configs import TE_DEFAULT
from simulator.compute import ComputeConfig, achievable_memory_bandwidth
from simulator.errors import InputError, NotApplicable
from simulator.ir.schedule import DTYPE_BYTES
from simulator.timing.critical_path import analyze
from simulator.timing.results import critical_rank
from simulator.timing.simulation import plan_on_graph, simulate
from simulator.training.arrangement import TrainingArrangement
from simulator.training.batching import micro_batches
from simulator.training.comm_breakdown import breakdown
from simulator.training.dp_reduce import bound_stream, simulate_waves
from simulator.training.fsdp_prefetch import gather_times
from simulator.training.gradients import Bucket, aligned_buckets, weight_elements
from simulator.training.lm_head import lm_head_workload
from simulator.training.embedding_loss import head_extras
from simulator.training.main_grads import accumulation_bytes, copy_in_bytes, grad_bytes, reduction_bucket_bytes
from simulator.training.options import StepOptions
from simulator.training.placement import dp_groups, tp_group_gpus
from simulator.training.step_terms import step_terms
from simulator.training.utilisation import utilisation
from simulator.workloads.op_checkpoint import op_checkpoint
from simulator.workloads.workload import Workload

__all__ = ["BlockTimes", "StepOptions", "PassTime", "StepTime", "block_times", "build_block", "step_time"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PassTime:
    """One simulated (or bounded) pass on the tensor-parallel group: its time and the critical rank's split."""

    time_s: float
    compute_s: float
    comm_s: float
    """Exposed tensor-parallel communication, waiting for peers included."""
    hidden_s: float = 0.0
    """Hidden tensor-parallel communication: the critical rank's collectives' time that ran under its compute
    (asynchronous ones, ``StepOptions.async_dgrad``); ``comm_s + hidden_s`` is all of it."""

    def __add__(self, other: "PassTime") -> "PassTime":
        return PassTime(self.time_s + other.time_s, self.compute_s + other.compute_s, self.comm_s + other.comm_s,
                        self.hidden_s + other.hidden_s)

    def __mul__(self, k: float) -> "PassTime":
        return PassTime(self.time_s * k, self.compute_s * k, self.comm_s * k, self.hidden_s * k)


@dataclass(frozen=True)
class StepTime:
    """One arrangement's training step; seconds per step, the split adding up to ``step_s``."""

    arrangement: TrainingArrangement
    micro_batch: int
    micro_batches: int
    model: str
    """"simulated" (flow network, contention) or "bound" (contention-free analytic)."""
    step_s: float
    compute_s: float
    """Compute of the passes on the critical rank, plus the optimizer step."""
    tp_comm_s: float
    """Exposed tensor-parallel communication (and waiting) in the passes."""
    dp_comm_s: float
    """Exposed data-parallel communication: the reduction past the backward, ZeRO's all-gathers."""
    optimizer_s: float
    tokens_per_s: float
    mfu: float
    flops_per_step: float
    passes: dict = field(default_factory=dict, compare=False)
    """Per pass ("block_fwd", "block_bwd", "head_fwd", "head_bwd", "embed_fwd", "embed_bwd"): its ``PassTime``,
    one micro-batch."""
    hfu: float = 0.0
    """Hardware FLOPs utilisation: recomputed work counted (``simulator.training.flops``)."""
    tflops_per_gpu: float = 0.0
    """Hardware TFLOP/s per GPU, as Megatron-LM logs it (recomputation counted)."""
    bubble_s: float = 0.0
    """Pipelines: the busiest rank's idle time with free pipeline communication (the schedule's bubble)."""
    pp_comm_s: float = 0.0
    """Pipelines: what the sends between stages add to the pipeline's makespan."""
    imbalance_s: float = 0.0
    """Pipelines: the busiest rank's compute over the least busy one's (the last stage's LM head and loss)."""
    terms: dict = field(default_factory=dict, compare=False)
    """Seconds per step of the work outside the layers, by name (``simulator.training.step_terms``): each optimizer
    pass (``simulator.training.optimizer_step``) and ``embedding_loss`` (``simulator.training.embedding_loss``)."""
    hidden: dict = field(default_factory=dict, compare=False)
    """Communication that ran under compute, per kind ("tp", "dp", "zero_gather"), seconds per step
    (``simulator.training.comm_breakdown``)."""
    zero_gather_s: float = 0.0
    """The part of ``dp_comm_s`` that is ZeRO's parameter all-gathers (exposed)."""

    def comm_breakdown(self) -> dict:
        """Per kind of communication: {"exposed_s", "hidden_s", "total_s"} (``comm_breakdown.breakdown``)."""
        return breakdown(self)

    def to_dict(self) -> dict:
        return {**self.arrangement.to_dict(), "model": self.model, "micro_batch": self.micro_batch,
                "micro_batches": self.micro_batches, "step_time_s": self.step_s, "compute_s": self.compute_s,
                "tp_comm_s": self.tp_comm_s, "dp_comm_s": self.dp_comm_s, "optimizer_s": self.optimizer_s,
                "bubble_s": self.bubble_s, "pp_comm_s": self.pp_comm_s, "imbalance_s": self.imbalance_s,
                "tokens_per_s": self.tokens_per_s, "mfu": self.mfu, "flops_per_step": self.flops_per_step,
                "hfu": self.hfu, "tflops_per_gpu": self.tflops_per_gpu, "terms_s": dict(self.terms),
                "passes": {k: {"time_s": p.time_s, "compute_s": p.compute_s, "comm_s": p.comm_s,
                               "comm_hidden_s": p.hidden_s} for k, p in self.passes.items()},
                "comm": self.comm_breakdown()}


def build_block(a: TrainingArrangement, workload: Workload, passes: str, dtype: str, async_dgrad: bool = False,
                tp_comm_overlap: bool = False, tp_comm_overlap_cfg: str = TE_DEFAULT):
    """``workload``'s schedule for ``passes`` on the arrangement's tensor-parallel grid (``async_dgrad``,
    ``tp_comm_overlap`` and ``tp_comm_overlap_cfg`` as ``StepOptions``')."""
    t = a.tensor
    cls = algorithm_class(t.algorithm)
    if not cls.square_grid:
        return build_schedule(t.algorithm, workload, passes, dtype, gpus=t.grid[0], async_dgrad=async_dgrad,
                              tp_comm_overlap=tp_comm_overlap and cls.supports_tp_comm_overlap,
                              tp_comm_overlap_cfg=tp_comm_overlap_cfg)
    return build_schedule(t.algorithm, workload, passes, dtype, grid=t.grid, overlap=t.overlap)


def _time(schedule, G, gpus, bound: bool, router, algorithms, part: str | dict | None = None,
          bf16: bool = False) -> PassTime:
    """The pass ``schedule``; ``part``: one layer part of it, or the sum of parts x shares (a dict)."""
    run = analyze if bound else simulate
    # bf16: GEMMs outside Transformer Engine (the LM head) stay in the schedule's dtype under --dtype fp8.
    compute = replace(ComputeConfig.from_sim(G.graph.get("sim")), fp8_gemms=False) if bf16 else None
    plan = plan_on_graph(schedule, G, gpus, compute)
    r = run(schedule, G, gpus, algorithms=algorithms, timeline=False, router=router, plan=plan)
    if part is not None:  # layer parts of the critical rank (recompute's share)
        total = PassTime(0.0, 0.0, 0.0)
        for name, share in (part.items() if isinstance(part, dict) else ((part, 1.0),)):
            p = r.parts.get(name)
            comm = 0.0 if p is None or schedule.world_size == 1 else p.comm_s + p.wait_s
            total = total if p is None else total + PassTime(p.compute_s + comm, p.compute_s, comm) * share
        return total
    if schedule.world_size == 1:  # Megatron-LM skips a 1-rank group's collectives (returns the input)
        return PassTime(r.compute_s, r.compute_s, 0.0)
    # Hidden: the critical rank's collectives' time less what it spent blocked on them.
    rank = critical_rank(r.per_rank).rank
    total = sum(i.end_s - i.start_s for i in plan.instances if rank in i.ranks)
    return PassTime(r.makespan_s, r.compute_s, r.comm_s + r.wait_s, max(0.0, total - r.comm_s))


@dataclass(frozen=True)
class BlockTimes:
    """What a step repeats: one micro-batch's passes on the tensor-parallel group, and each rank's weights."""

    passes: dict
    """"block_fwd", "block_bwd" (recomputation included), "head_fwd", "head_bwd" (the logit GEMM and the loss),
    "embed_fwd", "embed_bwd" (``simulator.training.embedding_loss``): a ``PassTime`` each."""
    layer_el: tuple
    """Per tensor-parallel rank: elements of each of the block's weights, in ``workload.weights()`` order."""
    word_el: tuple
    """Per tensor-parallel rank: elements of its shard of the word embedding / LM head (0 without one); an
    untied model has two such weights."""
    positions_el: int
    """Elements of the learned position embedding (s x h), replicated on every rank; 0 without an embedding
    or with rotary positions."""
    final_norm_el: int
    """Elements of the final norm (LayerNorm 2 h, RMSNorm h); 0 without an embedding."""
    activation_bytes: tuple = ()
    """Per tensor-parallel rank: bytes of its block of the block's input, the layout the algorithm leaves
    between blocks: what a pipeline stage sends to the next one."""
    embedding_loss_s: float = 0.0
    """Of one micro-batch's head passes: the embedding's and the cross entropy's (``embedding_loss``)."""


def block_times(G: nx.DiGraph, a: TrainingArrangement, block: Workload, options: StepOptions, bound: bool = False,
                router=None, algorithms: dict[str, str] | None = None, cache: dict | None = None) -> BlockTimes:
    """The passes of one micro-batch of ``block`` on the first tensor-parallel group of ``a``; ``cache`` (a
    dict kept by the caller) reuses them across arrangements that differ only in pp, schedule and D."""
    g = grad_bytes(options.dtype, options.zero, options.grad_reduce_in_fp32)
    key = (a.tensor, block, bound, options.vocab, options.recompute, options.dtype, g, options.torch_fsdp,
           options.tied, options.gradient_accumulation_fusion, options.deepspeed_bf16_optimizer, options.async_dgrad,
           options.tp_comm_overlap, options.tp_comm_overlap_cfg)
    if cache is not None and key in cache:
        return cache[key]
    dtype = options.dtype
    gpus = tp_group_gpus(G, TrainingArrangement(a.tensor, 1))  # the same GPUs for every pp and D
    if options.recompute == "selective-op" and a.tp > 1:
        raise NotApplicable(f"--recompute selective-op is timed on a tensor-parallel size of 1 (torchtitan's per-op "
                            f"policy keeps reduce-scatters, recomputes all-gathers), got tp={a.tp}; use --tp-sizes 1")
    if options.recompute != "none":  # the passes without recompute, plus what it adds: one timing for every mode
        base = block_times(G, a, block, replace(options, recompute="none"), bound, router, algorithms, cache)
        t = dict(base.passes)
        if options.recompute == "full":
            t["block_bwd"] = t["block_bwd"] + t["block_fwd"]
        elif options.recompute == "selective-op":  # the parts the per-op policy does not keep, at their share
            again = dict(op_checkpoint(block).recomputed)
            t["block_bwd"] = t["block_bwd"] + _time(build_block(a, block, "fwd", dtype), G, gpus, bound, router,
                                                    algorithms, part=again)
        elif block.attention == "unfused":
            # FlashAttention's backward recomputes the probabilities already (its op's time): nothing to add.
            attn = _time(build_block(a, block, "fwd", dtype, False, options.tp_comm_overlap,
                                     options.tp_comm_overlap_cfg), G, gpus, bound, router, algorithms, part="attn")
            t["block_bwd"] = t["block_bwd"] + attn
        out = replace(base, passes=t)
        if cache is not None:
            cache[key] = out
        return out
    asy, tco, cfg = options.async_dgrad, options.tp_comm_overlap, options.tp_comm_overlap_cfg
    fwd_s = build_block(a, block, "fwd", dtype, tp_comm_overlap=tco, tp_comm_overlap_cfg=cfg)
    bwd_s = build_block(a, block, "bwd", dtype, asy, tco, cfg)  # TE's ring of the row-parallel dY gathers
    head = lm_head_workload(block, options.vocab, a.tp) if options.vocab else None
    head_f = head_b = None
    if head is not None:
        head_f, head_b = (build_block(a, head, "fwd", dtype, tp_comm_overlap=tco, tp_comm_overlap_cfg=cfg),
                          build_block(a, head, "bwd", dtype, asy, tco, cfg))
    t = {"block_fwd": _time(fwd_s, G, gpus, bound, router, algorithms),
         "block_bwd": _time(bwd_s, G, gpus, bound, router, algorithms)}
    zero = PassTime(0.0, 0.0, 0.0)
    # Megatron-Core's output layer is its own ColumnParallelLinear, not a Transformer Engine module: bf16
    # GEMMs under FP8 too (megatron/core/models/gpt/gpt_model.py at d98e8a6; TE's only with the opt-in
    # fp8_output_proj under MXFP8).
    t["head_fwd"] = _time(head_f, G, gpus, bound, router, algorithms, bf16=True) if head else zero
    t["head_bwd"] = _time(head_b, G, gpus, bound, router, algorithms, bf16=True) if head else zero
    t["embed_fwd"] = t["embed_bwd"] = zero
    extra = 0.0
    # What the backward accumulates into: Megatron-LM's main gradients (g), or under PyTorch FSDP the unsharded
    # gradients, in the parameters' dtype whatever the reduction's (FSDP casts them after: copy_in_bytes).
    acc = DTYPE_BYTES[dtype] if options.torch_fsdp else g
    fsdp_zero = options.zero if options.torch_fsdp else 0  # Megatron-Core's FSDP makes no copy-in
    if head is not None:  # the loss's and the embedding's passes and collectives around the logit GEMM
        per, eff = DTYPE_BYTES[dtype], ComputeConfig.from_sim(G.graph.get("sim")).memory_efficiency
        x = head_extras(G, gpus, block, options.vocab, a.tp, a.algorithm, per, acc, eff, router)
        t["head_fwd"], t["head_bwd"] = t["head_fwd"] + PassTime(*x.loss_fwd), t["head_bwd"] + PassTime(*x.loss_bwd)
        t["embed_fwd"], t["embed_bwd"] = PassTime(*x.embed_fwd), PassTime(*x.embed_bwd)
        extra = x.total_s
    layer_el = tuple(tuple(weight_elements(fwd_s, block, r)) for r in range(a.tp))
    added = accumulation_bytes(max(sum(e) for e in layer_el), DTYPE_BYTES[dtype], acc,
                               options.gradient_accumulation_fusion, options.deepspeed_bf16_optimizer)
    # ZeRO-2/3 with an fp32 reduction: each unit's bf16 gradients cast into FSDP's fp32 reduce-scatter input.
    added += copy_in_bytes(max(sum(e) for e in layer_el), DTYPE_BYTES[dtype], g, fsdp_zero)
    rate = achievable_memory_bandwidth(G.nodes[gpus[0]]["device"],
                                       ComputeConfig.from_sim(G.graph.get("sim")).memory_efficiency)
    if added:  # each backward's hook adds the layer's weight gradients into the main gradients
        t["block_bwd"] = t["block_bwd"] + PassTime(added / rate, added / rate, 0.0)
    word_el = tuple((sum(weight_elements(head_f, head, r)) if head else 0) for r in range(a.tp))
    x = block.layers()[0].inputs[0]
    acts = tuple(fwd_s.buffers[r][x].nbytes if x in fwd_s.buffers[r] else 0 for r in range(a.tp))
    # Learned position embeddings and the final norm (LayerNorm 2h, RMSNorm h), replicated on every rank.
    positions = block.seq * block.hidden if head and block.position == "learned" else 0
    final_norm = (2 if block.norm == "layernorm" else 1) * block.hidden if head else 0
    root = max((1 if options.tied else 2) * word_el[r] + positions + final_norm for r in range(a.tp)) if head else 0
    root_copy = copy_in_bytes(root, DTYPE_BYTES[dtype], g, fsdp_zero)
    if root_copy:  # the root unit's (embedding, final norm, head) copy-in, after the embedding's backward
        t["embed_bwd"] = t["embed_bwd"] + PassTime(root_copy / rate, root_copy / rate, 0.0)
    out = BlockTimes(t, layer_el, word_el, positions, final_norm, acts, extra)
    if cache is not None:
        cache[key] = out
    return out


def step_time(G: nx.DiGraph, a: TrainingArrangement, block: Workload, options: StepOptions, bound: bool = False,
              router=None, algorithms: dict[str, str] | None = None, cache: dict | None = None,
              split: bool = True) -> StepTime:
    """The step of ``a`` training ``options.layers`` blocks like ``block`` (its batch is the micro-batch);
    NotApplicable where sizes do not divide (module docstring). Pipelined arrangements (pp > 1) are timed by
    ``simulator.pipeline.stage_step`` (``split`` as its); ``cache`` as ``block_times``'s."""
    if block.name != "transformer":
        raise InputError(f"a training step needs a transformer block, got {block.name}")
    if a.pp > 1:
        from simulator.pipeline.stage_step import pipeline_step_time  # the pipeline package builds on this one
        return pipeline_step_time(G, a, block, options, bound, router, algorithms, cache, split)
    m = micro_batches(options.global_batch, block.batch, a.dp)
    dtype, L = options.dtype, options.layers
    bt = block_times(G, a, block, options, bound, router, algorithms, cache)
    t = bt.passes
    micro = t["block_fwd"] * L + t["block_bwd"] * L + t["head_fwd"] + t["head_bwd"] + t["embed_fwd"] + t["embed_bwd"]

    # Gradients and parameters per tensor-parallel rank: L blocks' weight shards plus the embedding layer's;
    # gradients reduced in the main gradients' dtype, parameters gathered in their own (``main_grads``).
    per = grad_bytes(dtype, options.zero, options.grad_reduce_in_fp32)
    copies = 1 if options.tied else 2  # an untied input embedding is a second weight the size of the head's shard
    layer_el = bt.layer_el
    embed_el = [copies * bt.word_el[r] + bt.positions_el + bt.final_norm_el for r in range(a.tp)]
    params = max(L * sum(layer_el[r]) + embed_el[r] for r in range(a.tp))
    bwd_end = t["head_bwd"].time_s + L * t["block_bwd"].time_s + t["embed_bwd"].time_s
    streams = aligned_buckets([[e * per for e in layer_el[r]] for r in range(a.tp)],
                              [embed_el[r] * per for r in range(a.tp)], L,
                              reduction_bucket_bytes(options.bucket_bytes, options.zero, options.overlap_grad_reduce),
                              t["head_bwd"].time_s, t["block_bwd"].time_s, t["embed_bwd"].time_s)
    groups = dp_groups(G, a)
    reduce = bound_stream if bound else simulate_waves

    def stream_s(kind: str, buckets) -> float:
        return reduce(G, groups, buckets, kind, router=router, algorithms=algorithms)

    dp = gathered = 0.0
    hidden = {"tp": m * micro.hidden_s}
    if a.dp > 1:
        kind = "all_reduce" if options.zero == 0 else "reduce_scatter"
        tail = max(0.0, stream_s(kind, streams) - bwd_end)
        reductions = m if options.zero >= 2 else 1
        dp += tail * reductions
        # Parameter buckets: the gradient buckets' elements in the parameters' dtype.
        gather = [[Bucket(b.nbytes * DTYPE_BYTES[dtype] / per, 0.0) for b in s] for s in streams]
        # The reduction's own time: its buckets run back to back, all ready at once; hidden is what of it
        # the backward covered.
        alone = stream_s(kind, [[Bucket(b.nbytes, 0.0) for b in s] for s in streams])
        hidden["dp"] = reductions * max(0.0, alone - tail)
        if options.zero == 1 or options.zero == 2:
            gathered = stream_s("all_gather", gather)
        elif options.zero == 3:  # FSDP's units, prefetched (simulator.training.fsdp_prefetch)
            params_b = DTYPE_BYTES[dtype]
            unit = stream_s("all_gather", [[Bucket(sum(layer_el[r]) * params_b, 0.0)] for r in range(a.tp)])
            root = stream_s("all_gather", [[Bucket(embed_el[r] * params_b, 0.0)] for r in range(a.tp)])
            fwd_x, bwd_x, total = gather_times(unit, root, L, t["block_fwd"].time_s, t["block_bwd"].time_s,
                                               t["head_bwd"].time_s, options.backward_prefetch)
            gathered = m * (fwd_x + bwd_x)
            hidden["zero_gather"] = m * total - gathered
        dp += gathered
    gpu = groups[0][0]
    device, config = G.nodes[gpu]["device"], ComputeConfig.from_sim(G.graph.get("sim"))
    out = step_terms(G, gpu, config, a, block, options, bt, m, params, per, hidden)  # optimizer, FSDP, FP8, SMs
    opt, shared, cast, fsdp_s = out.optimizer_s, out.shared_s, out.cast_s, out.fsdp_s
    step = m * micro.time_s + dp + opt + shared + cast + fsdp_s
    flops, model_util, hardware_util, tflops = utilisation(block, options, device, config, step, a.gpus)
    tokens = options.global_batch * block.seq / step
    log.info("%s: step %.6g s (%s)", a.label, step, "bound" if bound else "simulated")
    return StepTime(a, block.batch, m, "bound" if bound else "simulated", step,
                    m * micro.compute_s + opt + shared + cast + fsdp_s, m * micro.comm_s, dp, opt, tokens, model_util,
                    flops, t, hardware_util, tflops, terms=out.terms,
                    hidden=hidden, zero_gather_s=gathered)

