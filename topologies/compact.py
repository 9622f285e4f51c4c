"""Clusters in five lines: a compact description (a YAML/JSON file or a command-line string) built by the
preset builders.

The same fields in both forms; a file holds them as a mapping, the string as ``key=value`` pairs
joined by commas (``docs/topologies.md`` documents every field, its unit and its default)::

    # four-nic.yaml: 16 DGX-like H100 servers with four 200 Gb/s NICs each, on a 2:1 oversubscribed fabric
    server: dgx-h100
    servers: 16
    nics: 4
    nic_Gbps: 200
    oversubscription: 2

    --topology server=dgx-h100,servers=16,nics=4,nic_Gbps=200,oversubscription=2

A server is a preset (``server``, any server preset of ``topologies.presets``) or GPUs of one model on
one NVLink switch (``gpu``, ``gpus_per_server``): the NVLink and the GPU -> NIC attachment rates then
follow the GPU's generation (``GENERATIONS``), as in the preset of that generation. ``nics`` and
``nic_Gbps`` change either; a NIC rate is one of the published InfiniBand rates (``NIC_RATES``). The
fabric is the two-level fat tree of ``topologies.cluster`` (rail-optimised or server-grouped, leaf
size, oversubscription, spines) or the 3-D torus of ``topologies.builders`` (``fabric: torus``,
``shape``). ``calibration`` applies a profile (``topologies.profile``); in a file its path is relative
to the file. A description that names a preset and changes nothing builds the preset's graph
(``server=dgx-h100,servers=4`` is ``dgx-h100:4``).

Every mistake is named, all of them in one ``TopologyError`` line: an unknown key (with the closest
known one), a bad value with what is valid, two fields that contradict each other.

Example::

    >>> G = compact_cluster(parse_compact("server=dgx-h100,servers=2,nics=4,nic_Gbps=200"))
    >>> G.graph["name"], sum(1 for _, k in G.nodes(data="kind") if k == "nic")
    ('server=dgx-h100,servers=2,nics=4,nic_Gbps=200', 8)
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import re

import networkx as nx

from simulator.limits import check_topology_gpus
from topologies.cluster import FabricSpec, fat_tree_cluster
from topologies.devices import DEVICES
from topologies.errors import TopologyError
from topologies.presets import GENERATION_SIM, PRESETS
from topologies.rates import (IB_EDR, IB_FDR, IB_HDR, IB_NDR, NIC_ATTACH_GEN3, NIC_ATTACH_GEN4, NIC_ATTACH_GEN5,
                              NVSWITCH_A100, NVSWITCH_B200, NVSWITCH_DGX2H, NVSWITCH_H100)
from topologies.servers import NvSwitchServer

__all__ = ["FORMAT", "FIELDS", "NIC_RATES", "GENERATIONS", "is_compact_string", "is_compact_document",
           "parse_compact", "compact_cluster"]

FORMAT = "tpsim-cluster-1"

FIELDS = ("format", "name", "server", "gpu", "gpus_per_server", "nics", "nic_Gbps", "servers", "fabric",
          "rail_optimised", "leaf_ports", "oversubscription", "spines", "shape", "calibration")
"""Every key, in the order ``docs/topologies.md`` lists them."""

NIC_RATES = {56: IB_FDR, 100: IB_EDR, 200: IB_HDR, 400: IB_NDR}
"""NIC line rate in Gb/s -> the fabric link: InfiniBand FDR, EDR, HDR, NDR (``topologies.rates`` sources)."""

LEAF_PORTS = {56: 18, 100: 18, 200: 20, 400: 32}
"""Default leaf size by NIC rate, as the presets' fabrics: 36-port FDR/EDR and 40-port HDR switches at
1:1, and 64-port NDR ones (DGX SuperPOD scalable units)."""

GENERATIONS = {
    "volta": (NVSWITCH_DGX2H, NIC_ATTACH_GEN3, 100),
    "ampere": (NVSWITCH_A100, NIC_ATTACH_GEN4, 200),
    "hopper": (NVSWITCH_H100, NIC_ATTACH_GEN5, 400),
    "blackwell": (NVSWITCH_B200, NIC_ATTACH_GEN5, 400),
}
"""GPU generation -> (per-GPU NVLink to the switch, GPU -> NIC attachment, default NIC Gb/s): the rates
of that generation's preset (DGX-2H, DGX A100, DGX H100, DGX B200)."""

_GENERATION_OF = {"A100": "ampere", "H100": "hopper", "H200": "hopper", "B200": "blackwell", "GB200": "blackwell",
                  "V100": "volta"}
NVLINK_GPUS = {name: _GENERATION_OF[name.split("-")[0]] for name in DEVICES if name.split("-")[0] in _GENERATION_OF
               and "PCIE" not in name}
"""The GPU models that can fill an NVLink domain, by generation (PCIe cards and CPU slots cannot)."""

