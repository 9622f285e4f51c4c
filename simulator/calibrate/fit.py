"""``calibrate``: fit a base topology to measured collectives and gemms, and check the fit.

1. Samples are grouped into size buckets (kind, ranks, nbytes; median time). Buckets of at least
   ``fit_min_bytes`` are eligible; ``holdout`` (default ``holdout.alternate_sizes`` over the eligible
   ones) holds some out. The rest are fitted.
2. Collective knobs (``knobs``: per exercised link kind a bandwidth factor and a per-hop latency,
   plus the base latency and the start-up regime) are fitted by ``lsq.fit_knobs``: log-time least
   squares through the closed forms (``evaluator``). Where an all_reduce spans servers and no algorithm
   is given, the fit is run twice, with the simulator's choice and with NCCL's ring, and the lower rms
   log error is kept (an nccl-tests log does not say which NCCL ran; on slow NICs the simulated tree
   of two servers can fit the times only with NICs at half their rate); not on NVLink SHARP servers,
   whose NCCL runs the NVLS tree across servers. Gemm knobs by ``gemm_fit``.
3. What carries to other topologies of the node kind is kept as a profile (``carry``), embedded in
   the graph's ``sim.calibration`` and written on its own by ``Calibration.write_profile``.
4. The fitted graph is built (``knobs.apply_values``) and every bucket, fitted, held out or below
   the floor, is predicted by the flow simulation (``run_collective`` on a ``FlowNetwork``, as
   ``tpsim collective`` does), so the rows are what the written file reproduces.

Example::

    >>> cal = calibrate(load_topology("dgx-a100"), samples, [])                # doctest: +SKIP
    >>> cal.parameters["nvswitch.bandwidth_GBps"], cal.write("calibrated.yaml")  # doctest: +SKIP
"""

from __future__ import annotations

import logging
import statistics
from collections import Counter

import numpy as np
import simpy

from simulator.calibrate.carry import carried_profile
from simulator.calibrate.evaluator import CollectiveEvaluator, algorithm_for, members_for
from simulator.calibrate.gemm_fit import fit_gemms
from simulator.calibrate.holdout import Holdout, alternate_sizes
from simulator.calibrate.knobs import apply_values, collective_knobs
from simulator.calibrate.lsq import fit_knobs
from simulator.calibrate.result import Calibration
from simulator.calibrate.rows import ErrorRow
from simulator.calibrate.samples import COLLECTIVE_KINDS, CollectiveSample, GemmSample
from simulator.collectives import run_collective
from simulator.collectives.params import CollectiveParams
from simulator.compute import ComputeConfig, ComputeModel
from simulator.errors import InputError
from simulator.network.flow_network import FlowNetwork
from simulator.sizes import format_size
from topologies import gpu_nodes
from topologies.profile import profile_document

__all__ = ["calibrate", "simulate_buckets"]

log = logging.getLogger(__name__)

Bucket = tuple[str, int, int]


def simulate_buckets(G, keys: list[Bucket], all_reduce_algorithm: str | None = None) -> list[float]:
    """Flow-simulated seconds of each (kind, ranks, nbytes) on ``G``'s first GPUs, one after another; every
    all_reduce runs ``all_reduce_algorithm`` where given (``evaluator.algorithm_for``)."""
    env = simpy.Environment()
    net = FlowNetwork(env, G)
    times = []
    for kind, ranks, nbytes in keys:
        start = env.now
        root = 0 if kind in ("broadcast", "reduce") else None
        proc = run_collective(env, net, kind, members_for(G, ranks), nbytes, root=root,
                              algorithm=algorithm_for(kind, all_reduce_algorithm))
        env.run(until=proc)
        times.append(env.now - start)
    return times


def _buckets(samples: list[CollectiveSample]) -> dict[Bucket, list[CollectiveSample]]:
    groups: dict[Bucket, list[CollectiveSample]] = {}
    for s in samples:
        groups.setdefault((s.kind, s.ranks, s.nbytes), []).append(s)
    return dict(sorted(groups.items()))


def _sources(collectives, gemms) -> str:
    names = dict.fromkeys(s.source.split(":")[0] for s in [*collectives, *gemms] if s.source)
    return ", ".join(names) or "unnamed samples"


