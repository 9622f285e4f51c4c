"""The YAML/JSON topology file: a plain document that converts to and from a graph without loss.

Layout (YAML shown; JSON has the same keys)::

    format: tpsim-topology-1          # optional
    name: two-gpus
    notes: where the figures come from
    sim: {collective_base_latency_us: 8.0}        # free-form simulator parameters
    torus_dims: [2, 1]                             # optional: GPU index row-major over a torus of this shape
    devices:                                       # device specs by name
      A100-SXM4-40GB: {peak_tflops: {float64: 19.5, float32: 19.5, bfloat16: 312.0, float16: 312.0},
                       mem_bandwidth_GBps: 1555.0, memory_GB: 40.0}
    nodes:                                         # name, kind; gpu_index?, server?, device?, rail?, group?
      - {name: gpu0, kind: gpu, gpu_index: 0, server: 0, device: A100-SXM4-40GB}
      - {name: gpu1, kind: gpu, gpu_index: 1, server: 0, device: A100-SXM4-40GB}
    links:                                         # a, b, bandwidth_GBps, latency_us, kind; duplex (true)?,
      - {a: gpu0, b: gpu1, bandwidth_GBps: 76.7, latency_us: 0.3, kind: nvlink}   # peak_bandwidth_GBps?, n_links?

A duplex link (the default) is two directed edges with the same figures; ``duplex: false`` is one edge
a -> b. A GPU without ``gpu_index`` gets the count of GPUs listed before it; without ``server``, 0. Any
other node or edge attribute travels in an ``extra`` mapping. A device body may carry its own ``name``
(when two different specs share a name, the file keys them ``NAME#2``). Positions in messages count
from 1 ("link 3" is the third entry). Files are read with ``yaml.safe_load`` / ``json.loads`` only.

Example::

    >>> from topologies.builders import nvlink_mesh
    >>> doc = graph_to_document(nvlink_mesh(2, 1))
    >>> len(doc["nodes"]), len(doc["links"]), doc["links"][0]["a"], doc["links"][0]["b"]
    (2, 1, 'gpu0', 'gpu1')
"""

from __future__ import annotations

import json

import networkx as nx
import yaml

from simulator.errors import InputError
from simulator.limits import MAX_JSON_DEPTH, check_json_depth, check_topology_gpus, loads_json
from topologies.errors import TopologyError
from topologies.yaml_guard import refuse_anchors
from topologies.validate import validate_graph

__all__ = ["graph_to_document", "document_to_graph", "read_document", "write_document", "FORMAT"]

FORMAT = "tpsim-topology-1"
_TOP_KEYS = ("format", "name", "notes", "sim", "torus_dims", "devices", "nodes", "links")
_NODE_KEYS = ("name", "kind", "gpu_index", "server", "device", "rail", "group", "extra")
_LINK_KEYS = ("a", "b", "bandwidth_GBps", "latency_us", "kind", "duplex", "peak_bandwidth_GBps", "n_links", "extra")
_EDGE_ATTRS = ("bandwidth_GBps", "latency_us", "kind", "peak_bandwidth_GBps", "n_links")

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the C version of the safe loader, when built
_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def graph_to_document(G: nx.DiGraph) -> dict:
    """The file document of ``G``: devices deduplicated, each duplex pair of edges written as one link."""
    devices: dict[str, dict] = {}
    nodes = []
    for name, data in G.nodes(data=True):
        entry = {"name": name}
        extra = {}
        for key, value in data.items():
            if key == "device":
                entry["device"] = _device_key(devices, value)
            elif key in _NODE_KEYS and key not in ("name", "extra"):
                entry[key] = value
            else:
                extra[key] = value
        if extra:
            entry["extra"] = extra
        nodes.append(entry)
    links, written = [], set()
    for a, b, data in G.edges(data=True):
        if (a, b) in written:
            continue
        entry = {"a": a, "b": b}
        entry.update({key: data[key] for key in _EDGE_ATTRS if key in data})
        back = G.succ[b].get(a)
        if back is not None and back == data and (b, a) not in written:
            written.add((b, a))
        else:
            entry["duplex"] = False
        extra = {key: value for key, value in data.items() if key not in _EDGE_ATTRS}
        if extra:
            entry["extra"] = extra
        written.add((a, b))
        links.append(entry)
    graph = G.graph
    doc = {"format": FORMAT, "name": graph.get("name", ""), "notes": graph.get("notes", ""),
           "sim": graph.get("sim", {})}
    if "torus_dims" in graph:
        doc["torus_dims"] = graph["torus_dims"]
    return {**doc, "devices": devices, "nodes": nodes, "links": links}


def _device_key(devices: dict, device: dict) -> str:
    """The ``devices`` key for ``device``, adding it (as NAME, NAME#2, ...) the first time it is seen."""
    base = device.get("name", "device") if isinstance(device, dict) else "device"
    key, number = base, 1
    while key in devices:
        if _device_body(devices[key], key) == device:
            return key
        number += 1
        key = f"{base}#{number}"
    body = {k: v for k, v in device.items() if k != "name" or v != key}
    devices[key] = body
    return key


def _device_body(body: dict, key: str) -> dict:
    """The device dict a node gets from a ``devices`` entry: the key is the name unless the body has one."""
    return {"name": key, **body} if "name" not in body else dict(body)


def _mapping(value, where: str) -> dict:
    if not isinstance(value, dict):
        raise TopologyError(f"{where} must be a mapping, got {type(value).__name__}")
    return value


def _extra(entry: dict, where: str) -> dict:
    extra = _mapping(entry.get("extra", {}), where)
    bad = [key for key in extra if not isinstance(key, str)]
    if bad:
        raise TopologyError(f"{where}: keys must be strings, got {bad[0]!r}")
    return extra


