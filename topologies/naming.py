"""Names of nodes and links as tpsim prints them: every endpoint in the same scope.

The presets name a cluster's devices in two scopes: GPUs are numbered across the whole cluster
(``gpu10``), because ranks, placements and schedules name GPUs by that index; a server's other
devices are named inside their server (``n1/nic4``, ``n1/nvswitch``); the cluster's switches belong
to no server (``leaf4``, ``spine0``). Printed raw, a link reads ``gpu10->n1/nic4``, which mixes the
two. ``scoped_name`` puts a server's devices under their server, GPUs included, so a link reads
``n1/gpu10->n1/nic4`` and ``n1/nic4->leaf4``; the GPU keeps its cluster-wide index. Node ids in
files and JSON ``src``/``dst`` fields stay as they are; only the printed label changes.

Example::

    >>> G = load_topology("dgx-a100:2")                       # doctest: +SKIP
    >>> link_name(G, "gpu10", "n1/nic2")                      # doctest: +SKIP
    'n1/gpu10->n1/nic2'
"""

from __future__ import annotations

import networkx as nx

__all__ = ["scoped_name", "link_name"]


def scoped_name(G: nx.DiGraph, node) -> str:
    """``node`` as printed: under its server (``n<server>/``) when it belongs to one and is not already."""
    name = str(node)
    server = G.nodes[node].get("server") if node in G else None
    if server is None or "/" in name:
        return name
    return f"n{server}/{name}"


def link_name(G: nx.DiGraph, u, v) -> str:
    """The directed link ``u -> v`` as printed: ``"n0/gpu0->n0/nic0"``."""
    return f"{scoped_name(G, u)}->{scoped_name(G, v)}"
