"""What ``tpsim topology show`` reports: counts, link kinds, per-GPU injection and bisection bandwidth.

``summarize(G)`` returns a JSON-ready dict; ``format_summary`` renders it as text. ``nodes`` counts
servers (machines, as in "16 nodes, 128 GPUs"); graph vertices are under ``graph``. Per-GPU injection
bandwidth is the sum of ``bandwidth_GBps`` over a GPU's outgoing edges (NVLink plus its NIC, say).
``bisection_GBps`` is the least max-flow over the candidate balanced cuts of ``topologies.bisection``;
``bisection_cut`` says which cut, ``bisection_cuts`` lists them all.

Example::

    >>> from topologies.presets import build_preset
    >>> s = summarize(build_preset("dgx-a100"))
    >>> s["gpus"], s["nodes"], s["bisection_GBps"], s["injection_GBps"]
    (8, 1, 920.0, 255.0)
"""

from __future__ import annotations

import textwrap
from collections import Counter, defaultdict

import networkx as nx

from topologies.bisection import bisection as least_cut
from topologies.validate import gpu_nodes

__all__ = ["summarize", "format_summary"]


def _span(values: list[float]) -> float | list[float]:
    low, high = min(values), max(values)
    return low if low == high else [low, high]


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
    injection = {gpu: sum(bw for _, _, bw in G.out_edges(gpu, data="bandwidth_GBps")) for gpu in gpus}
    slowest = min(gpus, key=lambda gpu: (injection[gpu], G.nodes[gpu]["gpu_index"]))
    by_kind: Counter = Counter()
    for _, _, data in G.out_edges(slowest, data=True):
        by_kind[data["kind"]] += data["bandwidth_GBps"]
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
        "injection_by_kind_GBps": dict(by_kind),
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
    parts = " + ".join(f"{kind} {rate:.4g}" for kind, rate in summary["injection_by_kind_GBps"].items())
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