def _check(base, collectives, gemms) -> None:
    if not collectives and not gemms:
        raise InputError("calibrate: no samples (give collective and/or gemm measurements)")
    bad = [s for s in collectives if not isinstance(s, CollectiveSample)] + \
          [g for g in gemms if not isinstance(g, GemmSample)]
    if bad:
        raise InputError(f"calibrate: expected CollectiveSample / GemmSample, got {type(bad[0]).__name__}")
    if not gpu_nodes(base):
        raise InputError(f"base topology {base.graph.get('name', '?')} has no GPU nodes")
    for s in collectives:
        members_for(base, s.ranks, f"{s.kind} sample from {s.source or '?'}")


def _all_reduce_across_servers(G, keys: list[Bucket]) -> bool:
    """Whether any all_reduce bucket's ranks (the first GPUs of ``G``) span two servers or more."""
    nodes = G.nodes
    return any(len({nodes[m].get("server", 0) for m in members_for(G, ranks)}) > 1
               for kind, ranks, _ in keys if kind == "all_reduce")


def _fit(G0, fit_keys: list[Bucket], measured, kind_factors: bool, all_reduce_algorithm: str | None):
    """One collective fit: (all_reduce algorithm, exercised kinds, knobs, fitted values, rms log error)."""
    evaluator = CollectiveEvaluator(G0, fit_keys, all_reduce_algorithm)
    kinds = evaluator.exercised_kinds()
    evaluator.check_latency_uniform(kinds)
    # The reference kind (factor 1) is the one most buckets hold; ties in COLLECTIVE_KINDS order.
    counts = Counter(key[0] for key in fit_keys)
    by_count = sorted(counts, key=lambda kind: (-counts[kind], COLLECTIVE_KINDS.index(kind)))
    knobs = collective_knobs(G0, kinds, by_count if kind_factors else [])
    values, rms = fit_knobs(evaluator, knobs, measured, G0.graph["sim"])
    log.info("collective fit on %d buckets as %s: rms log error %.4f, %s", len(fit_keys),
             all_reduce_algorithm or "chosen", rms, ", ".join(f"{k.name}={v:.4g}" for k, v in zip(knobs, values)))
    return all_reduce_algorithm, kinds, knobs, values, rms


