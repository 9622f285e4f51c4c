"""Route signatures: when two groups of GPUs make the same choice of algorithm and protocol.

``run.plan_collective`` times every NCCL-enabled candidate of a collective with nothing else on the
network and keeps the fastest. Those times read a group's members only through the routes between
them: which links each route crosses, in which order, which links two routes share, each link's
capacity and latency, and whether it is a network link. ``route_signature`` writes exactly that
down, with the links renumbered by first appearance. Two groups with equal signatures (and equal
sizes, roots and server patterns, which the caller keys on too) give every candidate the same time,
bit for bit, since each number the choice reads is computed from the signature's numbers in the same
order; so the choice made for one holds for the other. On a symmetric topology the rows of a SUMMA
grid, or its columns, are translations of each other servers apart, and a grid of 4,096 GPUs then
times its candidates for a handful of groups instead of every one. Groups whose routes differ in
anything the choice reads (an ECMP hash that puts two of one group's flows on one spine link, a
slower link) get different signatures and are timed on their own.

Example::

    >>> import simpy
    >>> from simulator.network.flow_network import FlowNetwork
    >>> from topologies.builders import ring
    >>> net = FlowNetwork(simpy.Environment(), ring(6))
    >>> pairs = ((0, 1, None), (1, 2, None))
    >>> route_signature(net, ("gpu0", "gpu1", "gpu2"), pairs) == route_signature(net, ("gpu2", "gpu3", "gpu4"), pairs)
    True
"""

from __future__ import annotations

from topologies.kinds import NETWORK_EDGE_KINDS

__all__ = ["route_signature", "networked_links"]


def networked_links(net) -> list[bool]:
    """Per link number of ``net``, whether the link is a network edge (InfiniBand, Ethernet); cached."""
    flags = net.cache.get("networked links")
    if flags is None:
        kinds = net.graph.edges
        flags = net.cache["networked links"] = [kinds[edge].get("kind") in NETWORK_EDGE_KINDS
                                                for edge in net.links.edges]
    return flags


def route_signature(net, members, pairs) -> tuple:
    """The routes of ``pairs`` ((src, dst, via) as indices into ``members``) up to link names.

    Returns (per pair, its links as first-appearance numbers; per numbered link, its capacity,
    latency and whether it is a network link): equal for two groups exactly when their routes are
    the same up to a renaming of links that keeps capacities, latencies and kinds.
    """
    route, cap, lat = net.route, net.links.cap, net.links.lat
    networked = networked_links(net)
    number: dict[int, int] = {}
    links: list[tuple[float, float, bool]] = []
    routes = []
    for a, b, v in pairs:
        ids = []
        for link in route(members[a], members[b], None if v is None else members[v]).links:
            k = number.get(link)
            if k is None:
                k = number[link] = len(links)
                links.append((cap[link], lat[link], networked[link]))
            ids.append(k)
        routes.append(tuple(ids))
    return tuple(routes), tuple(links)