_COMPACT = re.compile(r"[a-z_A-Z]+=[^,]*(,[a-z_A-Z]+=[^,]*)*")


def is_compact_string(spec: str) -> bool:
    """Whether ``--topology`` text is the ``key=value,...`` form."""
    return bool(_COMPACT.fullmatch(spec))


def is_compact_document(doc) -> bool:
    """Whether a parsed topology file is a compact cluster (``format: tpsim-cluster-1``, or a ``server`` or
    ``gpu`` key and no ``nodes``)."""
    return isinstance(doc, dict) and (doc.get("format") == FORMAT or ("nodes" not in doc and
                                                                      ("server" in doc or "gpu" in doc)))


def parse_compact(spec: str) -> dict:
    """``"server=dgx-h100,servers=16"`` -> ``{"server": "dgx-h100", "servers": "16"}`` (values stay text;
    ``compact_cluster`` reads them)."""
    fields: dict[str, str] = {}
    for item in spec.split(","):
        key, _, value = item.partition("=")
        if key in fields:
            raise TopologyError(f"{spec}: {key} given twice")
        fields[key] = value
    return fields


def _shown(value) -> str:
    """A value as the user wrote it: text bare (``nic_Gbps 300`` from a file or a string alike)."""
    return value if isinstance(value, str) and value else repr(value)


class _Reader:
    """Reads fields by type, collecting every mistake rather than stopping at the first."""

    def __init__(self, doc: dict):
        self.doc, self.mistakes = doc, []

    def bad(self, message: str) -> None:
        self.mistakes.append(message)

    def integer(self, key: str, default, least: int = 1):
        value = self.doc.get(key, default)
        if isinstance(value, str) and re.fullmatch(r"[0-9]{1,9}", value):
            value = int(value)
        if value is default or (isinstance(value, int) and not isinstance(value, bool) and value >= least):
            return value
        self.bad(f"{key} {_shown(value)}: an integer >= {least}")
        return default

    def number(self, key: str, default: float, least: float) -> float:
        value = self.doc.get(key, default)
        if isinstance(value, str):
            text = value.removesuffix(":1")
            value = float(text) if re.fullmatch(r"[0-9]+(\.[0-9]*)?", text) else value
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= least:
            return float(value)
        self.bad(f"{key} {_shown(value)}: a number >= {least:g} (or N:1)")
        return default

    def boolean(self, key: str, default: bool) -> bool:
        value = self.doc.get(key, default)
        words = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}
        if isinstance(value, str) and value.lower() in words:
            return words[value.lower()]
        if isinstance(value, bool):
            return value
        self.bad(f"{key} {_shown(value)}: true or false")
        return default

    def choice(self, key: str, default, valid, what: str = ""):
        value = self.doc.get(key, default)
        if value in valid or value is default:
            return value
        self.bad(f"{key} {_shown(value)}: {what or 'one of ' + ', '.join(map(str, valid))}")
        return default


def _gpu_model(reader: _Reader, text) -> str | None:
    """The device a ``gpu`` value names: an exact model or one prefix of one (``H100``), any case."""
    if text is None:
        return None
    text_ = text.lower() if isinstance(text, str) else None
    matches = [name for name in NVLINK_GPUS if name.lower() == text_]
    matches = matches or [name for name in NVLINK_GPUS if text_ and name.lower().startswith(text_)]
    if len(matches) != 1:
        reader.bad(f"gpu {_shown(text)}: {'which of ' if matches else ''}one of {', '.join(matches or NVLINK_GPUS)}"
                   + ("?" if matches else ""))
        return None
    return matches[0]


def compact_cluster(doc: dict, where: str = "") -> nx.DiGraph:
    """The graph a compact description builds (module doc); TopologyError naming every mistake.

    ``where`` prefixes the message (a file's name); a ``calibration`` path is left to the caller
    (``topologies.loader``), which reads it relative to the file.
    """
    prefix = f"{where}: " if where else ""
    if not isinstance(doc, dict):
        raise TopologyError(f"{prefix}a cluster is a mapping of {', '.join(FIELDS)}")
    reader = _Reader(doc)
    for key in doc:
        if key not in FIELDS:
            guess = difflib.get_close_matches(str(key), FIELDS, n=1)
            reader.bad(f"unknown key {_shown(key)}" + (f" (did you mean {guess[0]}?)" if guess else f"; valid: "
                                                                                             f"{', '.join(FIELDS)}"))
    reader.choice("format", FORMAT, (FORMAT,))
    fabric = reader.choice("fabric", "fat-tree", ("fat-tree", "torus"))
    name = doc.get("name")
    if name is not None and not (isinstance(name, str) and name):
        reader.bad(f"name {_shown(name)}: a non-empty string")
    G = _torus(reader, doc) if fabric == "torus" else _fat_tree(reader, doc)
    if reader.mistakes:
        raise TopologyError(prefix + "; ".join(reader.mistakes))
    G.graph["name"] = name or ",".join(f"{key}={_text(value)}" for key, value in doc.items()
                                       if key not in ("format", "name", "calibration"))
    return G


