"""A training step with pipeline parallelism, from block times replayed through the pipeline order.

For a ``TrainingArrangement`` with pp stages (v model chunks per pipeline rank, ``schedule``), m micro-batches:

1. One micro-batch's passes on one tensor-parallel group (``simulator.training.step.block_times``: the block's
   forward and backward simulated, or bounded, once, the LM head the same way). A virtual stage's forward is
   L / (pp v) block forwards, its backward as many block backwards; the last virtual stage adds the LM head
   and loss, the first the embedding (its lookup, its backward and its collectives:
   ``simulator.training.embedding_loss``).
2. The pipeline sends: every GPU of a stage sends its block of the activation (the block input's layout,
   ``BlockTimes.activation_bytes``) to the GPU holding the same tensor-parallel rank of the same replica on
   the next stage (Megatron-LM's rank order, ``simulator.training.placement``), all of a boundary's tp x D
   sends at once, as NCCL point-to-point transfers on the topology (``dp_reduce.simulate_waves``, kind
   ``send``: flows sharing the servers' NICs; the bound: each send's closed form alone, replica 0's). The
   gradient goes back the same way, taking as long. Boundaries between pipeline ranks r and r + 1 are
   alike under the rank order; interleaved schedules also cross from the last rank back to the first.
   Megatron-core sends the whole activation from every tensor-parallel rank (its older scatter-gather
   optimisation, which sends 1/tp of a replicated activation and all-gathers it, is not modelled).
3. ``simulator.pipeline.timeline.replay`` of the order (``simulator.pipeline.order``) with those times gives
   the makespan. A second replay with free sends splits the idle time: ``bubble_s`` (the busiest rank's idle
   time without sends) and ``pp_comm_s`` (what the sends add). With equal stages and free communication the
   makespan is ``closed_forms.ideal_step_s`` exactly (the tests hold it).
4. Each stage's data-parallel reduction (ZeRO-0 all-reduce, ZeRO-1 reduce-scatter), in DDP buckets that get
   ready as the stage's last backward (micro-batch m - 1, each chunk) passes each layer; the last stage's
   LM head gradient first, the first stage's embedding gradient last. Every stage's groups run together on
   one network (``dp_reduce.simulate_waves``: they share NICs where stages share servers; a wave is held to
   its latest bucket, so the first stage, whose backward ends last, sets the pace). The bound times stages
   0 and pp - 1 only (the middle ones hold no embedding and end their backward earlier), each by the
   group of its tensor-parallel rank with the most gradient bytes (the groups of a stage differ only
   in which GPU of each server they use). What runs past the makespan is exposed (``dp_comm_s``).
5. The tied embedding's gradient all-reduce between the first and last stage (Megatron-LM's
   ``_allreduce_word_embedding_grads``: each rank's word-embedding shard with its counterpart, all tp x D
   pairs at once), after the reduction; counted in ``pp_comm_s``. ZeRO-1's parameter all-gather after the
   update (every stage at once) in ``dp_comm_s``; the optimizer step on the stage with the most parameters.

ZeRO-2 and 3 reduce-scatter gradients after every micro-batch; neither Megatron-LM nor DeepSpeed runs them
with pipelines, so such rows are not applicable. With pp = 1 this gives ``step_time``'s result (the tests
hold the two equal); the planner calls it only for pp > 1.
"""

from __future__ import annotations

import functools
import logging
import math

import networkx as nx

from simulator.compute import ComputeConfig, achievable_memory_bandwidth
from simulator.errors import NotApplicable
from simulator.fp8_cost import weight_cast_s
from simulator.ir.schedule import DTYPE_BYTES
from simulator.pipeline.closed_forms import ideal_step_s
from simulator.pipeline.order import Action, pipeline_order
from simulator.pipeline.timeline import replay_times
from simulator.training.arrangement import TrainingArrangement
from simulator.training.batching import micro_batches
from simulator.training.dp_reduce import bound_stream, simulate_waves
from simulator.training.gradients import Bucket, aligned_stream_buckets
from simulator.training.main_grads import grad_bytes, reduction_bucket_bytes
from simulator.training.optimizer_step import optimizer_terms
from simulator.training.placement import dp_groups, tp_group_gpus
from simulator.training.step import BlockTimes, PassTime, StepOptions, StepTime, block_times
from simulator.training.utilisation import utilisation
from simulator.workloads.workload import Workload