def calibrate(base, collectives: list[CollectiveSample], gemms: list[GemmSample], *,
              holdout: Holdout | None = None, fit_min_bytes: int = 0, protocol: str | None = None,
              kind_factors: bool = True, all_reduce_algorithm: str | None = None) -> Calibration:
    """Fit ``base`` to the samples; see the module docstring.

    ``holdout``: True for samples the fit must not see (default: every other eligible size of each
    series, ``holdout.alternate_sizes``; ``holdout.nothing`` fits all). ``fit_min_bytes``: buckets
    below it are not fitted (reported as below the fit range). ``protocol``: set the base's
    ``collective_protocol`` (auto, simple, ll128, ll) before fitting; default the base's own.
    ``kind_factors``: fit a bytes factor per collective kind where the samples hold several
    (``knobs``); False keeps one set of rates for every kind. ``all_reduce_algorithm``: fit every
    all_reduce as this algorithm (ring or double_binary_tree: what the measured NCCL ran, NCCL_ALGO),
    default the NCCL-like choice; the profile carries rates, not the algorithm.
    """
    collectives, gemms = list(collectives), list(gemms)
    _check(base, collectives, gemms)
    G0 = base.copy()
    G0.graph["sim"] = dict(base.graph.get("sim") or {})
    if protocol is not None:
        G0.graph["sim"]["collective_protocol"] = protocol
    params = CollectiveParams.from_graph(G0)  # InputError for a bad protocol or sim value
    algorithm_for("all_reduce", all_reduce_algorithm)  # InputError for an algorithm a fit cannot fix
    buckets = _buckets(collectives)
    reps = {key: CollectiveSample(*key, statistics.median(s.time_s for s in group), group[0].source)
            for key, group in buckets.items()}
    eligible = [key for key in reps if key[2] >= fit_min_bytes]
    held_by = holdout if holdout is not None else alternate_sizes(reps[key] for key in eligible)
    held = [key for key in reps if held_by(reps[key])]
    fit_keys = [key for key in eligible if key not in held]
    below = [key for key in reps if key not in held and key not in eligible]
    if collectives and not fit_keys:
        raise InputError(f"calibrate: no collective bucket left to fit ({len(held)} held out, {len(below)} below "
                         f"the {fit_min_bytes} B fit floor); hold out fewer or lower the floor")
    notes = [f"Calibrated by tpsim calibrate from {base.graph.get('name', '?')} with measurements from: "
             f"{_sources(collectives, gemms)}."]
    parameters: dict = {}
    base_parameters: dict = {}
    graph = G0
    knobs, values = [], []
    if fit_keys:
        measured = np.array([reps[key].time_s for key in fit_keys])
        fits = [_fit(G0, fit_keys, measured, kind_factors, all_reduce_algorithm)]
        if all_reduce_algorithm is None and not params.nvls and _all_reduce_across_servers(G0, fit_keys):
            # NCCL's choice is not in an nccl-tests log: where the simulator's choice across servers
            # (the tree, on slow NICs) explains the times worse than NCCL's ring, the ring is kept. Not
            # on NVLink SHARP servers, where NCCL runs its NVLS tree across servers by default (every
            # published two-server H100 and B200 run), and a ring could match it only with NICs faster
            # than their line rate.
            fits.append(_fit(G0, fit_keys, measured, kind_factors, "ring"))
        algorithm, kinds, knobs, values, rms = min(fits, key=lambda fit: fit[4])
        if algorithm != all_reduce_algorithm:
            notes.append(f"The all_reduce across servers fitted better as the ring (rms log error {rms:.3g}) than as "
                         f"the simulator's choice of algorithm ({fits[0][4]:.3g}): NCCL's choice is not in the "
                         f"logs, and the ring's is kept.")
            all_reduce_algorithm = algorithm
        graph = apply_values(G0, knobs, values)
        fitted, before = _collective_parameters(G0, graph, knobs, values)
        parameters.update(fitted)
        base_parameters.update(before)
        notes += _collective_notes(G0, knobs, values, kinds, fit_keys, held, fit_min_bytes, rms, params.protocol)
        if all_reduce_algorithm and any(key[0] == "all_reduce" for key in fit_keys):
            notes.append(f"Every all_reduce fitted and predicted as {all_reduce_algorithm}, not the NCCL-like choice; "
                         f"the profile carries the rates, and predictions with it choose again.")
    gemm = fit_gemms(graph, gemms)
    if gemm.sim:
        config = ComputeConfig.from_sim(G0.graph["sim"])  # before the update: without collectives graph is G0
        graph.graph["sim"].update(gemm.sim)
        parameters.update(gemm.sim)
        # The base cap as the model resolved it (a preset's comes from its device's achievable matmul rate).
        base_cap = ComputeModel(config).cap(graph.nodes[gpu_nodes(graph)[0]]["device"], gemms[0].dtype)
        base_parameters.update(gemm_efficiency=base_cap, half_efficiency_dim=config.half_efficiency_dim)
        if "gemm_efficiency_after_comm" in gemm.sim:  # unset in the base: every gemm ran at gemm_efficiency
            base_parameters["gemm_efficiency_after_comm"] = config.gemm_efficiency_after_comm or base_cap
        for dtype, (listed, raised) in gemm.peaks_TFLOPs.items():
            parameters[f"peak_tflops.{dtype}"], base_parameters[f"peak_tflops.{dtype}"] = raised, listed
        _raise_peaks(graph, gemm.peaks_TFLOPs)
        notes += list(gemm.notes)
    carried = (["collective_protocol"] if protocol is not None else []) + sorted(gemm.sim)
    profile = carried_profile(base, graph, knobs, values, carried, _sources(collectives, gemms))
    graph.graph["sim"]["calibration"] = profile_document(profile)  # what `--topology FILE:N` rebuilds from
    graph.graph["name"] = f"{base.graph.get('name', 'topology')}-calibrated"
    base_notes = base.graph.get("notes", "")
    graph.graph["notes"] = " ".join(notes) + (f" Base: {base_notes}" if base_notes else "")
    keys = list(reps)
    predicted = dict(zip(keys, simulate_buckets(graph, keys, all_reduce_algorithm))) if keys else {}

    def rows(selected) -> tuple[ErrorRow, ...]:
        return tuple(ErrorRow(*key, reps[key].time_s, predicted[key], predicted[key] / reps[key].time_s - 1,
                              len(buckets[key])) for key in selected)

    return Calibration(graph, parameters, rows(fit_keys), rows(held), rows(below), gemm.rows, tuple(notes),
                       fit_min_bytes, base_parameters, profile)


