"""Interconnect topologies for tpsim: builders, named presets, files, validation, placement and routing.

A topology is a ``networkx.DiGraph``: GPU, switch, NIC and host nodes; one directed edge per direction
per link bundle, each with ``bandwidth_GBps`` (per direction), ``latency_us`` and ``kind``. Example::

    >>> G = load_topology("dgx-a100:2")
    >>> len(gpu_nodes(G)), Router(G).hops("gpu0", "gpu8")
    (16, 4)

==================  ===============================================================================
module              what it holds
==================  ===============================================================================
``kinds``           the vocabulary: node kinds, edge kinds, device dtypes
``rates``           published link rates and the effective rates the model uses, with sources
``devices``         GPU specs: peak TFLOP/s per dtype, memory bandwidth and size
``compute_rates``   each GPU's published achievable matmul rate, memory bandwidth and SM count, sourced
``attention_rates`` FlashAttention-2's published causal throughput per GPU, head dimension and sequence
``triton_rates``    the Triton FlashAttention kernel's published throughput (A100 only), by head dim and seq
``cudnn_rates``     cuDNN's fused attention published throughput per pass (H100 / H200), by head dim and seq
``links``           link specs, put on a graph as directed edges
``servers``         the inside of one machine (NVSwitch, NVLink mesh, PCIe tree, CPU sockets, NICs)
``cluster``         servers joined by a leaf/spine fat tree
``builders``        pure builder functions, one per interconnect shape
``presets``         named presets: real machines and the figures they come from
``compact``         clusters in five lines: a server, a count and a fabric, as a file or a string
``fileformat``      the YAML/JSON topology file
``graphml``         GraphML files through networkx
``loader``          a topology from a preset name or a file, and saving one
``profile``         calibration profiles: fitted link-class parameters carried to a node kind's topologies
``validate``        full checks of a graph; the first problem is one ``TopologyError``
``placement``       which GPU each schedule rank runs on
``routing``         deterministic shortest paths with reproducible ECMP spreading
``cluster_routing`` the same routes without a search on clusters of identical servers (every server preset)
``torus_routing``   the same routes without a search on a torus, from coordinates
``naming``          node and link names as printed, every endpoint in one scope
``bisection``       bisection bandwidth by max-flow over balanced cuts
``summary``         what ``tpsim topology show`` reports
``draw``            a topology drawn to a PNG
``command``         ``tpsim topology``
``errors``          ``TopologyError`` and ``PlacementDoesNotFit``
``keys``            the known keys of profiles, topology files and sim sections; an unknown one named
``physical_bounds`` links no faster than their published peak (+10%), latencies under a second
``yaml_guard``      YAML loaded with anchors and aliases refused
==================  ===============================================================================
"""

from topologies.bisection import bisection_GBps
from topologies.errors import PlacementDoesNotFit, TopologyError
from topologies.loader import load_topology, save_topology
from topologies.naming import link_name, scoped_name
from topologies.placement import PLACEMENTS, resolve_placement
from topologies.presets import PRESETS
from topologies.routing import Router
from topologies.validate import gpu_nodes, validate_graph

__all__ = ["attention_rates", 
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
    "link_name",
    "scoped_name",
]
