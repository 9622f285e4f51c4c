"""The collective fit: bounded least squares on log time, over the knobs of ``knobs``.

Objective: sum over fitted size buckets of log(predicted / measured)^2, i.e. relative error, each
bucket weighted alike whatever its time (a 30 us and a 8 ms bucket count the same), plus a weak pull
of every knob towards its base value, PRIOR_WEIGHT^2 x log(value / base)^2. The pull decides knobs
the samples cannot tell apart (one rank count cannot separate per-hop latency from base latency;
sizes all above the start-up regime cannot place its end) and is too weak to move a knob the data
determine: a factor e away from base costs as much as one bucket off by 0.1%.

Then every knob the fit moved but the buckets do not pin (a factor 1.5 one way or the other costs them
less than ``RELEASE_RMS``) goes back to its base value where that stays within ``RELEASE_RMS`` of the
fit's rms log error (cheapest first), so that a profile carries the preset's value
for what its logs could not tell (``carry`` names those undetermined) rather than wherever the solver
stopped: a two-server H100 log that NCCL's NVLS tree runs at its per-channel cap says nothing about the
NICs, yet least squares moved their rate from 47 to 33 GB/s, which would make every ring on a larger
cluster 30% too slow.

Solver: ``scipy.optimize.least_squares`` (trust-region reflective, bounds in log space), finite
differences (the model has kinks where the algorithm, protocol or start-up regime changes), from
several starts (the end of the start-up regime has local minima: where every sample lies on one
side of it, its gradient is zero), keeping the lowest cost. The starts put that end at sizes from the
smallest to the largest fitted one. At the largest, the start-up term is a cost S / channel_bandwidth
of every fitted size, independent of the rank count: how this model can absorb a per-byte cost that
does not scale as the ring's 2(n-1)/n (``fit`` notes when it wins).
"""

from __future__ import annotations

import logging
import math

import numpy as np

from simulator.calibrate.knobs import Knob, set_kind_factor
from simulator.collectives.params import CollectiveParams

__all__ = ["fit_knobs", "PRIOR_WEIGHT", "RELEASE_FACTOR", "RELEASE_RMS", "STARTUP_STARTS"]

log = logging.getLogger(__name__)

PRIOR_WEIGHT = 1e-3
"""Weight of the pull towards base values (see the module docstring)."""

RELEASE_RMS = 0.005
"""The rms log error (0.5%) within which a knob the data do not pin goes back to its base value."""

RELEASE_FACTOR = 1.5
"""A fitted knob that this factor up or down moves by no more than ``RELEASE_RMS`` in rms log error is not
determined by the data (``_release_undetermined``)."""

STARTUP_STARTS = 5
"""Starting values of collective_startup_bytes besides the base value: this many, log-spaced from the
smallest to the largest fitted size."""


def _split(knobs: list[Knob], values, sim: dict) -> tuple[dict, dict, CollectiveParams]:
    scale, latency, merged = {}, {}, dict(sim)
    for knob, value in zip(knobs, values):
        if knob.target == "bandwidth":
            scale[knob.key] = value
        elif knob.target == "latency":
            latency[knob.key] = value
        elif knob.target == "kind":
            set_kind_factor(merged, knob.key, value)
        else:
            merged[knob.key] = value
    if "collective_startup_bytes" in merged:
        merged["collective_startup_bytes"] = int(round(merged["collective_startup_bytes"]))
    return scale, latency, CollectiveParams.from_sim(merged)


def predict_with(evaluator, knobs: list[Knob], values, sim: dict) -> np.ndarray:
    """The evaluator's times (seconds, one per key) with the knobs at ``values``."""
    scale, latency, params = _split(knobs, values, sim)
    return evaluator.predict(scale, latency, params)


