"""Interconnect topologies for tpsim: builders, named presets, files, validation, placement and routing.

A topology is a ``networkx.DiGraph``: GPU, switch, NIC and host nodes; one directed edge per direction
per link bundle, each with ``bandwidth_GBps`` (per direction), ``latency_us`` and ``kind``. Example::

    >>> G = load_topology("dgx-a100:2")
    >>> len(gpu_nodes(G)), Router(G).hops("gpu0", "gpu8")
    (16, 4)
"""

from topologies.bisection import bisection_GBps
from topologies.errors import PlacementDoesNotFit, TopologyError
from topologies.loader import load_topology, save_topology
from topologies.placement import PLACEMENTS, resolve_placement
from topologies.presets import PRESETS
from topologies.routing import Router
from topologies.validate import gpu_nodes, validate_graph

__all__ = [
    "load_topology",
    "save_topology",
    "gpu_nodes",
    "validate_graph",
    "Router",
    "resolve_placement",
    "PLACEMENTS",
    "PRESETS",
    "TopologyError",
    "PlacementDoesNotFit",
    "bisection_GBps",
]
