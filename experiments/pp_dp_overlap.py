"""How much the pipeline sends and the data-parallel reduction would slow each other if they shared one network.

Not a test (``python -m experiments.pp_dp_overlap``; ``--gpus 1024`` runs a smaller cluster). tpsim times a
pipelined step's boundary sends (all of one boundary's tp x D sends at once, on the topology) and each stage's
data-parallel reduction (every stage's groups at once, on the topology) on two separate flow networks
(``simulator.pipeline.stage_step``), so neither sees the other's flows. On the presets' rail-optimised fabrics
they do meet: a send goes from a GPU to the GPU of the same tensor-parallel rank on the next stage, through the
GPU's own NIC, the NIC its data-parallel ring uses too. This script measures, for Llama 3 405B pinned to its
published plan (``experiments.bench_plan``'s ``405b-pinned``: tp 8 x pp 16 x dp 128, interleaved, on
``dgx-h100:P/8``), on the real topology and flow network:

1. ``hop``: one boundary's sends alone (what tpsim charges), and ``hop_shared``: the same sends started on a
   network where every stage's data-parallel groups run a bucket's collective at the same time;
2. ``wave``: that bucket's collective alone, and ``wave_shared``: with the sends beside it;
3. from the replay of the pipeline order, how many sends each pipeline rank makes while its own reduction runs
   (between its first gradient bucket's ready time and the reduction's end), the largest over ranks: ``k``.

Estimates, not the coupled simulation: the sends the reduction overlaps delay the step by about
``k x (hop_shared - hop)`` (every such send on the critical path, each slowed as much as the measured one)
and the reduction by about ``k x (wave_shared - wave)`` (each send meeting one bucket's collective, slowing
it as measured); and a worst case for the reduction, ``k x hop`` (every send's whole time on the reduction's
NICs taken from it). All are printed against the step time.
"""

from __future__ import annotations

import argparse
import sys

import simpy

from simulator.algorithms.arrangement import Arrangement
from simulator.collectives import CollectiveParams, run_collective
from simulator.ir.schedule import DTYPE_BYTES
from simulator.network.flow_network import FlowNetwork
from simulator.network.topology_cache import TopologyCache
from simulator.pipeline import stage_step
from simulator.pipeline.stage_step import boundary_sends_s, cached_order, crossing_s, stage_passes
from simulator.pipeline.timeline import replay_times
from simulator.training.arrangement import TrainingArrangement
from simulator.training.batching import micro_batches
from simulator.training.gradients import aligned_stream_buckets
from simulator.training.placement import dp_groups, tp_group_gpus
from simulator.training.step import StepOptions, block_times
from simulator.workloads.models import resolve_model
from simulator.workloads.workload import Workload
from topologies import load_topology

__all__ = ["measure", "main"]


def _run_together(G, router, jobs) -> list[float]:
    """Start every (kind, members, nbytes) at time 0 on one network; each job's end, seconds."""
    env = simpy.Environment()
    net = FlowNetwork(env, G, router=router)
    params = CollectiveParams.from_graph(G)
    ends = [0.0] * len(jobs)

    def one(i, kind, members, nbytes):
        yield run_collective(env, net, kind, list(members), nbytes, params=params)
        ends[i] = env.now

    env.run(until=env.all_of([env.process(one(i, *job)) for i, job in enumerate(jobs)]))
    return ends


