"""Preset clusters with every GEMM capped at a flat fraction of peak: the reproductions' one way to vary the GEMM rate.

The presets cap each GEMM at the device's published large-GEMM rate (``docs/compute.md``); a
capped graph carries ``sim.gemm_efficiency = cap`` instead, what ``tpsim calibrate`` sets (the shape
factor still applied). The reproductions name their clusters three ways, so the capped graph comes
three ways: registered under a name for ``experiments.block_time.topology`` (``capped_preset``), written
to a topology file for a ``tpsim`` command (``capped_file``), or put in the place of every preset for the
rest of a ``with`` block, where the reproductions resolve preset specs (``presets_capped``).

    >>> capped_graph("dgx-a100:1", 0.75).graph["sim"]["gemm_efficiency"]
    0.75
"""

from __future__ import annotations

import contextlib
import os

import networkx as nx

import topologies.loader
import topologies.presets
from topologies import save_topology

__all__ = ["capped_graph", "capped_preset", "capped_file", "presets_capped"]

# The presets' own builders, bound when this module is first imported: ``presets_capped`` puts capped
# builders in their place, which build through these.
_build_preset = topologies.presets.build_preset
_compact_cluster = topologies.loader.compact_cluster


def capped_graph(spec: str, cap: float) -> nx.DiGraph:
    """The preset cluster ``spec`` (``NAME`` or ``NAME:ARG``) with ``sim.gemm_efficiency = cap``."""
    G = _build_preset(spec)
    G.graph["sim"] = {**G.graph.get("sim", {}), "gemm_efficiency": cap}
    return G


def capped_preset(spec: str, cap: float) -> str:
    """``capped_graph(spec, cap)`` registered for ``experiments.block_time.topology``; its name,
    ``SPEC+gemmCAP``."""
    # Imported here, not above: ``experiments.gemm_cap_sweep`` imports this module before it caps the
    # presets, and ``block_time`` binds ``build_preset`` when it is first imported, which must come after.
    from experiments.block_time import register_topology

    variant = f"{spec}+gemm{cap:g}"
    register_topology(variant, capped_graph(spec, cap))
    return variant


def capped_file(spec: str, cap: float, folder: str) -> str:
    """``capped_graph(spec, cap)`` written to a topology file in ``folder`` (once: a later call reuses it);
    its path, for a ``tpsim`` command's ``--topology``."""
    path = os.path.join(folder, f"{spec.replace(':', '-')}-gemm{cap:g}.yaml")
    if not os.path.exists(path):
        save_topology(capped_graph(spec, cap), path)
    return path


@contextlib.contextmanager
def presets_capped(cap: float):
    """Inside the block, every preset graph the process builds carries ``sim.gemm_efficiency = cap``, and so
    does every cluster described from a server preset (``server=dgx-a100-80gb,servers=48,nics=4``).

    Replaced: ``topologies.presets.build_preset`` and ``topologies.loader.build_preset``, through which the
    loader resolves the preset specs the reproductions name their clusters by, and
    ``topologies.loader.compact_cluster``, through which it builds a description. A module that bound
    ``build_preset`` by name before the block keeps the presets' own; one first imported inside it keeps
    the capped builder after (``gemm_cap_sweep`` imports the reproductions inside it for that reason).
    """
    saved = topologies.presets.build_preset, topologies.loader.build_preset, topologies.loader.compact_cluster

    def capped(spec: str) -> nx.DiGraph:
        return capped_graph(spec, cap)

    def capped_cluster(doc: dict, *args, **kwargs) -> nx.DiGraph:
        G = _compact_cluster(doc, *args, **kwargs)
        G.graph["sim"] = {**G.graph.get("sim", {}), "gemm_efficiency": cap}
        return G

    topologies.presets.build_preset = topologies.loader.build_preset = capped
    topologies.loader.compact_cluster = capped_cluster
    try:
        yield
    finally:
        topologies.presets.build_preset, topologies.loader.build_preset, topologies.loader.compact_cluster = saved
