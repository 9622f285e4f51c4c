"""Load a topology from a preset name or a file, and save one to a file.

``load_topology(spec, calibration=None)``: ``spec`` is a preset (``dgx-a100``), a preset with a suffix
(``dgx-a100:16``), a compact cluster (``server=dgx-h100,servers=16,nics=4``, ``topologies.compact``; a
file holding those fields is one too), a path ending in .yaml, .yml, .json or .graphml, or such a path with a suffix
(``calibrated.yaml:16``): a topology that ``tpsim calibrate`` wrote from a preset, rebuilt at that size
(its preset with the suffix, then its embedded calibration profile, ``topologies.profile``); a file
that names no preset is refused for a suffix, one line. ``calibration`` is a profile file (or a
calibrated topology file) applied to the graph (``apply_profile``: the same node kind or one error line).
Whatever the source, the graph is fully validated and every problem is one ``TopologyError`` line,
prefixed with the file name for files.

Example::

    >>> G = load_topology("a100-4gpu:2")
    >>> G.graph["name"], len(gpu_nodes(G))
    ('a100-4gpu:2', 8)
"""

from __future__ import annotations

import io
import logging
import os
import re

import networkx as nx

from simulator.errors import InputError
from simulator.files import write_text_atomic  # noqa: I001 - apart from the read imports below
from simulator.files import read_bytes, read_text
from topologies.compact import compact_cluster, is_compact_document, is_compact_string, parse_compact
from topologies.errors import TopologyError
from topologies.fileformat import document_to_graph, graph_to_document, read_document, write_document
from topologies.graphml import read_graphml, write_graphml
from topologies.presets import PRESETS, build_preset
from topologies.profile import apply_profile, profile_from_document, read_profile
from topologies.validate import gpu_nodes, validate_graph

__all__ = ["load_topology", "save_topology", "FILE_SUFFIXES"]

log = logging.getLogger(__name__)

FILE_SUFFIXES = (".yaml", ".yml", ".json", ".graphml")


def _is_file_spec(spec: str) -> bool:
    return spec.lower().endswith(FILE_SUFFIXES) or os.path.isfile(spec)


_SIZED_FILE = re.compile(r"(.+\.(?:yaml|yml|json|graphml)):([^:/\\]+)$", re.IGNORECASE)


def load_topology(spec: str, calibration: str | None = None) -> nx.DiGraph:
    """The validated graph for a preset name, ``NAME:N``, a topology file path or ``FILE:N``, with the
    profile in the file ``calibration`` applied where given (module doc)."""
    G = _load(spec)
    if calibration is not None:
        G = apply_profile(G, read_profile(calibration), f"--calibration {calibration}")
        validate_graph(G)
    return G


def _sized_file(spec: str, path: str, size: str) -> nx.DiGraph:
    """``FILE:N``: the preset a calibrated topology file was fitted on, at size N, with its profile."""
    F = _load(path)
    embedded = (F.graph.get("sim") or {}).get("calibration")
    if not isinstance(embedded, dict) or not embedded.get("preset"):
        raise TopologyError(f"{spec}: {path} names no preset to rebuild at size {size}; FILE:N rebuilds only a "
                            f"topology that tpsim calibrate fitted on a preset (else give PRESET:N --calibration "
                            f"PROFILE)")
    profile = profile_from_document(embedded, path)
    G = apply_profile(build_preset(f"{profile.preset}:{size}"), profile, path)
    validate_graph(G)
    return G


def _load(spec: str) -> nx.DiGraph:
    if not isinstance(spec, str) or not spec:
        raise TopologyError(f"a topology is a preset name or a file path, got {spec!r}")
    if is_compact_string(spec) and not os.path.exists(spec):
        return _compact(parse_compact(spec), "")
    sized = _SIZED_FILE.match(spec)
    if sized and not os.path.exists(spec) and os.path.isfile(sized.group(1)):
        return _sized_file(spec, sized.group(1), sized.group(2))
    if not _is_file_spec(spec):
        if os.sep in spec or "." in spec.partition(":")[0]:
            raise TopologyError(
                f'"{spec}" is neither a preset ({", ".join(PRESETS)}) nor a file ending in {", ".join(FILE_SUFFIXES)}'
            )
        G = build_preset(spec)
        validate_graph(G)
        return G
    if not os.path.exists(spec):  # a device or a pipe is read (and refused) by read_bytes, not "not found"
        raise TopologyError(f"topology file {spec} not found")
    # Read within simulator.limits (its size, no NUL byte; UTF-8 but for GraphML, which names its own
    # encoding): one InputError naming the file.
    graphml = spec.lower().endswith(".graphml")
    try:
        data = read_bytes(spec, "topology") if graphml else read_text(spec, "topology")
    except InputError as error:
        raise TopologyError(str(error)) from None
    try:
        if graphml:
            return read_graphml(io.BytesIO(data))
        document = read_document(spec, data)
        if is_compact_document(document):
            return _compact(document, os.path.dirname(spec))
        return document_to_graph(document)
    except TopologyError as error:
        raise TopologyError(f"{spec}: {error}") from None


def _compact(doc: dict, folder: str) -> nx.DiGraph:
    """A compact cluster (``topologies.compact``) with its ``calibration`` applied, read relative to ``folder``
    (a file's own; the working directory for a command-line string)."""
    G = compact_cluster(doc)
    calibration = doc.get("calibration")
    if calibration is not None:
        if not isinstance(calibration, str) or not calibration:
            raise TopologyError(f"calibration {calibration!r}: a profile file's path")
        path = os.path.join(folder, calibration)
        G = apply_profile(G, read_profile(path), f"calibration {calibration}")
    validate_graph(G)
    return G


def save_topology(G: nx.DiGraph, path: str) -> None:
    """Validate ``G`` and write it to ``path`` (.yaml/.yml/.json: tpsim's document; .graphml: GraphML)."""
    if not str(path).lower().endswith(FILE_SUFFIXES):
        raise TopologyError(f"cannot save a topology as {path}: use a name ending in {', '.join(FILE_SUFFIXES)}")
    validate_graph(G)
    path = str(path)
    dropped = sorted(key for key in G.graph if key not in ("name", "notes", "sim", "torus_dims"))
    if dropped:
        log.warning("save_topology %s: graph attributes %s are not saved (put them in G.graph['sim'])", path, dropped)
    if path.lower().endswith(".graphml"):
        write_graphml(G, path)
        return
    text = write_document(graph_to_document(G), path)
    write_text_atomic(path, text)
