"""The compute fit: ``gemm_efficiency`` and ``half_efficiency_dim`` from measured gemms.

Through ``simulator.compute.ComputeModel`` itself (time = 2mkn / (peak x min(cap x shape(m, k, n; h),
memory roof)), the shape factor being tile and wave quantization on a GPU and dim / (dim + h) on a CPU
rank), on the device of the topology's first GPU: bounded least squares on log time in
log(cap), log(h), with the same weak pull towards the base values as the collective fit
(``lsq.PRIOR_WEIGHT``), so a single shape fixes cap and leaves h at its base value.

Which samples: those at the largest ``concurrent`` present. A schedule runs every rank's gemm at
once, so on a CPU host whose ranks share cores the rate that matters is the one under full load;
samples at other concurrencies are shown in the rows, not fitted.

Two conditions (``simulator.compute``): lock-step samples (back to back on every rank) fit ``cap`` and
``h``; samples taken right after a collective (``GemmSample.after_comm``, from ``tpsim bench --form
interleaved``) then fit ``gemm_efficiency_after_comm`` alone, at that ``h``. With after-comm samples
only, they fit ``cap`` and ``h`` and every gemm is predicted at their rate (the notes say so).

A device slower on paper than measured: where a dtype's best measured rate is above the device's
listed peak (a placeholder CPU core, say), cap <= 1 cannot fit it, so that dtype's ``peak_tflops`` is
raised, on every GPU node with that device, to the measured rate divided by the thin-matrix factor
at the base h (the large-gemm rate the model implies), and the notes say so.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

import numpy as np

from simulator.calibrate.lsq import PRIOR_WEIGHT
from simulator.calibrate.rows import GemmRow
from simulator.calibrate.samples import GemmSample
from simulator.compute import ComputeConfig, ComputeModel
from topologies import gpu_nodes

__all__ = ["GemmFit", "fit_gemms"]

_CAP_BOUNDS = (1e-4, 1.0)
_HALF_DIM_BOUNDS = (1e-3, 1e5)


@dataclass(frozen=True)
class GemmFit:
    """What the compute fit found: sim values, raised peaks, rows, notes."""

    sim: dict = field(default_factory=dict)
    """``gemm_efficiency`` and ``half_efficiency_dim`` (empty without samples)."""
    peaks_TFLOPs: dict = field(default_factory=dict)
    """dtype -> (listed, raised) peak TFLOP/s, for dtypes measured faster than the listed peak."""
    rows: tuple[GemmRow, ...] = ()
    notes: tuple[str, ...] = ()


def _device_dtype(device: dict, dtype: str, config: ComputeConfig) -> str:
    rates = device.get("peak_tflops", {})
    return "tfloat32" if dtype == "float32" and config.allow_tf32 and "tfloat32" in rates else dtype


def _flat(times, cap: float, half: float, keys) -> bool:
    """Whether the model's times of ``keys`` stay put when cap and h move a little (every gemm on the memory
    roof there): a least-squares step sees no slope."""
    return bool(np.allclose(times(cap, half, keys), times(cap * 0.999, half * 1.001, keys), rtol=1e-12, atol=0.0))


def _implied_cap(device: dict, keys, buckets: dict, base: ComputeConfig, device_dtype) -> float:
    """The median over ``keys`` of the cap at which the model's compute time is the measured one."""
    caps = []
    for key in keys:
        m, k, n, dtype = key[:4]
        peak = float(device["peak_tflops"][device_dtype(device, dtype, base)]) * 1e12
        caps.append(2.0 * m * k * n / buckets[key] / peak / ComputeModel(base).shape(device, m, k, n))
    return min(max(statistics.median(caps), _CAP_BOUNDS[0]), _CAP_BOUNDS[1])


def _buckets(gemms: list[GemmSample]) -> dict:
    groups: dict[tuple, list[float]] = {}
    for g in gemms:
        groups.setdefault((g.m, g.k, g.n, g.dtype, g.concurrent, g.after_comm), []).append(g.time_s)
    return {key: statistics.median(times) for key, times in groups.items()}


def _at_top(keys: list[tuple]) -> list[tuple]:
    """The keys at the largest concurrency among ``keys``."""
    top = max(key[4] for key in keys) if keys else 0
    return [key for key in keys if key[4] == top]


def _raise_listed_peaks(device: dict, buckets: dict, fitted: list[tuple], base: ComputeConfig) -> tuple[dict, list]:
    """Raise, in ``device``, each dtype's peak that a fitted bucket beats (module doc); (raised, notes)."""
    peaks, notes = {}, []
    for dtype in sorted({key[3] for key in fitted}):
        name = _device_dtype(device, dtype, base)
        if name not in device["peak_tflops"]:
            continue  # ComputeModel raises the clear error later
        # The rate a large gemm would reach by the model's shape factor (at the base h): what
        # cap = 1 must be able to reproduce.
        shape = ComputeModel(base).shape
        best = max(2.0 * key[0] * key[1] * key[2] / buckets[key] / shape(device, *key[:3])
                   for key in fitted if key[3] == dtype) / 1e12
        listed = float(device["peak_tflops"][name])
        if best > listed:
            device["peak_tflops"][name] = best
            peaks[name] = (listed, best)
            notes.append(f"peak_tflops[{name}] of {device.get('name', '?')} raised from {listed:g} to {best:.4g}: "
                         f"measured faster than listed")
    return peaks, notes