def _text(value) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _torus(reader: _Reader, doc: dict) -> nx.DiGraph | None:
    extra = [key for key in doc if key in FIELDS and key not in ("format", "name", "fabric", "shape", "calibration")]
    if extra:
        reader.bad(f"fabric torus is a torus-3d of A100s, sized by shape alone; drop {', '.join(extra)}")
    shape = doc.get("shape")
    if not (isinstance(shape, str) and re.fullmatch(r"[1-9][0-9]{0,3}x[1-9][0-9]{0,3}x[1-9][0-9]{0,3}", shape)):
        reader.bad(f"shape {_shown(shape)}: XxYxZ, e.g. 4x4x8 (fabric torus needs it)")
        return None
    if reader.mistakes:
        return None
    return PRESETS["torus-3d"](shape)


def _fat_tree(reader: _Reader, doc: dict) -> nx.DiGraph | None:
    if "shape" in doc:
        reader.bad("shape sizes a torus; add fabric: torus, or drop shape")
    servers_presets = [name for name, p in PRESETS.items() if p.server is not None]
    preset = reader.choice("server", None, servers_presets, f"a server preset, one of {', '.join(servers_presets)}")
    model = _gpu_model(reader, doc.get("gpu"))
    if preset is not None and "gpu" in doc:
        reader.bad(f"server {preset} names its GPU already; give server or gpu, not both")
    if preset is not None and "gpus_per_server" in doc:
        reader.bad(f"server {preset} has {PRESETS[preset].server.n_gpus} GPUs; gpus_per_server goes with gpu")
    if preset is None and "server" not in doc and "gpu" not in doc:
        reader.bad("give server: PRESET (e.g. dgx-h100) or gpu: MODEL (e.g. H100) with gpus_per_server")
    per_server = reader.integer("gpus_per_server", 8)
    servers = reader.integer("servers", 1)
    nic_rate = reader.choice("nic_Gbps", None, tuple(NIC_RATES) + tuple(map(str, NIC_RATES)),
                             f"a NIC rate in Gb/s, one of {', '.join(map(str, NIC_RATES))}")
    nics = reader.integer("nics", None)
    rail = reader.boolean("rail_optimised", True)
    leaf_ports = reader.integer("leaf_ports", None)
    oversubscription = reader.number("oversubscription", 1.0, 1.0)
    spines = reader.integer("spines", None)
    if reader.mistakes or (preset is None and model is None):
        return None
    nic_rate = None if nic_rate is None else int(nic_rate)
    if preset is not None:
        base = PRESETS[preset]
        server, sim = base.server, dict(base.sim)
        default_rate = next(rate for rate, link in NIC_RATES.items() if link == base.fabric.link)
        default_leaf = base.fabric.leaf_down_ports
    else:
        nvlink, attach, default_rate = GENERATIONS[NVLINK_GPUS[model]]
        server = NvSwitchServer(per_server, DEVICES[model], nvlink, nics=per_server, nic_link=attach)
        sim = dict(GENERATION_SIM[NVLINK_GPUS[model]])
        default_leaf = None
    rate = nic_rate or default_rate
    if nics is not None:
        server = dataclasses.replace(server, nics=nics)
    leaf = leaf_ports or default_leaf or LEAF_PORTS[rate]
    if not rail and leaf < server.nics:
        reader.bad(f"leaf_ports {leaf}: a server-grouped leaf (rail_optimised false) takes all {server.nics} NICs "
                   f"of a server; give leaf_ports >= {server.nics}")
        return None
    check_topology_gpus(servers * server.n_gpus, f"{servers} servers of {server.n_gpus} GPUs", TopologyError)
    fabric = FabricSpec(NIC_RATES[rate], leaf_down_ports=leaf, oversubscription=oversubscription, rail_optimised=rail,
                        n_spines=spines)
    G = server.build() if servers == 1 else fat_tree_cluster(server, servers, fabric)
    if servers == 1 and any(key in doc for key in ("rail_optimised", "leaf_ports", "oversubscription", "spines")):
        reader.bad("one server has no fabric: rail_optimised, leaf_ports, oversubscription and spines need "
                   "servers >= 2")
    changed = [f"{key} {doc[key]}" for key in ("nics", "nic_Gbps") if key in doc]
    notes = "" if preset is None else PRESETS[preset].notes + " " if not changed else (
        f"The {preset} server with {' and '.join(changed)} (`tpsim topology show {preset}` gives the sources of its "
        f"other figures). ")
    G.graph["notes"] = notes + f"{servers} x ({server.describe()})" + (
        f"; {fabric.describe()}, NICs {rate} Gb/s." if servers > 1 else ".")
    G.graph["sim"] = sim
    return G
