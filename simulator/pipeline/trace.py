"""A planned training step as a Chrome / Perfetto trace: one process per pipeline stage.

``step_trace`` replays the step ``simulator.pipeline.stage_step`` times (the same block times, sends and
order) and writes it with ``simulator.timing.trace.chrome_trace``: process s is pipeline rank s (one GPU of
it, tensor-parallel rank 0 of replica 0; the others run the same), its "compute" track holds each
micro-batch's forward and backward through each of its model chunks (``F3``, ``B3``, ``F3 c1`` with
chunks), so the bubbles are the gaps; its communication tracks hold the sends of activations (after a
forward) and gradients (after a backward) to the neighbouring stage, the data-parallel gradient
reduction (from the start of the stage's last backward, which it overlaps, to the end of the step's
reduction), the tied embedding's all-reduce (first and last stage) and, on compute, the optimizer step.
Times are the step's own: the trace's last slice ends at ``StepTime.step_s``.

Example (``tpsim predict ... --global-batch G --trace step.json``; open it in https://ui.perfetto.dev).
"""

from __future__ import annotations

import networkx as nx

from simulator.pipeline.stage_step import (_embedding_sync_s, _reduction_end_s, boundary_sends_s, cached_order,
                                           crossing_s, pipeline_step_time, stage_key, stage_passes)
from simulator.pipeline.timeline import replay
from simulator.timing.trace import chrome_trace
from simulator.training.arrangement import TrainingArrangement
from simulator.training.step import StepOptions, block_times
from simulator.workloads.workload import Workload

__all__ = ["step_trace"]


def _slice(rank: int, kind: str, name: str, start: float, end: float, asynchronous: bool = False,
           nbytes: float = 0) -> dict:
    return {"rank": rank, "step": 0, "kind": kind, "group": None, "bytes": nbytes, "flops": 0, "start_s": start,
            "end_s": end, "duration_s": end - start, "name": name, "async": asynchronous}


def step_trace(G: nx.DiGraph, a: TrainingArrangement, block: Workload, options: StepOptions, bound: bool = False,
               router=None, algorithms: dict[str, str] | None = None, cache: dict | None = None) -> dict:
    """The trace object of ``a``'s step (module docstring); NotApplicable as ``pipeline_step_time``."""
    step = pipeline_step_time(G, a, block, options, bound, router, algorithms, cache)
    bt = block_times(G, a, block, options, bound, router, algorithms, cache)
    pp, v, m = a.pp, a.virtual_stages, step.micro_batches
    S = pp * v
    times = {key: p.time_s for key, p in stage_passes(bt, a, options.layers).items()}
    hop, wrap = boundary_sends_s(G, a, bt, block, bound, router, algorithms, cache)
    p2p_s = crossing_s(pp, hop, wrap)
    order = cached_order(a.schedule, pp, m, v)
    timeline = replay(order, m, S, lambda x: times[stage_key(x, S)], p2p_s)
    records, last_backward = [], {}
    for rank, timed in enumerate(timeline.ranks):
        for t in timed:
            x = t.action
            chunk = f" c{x.stage // pp}" if v > 1 else ""
            records.append(_slice(rank, "local", f"{x.kind}{x.micro_batch}{chunk}", t.start_s, t.end_s))
            crosses = x.stage < S - 1 if x.kind == "F" else x.stage > 0
            if crosses and pp > 1:
                what = "activation" if x.kind == "F" else "gradient"
                to = (x.stage + (1 if x.kind == "F" else -1)) % pp
                records.append(_slice(rank, "send", f"send {what} {x.micro_batch} to stage {to}", t.end_s,
                                      t.end_s + p2p_s(x), asynchronous=True, nbytes=bt.activation_bytes[0]))
            if x.kind == "B" and x.micro_batch == m - 1:
                last_backward[rank] = min(last_backward.get(rank, t.start_s), t.start_s)
    by_stage = {t.action.stage: t.start_s for r in timeline.ranks for t in r
                if t.action.kind == "B" and t.action.micro_batch == m - 1}
    end, gather = _reduction_end_s(G, a, bt, by_stage, options, bound, router, algorithms)
    embedding = _embedding_sync_s(G, a, bt, options, bound, router, algorithms)
    clock = timeline.makespan_s + max(0.0, end - timeline.makespan_s)
    kind = "all_reduce" if options.zero == 0 else "reduce_scatter"
    for rank in (range(pp) if a.dp > 1 else ()):
        records.append(_slice(rank, kind, f"data-parallel gradient {kind}", last_backward[rank],
                              max(clock, last_backward[rank]), asynchronous=True))
    if embedding:
        for rank in sorted({0, pp - 1}):
            records.append(_slice(rank, "all_reduce", "tied embedding gradient all_reduce", clock, clock + embedding))
        clock += embedding
    for rank in range(pp):
        records.append(_slice(rank, "local", "optimizer step", clock, clock + step.optimizer_s))
        if gather:
            records.append(_slice(rank, "all_gather", "ZeRO-1 parameter all_gather", clock + step.optimizer_s,
                                  clock + step.optimizer_s + gather))
    trace = chrome_trace(records, metadata={"arrangement": a.label, "step_time_s": step.step_s,
                                            "model": step.model, "micro_batches": m,
                                            "comm": step.comm_breakdown()},
                         world_size=pp)
    for event in trace["traceEvents"]:  # processes are pipeline stages here, not tensor-parallel ranks
        if event.get("ph") == "M" and event["name"] == "process_name":
            event["args"]["name"] = f"stage {event['pid']}"
    return trace