def fit_gemms(G, gemms: list[GemmSample]) -> GemmFit:
    """Fit the compute knobs of ``G`` (its first GPU's device, its sim dict) to ``gemms``; see module doc."""
    from scipy.optimize import least_squares  # here: only calibrate needs scipy, slow to import

    if not gemms:
        return GemmFit()
    sim = G.graph.get("sim") or {}
    base = ComputeConfig.from_sim(sim)
    first = gpu_nodes(G)[0]
    device = {**G.nodes[first]["device"], "peak_tflops": dict(G.nodes[first]["device"]["peak_tflops"])}
    buckets = _buckets(gemms)
    lock_step = _at_top([key for key in buckets if not key[5]])
    after = _at_top([key for key in buckets if key[5]])
    main = lock_step or after
    peaks, notes = _raise_listed_peaks(device, buckets, lock_step + after, base)

    def times(cap: float, half: float, keys, cap_after: float | None = None) -> np.ndarray:
        config = ComputeConfig.from_sim(sim, gemm_efficiency=cap, half_efficiency_dim=half,
                                        gemm_efficiency_after_comm=cap_after)
        model = ComputeModel(config)
        return np.array([model.gemm_time_s(device, key[3], *key[:3], after_comm=key[5]) for key in keys])

    def solve(residuals, x0, lower, upper) -> np.ndarray:
        x0 = np.clip(x0, lower, upper)
        return least_squares(residuals, x0, bounds=(lower, upper), method="trf", diff_step=1e-4).x

    # cap and h on the main population (lock-step, else after-comm), with a weak pull to the base values.
    measured = np.log([buckets[key] for key in main])
    base_cap = ComputeModel(base).cap(device, main[0][3])  # the preset's: its own, or the device's achievable
    x_base = np.log([base_cap, max(base.half_efficiency_dim, _HALF_DIM_BOUNDS[0])])
    lower = np.log([_CAP_BOUNDS[0], _HALF_DIM_BOUNDS[0]])
    upper = np.log([_CAP_BOUNDS[1], _HALF_DIM_BOUNDS[1]])
    # (The main population is timed as back-to-back gemms: its own condition, whichever it is.)
    as_main = [(*key[:5], False) for key in main]
    x_start = x_base
    if _flat(times, base_cap, base.half_efficiency_dim, as_main):
        # At the base values every gemm sits on the memory roof, where the model does not move with cap
        # or h and the solver would stop where it starts: start from the cap the measured rates imply.
        x_start = np.array([math.log(_implied_cap(device, main, buckets, base, _device_dtype)), x_base[1]])
    x = solve(lambda x: np.concatenate([np.log(times(min(float(np.exp(x[0])), 1.0), float(np.exp(x[1])), as_main))
                                        - measured, PRIOR_WEIGHT * (x - x_base)]), x_start, lower, upper)
    cap, half = min(float(np.exp(x[0])), 1.0), float(np.exp(x[1]))
    fitted_sim = {"gemm_efficiency": cap, "half_efficiency_dim": half}
    cap_after = None
    if lock_step and after:
        # gemm_efficiency_after_comm alone, at the h the lock-step gemms fixed.
        measured_after = np.log([buckets[key] for key in after])
        xa = solve(lambda x: np.concatenate([np.log(times(cap, half, after, min(float(np.exp(x[0])), 1.0)))
                                             - measured_after, PRIOR_WEIGHT * (x - math.log(cap))]),
                   np.array([math.log(cap)]), lower[:1], upper[:1])
        cap_after = min(float(np.exp(xa[0])), 1.0)
        fitted_sim["gemm_efficiency_after_comm"] = cap_after
    if _flat(times, cap, half, as_main):
        notes.append("every fitted gemm is bound by the device's memory rate in the model (at any gemm_efficiency "
                     "and half_efficiency_dim), so these measurements do not determine either: they keep their "
                     "base values; measure larger shapes (tpsim bench --gemm-shapes)")
    fitted = set(main) | (set(after) if cap_after is not None else set())
    keys = list(buckets)
    predicted = times(cap, half, keys, cap_after)
    rows = tuple(GemmRow(*key[:5], buckets[key], float(p), float(p) / buckets[key] - 1, key in fitted, key[5])
                 for key, p in zip(keys, predicted))
    shapes = len({key[:3] for key in main})
    what = "back-to-back (lock-step) gemm" if lock_step else "after-collective (interleaved) gemm"
    notes.append(f"gemm_efficiency and half_efficiency_dim from {len(main)} {what} buckets ({shapes} shapes) at "
                 f"concurrency {main[0][4]} on {device.get('name', '?')}"
                 + ("; one shape cannot place half_efficiency_dim, it stays near its base value"
                    if shapes == 1 else ""))
    if cap_after is not None:
        notes.append(f"gemm_efficiency_after_comm = {cap_after:.4g} (gemm_efficiency {cap:.4g}) from {len(after)} "
                     f"gemm buckets timed right after a collective: a gemm that follows a communication op "
                     f"runs at it")
    elif not lock_step:
        notes.append("no lock-step gemm rows: every gemm is predicted at the rate measured right after a collective "
                     "(add gemm to tpsim bench --ops for back-to-back gemms)")
    return GemmFit(fitted_sim, peaks, rows, tuple(notes))
