"""GraphML files through networkx, with the non-scalar attributes encoded as JSON strings.

GraphML attributes are scalars, so on write each GPU's ``device`` dict becomes the node attribute
``device_json``, the graph's ``sim`` dict the graph attribute ``sim_json`` and a torus's ``torus_dims``
list ``torus_dims_json`` (all ``json.dumps``); ``name`` and ``notes`` are plain graph attributes. On
read they are decoded back, so build -> save -> load is lossless. Any other dict or list attribute
cannot be written (TopologyError). A GraphML file from elsewhere loads if its nodes and edges carry
tpsim's attributes (see topologies.kinds); an undirected one is read as duplex links.

Example::

    >>> from topologies.builders import ring
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "ring.graphml")
    >>> write_graphml(ring(4), path); read_graphml(path).number_of_edges()
    8
"""

from __future__ import annotations

import json
from xml.etree.ElementTree import ParseError

import networkx as nx

from simulator.errors import InputError
from simulator.files import replacing
from simulator.limits import check_topology_gpus, loads_json
from topologies.errors import TopologyError
from topologies.validate import validate_graph

__all__ = ["write_graphml", "read_graphml"]


def _scalar(value, where: str):
    if isinstance(value, (dict, list, tuple)) or value is None:
        raise TopologyError(f"{where}: GraphML holds only scalars, got {type(value).__name__}")
    return value


def write_graphml(G: nx.DiGraph, path: str) -> None:
    """Write ``G`` to ``path`` as GraphML (device and sim as JSON strings)."""
    H = nx.DiGraph()
    H.graph["name"] = G.graph.get("name", "")
    H.graph["notes"] = G.graph.get("notes", "")
    H.graph["sim_json"] = json.dumps(G.graph.get("sim", {}))
    if "torus_dims" in G.graph:
        H.graph["torus_dims_json"] = json.dumps(G.graph["torus_dims"])
    for node, data in G.nodes(data=True):
        attrs = {}
        for key, value in data.items():
            if key == "device":
                attrs["device_json"] = json.dumps(value)
            else:
                attrs[key] = _scalar(value, f"node {node} {key}")
        H.add_node(node, **attrs)
    for a, b, data in G.edges(data=True):
        H.add_edge(a, b, **{key: _scalar(value, f"link {a}-{b} {key}") for key, value in data.items()})
    with replacing(path) as tmp:
        nx.write_graphml(H, tmp)


def _decode(text, where: str):
    try:
        return loads_json(text, where)
    except (TypeError, json.JSONDecodeError) as error:
        raise TopologyError(f"{where} is not valid JSON: {error}") from None
    except InputError as error:  # nested too deep (simulator.limits); a TopologyError gets the file's name
        raise TopologyError(str(error)) from None


def read_graphml(path) -> nx.DiGraph:
    """Read and fully validate a GraphML topology from a path or a binary file object."""
    try:
        H = nx.read_graphml(path, node_type=str)
    # LookupError: an XML declaration naming an encoding Python does not know (encoding='bogus')
    except (ParseError, nx.NetworkXError, KeyError, ValueError, LookupError) as error:
        message = str(error).splitlines()[0] if str(error) else repr(error)
        raise TopologyError(f"not a readable GraphML file: {message}") from None
    if H.is_multigraph():
        a, b = next((a, b) for a, b in H.edges() if H.number_of_edges(a, b) > 1)
        raise TopologyError(f"duplicate link {a}-{b}")
    check_topology_gpus(sum(1 for _, kind in H.nodes(data="kind") if kind == "gpu"), "its nodes", TopologyError)
    G = nx.DiGraph(H) if not H.is_directed() else H
    for key in ("node_default", "edge_default"):  # networkx's own bookkeeping, not topology data
        G.graph.pop(key, None)
    sim = G.graph.pop("sim_json", "{}")
    G.graph["sim"] = _decode(sim, "graph attribute sim_json")
    if "torus_dims_json" in G.graph:
        G.graph["torus_dims"] = _decode(G.graph.pop("torus_dims_json"), "graph attribute torus_dims_json")
    G.graph.setdefault("name", "")
    G.graph.setdefault("notes", "")
    for node, data in G.nodes(data=True):
        if "device_json" in data:
            data["device"] = _decode(data.pop("device_json"), f"node {node} device_json")
    validate_graph(G)
    return G