def measure(gpus: int = 16384, layers: int = 128, global_batch: int = 2048) -> dict:
    """The figures of the module docstring for Llama 3 405B's plan (tp 8 x pp 16 x dp = gpus / 128)."""
    G = load_topology(f"dgx-h100:{gpus // 8}")
    router = TopologyCache(G)
    model = resolve_model("llama3-405b")
    block = Workload.transformer(1, model.seq, model.hidden, model.heads, model.ffn, 0.0,
                                 **{**model.architecture(), "attention": "flash"})
    a = TrainingArrangement(Arrangement("1d-sp", (8,)), gpus // 128, 16, "interleaved", 8)
    options = StepOptions(global_batch=global_batch, layers=layers, vocab=model.vocab, tied=model.tied, zero=1,
                          recompute="full")
    step = stage_step.pipeline_step_time(G, a, block, options, router=router)
    bt = block_times(G, a, block, options, False, router, None, {})
    hop, wrap = boundary_sends_s(G, a, bt, block, False, router, None, None)

    sends = []
    for g in range(a.dp):
        for s, d, nbytes in zip(tp_group_gpus(G, a, g, 0), tp_group_gpus(G, a, g, 1), bt.activation_bytes):
            sends.append(("send", [s, d], nbytes))
    # One bucket of every stage's every data-parallel group (ZeRO-1: reduce-scatter), as one wave runs them.
    per_byte = DTYPE_BYTES[options.dtype]
    bucket = options.bucket_bytes
    groups = [members for rank in range(a.pp) for members in dp_groups(G, a, rank)]
    reduce = [("reduce_scatter", members, bucket) for members in groups]
    alone_wave = max(_run_together(G, router, reduce))
    together = _run_together(G, router, sends + reduce)
    hop_shared, wave_shared = max(together[:len(sends)]), max(together[len(sends):])

    # Sends each pipeline rank makes while its own reduction runs, from the replay of the order.
    m = micro_batches(global_batch, block.batch, a.dp)
    S = a.pp * a.virtual_stages
    passes = stage_passes(bt, a, layers)
    order = cached_order(a.schedule, a.pp, m, a.virtual_stages)
    timed = replay_times(order, m, S, lambda x: passes[x.kind, x.stage == 0, x.stage == S - 1].time_s,
                         crossing_s(a.pp, hop, wrap))
    last_backward = {x.stage: start for actions, rank in zip(order, timed)
                     for x, (start, _) in zip(actions, rank) if x.kind == "B" and x.micro_batch == m - 1}
    k = 0
    for rank in range(a.pp):
        raw = [stage_step._gradient_stream(bt, a, last_backward, rank, 0, layers, per_byte)]
        first_ready = min(b.ready_s for b in aligned_stream_buckets(raw, bucket)[0])
        end = step.step_s  # the reduction ends before the step does
        # Every action's output crosses a boundary but the last stage's forwards' and the first's backwards'.
        ends = [t_end for x, (_, t_end) in zip(order[rank], timed[rank])
                if not (x.kind == "F" and x.stage == S - 1) and not (x.kind == "B" and x.stage == 0)]
        k = max(k, sum(1 for t in ends if first_ready <= t <= end))
    return {"gpus": gpus, "step_s": step.step_s, "dp_comm_s": step.dp_comm_s, "pp_comm_s": step.pp_comm_s,
            "hop_s": hop, "hop_shared_s": hop_shared, "wave_s": alone_wave, "wave_shared_s": wave_shared,
            "sends_in_window": k, "send_delay_s": k * (hop_shared - hop),
            "reduction_delay_s": k * (wave_shared - alone_wave), "reduction_worst_s": k * hop}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, default=16384, choices=(2048, 4096, 8192, 16384),
                        help="cluster size (tp 8 x pp 16 x dp = GPUs / 128; default 16384)")
    args = parser.parse_args(argv)
    r = measure(args.gpus, global_batch=16 * args.gpus // 128)
    ms = {k: v * 1e3 for k, v in r.items() if k.endswith("_s")}
    print(f"llama3-405b tp=8 x pp=16 x dp={args.gpus // 128} (interleaved v=8) on dgx-h100:{args.gpus // 8}: "
          f"step {r['step_s']:.3f} s (PP comm {ms['pp_comm_s']:.1f} ms, DP comm {ms['dp_comm_s']:.1f} ms)")
    print(f"  one boundary's sends: {ms['hop_s']:.3f} ms alone, {ms['hop_shared_s']:.3f} ms beside a 25 MB "
          f"reduce-scatter on every stage's data-parallel groups")
    print(f"  that reduce-scatter: {ms['wave_s']:.3f} ms alone, {ms['wave_shared_s']:.3f} ms beside the sends")
    print(f"  sends a pipeline rank makes while its reduction runs: at most {r['sends_in_window']}")
    added = r["send_delay_s"] + r["reduction_delay_s"]
    print(f"  sharing one network would add about: sends {ms['send_delay_s']:.1f} ms, reduction "
          f"{ms['reduction_delay_s']:.1f} ms, {added / r['step_s']:.2%} of a {r['step_s']:.3f} s step; at worst "
          f"{(r['send_delay_s'] + r['reduction_worst_s']) / r['step_s']:.2%} (the reduction "
          f"{ms['reduction_worst_s']:.1f} ms: every send's time on its NICs taken from it)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
