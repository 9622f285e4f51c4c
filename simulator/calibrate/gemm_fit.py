"""The compute fit: ``gemm_efficiency`` and ``half_efficiency_dim`` from measured gemms.

Through ``simulator.compute.ComputeModel`` itself (time = 2mkn / (peak x min(cap x dim / (dim + h),
memory roof))), on the device of the topology's first GPU: bounded least squares on log time in
log(cap), log(h), with the same weak pull towards the base values as the collective fit
(``lsq.PRIOR_WEIGHT``), so a single shape fixes cap and leaves h at its base value.

Which samples: those at the largest ``concurrent`` present. A schedule runs every rank's gemm at
once, so on a CPU host whose ranks share cores the rate that matters is the one under full load;
samples at other concurrencies are shown in the rows, not fitted.

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


def _buckets(gemms: list[GemmSample]) -> dict:
    groups: dict[tuple, list[float]] = {}
    for g in gemms:
        groups.setdefault((g.m, g.k, g.n, g.dtype, g.concurrent), []).append(g.time_s)
    return {key: statistics.median(times) for key, times in groups.items()}


def fit_gemms(G, gemms: list[GemmSample]) -> GemmFit:
    """Fit the compute knobs of ``G`` (its first GPU's device, its sim dict) to ``gemms``; see module doc."""
    from scipy.optimize import least_squares

    from topologies import gpu_nodes

    if not gemms:
        return GemmFit()
    sim = G.graph.get("sim") or {}
    base = ComputeConfig.from_sim(sim)
    first = gpu_nodes(G)[0]
    device = {**G.nodes[first]["device"], "peak_tflops": dict(G.nodes[first]["device"]["peak_tflops"])}
    buckets = _buckets(gemms)
    top = max(key[4] for key in buckets)
    fitted = [key for key in buckets if key[4] == top]
    notes, peaks = [], {}
    for dtype in sorted({key[3] for key in fitted}):
        name = _device_dtype(device, dtype, base)
        if name not in device["peak_tflops"]:
            continue  # ComputeModel raises the clear error below
        # The rate a large gemm would reach by the model's thin-matrix factor (at the base h): what
        # cap = 1 must be able to reproduce.
        best = max(2.0 * m * k * n / buckets[(m, k, n, d, c)] * (min(m, k, n) + base.half_efficiency_dim)
                   / min(m, k, n) for m, k, n, d, c in fitted if d == dtype) / 1e12
        listed = float(device["peak_tflops"][name])
        if best > listed:
            device["peak_tflops"][name] = best
            peaks[name] = (listed, best)
            notes.append(f"peak_tflops[{name}] of {device.get('name', '?')} raised from {listed:g} to {best:.4g}: "
                         f"measured faster than listed")
    measured = np.log([buckets[key] for key in fitted])
    x_base = np.log([min(max(base.gemm_efficiency, _CAP_BOUNDS[0]), _CAP_BOUNDS[1]),
                     min(max(base.half_efficiency_dim, _HALF_DIM_BOUNDS[0]), _HALF_DIM_BOUNDS[1])])

    def times(cap: float, half: float, keys) -> np.ndarray:
        model = ComputeModel(ComputeConfig.from_sim(sim, gemm_efficiency=cap, half_efficiency_dim=half))
        return np.array([model.gemm_time_s(device, d, m, k, n) for m, k, n, d, _ in keys])

    def residuals(x: np.ndarray) -> np.ndarray:
        cap, half = np.exp(x)
        return np.concatenate([np.log(times(min(cap, 1.0), half, fitted)) - measured, PRIOR_WEIGHT * (x - x_base)])

    bounds = ([math.log(_CAP_BOUNDS[0]), math.log(_HALF_DIM_BOUNDS[0])],
              [math.log(_CAP_BOUNDS[1]), math.log(_HALF_DIM_BOUNDS[1])])
    result = least_squares(residuals, x_base, bounds=bounds, method="trf", diff_step=1e-4)
    cap, half = (float(v) for v in np.exp(result.x))
    cap = min(cap, 1.0)
    keys = list(buckets)
    predicted = times(cap, half, keys)
    rows = tuple(GemmRow(m, k, n, d, c, buckets[(m, k, n, d, c)], float(p), float(p) / buckets[(m, k, n, d, c)] - 1,
                         c == top) for (m, k, n, d, c), p in zip(keys, predicted))
    shapes = len({key[:3] for key in fitted})
    notes.append(f"gemm_efficiency and half_efficiency_dim from {len(fitted)} gemm buckets ({shapes} shapes) at "
                 f"concurrency {top} on {device.get('name', '?')}"
                 + ("; one shape cannot place half_efficiency_dim, it stays near its base value" if shapes == 1 else ""))
    return GemmFit({"gemm_efficiency": cap, "half_efficiency_dim": half}, peaks, rows, tuple(notes))