def _entries(doc: dict, key: str, known: tuple[str, ...], label: str) -> list[dict]:
    value = doc.get(key, [])
    if not isinstance(value, list):
        raise TopologyError(f"{key} must be a list, got {type(value).__name__}")
    for position, entry in enumerate(value, start=1):
        _mapping(entry, f"{label} {position}")
        unknown = [k for k in entry if k not in known]
        if unknown:
            raise TopologyError(f"{label} {position} has unknown key {unknown[0]!r} (known: {', '.join(known)})")
    return value


def document_to_graph(doc) -> nx.DiGraph:
    """Build and fully validate the graph a document describes; TopologyError names the first problem."""
    doc = _mapping(doc, "a topology file")
    unknown = [key for key in doc if key not in _TOP_KEYS]
    if unknown:
        raise TopologyError(f"unknown top-level key {unknown[0]!r} (known: {', '.join(_TOP_KEYS)})")
    if doc.get("format", FORMAT) != FORMAT:
        raise TopologyError(f"unknown format {doc['format']!r}, expected {FORMAT}")
    nodes = doc.get("nodes", [])
    if isinstance(nodes, list):  # before building anything (simulator.limits)
        check_topology_gpus(sum(1 for entry in nodes if isinstance(entry, dict) and entry.get("kind") == "gpu"),
                            "its nodes", TopologyError)
    declared = _mapping(doc.get("devices", {}), "devices")
    devices = {key: _mapping(body, f"device {key}") for key, body in declared.items()}
    G = nx.DiGraph(name=doc.get("name", ""), notes=doc.get("notes", ""), sim=doc.get("sim", {}))
    if "torus_dims" in doc:
        G.graph["torus_dims"] = doc["torus_dims"]
    first_seen: dict[str, int] = {}
    gpus = 0
    for position, entry in enumerate(_entries(doc, "nodes", _NODE_KEYS, "node"), start=1):
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            raise TopologyError(f"node {position} needs a name (a non-empty string)")
        if name in first_seen:
            raise TopologyError(f"duplicate node {name} (nodes {first_seen[name]} and {position})")
        first_seen[name] = position
        attrs = {k: v for k, v in entry.items() if k not in ("name", "extra", "device")}
        attrs.update(_extra(entry, f"node {name} extra"))
        if "device" in entry:
            if not isinstance(entry["device"], str) or entry["device"] not in devices:
                known = ", ".join(map(str, devices)) or "none"  # str: a YAML key may be a number
                raise TopologyError(f'node {name} uses unknown device "{entry["device"]}" (known: {known})')
            attrs["device"] = _device_body(devices[entry["device"]], entry["device"])
        if attrs.get("kind") == "gpu":
            attrs.setdefault("gpu_index", gpus)
            attrs.setdefault("server", 0)
            gpus += 1
        G.add_node(name, **attrs)
    link_at: dict[tuple[str, str], int] = {}
    for position, entry in enumerate(_entries(doc, "links", _LINK_KEYS, "link"), start=1):
        a, b = entry.get("a"), entry.get("b")
        for end in (a, b):
            if not isinstance(end, str) or end not in first_seen:
                # json.dumps: quoted as before, and a newline or control character stays on the one line
                raise TopologyError(f"unknown node {json.dumps(str(end), ensure_ascii=False)} in link {position}")
        for missing in ("bandwidth_GBps", "latency_us", "kind"):
            if missing not in entry:
                raise TopologyError(f"link {position} {a}-{b} needs {missing}")
        duplex = entry.get("duplex", True)
        if not isinstance(duplex, bool):
            raise TopologyError(f"link {position} {a}-{b}: duplex must be true or false, got {duplex!r}")
        attrs = {k: v for k, v in entry.items() if k in _EDGE_ATTRS}
        attrs.update(_extra(entry, f"link {position} extra"))
        for edge in [(a, b), (b, a)] if duplex else [(a, b)]:
            if edge in link_at:
                raise TopologyError(f"duplicate link {edge[0]}-{edge[1]} (links {link_at[edge]} and {position})")
            link_at[edge] = position
            G.add_edge(*edge, **attrs)
    validate_graph(G)
    return G


def read_document(path: str, text: str) -> object:
    """Parse ``text`` (from ``path``) as JSON (.json) or YAML (anything else), with safe loaders only."""
    try:
        if path.lower().endswith(".json"):
            return loads_json(text, None)
        refuse_anchors(text)  # an alias bomb expands before any check could walk it
        try:
            doc = yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader (C or Python)
        except ValueError as error:  # a scalar the constructor cannot make: an int of 5,000 digits, a bad date
            problem = str(error).splitlines()[0].split(";")[0] if str(error) else "a scalar it cannot read"
            raise TopologyError(f"bad YAML: {problem}") from None
        if isinstance(doc, (dict, list)):
            check_json_depth(doc, None)
        return doc
    except json.JSONDecodeError as error:
        raise TopologyError(f"bad JSON at line {error.lineno}: {error.msg}") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise TopologyError(f"bad YAML{where}: {problem}") from None
    except RecursionError:  # the pure-Python YAML loader, where libyaml is not built in
        raise TopologyError(f"nested deeper than {MAX_JSON_DEPTH} levels of lists and objects") from None
    except InputError as error:  # nested too deep (simulator.limits): a TopologyError gets the file's name
        raise TopologyError(str(error)) from None


def write_document(doc: dict, path: str) -> str:
    """The text of ``doc`` for ``path``: JSON for .json, YAML (one flow-style line per entry) otherwise."""
    if path.lower().endswith(".json"):
        return json.dumps(doc, indent=1) + "\n"
    return yaml.dump(doc, Dumper=_Dumper, sort_keys=False, default_flow_style=None, width=4096, allow_unicode=True)
