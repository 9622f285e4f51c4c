"""Groups of identical flows: finding them, and replaying per member what depends on flow order.

A *group* is w flows of one batch (``FlowNetwork.transfer_all``, e.g. a phase of a collective) alike in
source, destination, bytes and ``via``: they start at one instant on one route, so max-min fairness
gives them one rate and they drain together. The network keeps one record per group, of weight w, and
``simulator.network.fairness`` fills it exactly as it would fill the w flows one by one. Everything else that
depended on individual flows is replayed here in the order the flows alone would have had (their
flow numbers, ``members``): floating-point sums are order-sensitive, and the results must not change
by one bit.

NCCL-like rings across servers make most groups: in k rails a ring crosses each NVSwitch hop k-1 times.
"""

from __future__ import annotations

__all__ = ["same_flows", "add_drained_bytes", "by_member"]


def same_flows(flows) -> tuple[tuple[int, ...], ...]:
    """Indices of ``flows`` ((src, dst, nbytes, via), ...) grouped by equal tuples, in order of first
    appearance; a flow that moves no bytes over a link (src == dst, nbytes <= 0) stays alone.

    >>> same_flows([("a", "b", 1.0, None), ("b", "c", 1.0, None), ("a", "b", 1.0, None)])
    ((0, 2), (1,))
    """
    first: dict[tuple, int] = {}
    groups: list[list[int]] = []
    for i, flow in enumerate(flows):
        src, dst, nbytes, _ = flow
        if src == dst or not nbytes > 0:
            groups.append([i])
            continue
        g = first.get(flow)
        if g is None:
            first[flow] = len(groups)
            groups.append([i])
        else:
            groups[g].append(i)
    return tuple(tuple(g) for g in groups)


def add_drained_bytes(drained: list, bytes_done: list[float], only=None) -> None:
    """Add the bytes of ``drained`` records (``nbytes`` per member) to the link counters ``bytes_done``
    as the flows alone would have: member by member, in flow order; on the links in ``only`` if given.

    Where a link sees one byte count only, the order cannot matter (the same term added n times, one
    addition after another); only links that see several byte counts are replayed member by member.
    """
    terms: dict[int, list] = {}
    mixed: list[int] = []
    for flow in drained:
        nbytes, w = flow.nbytes, flow.weight
        for link in flow.links:
            if only is not None and link not in only:
                continue
            term = terms.get(link)
            if term is None:
                terms[link] = [nbytes, w]
            elif term[1] < 0:
                continue
            elif term[0] == nbytes:
                term[1] += w
            else:
                term[1] = -1
                mixed.append(link)
    for link, (nbytes, n) in terms.items():
        if n > 0:
            total = bytes_done[link]
            for _ in range(n):
                total += nbytes
            bytes_done[link] = total
    if mixed:
        replay = dict.fromkeys(mixed)
        steps = sorted((fid, link, flow.nbytes) for flow in drained for link in flow.links if link in replay
                       for fid in flow.members)
        for _, link, nbytes in steps:
            bytes_done[link] += nbytes


def by_member(records) -> list:
    """``records`` (active flows, in flow order of their first members) once per member, in flow order:
    sums over them then add the terms the flows alone would have added, in the same order."""
    records = list(records)
    if all(f.weight == 1 for f in records):
        return records
    return [f for _, f in sorted(((fid, f) for f in records for fid in f.members), key=_first)]


def _first(pair: tuple) -> int:
    return pair[0]
