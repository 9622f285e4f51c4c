"""Calibration profiles: fitted link-class and protocol parameters that carry to any topology of one node kind.

A calibration fitted on two servers describes the *kind* of server and fabric, not the 16-GPU graph it ran
on: the rate NCCL reaches on an NVSwitch link or through an InfiniBand NIC, each hop's latency, the
collective model's start-up terms. A profile keeps exactly that, so ``--calibration FILE`` puts it on
any topology built from the same node kind (``--topology dgx-a100:16 --calibration fitted-on-2.yaml``).

The file (YAML, or JSON for .json)::

    format: tpsim-calibration
    version: 1
    node_kind: 8x A100-SXM4-40GB (nic, nvswitch)   # node_kind(G) of the topology it was fitted on
    preset: dgx-a100                               # the preset family, where it was one (for FILE:N)
    fitted_on: dgx-a100:2
    links:                                         # per edge kind the samples crossed
      nvswitch: {bandwidth_GBps: 214.0, bandwidth_scale: 0.93, latency_us: 0.71}   # class_rate after the fit
    sim: {collective_base_latency_us: 11.2, ...}   # fitted collective/compute keys of the topology's sim
    undetermined: [ib.bandwidth_GBps, ib.latency_us, ...]   # what the measurements could not tell
    notes: ...

``apply_profile`` gives every edge of a listed kind the profile's latency and scales its bandwidth so the
class's rate (``class_rate``: its most common edge rate, a single link's in a fat tree whose leaf-spine
bundles are wider and differ with the cluster's size) becomes the fitted ``bandwidth_GBps``: the ratios
within a class stay, and the fitted rate holds even where the preset's own rates changed since; it
updates ``sim``; kinds the topology lacks are skipped and kinds the profile lacks keep the preset's
values. A profile for another node kind is refused with one ``TopologyError`` line. ``node_kind`` is the
GPU device, the GPUs per server and the kinds of link inside a server: A100 40 GB and 80 GB servers, or
a DGX and a PCIe server, are different kinds. A calibrated topology file (``tpsim calibrate -o``) embeds its
profile in ``sim.calibration``; ``read_profile`` reads either file.

Example::

    >>> from topologies.presets import build_preset
    >>> node_kind(build_preset("dgx-a100:16")) == node_kind(build_preset("dgx-a100"))
    True
    >>> p = Profile(node_kind(build_preset("dgx-a100")), {"ib": {"bandwidth_GBps": 20.0, "latency_us": 3.0}})
    >>> G = apply_profile(build_preset("dgx-a100:2"), p)
    >>> sorted({d["bandwidth_GBps"] for _, _, d in G.edges(data=True) if d["kind"] == "ib"})
    [20.0]
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

import networkx as nx

from simulator.errors import InputError
from simulator.files import read_text, write_text_atomic
from topologies.errors import TopologyError
from topologies.keys import PROFILE_KEYS, check_known_keys, check_sim_keys
from topologies.physical_bounds import check_physical_bounds
from topologies.fileformat import read_document, write_document
from topologies.presets import PRESETS
from topologies.validate import check_sim, gpu_nodes

__all__ = ["Profile", "class_rate", "node_kind", "preset_family", "apply_profile", "read_profile", "write_profile",
           "profile_document", "profile_from_document", "FORMAT"]

FORMAT = "tpsim-calibration"
_LINK_KEYS = ("bandwidth_GBps", "bandwidth_scale", "latency_us")


@dataclass(frozen=True)
class Profile:
    """Fitted parameters for one node kind (module doc)."""

    node_kind: str
    links: dict = field(default_factory=dict)
    """Edge kind -> {"bandwidth_GBps", "bandwidth_scale", "latency_us"} (each optional)."""
    sim: dict = field(default_factory=dict)
    """Topology ``sim`` keys and their fitted values."""
    undetermined: tuple[str, ...] = ()
    """Parameters the measurements could not determine (they keep the preset's values)."""
    preset: str | None = None
    """The preset family fitted on (``dgx-a100``), None for a topology file."""
    fitted_on: str = ""
    notes: str = ""


def node_kind(G: nx.DiGraph) -> str:
    """``"8x A100-SXM4-40GB (nic, nvswitch)"``: the first server's GPU device, its GPU count, and the kinds
    of edge with both ends in it (or touching a GPU, where nodes name no server)."""
    gpus = gpu_nodes(G)
    if not gpus:
        raise TopologyError(f"topology {G.graph.get('name', '?')} has no GPUs, so no node kind")
    server = G.nodes[gpus[0]].get("server")
    members = {n for n, d in G.nodes(data=True) if d.get("server") == server} if server is not None else set(gpus)
    kinds = sorted({d["kind"] for u, v, d in G.edges(data=True) if u in members and v in members})
    count = sum(1 for g in gpus if G.nodes[g].get("server") == server) if server is not None else len(gpus)
    return f"{count}x {G.nodes[gpus[0]]['device']['name']} ({', '.join(kinds)})"


def class_rate(G: nx.DiGraph, kind: str) -> float | None:
    """The rate of link class ``kind``: its most common ``bandwidth_GBps`` (the larger on a tie), None if absent."""
    counts: dict[float, int] = {}
    for _, _, d in G.edges(data=True):
        if d.get("kind") == kind:
            counts[d["bandwidth_GBps"]] = counts.get(d["bandwidth_GBps"], 0) + 1
    return max(counts, key=lambda rate: (counts[rate], rate)) if counts else None


def preset_family(G: nx.DiGraph) -> str | None:
    """The preset a graph was built from (``dgx-a100`` for ``dgx-a100:16``, ``dgx-a100:2-calibrated`` or
    ``dgx-a100+calibration``), None for a graph of no preset."""
    family = str(G.graph.get("name", "")).partition(":")[0].removesuffix("+calibration").removesuffix("-calibrated")
    return family if family in PRESETS else None


def apply_profile(G: nx.DiGraph, profile: Profile, where: str = "calibration") -> nx.DiGraph:
    """A copy of ``G`` with ``profile``'s links and sim (module doc); TopologyError for another node kind."""
    kind = node_kind(G)
    if kind != profile.node_kind:
        raise TopologyError(f"{where}: fitted on node kind {profile.node_kind} ({profile.fitted_on or '?'}), but "
                            f"topology {G.graph.get('name', '?')} is {kind}; a calibration carries only to "
                            f"topologies built from the same node kind")
    H = G.copy()
    for link, values in sorted(profile.links.items()):
        edges = [(u, v) for u, v, d in H.edges(data=True) if d.get("kind") == link]
        if not edges:
            continue
        if "bandwidth_GBps" in values:
            factor = values["bandwidth_GBps"] / class_rate(H, link)
        else:
            factor = values.get("bandwidth_scale", 1.0)
        for e in edges:
            H.edges[e]["bandwidth_GBps"] = H.edges[e]["bandwidth_GBps"] * factor
            if "latency_us" in values:
                H.edges[e]["latency_us"] = values["latency_us"]
    H.graph["sim"] = {**(G.graph.get("sim") or {}), **profile.sim}
    try:
        check_physical_bounds(H)  # a hand-edited or mis-fitted profile: no link over its peak
    except TopologyError as error:
        raise TopologyError(f"{where}: {error}") from None
    H.graph["name"] = f"{G.graph.get('name', 'topology')}+calibration"
    H.graph["notes"] = (f"{G.graph.get('notes', '')} Calibration applied ({where}, fitted on "
                        f"{profile.fitted_on or '?'}): {profile.notes}").strip()
    return H


def profile_document(profile: Profile) -> dict:
    """The file document of ``profile``."""
    doc = {"format": FORMAT, "version": 1, "node_kind": profile.node_kind, "preset": profile.preset,
           "fitted_on": profile.fitted_on, "links": profile.links, "sim": profile.sim,
           "undetermined": list(profile.undetermined), "notes": profile.notes}
    return {key: value for key, value in doc.items() if value is not None}


def _number(value, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise TopologyError(f"{where} must be a finite number >= 0, got {value!r}")
    return float(value)


def profile_from_document(doc, where: str) -> Profile:
    """A ``Profile`` from a parsed document; TopologyError (one line, naming ``where``) for anything unfit."""
    if isinstance(doc, dict) and isinstance(doc.get("sim"), dict) and isinstance(doc["sim"].get("calibration"), dict):
        doc = doc["sim"]["calibration"]  # a calibrated topology file: its embedded profile
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise TopologyError(f"{where}: not a calibration profile (format: {FORMAT}) nor a topology written by "
                            f"tpsim calibrate")
    if type(doc.get("version")) is not int or doc.get("version") != 1:  # a YAML true is not 1
        raise TopologyError(f"{where}: calibration profile version {doc.get('version')!r}; this tpsim reads 1")
    check_known_keys(doc, PROFILE_KEYS, where, "calibration profile")  # a misspelt "sim" was dropped unread
    if not isinstance(doc.get("node_kind"), str) or not doc["node_kind"]:
        raise TopologyError(f"{where}: node_kind must be a non-empty string")
    links = doc.get("links") or {}
    if not isinstance(links, dict):
        raise TopologyError(f"{where}: links must be a mapping of edge kind to parameters")
    checked = {}
    for kind, values in links.items():
        if not isinstance(values, dict) or not set(values) <= set(_LINK_KEYS):
            raise TopologyError(f"{where}: links.{kind} must map some of {', '.join(_LINK_KEYS)} to numbers")
        checked[str(kind)] = {key: _number(value, f"{where}: links.{kind}.{key}") for key, value in values.items()}
    sim = doc.get("sim") or {}
    if not isinstance(sim, dict):
        raise TopologyError(f"{where}: sim must be a mapping")
    try:
        check_sim(sim, f"{where}: sim")
    except TopologyError as error:
        raise TopologyError(str(error)) from None
    check_sim_keys(sim, where, in_topology=False)  # a misspelt key inside sim was dropped unread too
    undetermined = doc.get("undetermined") or []
    if not isinstance(undetermined, list) or not all(isinstance(item, str) for item in undetermined):
        raise TopologyError(f"{where}: undetermined must be a list of parameter names")
    preset = doc.get("preset")
    return Profile(doc["node_kind"], checked, dict(sim), tuple(undetermined),
                   preset if isinstance(preset, str) else None, str(doc.get("fitted_on", "")),
                   str(doc.get("notes", "")))


def read_profile(path: str) -> Profile:
    """The profile in ``path`` (a profile file or a calibrated topology file); TopologyError naming it."""
    if not os.path.isfile(path):
        raise TopologyError(f"calibration file {path} not found")
    try:  # within simulator.limits' file size, no NUL byte
        text = read_text(path, "calibration")
    except InputError as error:
        raise TopologyError(str(error)) from None
    try:
        doc = read_document(path, text)
    except TopologyError as error:  # bad YAML or JSON: name the file, as a topology file's error does
        raise TopologyError(f"calibration file {path}: {error}") from None
    return profile_from_document(doc, path)


def write_profile(profile: Profile, path: str) -> None:
    """Write ``profile`` to ``path`` (.yaml/.yml/.json)."""
    if not str(path).lower().endswith((".yaml", ".yml", ".json")):
        raise TopologyError(f"cannot write a calibration profile as {path}: use a name ending in .yaml, .yml, .json")
    text = write_document(profile_document(profile), str(path))
    write_text_atomic(path, text)
