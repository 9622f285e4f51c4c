"""The drain of one phase of a collective: when its last flow arrives, with nothing else on the network.

``run.plan_collective`` uses it to compare NCCL's algorithms and protocols by the time the flow network
will give them, and ``closed_form.predict_collective_s`` to time a plan; see ``phase_drain_s``.
"""

from __future__ import annotations

__all__ = ["phase_drain_s"]


def phase_drain_s(net, flows, groups=None) -> float:
    """Time from a phase's start until its last flow arrives, with nothing else on ``net``: a lower bound.

    ``flows``: (src, dst, wire bytes, via) as in ``CollectivePlan.phases``; ``groups``: their
    ``flow_groups.same_flows`` where known (``CollectivePlan.groups``), so that identical flows are
    routed once. No flow arrives sooner than alone on its route (latency + bytes / bottleneck), and
    the flows crossing one link cannot drain sooner than their bytes over its capacity, the last of
    them arriving no sooner than that plus the smallest of their latencies. The larger of these is
    the flow network's time exactly when no link carries two of the flows, or when all the flows are
    alike in bytes and latency.
    """
    route, cap = net.route, net.links.cap
    end = 0.0
    used = []
    alone = True  # no link carries two flows
    for members in groups if groups is not None else [(i,) for i in range(len(flows))]:
        src, dst, nbytes, via = flows[members[0]]
        if src == dst:
            continue  # takes no time (FlowNetwork.transfer)
        r = route(src, dst, via)
        used.append((r, nbytes, len(members)))
        alone = alone and len(members) == 1
        t = r.latency_s + nbytes / r.bandwidth_Bps
        if t > end:
            end = t
    if alone:
        links = [link for r, _, _ in used for link in r.links]
        if len(links) == len(set(links)):
            return end  # each flow runs at its bottleneck
    load: dict[int, float] = {}
    min_latency: dict[int, float] = {}
    count: dict[int, int] = {}
    for r, nbytes, weight in used:
        for link in set(r.links):
            load[link] = load.get(link, 0.0) + weight * nbytes
            min_latency[link] = min(min_latency.get(link, r.latency_s), r.latency_s)
            count[link] = count.get(link, 0) + weight
    for link, flows_on in count.items():
        if flows_on > 1:
            end = max(end, load[link] / cap[link] + min_latency[link])
    return end
