"""What ``tpsim topology show`` reports: counts, link kinds, per-GPU injection and bisection bandwidth.

``summarize(G)`` returns a JSON-ready dict; ``format_summary`` renders it as text. ``nodes`` counts
servers (machines, as in "16 nodes, 128 GPUs"); graph vertices are under ``graph``.

Per-GPU injection bandwidth counts only capacity that can reach another GPU, with one hop of look-ahead.
Each outgoing edge g -> h of GPU g contributes min(its rate, onward), where onward is unlimited when h
is another GPU, and otherwise the summed rate of h's outgoing edges h -> x (x not g) from which some
GPU other than g is reachable without passing g or h. So a lone server's NICs, which lead only back
to their GPU, add nothing, and in a cluster a NIC adds its network-side rate (24 GB/s HDR), not its
PCIe attachment (25). A bottleneck further on (an oversubscribed spine) is not seen here; the
bisection figure covers that. ``bisection_GBps`` is the least max-flow over the candidate balanced
cuts of ``topologies.bisection``; ``bisection_cut`` says which cut, ``bisection_cuts`` lists them all.

Example::

    >>> from topologies.presets import build_preset
    >>> s = summarize(build_preset("dgx-a100"))
    >>> s["gpus"], s["nodes"], s["bisection_GBps"], s["injection_GBps"]
    (8, 1, 920.0, 230.0)
"""

from __future__ import annotations

import textwrap
from collections import Counter, defaultdict

import networkx as nx

from topologies.bisection import bisection as least_cut
from topologies.validate import gpu_nodes

__all__ = ["summarize", "format_summary", "injection_by_kind_GBps"]


def _span(values: list[float]) -> float | list[float]:
    low, high = min(values), max(values)
    return low if low == high else [low, high]


def _reaches_another_gpu(G: nx.DiGraph, start: str, avoid: set[str]) -> bool:
    """Whether a GPU not in ``avoid`` is reachable from ``start`` (itself included) without entering ``avoid``."""
    seen, frontier = {start}, [start]
    while frontier:
        node = frontier.pop()
        if G.nodes[node].get("kind") == "gpu":
            return True
        for nxt in G.successors(node):
            if nxt not in seen and nxt not in avoid:
                seen.add(nxt)
                frontier.append(nxt)
    return False


def injection_by_kind_GBps(G: nx.DiGraph, gpu: str) -> dict[str, float]:
    """GPU ``gpu``'s injection bandwidth by kind of its outgoing edge (see the module docstring); zero terms dropped.

    Example: a lone DGX A100 GPU gives ``{"nvswitch": 230.0}``; in ``dgx-a100:2`` also ``"nic": 24.0``.
    """
    by_kind: dict[str, float] = {}
    for _, head, data in G.out_edges(gpu, data=True):
        if G.nodes[head].get("kind") == "gpu":
            useful = data["bandwidth_GBps"]
        else:
            onward = sum(bw for _, x, bw in G.out_edges(head, data="bandwidth_GBps")
                         if x != gpu and _reaches_another_gpu(G, x, {gpu, head}))
            useful = min(data["bandwidth_GBps"], onward)
        if useful > 0:
            by_kind[data["kind"]] = by_kind.get(data["kind"], 0.0) + useful
    return by_kind