def _raise_peaks(graph, peaks: dict) -> None:
    if not peaks:
        return
    name = graph.nodes[gpu_nodes(graph)[0]]["device"].get("name")
    for node in gpu_nodes(graph):
        device = graph.nodes[node]["device"]
        if device.get("name") == name:
            rates = {**device["peak_tflops"], **{dtype: raised for dtype, (_, raised) in peaks.items()}}
            graph.nodes[node]["device"] = {**device, "peak_tflops": rates}


def _collective_parameters(G0, graph, knobs, values) -> tuple[dict, dict]:
    fitted, base = {}, {}
    for knob, value in zip(knobs, values):
        if knob.key == "collective_startup_bytes":
            value = graph.graph["sim"][knob.key]
        fitted[knob.name], base[knob.name] = value, knob.base
        if knob.target == "bandwidth":
            name = f"{knob.key}.bandwidth_GBps"
            fitted[name] = max(d["bandwidth_GBps"] for _, _, d in graph.edges(data=True) if d.get("kind") == knob.key)
            base[name] = max(d["bandwidth_GBps"] for _, _, d in G0.edges(data=True) if d.get("kind") == knob.key)
    return fitted, base


def _collective_notes(G0, knobs, values, kinds, fit_keys, held, fit_min_bytes, rms, protocol) -> list[str]:
    series = sorted({(k, r) for k, r, _ in fit_keys})
    fitted = ", ".join(f"{k.name} {k.start:.4g} -> {v:.4g}" for k, v in zip(knobs, values))
    notes = [f"Fitted (log-time least squares, rms log error {rms:.3f}) to {len(fit_keys)} size buckets of "
             f"{', '.join(f'{k} on {r}' for k, r in series)} from {format_size(min(b for *_, b in fit_keys))} to "
             f"{format_size(max(b for *_, b in fit_keys))} ({len(held)} held out"
             + (f", sizes below {format_size(fit_min_bytes)} not fitted" if fit_min_bytes else "") + f"): {fitted}."]
    others = sorted({d["kind"] for _, _, d in G0.edges(data=True)} - set(kinds))
    kept = ["collective_step_latency_us (indistinguishable from hop latency)",
            "collective_inter_step_latency_us and collective_net_overhead_us (network step costs, not fitted)",
            "NCCL's per-channel tree caps (collective_nccl_arch)", "pipeline chunking",
            f"collective_protocol ({protocol})"]
    if others:
        kept.insert(0, f"links of kind {', '.join(others)} (no sample crosses them)")
    notes.append(f"Kept at base values: {'; '.join(kept)}.")
    factors = [(k.key, v) for k, v in zip(knobs, values) if k.target == "kind"]
    if factors:
        reference = sorted({kind for kind, *_ in fit_keys} - {kind for kind, _ in factors})
        notes.append(f"collective_kind_bytes_factors: {', '.join(f'{kind} x{v:.3g}' for kind, v in factors)}: "
                     f"bytes of work per byte of S, relative to {', '.join(reference)} (the reference: most "
                     f"buckets); the backend costs each kind its own way (--no-kind-factors fits one set of "
                     f"rates for every kind).")
    names = [k.name for k in knobs]
    if "collective_startup_bytes" in names:
        startup = int(round(values[names.index("collective_startup_bytes")]))
        inside = sum(1 for *_, b in fit_keys if b < startup)
        if inside > len(fit_keys) / 2:
            notes.append(f"collective_startup_bytes = {startup / 2**20:.1f} MiB: {inside} of {len(fit_keys)} fitted "
                         f"buckets lie in the start-up regime, where its term is a per-byte cost S / channel "
                         f"bandwidth independent of the rank count (what the ring's 2(n-1)/n S / B alone cannot "
                         f"fit); above that size the cost stops growing.")
    if fit_min_bytes:
        notes.append(f"Sizes below {format_size(fit_min_bytes)} were not fitted: predictions there are "
                     f"extrapolations.")
    at_bound = [k.name for k, v in zip(knobs, values) if min(abs(np.log(v / k.lower)), abs(np.log(v / k.upper))) < 1e-3]
    if at_bound:
        notes.append(f"At a bound (the data push further): {', '.join(at_bound)}.")
    return notes