def fit_knobs(evaluator, knobs: list[Knob], measured_s: np.ndarray, sim: dict) -> tuple[list[float], float]:
    """Fitted knob values and the final root-mean-square log error over the buckets.

    ``evaluator.keys`` are the fitted buckets in the order of ``measured_s``; ``sim`` is the base
    topology's sim dict (the knobs' sim keys override it).
    """
    from scipy.optimize import least_squares  # here: only calibrate needs scipy, slow to import

    log_measured = np.log(measured_s)
    x_base = np.log([k.start for k in knobs])
    lower = np.array([k.log_bounds[0] for k in knobs])
    upper = np.array([k.log_bounds[1] for k in knobs])

    def residuals(x: np.ndarray) -> np.ndarray:
        predicted = predict_with(evaluator, knobs, np.exp(x), sim)
        return np.concatenate([np.log(predicted) - log_measured, PRIOR_WEIGHT * (x - x_base)])

    starts = [x_base]
    names = [k.name for k in knobs]
    if "collective_startup_bytes" in names:
        i = names.index("collective_startup_bytes")
        sizes = [max(nbytes, 1) for _, _, nbytes in evaluator.keys]
        for value in np.linspace(math.log(min(sizes)), math.log(max(sizes)), STARTUP_STARTS):
            x = x_base.copy()
            x[i] = np.clip(value, lower[i], upper[i])
            if all(abs(x[i] - other[i]) > 0.1 for other in starts):
                starts.append(x)
    best = None
    for x0 in starts:
        result = least_squares(residuals, x0, bounds=(lower, upper), method="trf", diff_step=1e-3,
                               x_scale=1.0, max_nfev=200 * len(knobs))
        log.debug("start %s: cost %.6g after %d evaluations", np.exp(x0), result.cost, result.nfev)
        if best is None or result.cost < best.cost:
            best = result
    x = _release_undetermined(best.x, x_base, (lower, upper),
                              lambda trial: _rms(residuals(trial)[: len(measured_s)]))
    values = [float(v) for v in np.exp(x)]
    return values, _rms(residuals(x)[: len(measured_s)])


def _rms(errors: np.ndarray) -> float:
    return float(np.sqrt(np.mean(errors ** 2)))


def _release_undetermined(x: np.ndarray, x_base: np.ndarray, bounds, rms_at) -> np.ndarray:
    """``x`` with the knobs the data do not determine set back to their base values (module doc).

    Least squares leaves a knob the buckets do not pin wherever its last steps took it (a NIC rate
    fitted on a log whose every size is held by a cap the NIC does not set: the data say only that the
    NICs are no slower than that); carried to a larger cluster, such a value decides times the log never
    measured. A knob is determined where moving it a factor ``RELEASE_FACTOR`` either way from its fitted
    value (within the knob's ``bounds``, log space) raises the rms log error by more than ``RELEASE_RMS``;
    one that is not goes back to its base value where that keeps the rms within ``RELEASE_RMS`` of the
    fit's (cheapest first), and ``carry`` names it undetermined.
    """
    fitted_rms = rms_at(x)
    lower, upper = bounds
    step = math.log(RELEASE_FACTOR)

    def pinned(i: int) -> bool:
        up, down = min(x[i] + step, upper[i]), max(x[i] - step, lower[i])
        return min(rms_at(_with(x, i, up)), rms_at(_with(x, i, down))) > fitted_rms + RELEASE_RMS

    loose = [i for i in range(len(x)) if x[i] != x_base[i] and not pinned(i)]
    cost = {i: rms_at(_with(x, i, x_base[i])) for i in loose}
    for i in sorted(loose, key=cost.get):
        trial = _with(x, i, x_base[i])  # on top of the knobs released before it
        if rms_at(trial) <= fitted_rms + RELEASE_RMS:
            x = trial
    return x


def _with(x: np.ndarray, i: int, value: float) -> np.ndarray:
    """A copy of ``x`` with knob ``i`` at ``value``."""
    trial = x.copy()
    trial[i] = value
    return trial