def summarize(G: nx.DiGraph, bisection: bool = True) -> dict:
    """The figures ``tpsim topology show`` prints, as a JSON-ready dict."""
    gpus = gpu_nodes(G)
    links: dict[str, dict] = {}
    pairs: dict[str, set] = defaultdict(set)
    rates: dict[str, list] = defaultdict(list)
    peaks: dict[str, list] = defaultdict(list)
    for a, b, data in G.edges(data=True):
        kind = data["kind"]
        pairs[kind].add(frozenset((a, b)))
        rates[kind].append(data["bandwidth_GBps"])
        if data.get("peak_bandwidth_GBps") is not None:
            peaks[kind].append(data["peak_bandwidth_GBps"])
    for kind in sorted(pairs, key=lambda k: -max(rates[k])):
        links[kind] = {
            "links": len(pairs[kind]),
            "directed_edges": len(rates[kind]),
            "bandwidth_GBps": _span(rates[kind]),
            "peak_bandwidth_GBps": _span(peaks[kind]) if peaks[kind] else None,
        }
    parts = {gpu: injection_by_kind_GBps(G, gpu) for gpu in gpus}
    injection = {gpu: sum(parts[gpu].values()) for gpu in gpus}
    slowest = min(gpus, key=lambda gpu: (injection[gpu], G.nodes[gpu]["gpu_index"]))
    best = least_cut(G) if bisection else None
    return {
        "name": G.graph.get("name", ""),
        "gpus": len(gpus),
        "nodes": len({G.nodes[gpu]["server"] for gpu in gpus}),
        "devices": dict(Counter(G.nodes[gpu]["device"]["name"] for gpu in gpus)),
        "graph": {"vertices": G.number_of_nodes(), "directed_edges": G.number_of_edges(),
                  "kinds": dict(Counter(kind for _, kind in G.nodes(data="kind")))},
        "links": links,
        "injection_GBps": min(injection.values()),
        "injection_max_GBps": max(injection.values()),
        "injection_by_kind_GBps": parts[slowest],
        "bisection_GBps": None if best is None else best.GBps,
        "bisection_cut": None if best is None else best.cut,
        "bisection_cuts": [] if best is None else [{"cut": cut, "GBps": value} for cut, value in best.candidates],
        "sim": G.graph.get("sim", {}),
        "notes": G.graph.get("notes", ""),
    }


def _rate(value) -> str:
    if value is None:
        return "none"
    return f"{value[0]:.4g}-{value[1]:.4g}" if isinstance(value, list) else f"{value:.4g}"


def format_summary(summary: dict) -> str:
    """Text for the terminal: one fact per line, rates in GB/s per direction."""
    devices = ", ".join(f"{count}x {name}" for name, count in summary["devices"].items())
    kinds = ", ".join(f"{kind} {count}" for kind, count in summary["graph"]["kinds"].items())
    lines = [
        f"{summary['name']}: {summary['gpus']} GPUs in {summary['nodes']} node{'s' * (summary['nodes'] != 1)}"
        f" ({devices})",
        f"  graph          {summary['graph']['vertices']} vertices ({kinds}), {summary['graph']['directed_edges']}"
        " directed edges",
        "  links          kind: duplex links x GB/s per direction, model rate (published peak)",
    ]
    for kind, info in summary["links"].items():
        rate, peak = _rate(info["bandwidth_GBps"]), _rate(info["peak_bandwidth_GBps"])
        lines.append(f"    {kind:<12} {info['links']} x {rate} ({peak})")
    parts = " + ".join(f"{kind} {rate:.4g}" for kind, rate in summary["injection_by_kind_GBps"].items()) or "none"
    spread = "" if summary["injection_max_GBps"] == summary["injection_GBps"] else (
        f", up to {summary['injection_max_GBps']:.4g}")
    lines.append(f"  injection/GPU  {summary['injection_GBps']:.4g} GB/s ({parts}){spread}")
    if summary["bisection_GBps"] is not None:
        tried = len(summary["bisection_cuts"])
        least = "" if tried == 1 else f": least of {tried} balanced cuts"
        cut = f"max-flow {summary['bisection_cut']}{least}"
        lines.append(f"  bisection      {summary['bisection_GBps']:.6g} GB/s ({cut})")
    sim = ", ".join(f"{key}={value}" for key, value in summary["sim"].items()) or "(empty)"
    lines.append(f"  sim            {sim}")
    if summary["notes"]:
        wrapped = textwrap.wrap(summary["notes"], width=100)
        lines.append(f"  notes          {wrapped[0]}")
        lines.extend(f"                 {line}" for line in wrapped[1:])
    return "\n".join(lines)
