"""Draw a topology to a PNG with matplotlib's Agg backend (no display needed).

Layout. Graphs with switches, NICs or hosts are drawn in layers, top to bottom: spines, leaves, NICs,
hosts, PCIe switches, GPUs, NVSwitches; each server gets its own column band, fabric switches spread
across the width. Graphs of GPUs only (meshes, rings, tori) use a circle (up to 16 GPUs) or a seeded
spring layout. One line per duplex pair, coloured by link kind, thicker for faster links. Labels (up to
120 nodes): GPUs by name; a server's other nodes by their part (``nic0``) when there is one server, by
full name (``n1/nic0``) when there are several, and each server column gets a caption (``server n1``).

Example::

    >>> from topologies.presets import build_preset
    >>> import tempfile, os
    >>> draw_topology(build_preset("dgx-a100:2"), os.path.join(tempfile.mkdtemp(), "t.png"))
"""

from __future__ import annotations

import math
import re
from collections import defaultdict

import networkx as nx

from simulator.files import save_figure

__all__ = ["draw_topology", "node_labels"]

_LAYER = {"spine": 6, "leaf": 5, "switch": 5, "nic": 4, "host": 3, "cpu": 3, "pcie_switch": 2, "gpu": 1, "nvswitch": 0}
_NODE_COLOUR = {"gpu": "#76b900", "nvswitch": "#1f77b4", "pcie_switch": "#9467bd", "host": "#7f7f7f",
                "cpu": "#7f7f7f", "nic": "#ff7f0e", "leaf": "#d62728", "spine": "#8c564b", "switch": "#e377c2"}
_EDGE_COLOUR = {"nvlink": "#2ca02c", "nvswitch": "#1f77b4", "pcie": "#9467bd", "nic": "#ff7f0e", "ib": "#d62728",
                "ethernet": "#bcbd22", "smp": "#17becf", "loopback": "#7f7f7f"}


def _natural(name: str) -> list:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", str(name))]


def _layered(G: nx.DiGraph) -> dict:
    servers = _servers(G)
    band = {s: i for i, s in enumerate(servers)}
    width = max(1, len(servers))
    rows: dict[tuple, list] = defaultdict(list)
    for node, data in G.nodes(data=True):
        server = data.get("server")
        rows[(_LAYER.get(data.get("kind"), 3), None if server is None else band[server])].append(node)
    # Only the layers in use, evenly spaced, so a PCIe-less cluster has no empty band.
    level = {layer: i for i, layer in enumerate(sorted({layer for layer, _ in rows}))}
    pos = {}
    for (layer, column), nodes in rows.items():
        nodes.sort(key=_natural)
        left, span = (0.0, float(width)) if column is None else (float(column) + 0.05, 0.9)
        for i, node in enumerate(nodes):
            pos[node] = (left + span * (i + 0.5) / len(nodes), float(level[layer]))
    return pos


def _servers(G: nx.DiGraph) -> list[int]:
    return sorted({s for _, s in G.nodes(data="server") if s is not None})


def node_labels(G: nx.DiGraph) -> dict:
    """Node -> label text: ``n1/nic0`` keeps its server prefix unless the graph has only one server."""
    several = len(_servers(G)) > 1
    return {node: str(node) if several else str(node).split("/")[-1] for node in G}


def draw_topology(G: nx.DiGraph, path: str, title: str | None = None) -> None:
    """Write a PNG of ``G`` to ``path``."""
    import matplotlib  # here, not at the top: only --png needs matplotlib, and it is slow to import

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    only_gpus = all(kind == "gpu" for _, kind in G.nodes(data="kind"))
    if only_gpus:
        pos = nx.circular_layout(G) if len(G) <= 16 else nx.spring_layout(G, seed=0)
        size = (8, 8)
    else:
        pos = _layered(G)
        size = (min(40, max(10, 5 * len(_servers(G)))), 7)
    fig, ax = plt.subplots(figsize=size, dpi=110)
    pairs: dict[frozenset, dict] = {}
    for a, b, data in G.edges(data=True):
        pairs.setdefault(frozenset((a, b)), data)
    fastest = max((d["bandwidth_GBps"] for d in pairs.values()), default=1.0)
    legend = {}
    for pair, data in pairs.items():
        a, b = tuple(pair) if len(pair) == 2 else (next(iter(pair)),) * 2
        colour = _EDGE_COLOUR.get(data["kind"], "black")
        weight = 0.5 + 2.5 * math.log1p(data["bandwidth_GBps"]) / math.log1p(fastest)
        (line,) = ax.plot([pos[a][0], pos[b][0]], [pos[a][1], pos[b][1]], color=colour, lw=weight, alpha=0.6, zorder=1)
        legend.setdefault(data["kind"], (line, data["bandwidth_GBps"]))
    small = len(G) <= 120
    labels = node_labels(G)
    # Kinds top layer first, so the node legend reads like the picture (and not in set order, which varies).
    for kind in sorted({k for _, k in G.nodes(data="kind")}, key=lambda k: (-_LAYER.get(k, 3), k)):
        nodes = [n for n, k in G.nodes(data="kind") if k == kind]
        ax.scatter([pos[n][0] for n in nodes], [pos[n][1] for n in nodes], s=120 if small else 20,
                   color=_NODE_COLOUR.get(kind, "black"), edgecolors="black", linewidths=0.5, zorder=2, label=kind)
        if small:
            for n in nodes:
                ax.annotate(labels[n], pos[n], xytext=(0, -11), textcoords="offset points",
                            fontsize=6, ha="center", va="top", zorder=3, parse_math=False)  # names from a file
    if not only_gpus:
        captions = len(_servers(G)) > 1
        if captions:
            # A caption under each server's column band (see _layered), so the columns read as machines.
            for column, server in enumerate(_servers(G)):
                ax.text(column + 0.5, -0.45, f"server n{server}", fontsize=8, ha="center", va="top", weight="bold")
        # Room above the top layer for the two legends, which would otherwise sit on its end nodes.
        top = max(y for _, y in pos.values())
        ax.set_ylim(-0.7 if captions else -0.3, top + 0.25 * (top + 1))
    handles = [line for line, _ in legend.values()]
    link_labels = [f"{kind} {rate:.4g} GB/s" for kind, (_, rate) in legend.items()]
    node_legend = ax.legend(loc="upper left", fontsize=7, title="nodes", title_fontsize=7, markerscale=0.5)
    ax.add_artist(node_legend)
    ax.legend(handles, link_labels, loc="upper right", fontsize=7, title="links (per direction)", title_fontsize=7)
    ax.set_title(title or G.graph.get("name", "topology"), parse_math=False)  # "bad$\\frac{$" is a name, not TeX
    ax.set_axis_off()
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)