__all__ = ["boundary_sends_s", "cached_order", "check_pipeline_plan", "crossing_s", "pipeline_floor_s",
           "pipeline_step_time", "stage_key", "stage_passes", "stage_parameters"]

log = logging.getLogger(__name__)

ZERO = PassTime(0.0, 0.0, 0.0)


@functools.lru_cache(maxsize=1024)
def cached_order(schedule: str, pp: int, micro_batches: int, virtual_stages: int) -> list[list[Action]]:
    """``pipeline_order``, kept: the search replays one order for many stage times (read it, never change it).
    The GPT-3 175B search on 1,024 GPUs asks 1,823 times for 155 orders, each again for every algorithm of
    the same tp: a cache of 32 generated them anew, a third of the search's time (about 100 MB kept)."""
    return pipeline_order(schedule, pp, micro_batches, virtual_stages)


def check_pipeline_plan(a: TrainingArrangement, m: int, options: StepOptions) -> None:
    """NotApplicable naming what ``a`` cannot run with m micro-batches (a skipped row in the planner)."""
    pp, v, L = a.pp, a.virtual_stages, options.layers
    if pp > 1 and options.zero >= 2:
        raise NotApplicable(f"ZeRO-{options.zero} reduce-scatters every micro-batch's gradients; Megatron-LM and "
                            f"DeepSpeed run pipelines with ZeRO 0 or 1")
    if L % (pp * v):
        what = f"pp={pp} x v={v} = {pp * v}" if v > 1 else f"pp={pp}"
        raise NotApplicable(f"{L} layers do not divide into {what} stages of equal depth")
    if a.schedule == "interleaved" and (pp < 2 or m % pp):
        raise NotApplicable(f"interleaved needs pp >= 2 and the micro-batches (m={m}) a multiple of pp={pp} "
                            f"(Megatron-LM's rule)")


def stage_passes(bt: BlockTimes, a: TrainingArrangement, layers: int) -> dict[tuple[str, bool, bool], PassTime]:
    """(kind "F"|"B", on the first virtual stage, on the last) -> one micro-batch's pass through one virtual
    stage: the first adds the embedding, the last the LM head and loss (``stage_key``)."""
    per = layers // (a.pp * a.virtual_stages)
    t = bt.passes
    out = {}
    for kind, block, head, embed in (("F", "block_fwd", "head_fwd", "embed_fwd"),
                                     ("B", "block_bwd", "head_bwd", "embed_bwd")):
        for first in (False, True):
            for last in (False, True):
                out[kind, first, last] = t[block] * per + (t[head] if last else ZERO) + (t[embed] if first else ZERO)
    return out


def stage_key(x: Action, stages: int) -> tuple[str, bool, bool]:
    """``stage_passes``'s key of action ``x`` in a pipeline of ``stages`` virtual stages."""
    return x.kind, x.stage == 0, x.stage == stages - 1


def stage_parameters(bt: BlockTimes, a: TrainingArrangement, layers: int, rank: int, slot: int) -> int:
    """Parameters pipeline rank ``rank``'s tensor-parallel rank ``slot`` holds: its L / pp layers' shards, the
    word embedding and positions on the first rank, the (tied) LM head and final LayerNorm on the last."""
    n = layers // a.pp * sum(bt.layer_el[slot])
    first, last = rank == 0, rank == a.pp - 1
    if first or last:
        n += bt.word_el[slot]  # the first and last stage each keep a copy of the tied weight (once if pp = 1)
    return n + (bt.positions_el if first else 0) + (bt.final_norm_el if last else 0)


