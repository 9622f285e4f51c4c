"""Check a topology graph fully; the first problem found becomes one ``TopologyError`` line.

Checked: graph attributes (``name``, ``notes`` strings; ``sim`` a JSON-like dict of known keys,
``topologies.keys``; optional ``torus_dims``
a list of positive integers whose product is the GPU count), node kinds, GPU
numbering (``gpu_index`` 0..n-1, each GPU named ``gpu<index>``, an integer ``server``), device specs,
edge attributes (``bandwidth_GBps`` > 0, ``latency_us`` >= 0, ``kind`` known, optional
``peak_bandwidth_GBps`` > 0 and ``n_links`` >= 1), self loops, and that every GPU can reach every other.

Example::

    >>> from topologies.builders import ring
    >>> G = ring(4); G.edges["gpu0", "gpu1"]["bandwidth_GBps"] = -1
    >>> validate_graph(G)
    Traceback (most recent call last):
    topologies.errors.TopologyError: link gpu0-gpu1 bandwidth_GBps must be > 0, got -1
"""

from __future__ import annotations

import math

import networkx as nx

from topologies.errors import TopologyError
from topologies.kinds import DTYPES, EDGE_KINDS, NODE_KINDS, gpu_name
from topologies.physical_bounds import check_physical_bounds
from topologies.keys import check_sim_keys

__all__ = ["validate_graph", "check_device", "check_sim", "gpu_nodes"]


def _show(value) -> str:
    """A value for an error message: numbers as 1.5 or -1, anything else as its repr."""
    return f"{value:g}" if _is_number(value) else repr(value)


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def gpu_nodes(G: nx.DiGraph) -> list[str]:
    """GPU node names ordered by ``gpu_index``: ``gpu_nodes(ring(3)) == ["gpu0", "gpu1", "gpu2"]``."""
    gpus = [(data.get("gpu_index"), node) for node, data in G.nodes(data=True) if data.get("kind") == "gpu"]
    return [node for _, node in sorted(gpus, key=lambda item: (item[0] if isinstance(item[0], int) else -1, item[1]))]


OPTIONAL_DEVICE_KEYS = ("gemm_tflops", "gemm_shape", "mem_bandwidth_achievable_GBps", "sms")
"""The compute side a device may add to its peaks (``topologies.compute_rates``)."""


def _check_achievable(device: dict, where: str) -> None:
    name = device["name"]
    rates = device.get("gemm_tflops", {})
    if not isinstance(rates, dict) or not all(_is_number(r) and r > 0 for r in rates.values()):
        raise TopologyError(f"{where}: device {name} gemm_tflops must map dtypes to TFLOP/s > 0, got {rates!r}")
    shape = device.get("gemm_shape", [1, 1, 1])
    if not (isinstance(shape, (list, tuple)) and len(shape) == 3
            and all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in shape)):
        raise TopologyError(f"{where}: device {name} gemm_shape must be [M, N, K] of positive integers, got {shape!r}")
    bandwidth = device.get("mem_bandwidth_achievable_GBps", 1.0)
    if not (_is_number(bandwidth) and bandwidth > 0):
        raise TopologyError(f"{where}: device {name} mem_bandwidth_achievable_GBps must be > 0, got {bandwidth!r}")
    sms = device.get("sms", 1)
    if not (isinstance(sms, int) and not isinstance(sms, bool) and sms > 0):
        raise TopologyError(f"{where}: device {name} sms must be an integer > 0, got {sms!r}")


def check_device(device, where: str) -> None:
    """Raise TopologyError unless ``device`` is a valid device dict (name, peak_tflops, memory figures)."""
    if not isinstance(device, dict):
        raise TopologyError(f"{where}: device must be a mapping, got {type(device).__name__}")
    if not isinstance(device.get("name"), str) or not device["name"]:
        raise TopologyError(f"{where}: device needs a non-empty name")
    rates = device.get("peak_tflops")
    if not isinstance(rates, dict):
        raise TopologyError(f"{where}: device {device['name']} needs peak_tflops, a mapping dtype -> TFLOP/s")
    missing = [dtype for dtype in DTYPES if dtype not in rates]
    if missing:
        raise TopologyError(f"{where}: device {device['name']} peak_tflops lacks {', '.join(missing)}")
    for dtype, rate in rates.items():
        if not (_is_number(rate) and rate > 0):
            raise TopologyError(f"{where}: device {device['name']} peak_tflops.{dtype} must be > 0, got {rate!r}")
    for key in ("mem_bandwidth_GBps", "memory_GB"):
        if not (_is_number(device.get(key)) and device[key] > 0):
            raise TopologyError(f"{where}: device {device['name']} {key} must be > 0, got {device.get(key)!r}")
    _check_achievable(device, where)
    unknown = sorted(set(device) - {"name", "peak_tflops", "mem_bandwidth_GBps", "memory_GB", *OPTIONAL_DEVICE_KEYS})
    if unknown:
        raise TopologyError(f"{where}: device {device['name']} has unknown key {unknown[0]!r}")


def check_sim(sim, where: str = "sim") -> None:
    """Raise TopologyError unless ``sim`` is nested dicts/lists of numbers, strings, booleans and None."""
    if isinstance(sim, dict):
        for key, value in sim.items():
            if not isinstance(key, str):
                raise TopologyError(f"{where}: keys must be strings, got {key!r}")
            check_sim(value, f"{where}.{key}")
    elif isinstance(sim, list):
        for i, value in enumerate(sim):
            check_sim(value, f"{where}[{i}]")
    elif not (sim is None or isinstance(sim, (str, bool, int)) or (isinstance(sim, float) and math.isfinite(sim))):
        raise TopologyError(f"{where}: must hold numbers, strings, lists or mappings, got {sim!r}")


