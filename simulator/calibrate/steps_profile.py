"""What the step fit writes: the base topology with the fitted ``gemm_efficiency``, and its calibration profile.

The profile (``topologies.profile``) is the base's own where it had one (``--calibration FILE``, or the
profile a calibrated topology file embeds: the link rates an nccl-tests fit found stay) with
``sim.gemm_efficiency`` added, so a profile fitted from nccl-tests logs and then from steps carries both.
It is embedded in the graph's ``sim.calibration``, as ``tpsim calibrate`` embeds every profile, so
``--topology OUT:N`` rebuilds the base's preset at N servers with it.

    >>> from topologies import load_topology
    >>> G, profile = calibrated_by_steps(load_topology("dgx-h100"), 0.61, None, "steps.yaml")
    >>> G.graph["sim"]["gemm_efficiency"], profile.sim, G.graph["name"]
    (0.61, {'gemm_efficiency': 0.61}, 'dgx-h100-calibrated')
"""

from __future__ import annotations

import networkx as nx

from topologies.profile import Profile, node_kind, preset_family, profile_document, profile_from_document

__all__ = ["calibrated_by_steps", "base_profile"]


def base_profile(G: nx.DiGraph, calibration: str | None) -> Profile | None:
    """The profile the base already carries: ``--calibration``'s, else the one its file embeds, else None."""
    if calibration is not None:
        from topologies.profile import read_profile

        return read_profile(calibration)
    embedded = (G.graph.get("sim") or {}).get("calibration")
    return profile_from_document(embedded, str(G.graph.get("name", "?"))) if isinstance(embedded, dict) else None


def calibrated_by_steps(base: nx.DiGraph, efficiency: float, previous: Profile | None,
                        sources: str) -> tuple[nx.DiGraph, Profile]:
    """(the graph to write, its profile) for ``base`` with ``gemm_efficiency = efficiency`` (module doc)."""
    name = str(base.graph.get("name", "topology")).removesuffix("+calibration")
    note = f"gemm_efficiency {efficiency:.4g} fitted by tpsim calibrate --from-steps to {sources}."
    if previous is not None:
        profile = Profile(previous.node_kind, dict(previous.links), {**previous.sim, "gemm_efficiency": efficiency},
                          previous.undetermined, previous.preset or preset_family(base),
                          previous.fitted_on or name, f"{previous.notes} {note}".strip())
    else:
        profile = Profile(node_kind(base), {}, {"gemm_efficiency": efficiency}, (), preset_family(base), name,
                          f"Fitted by tpsim calibrate on {name}: {note}")
    G = base.copy()
    G.graph["sim"] = {**(base.graph.get("sim") or {}), "gemm_efficiency": efficiency,
                      "calibration": profile_document(profile)}
    G.graph["name"] = name if name.endswith("-calibrated") else f"{name}-calibrated"
    G.graph["notes"] = f"{note} Base: {base.graph.get('notes', '')}".strip()
    return G, profile