def _boundary_s(G: nx.DiGraph, a: TrainingArrangement, bt: BlockTimes, src: int, dst: int, bound: bool,
                router, algorithms) -> float:
    """Seconds for every send from pipeline rank ``src`` to ``dst`` (each replica's, tp rank to tp rank)."""
    groups, streams = [], []
    for g in range(1 if bound else a.dp):
        pairs = zip(tp_group_gpus(G, a, g, src), tp_group_gpus(G, a, g, dst), bt.activation_bytes)
        for s, d, nbytes in pairs:
            groups.append([s, d])
            streams.append([Bucket(nbytes, 0.0)])
    run = bound_stream if bound else simulate_waves
    return run(G, groups, streams, "send", router=router, algorithms=algorithms)


def _gradient_stream(bt: BlockTimes, a: TrainingArrangement, last_backward: dict[int, float], rank: int, slot: int,
                     layers: int, per_byte: int) -> list[tuple[float, float]]:
    """(bytes, ready) of each gradient pipeline rank ``rank``'s ``slot`` produces in its last backwards
    (``last_backward``: virtual stage -> the start of its last micro-batch's backward)."""
    S = a.pp * a.virtual_stages
    per = layers // S
    layer_bwd, head_bwd = bt.passes["block_bwd"].time_s, bt.passes["head_bwd"].time_s
    embed_bwd = bt.passes["embed_bwd"].time_s
    weights = [e * per_byte for e in reversed(bt.layer_el[slot])]
    word = bt.word_el[slot] * per_byte
    stream: list[tuple[float, float]] = []
    chunks = sorted((s for s in range(S) if s % a.pp == rank), key=lambda s: last_backward[s])
    for s in chunks:
        t0 = last_backward[s]
        if s == S - 1:
            t0 += head_bwd
            if S > 1:  # the last stage's LM head (its copy of the tied weight) and final LayerNorm
                stream.append((word + bt.final_norm_el * per_byte, t0))
        for done in range(1, per + 1):
            stream.extend((nbytes, t0 + done * layer_bwd) for nbytes in weights)
        if s == 0:  # the embedding's gradient is complete when the whole backward is
            extra = bt.positions_el + (bt.final_norm_el if S == 1 else 0)
            stream.append((word + extra * per_byte, t0 + per * layer_bwd + embed_bwd))  # after the lookup's
    return stream


def _reduction_end_s(G, a, bt, last_backward, options, bound, router, algorithms) -> tuple[float, float]:
    """When every stage's data-parallel reduction ends (absolute), and ZeRO-1's parameter all-gather's seconds."""
    if a.dp == 1:
        return 0.0, 0.0
    per_byte = grad_bytes(options.dtype, options.zero, options.grad_reduce_in_fp32)  # main gradients' dtype
    groups, streams = [], []
    heaviest = max(range(a.tp), key=lambda r: (sum(bt.layer_el[r]) + bt.word_el[r], -r))
    for rank in (sorted({0, a.pp - 1}) if bound else range(a.pp)):
        # The bound: the group of the tensor-parallel rank with the most gradient bytes stands for its stage.
        slots = [heaviest] if bound else range(a.tp)
        raw = [_gradient_stream(bt, a, last_backward, rank, slot, options.layers, per_byte) for slot in slots]
        size = reduction_bucket_bytes(options.bucket_bytes, options.zero, options.overlap_grad_reduce)
        buckets, members = aligned_stream_buckets(raw, size), dp_groups(G, a, rank)
        members = [members[slot] for slot in slots]
        groups += members
        streams += buckets
    run = bound_stream if bound else simulate_waves
    kind = "all_reduce" if options.zero == 0 else "reduce_scatter"
    end = run(G, groups, streams, kind, router=router, algorithms=algorithms)
    gather = 0.0
    if options.zero == 1:
        params = [[Bucket(b.nbytes * DTYPE_BYTES[options.dtype] / per_byte, 0.0) for b in s] for s in streams]
        gather = run(G, groups, params, "all_gather", router=router, algorithms=algorithms)
    return end, gather