def _check_graph_attrs(G: nx.DiGraph) -> None:
    for key in ("name", "notes"):
        if not isinstance(G.graph.get(key, ""), str):
            raise TopologyError(f"graph {key} must be a string, got {G.graph[key]!r}")
    if not isinstance(G.graph.get("sim", {}), dict):
        raise TopologyError(f"graph sim must be a mapping, got {G.graph['sim']!r}")
    check_sim(G.graph.get("sim", {}))
    check_sim_keys(G.graph.get("sim", {}))


def _check_torus_dims(G: nx.DiGraph, n_gpus: int) -> None:
    if "torus_dims" not in G.graph:
        return
    dims = G.graph["torus_dims"]
    if not (isinstance(dims, list) and dims
            and all(isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in dims)):
        raise TopologyError(f"graph torus_dims must be a list of positive integers, got {dims!r}")
    if math.prod(dims) != n_gpus:
        raise TopologyError(f"graph torus_dims {dims} hold {math.prod(dims)} GPUs, the topology has {n_gpus}")


def _check_nodes(G: nx.DiGraph) -> list[str]:
    indices = {}
    for node, data in G.nodes(data=True):
        kind = data.get("kind")
        if not isinstance(kind, str) or kind not in NODE_KINDS:
            raise TopologyError(f"node {node} has unknown kind {kind!r} (known: {', '.join(NODE_KINDS)})")
        server = data.get("server")
        if server is not None and not (isinstance(server, int) and not isinstance(server, bool) and server >= 0):
            raise TopologyError(f"node {node} server must be an integer >= 0, got {server!r}")
        if kind != "gpu":
            if "device" in data:
                raise TopologyError(f"node {node} is a {kind}; only gpu nodes carry a device")
            continue
        index = data.get("gpu_index")
        if not (isinstance(index, int) and not isinstance(index, bool) and index >= 0):
            raise TopologyError(f"GPU {node} gpu_index must be an integer >= 0, got {index!r}")
        if index in indices:
            raise TopologyError(f"GPUs {indices[index]} and {node} both have gpu_index {index}")
        indices[index] = node
        if node != gpu_name(index):
            raise TopologyError(f"GPU {node} has gpu_index {index}, so it must be named {gpu_name(index)}")
        if server is None:
            raise TopologyError(f"GPU {node} needs a server index")
        if "device" not in data:
            raise TopologyError(f"GPU {node} has no device")
        check_device(data["device"], f"GPU {node}")
    if not indices:
        raise TopologyError("topology has no GPU nodes")
    gap = next((i for i in range(len(indices)) if i not in indices), None)
    if gap is not None:
        raise TopologyError(f"gpu_index must run 0..{len(indices) - 1}; {gpu_name(gap)} is missing")
    return [indices[i] for i in range(len(indices))]


def _check_edges(G: nx.DiGraph) -> None:
    for a, b, data in G.edges(data=True):
        link = f"link {a}-{b}"
        if a == b:
            raise TopologyError(f"{link} connects a node to itself")
        bandwidth = data.get("bandwidth_GBps")
        if not (_is_number(bandwidth) and bandwidth > 0):
            raise TopologyError(f"{link} bandwidth_GBps must be > 0, got {_show(bandwidth)}")
        latency = data.get("latency_us")
        if not (_is_number(latency) and latency >= 0):
            raise TopologyError(f"{link} latency_us must be >= 0, got {_show(latency)}")
        if not isinstance(data.get("kind"), str) or data["kind"] not in EDGE_KINDS:
            raise TopologyError(f"{link} has unknown kind {data.get('kind')!r} (known: {', '.join(EDGE_KINDS)})")
        peak = data.get("peak_bandwidth_GBps")
        if peak is not None and not (_is_number(peak) and peak > 0):
            raise TopologyError(f"{link} peak_bandwidth_GBps must be > 0, got {_show(peak)}")
        n_links = data.get("n_links", 1)
        if not (isinstance(n_links, int) and not isinstance(n_links, bool) and n_links >= 1):
            raise TopologyError(f"{link} n_links must be an integer >= 1, got {n_links!r}")


def _check_reachable(G: nx.DiGraph, gpus: list[str]) -> None:
    """Name the first GPU pair (by index) where one cannot reach the other."""
    component = {}
    for number, members in enumerate(nx.strongly_connected_components(G)):
        for node in members:
            component[node] = number
    first = gpus[0]
    stray = next((gpu for gpu in gpus if component[gpu] != component[first]), None)
    if stray is None:
        return
    if stray not in nx.descendants(G, first):
        raise TopologyError(f"{first} cannot reach {stray}")
    raise TopologyError(f"{stray} cannot reach {first}")


def validate_graph(G: nx.DiGraph) -> list[str]:
    """Check everything listed in the module docstring; return the GPU names by index."""
    if not isinstance(G, nx.DiGraph) or G.is_multigraph():
        raise TopologyError(f"a topology must be a networkx DiGraph, got {type(G).__name__}")
    _check_graph_attrs(G)
    gpus = _check_nodes(G)
    _check_torus_dims(G, len(gpus))
    _check_edges(G)
    check_physical_bounds(G)  # no link over its published peak, no latency over a second
    _check_reachable(G, gpus)
    return gpus
