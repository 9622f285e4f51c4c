"""The data-parallel gradient reduction of one step, on the topology, every data-parallel group at once.

Each tensor-parallel rank r has a data-parallel group (``simulator.training.placement.dp_groups``) and a
stream of gradient buckets (``simulator.training.gradients``). As PyTorch DDP and Megatron-LM do, a
bucket's collective starts once the bucket is ready and the bucket before it has been reduced: the
buckets of one group run in order on one communication stream, overlapped with the backward of the last
micro-batch. All groups run at the same time and share the servers' NICs and the fabric, which is why
they are simulated together, on one ``FlowNetwork``, by ``simulator.collectives.run_collective`` (NCCL's
algorithm choice and protocols, exactly as ``tpsim collective`` runs one group).

The kind is ``all_reduce`` (S = the bucket), or ``reduce_scatter`` (S = the bucket, the input) when
ZeRO shards the gradients or the optimizer state; ``all_gather`` of parameter buckets (S = the output)
has no ready times (every bucket is ready at 0).

Waves. A 175B model in 25 MB buckets is some 1,700 collectives per group, and one wave of 8 concurrent
128-GPU all-reduces takes about 0.1 s of wall time to simulate. So the reduction is simulated wave by
wave: wave k is the k-th bucket of every group, started together at max(end of wave k-1, its ready
time) on an otherwise idle network; its duration is simulated once per distinct bucket size and
reused (most buckets repeat layer after layer). The groups' k-th buckets are the same parameters,
ready at the same time (``gradients.aligned_buckets``). Waves equal running the groups' streams
freely (``simulate_streams``, the reference the tests hold them to) whenever a wave's collectives end
together, as they do for groups alike in bytes and routes (equal shards, rail-optimised fabrics);
elsewhere they hold every group back to the slowest at each bucket, an approximation that costs little
where the slowest group is also the heaviest (Cannon, whose first depth layer holds the weights).
An empty bucket (a rank holding none of its parameters) runs no collective.

``bound_stream`` is the contention-free counterpart for the analytic bound: each bucket timed by the
closed form (``simulator.collectives.closed_form.predict_collective_s``) of the slowest group alone.
"""

from __future__ import annotations

from typing import Sequence

import networkx as nx
import simpy

from simulator.collectives import CollectiveParams, run_collective
from simulator.collectives.closed_form import predict_collective_s
from simulator.network.flow_network import FlowNetwork
from simulator.network.topology_cache import TopologyCache, planning_network
from simulator.training.gradients import Bucket

__all__ = ["simulate_waves", "simulate_streams", "bound_stream"]


def _nothing_to_reduce(groups, streams) -> bool:
    """True for groups of one GPU or no buckets: the reduction takes no time."""
    return not groups or len(groups[0]) == 1 or not any(streams)


def _network(G: nx.DiGraph, router, algorithms: dict[str, str] | None, kind: str):
    """A fresh simpy clock and flow network on ``G``, the collective parameters, and ``kind``'s override."""
    env = simpy.Environment()
    return env, FlowNetwork(env, G, router=router), CollectiveParams.from_graph(G), (algorithms or {}).get(kind)


def simulate_waves(G: nx.DiGraph, groups: Sequence[Sequence[str]], streams: Sequence[Sequence[Bucket]],
                   kind: str, router=None, algorithms: dict[str, str] | None = None) -> float:
    """Seconds from the streams' time 0 (the last backward's start) until every group's last bucket
    is reduced, wave by wave (module docstring); 0 for groups of one GPU."""
    if _nothing_to_reduce(groups, streams):
        return 0.0
    env, net, params, algorithm = _network(G, router, algorithms, kind)
    durations: dict[tuple, float] = {}
    clock = 0.0
    for k in range(max(len(s) for s in streams)):
        wave = tuple((i, s[k].nbytes) for i, s in enumerate(streams) if k < len(s))
        start = max([clock] + [s[k].ready_s for s in streams if k < len(s)])
        if wave not in durations:
            began = env.now
            procs = [run_collective(env, net, kind, list(groups[i]), nbytes, algorithm=algorithm, params=params)
                     for i, nbytes in wave if nbytes]
            env.run(until=env.all_of(procs))
            durations[wave] = env.now - began
        clock = start + durations[wave]
    return clock


def simulate_streams(G: nx.DiGraph, groups: Sequence[Sequence[str]], streams: Sequence[Sequence[Bucket]],
                     kind: str, router=None, algorithms: dict[str, str] | None = None) -> float:
    """The same reduction with every group's stream running freely (no waves): the reference for
    ``simulate_waves``, one collective per bucket per group."""
    if _nothing_to_reduce(groups, streams):
        return 0.0
    env, net, params, algorithm = _network(G, router, algorithms, kind)

    def stream(members, buckets):
        for bucket in (b for b in buckets if b.nbytes):
            if bucket.ready_s > env.now:
                yield env.timeout(bucket.ready_s - env.now)
            yield run_collective(env, net, kind, list(members), bucket.nbytes, algorithm=algorithm, params=params)

    env.run(until=env.all_of([env.process(stream(m, b)) for m, b in zip(groups, streams)]))
    return env.now


def bound_stream(G: nx.DiGraph, groups: Sequence[Sequence[str]], streams: Sequence[Sequence[Bucket]],
                 kind: str, router=None, algorithms: dict[str, str] | None = None) -> float:
    """Contention-free end of the streams: each bucket's closed-form time on its group alone, in order
    after its ready time; the latest group's end. A lower bound on ``simulate_streams``."""
    if _nothing_to_reduce(groups, streams):
        return 0.0
    params, algorithm = CollectiveParams.from_graph(G), (algorithms or {}).get(kind)
    # Kept in the topology's plan cache (a ``TopologyCache`` router's): a search bounds the same groups'
    # buckets for many rows, and needs a network only for those it has not timed yet.
    plans = router.plans if isinstance(router, TopologyCache) else {}
    times: dict[tuple, float] = plans.setdefault(("bound_stream", kind, algorithm, params), {})
    net = None
    end = 0.0
    for members, buckets in zip(groups, streams):
        clock = 0.0
        for bucket in (b for b in buckets if b.nbytes):
            key = (tuple(members), bucket.nbytes)
            if key not in times:
                net = net or planning_network(G, router)  # one per TopologyCache, never run
                times[key] = predict_collective_s(net, kind, list(members), bucket.nbytes, algorithm=algorithm,
                                                  params=params)
            clock = max(clock, bucket.ready_s) + times[key]
        end = max(end, clock)
    return end
