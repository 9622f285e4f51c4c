"""``--lower-p2p``: a broadcast or a reduce as a pipelined chain of send/recv nodes.

ASTRA-sim simulates all_reduce, all_gather, reduce_scatter and all_to_all, but only replays a
broadcast's recorded duration and refuses a reduce. SUMMA and Cannon are made of those two, so the
exporter can lower them to point-to-point messages, which ASTRA-sim does simulate.

The chain visits the group's members in group-local order starting at the root (broadcast:
root, root+1, ..., root-1) or ending at it (reduce: root+1, ..., root-1, root), and cuts the
payload of S bytes into ``chunks`` messages per hop, as NCCL's ring broadcast pipelines its chunks.
Member k of n receives chunk c from member k-1, then sends it to member k+1 (a reduce adds its
own block to the chunk in between, in the same kernel: no node of its own). So every rank but the
chain's first receives exactly S bytes and every rank but its last sends exactly S bytes: the
collective's n-1 hops of S bytes, NCCL's busbw factor 1 for broadcast and reduce.

Example, a broadcast of 8 bytes from group-local root 1 on group (4, 5, 6), 2 chunks: the chain is
5 -> 6 -> 4; rank 5 sends 4 + 4 bytes to 6, rank 6 receives them from 5 and forwards each to 4, and
rank 4 receives 4 + 4 bytes from 6. Rank 6's send of chunk c follows its receive of chunk c and its
send of chunk c-1.
"""

from __future__ import annotations

__all__ = ["chain_order", "chunk_sizes", "chain_nodes"]


def chain_order(kind: str, members: tuple[int, ...], root: int) -> list[int]:
    """The global ranks in the order the data flows: from the root (broadcast) or to it (reduce)."""
    n = len(members)
    first = root if kind == "broadcast" else root + 1
    return [members[(first + i) % n] for i in range(n)]


def chunk_sizes(nbytes: int, chunks: int) -> list[int]:
    """``nbytes`` cut into ``chunks`` near-equal parts (the first ones one byte larger), none empty."""
    parts = max(1, min(chunks, nbytes))
    base, extra = divmod(nbytes, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def chain_nodes(builder, step: int, op, n: int, nbytes: int, order: list[int], reads: list[int]) -> list[int]:
    """Append this rank's send/recv nodes of the ``n``-th collective ``op`` on its group to ``builder``
    (``simulator.export.nodes._RankBuilder``); return the nodes that end it on this rank."""
    from simulator.export.nodes import RECV, SEND  # the builder's module imports this one

    rank = builder.rank
    members = builder.s.groups[op.group]
    flow = chain_order(op.kind, members, op.root)
    where = flow.index(rank)
    prev = flow[where - 1] if where > 0 else None
    succ = flow[where + 1] if where + 1 < len(flow) else None
    sizes = chunk_sizes(nbytes, builder.chunks)
    last_recv = last_send = None
    for c, size in enumerate(sizes):
        label = f"{op.short()} chunk {c + 1}/{len(sizes)}"
        received = None
        if prev is not None:
            tag = builder.tags.tag(prev, rank, ("chain", op.group, n, c))
            inner = [last_recv] if last_recv is not None else []
            received = builder.add(f"{label} recv<{prev}", RECV, step, inner, order, reads,
                                   {"comm_src": prev, "comm_dst": rank, "comm_size": size, "comm_tag": tag})
        if succ is not None:
            tag = builder.tags.tag(rank, succ, ("chain", op.group, n, c))
            inner = [node for node in (received, last_send) if node is not None]
            last_send = builder.add(f"{label} send>{succ}", SEND, step, inner, order, reads,
                                    {"comm_src": rank, "comm_dst": succ, "comm_size": size, "comm_tag": tag})
        last_recv = received if received is not None else last_recv
    return [node for node in (last_recv, last_send) if node is not None]