def boundary_sends_s(G: nx.DiGraph, a: TrainingArrangement, bt: BlockTimes, block: Workload, bound: bool, router,
                     algorithms, cache: dict | None) -> tuple[float, float]:
    """Seconds for one boundary's sends between pipeline ranks r and r + 1, and from the last back to the first
    (interleaved schedules' chunk wrap); (0, 0) without a pipeline."""
    if a.pp == 1:
        return 0.0, 0.0
    key = ("pipeline sends", a.tensor, a.pp, a.dp, block.batch, bound)
    hop = cache.get(key) if cache is not None else None
    if hop is None:
        hop = _boundary_s(G, a, bt, 0, 1, bound, router, algorithms)
        if cache is not None:
            cache[key] = hop
    return hop, _boundary_s(G, a, bt, a.pp - 1, 0, bound, router, algorithms) if a.virtual_stages > 1 else hop


def crossing_s(pp: int, hop: float, wrap: float):
    """``p2p_s`` for the replay: an action's output crosses to rank (stage +- 1) % pp, the wrap from the last
    rank to the first (forward) or back (backward)."""
    def p2p_s(x: Action) -> float:
        rank = x.stage % pp
        return wrap if (rank == pp - 1 if x.kind == "F" else rank == 0) else hop
    return p2p_s


def _embedding_sync_s(G, a, bt, options, bound, router, algorithms) -> float:
    """The tied word embedding's gradient all-reduce between each first-stage GPU and its last-stage peer."""
    if a.pp == 1 or not options.vocab or not options.tied:  # an untied head has no copy to keep in step
        return 0.0
    per_byte = grad_bytes(options.dtype, options.zero, options.grad_reduce_in_fp32)  # the main gradient's
    groups, streams = [], []
    for g in range(1 if bound else a.dp):
        for s, d, n in zip(tp_group_gpus(G, a, g, 0), tp_group_gpus(G, a, g, a.pp - 1), bt.word_el):
            groups.append([s, d])
            streams.append([Bucket(n * per_byte, 0.0)])
    run = bound_stream if bound else simulate_waves
    return run(G, groups, streams, "all_reduce", router=router, algorithms=algorithms)


def _optimizer_terms(params: float, a: TrainingArrangement, options: StepOptions, device: dict,
                     config: ComputeConfig) -> dict[str, float]:
    """The optimizer's passes on a rank of ``params`` parameters (``simulator.training.optimizer_step``)."""
    return optimizer_terms(params, a.dp if options.zero >= 1 else 1, options.optimizer, options.dtype,
                           grad_bytes(options.dtype, options.zero, options.grad_reduce_in_fp32), device,
                           config.memory_efficiency)


def pipeline_floor_s(G: nx.DiGraph, a: TrainingArrangement, block: Workload, options: StepOptions, router=None,
                     algorithms: dict[str, str] | None = None, cache: dict | None = None) -> float:
    """A cheap floor under ``pipeline_step_time(..., bound=True)``, for the search to skip schedules that cannot
    win: the closed-form step of equal stages (``closed_forms.ideal_step_s``, every stage as fast as a middle
    one, free sends; the replay can only be slower) or the last rank's busy time, whichever is larger, plus
    the optimizer step. NotApplicable as ``pipeline_step_time``."""
    m = micro_batches(options.global_batch, block.batch, a.dp)
    check_pipeline_plan(a, m, options)
    bt = block_times(G, a, block, options, True, router, algorithms, cache)
    passes = stage_passes(bt, a, options.layers)
    v = a.virtual_stages
    f, b = passes["F", False, False].time_s * v, passes["B", False, False].time_s * v
    head = bt.passes["head_fwd"].time_s + bt.passes["head_bwd"].time_s
    floor = max(ideal_step_s(a.schedule, a.pp, m, f, b, v), m * (f + b + head))
    params = max(stage_parameters(bt, a, options.layers, r, slot) for r in (0, a.pp - 1) for slot in range(a.tp))
    device = G.nodes[tp_group_gpus(G, a)[0]]["device"]
    config = ComputeConfig.from_sim(G.graph.get("sim"))
    return floor + sum(_optimizer_terms(params, a, options, device, config).values())


