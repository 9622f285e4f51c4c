"""What a fit carries to other topologies: the calibration profile, and what the measurements left open.

``carried_profile`` turns a fit into a ``topologies.profile.Profile`` for the base topology's node kind:
per fitted link kind its fitted rate (``class_rate``, ``bandwidth_GBps``), the scale on the
base and the per-hop latency; the fitted ``sim`` keys (collective latency and start-up terms, kind
factors, the protocol where ``--protocol`` set it, gemm efficiencies). ``undetermined`` names what the
samples could not tell, so a user knows which values of a larger topology are still the preset's: the
rate and latency of every link kind that a topology of this node kind has at two servers or more but
no sample crossed (InfiniBand and the NIC attach from a single-server log), and every knob the fit
left exactly where it started (the samples' times do not depend on it: NVSwitch rates in a log whose
rings are bound by InfiniBand, the start-up terms from sends with LL only).

Example::

    >>> cal = calibrate(load_topology("dgx-a100"), samples_8_gpus, [])          # doctest: +SKIP
    >>> cal.profile.undetermined                                                 # doctest: +SKIP
    ('ib.bandwidth_GBps', 'ib.latency_us', 'nic.bandwidth_GBps', 'nic.latency_us')
"""

from __future__ import annotations

import math

from simulator.calibrate.knobs import KIND_FACTORS_KEY
from topologies.errors import TopologyError
from topologies.presets import build_preset
from topologies.profile import Profile, class_rate, node_kind, preset_family

__all__ = ["carried_profile", "kinds_at_scale"]

_UNMOVED = 1e-6
"""A knob within this (log) distance of its start after the fit is one the samples do not determine."""


def _name(knob) -> str:
    """The profile's name for a knob: ``ib.bandwidth_GBps``, ``ib.latency_us``, a sim key, a kind factor."""
    if knob.target == "bandwidth":
        return f"{knob.key}.bandwidth_GBps"
    return knob.name


def kinds_at_scale(G) -> set[str]:
    """Edge kinds a topology of ``G``'s node kind has once servers are joined: those of its preset at two
    servers where it is a server preset, else ``G``'s own."""
    kinds = {d["kind"] for _, _, d in G.edges(data=True)}
    family = preset_family(G)
    if family:
        try:
            larger = build_preset(f"{family}:2")
        except TopologyError:  # a preset whose suffix is not a server count (a torus shape)
            return kinds
        if node_kind(larger) == node_kind(G):
            kinds |= {d["kind"] for _, _, d in larger.edges(data=True)}
    return kinds


def carried_profile(base, fitted, knobs, values, sim_keys: list[str], sources: str) -> Profile:
    """The profile of a fit of ``base`` (fitted graph ``fitted``, ``knobs`` at ``values``; ``sim_keys`` the
    other fitted sim keys, gemm and protocol) with its undetermined parameters (module doc)."""
    links: dict[str, dict] = {}
    sim: dict = {}
    unmoved = []
    for knob, value in zip(knobs, values):
        if abs(math.log(float(value) / knob.start)) < _UNMOVED:
            unmoved.append(knob)  # the fit left it where it started: the samples do not depend on it
            continue
        if knob.target == "bandwidth":
            links.setdefault(knob.key, {}).update(bandwidth_GBps=float(class_rate(fitted, knob.key)),
                                                  bandwidth_scale=float(value))
        elif knob.target == "latency":
            links.setdefault(knob.key, {})["latency_us"] = float(value)
        elif knob.target == "sim":
            sim[knob.key] = fitted.graph["sim"][knob.key]
    if any(knob.target == "kind" for knob in knobs):
        sim[KIND_FACTORS_KEY] = dict(fitted.graph["sim"][KIND_FACTORS_KEY])
    for key in sim_keys:
        sim[key] = fitted.graph["sim"][key]
    undetermined = [f"{kind}.{name}" for kind in sorted(kinds_at_scale(base) - {k.key for k in knobs})
                    for name in ("bandwidth_GBps", "latency_us")]
    undetermined += [_name(knob) for knob in unmoved]
    name = str(base.graph.get("name", "?"))
    notes = f"Fitted by tpsim calibrate on {name} to {sources}."
    if undetermined:
        notes += f" Not determined by these measurements (the preset's values stay): {', '.join(undetermined)}."
    return Profile(node_kind(base), links, sim, tuple(undetermined), preset_family(base), name, notes)