def pipeline_step_time(G: nx.DiGraph, a: TrainingArrangement, block: Workload, options: StepOptions,
                       bound: bool = False, router=None, algorithms: dict[str, str] | None = None,
                       cache: dict | None = None, split: bool = True) -> StepTime:
    """The step of pipelined ``a`` (module docstring); NotApplicable where sizes or ZeRO do not allow it.
    ``split=False`` leaves ``bubble_s`` and ``pp_comm_s`` NaN and skips the replay with free sends that
    splits them (the search compares schedules by step time, and splits only the one it keeps)."""
    m = micro_batches(options.global_batch, block.batch, a.dp)
    check_pipeline_plan(a, m, options)
    pp, v, L = a.pp, a.virtual_stages, options.layers
    S = pp * v
    bt = block_times(G, a, block, options, bound, router, algorithms, cache)
    passes = stage_passes(bt, a, L)
    times = {key: p.time_s for key, p in passes.items()}

    def time_s(x: Action) -> float:
        return times[stage_key(x, S)]

    hop, wrap = boundary_sends_s(G, a, bt, block, bound, router, algorithms, cache)
    p2p_s = crossing_s(pp, hop, wrap)

    order = cached_order(a.schedule, pp, m, v)
    key = ("pipeline replay", a, m, tuple(times.items()), hop, wrap)
    replayed = cache.get(key) if cache is not None else None
    if replayed is None:
        timed = replay_times(order, m, S, time_s, p2p_s, validate=False)  # pipeline_order's are well formed
        replayed = (max(r[-1][1] for r in timed),
                    {x.stage: start for actions, rank in zip(order, timed)
                     for x, (start, _) in zip(actions, rank) if x.kind == "B" and x.micro_batch == m - 1})
        if cache is not None:
            cache[key] = replayed
    makespan, last_backward = replayed
    if pp == 1:
        free = makespan
    elif split:
        free = max(r[-1][1] for r in replay_times(order, m, S, time_s, validate=False))
    else:
        free = math.nan
    # Rank r runs m passes of each of its v chunks; the last rank's last chunk also carries the LM head, the
    # first rank's first chunk the embedding.
    chunk, head = passes["F", False, False] + passes["B", False, False], bt.passes["head_fwd"] + bt.passes["head_bwd"]
    embed = bt.passes["embed_fwd"] + bt.passes["embed_bwd"]
    busy = [chunk * (m * v) + head * (m if r == pp - 1 else 0) + embed * (m if r == 0 else 0) for r in range(pp)]
    critical = max(range(pp), key=lambda r: (busy[r].time_s, -r))
    bubble = free - busy[critical].time_s
    sends = makespan - free

    end, gather = _reduction_end_s(G, a, bt, last_backward, options, bound, router, algorithms)
    dp = max(0.0, end - makespan) + gather
    embedding = _embedding_sync_s(G, a, bt, options, bound, router, algorithms)
    params = max(stage_parameters(bt, a, L, r, slot) for r in range(pp) for slot in range(a.tp))
    device = G.nodes[tp_group_gpus(G, a)[0]]["device"]
    config = ComputeConfig.from_sim(G.graph.get("sim"))
    terms = _optimizer_terms(params, a, options, device, config)
    opt = sum(terms.values())
    terms["embedding_loss"] = m * bt.embedding_loss_s
    terms["embedding_sync"] = embedding  # in pp_comm_s too
    cast = weight_cast_s(block, bt.layer_el, L // pp, device, config.fp8_recipe, achievable_memory_bandwidth(
        device, config.memory_efficiency)) if config.fp8_gemms else 0.0
    if cast:  # FP8: each step quantises a stage's layers' weights once (simulator.fp8_cost)
        terms["fp8_weight_cast"] = cast
    step = makespan + dp + embedding + opt + cast
    flops, model_util, hardware_util, tflops = utilisation(block, options, device, config, step, a.gpus)
    log.info("%s: step %.6g s (%s)", a.label, step, "bound" if bound else "simulated")
    return StepTime(a, block.batch, m, "bound" if bound else "simulated", step, busy[critical].compute_s + opt + cast,
                    busy[critical].comm_s, dp, opt, options.global_batch * block.seq / step,
                    model_util, flops, bt.passes, hardware_util, tflops, bubble_s=bubble,
                    pp_comm_s=sends + embedding, imbalance_s=busy[critical].time_s - min(b.time_s for b in busy),
                    terms=terms, hidden={"tp": busy[critical].hidden_s}, zero_gather_s=gather)
