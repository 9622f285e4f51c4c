"""The step fit: one device's ``gemm_efficiency`` from whole training steps measured on it, and its leave-one-out check.

One scalar e, the ``sim.gemm_efficiency`` that replaces the device's published large-GEMM cap
(``simulator.compute``; the shape factor and the memory roof stay), minimising the rms of
log(predicted / measured) step time over the entries, each predicted by the whole-model plan
(``step_timing``). A step's predicted time does not rise with e, so a bounded 1-D search on x = log e
over ``BOUNDS`` = (0.05, 1] suffices: with one entry the root of log(predicted / measured) (Brent's
method, to 1e-9 in x), with several the minimum of the rms (Brent's bounded minimiser, to 1e-7 in x),
compared with both ends. The best value at an end of the range is reported as ``at_bound``: measured
steps faster than tpsim predicts with every GEMM at its full shape-limited rate (e = 1), or more than
20 times slower than GEMMs at their full rate allow (e = 0.05): either way the time lies elsewhere
than in the GEMMs (communication, the line not matching the job), and `tpsim calibrate` writes nothing
without ``--force``.

Leave-one-out (two entries or more): each entry predicted at the e fitted on the others, its error
beside the uncalibrated one; ``geomean_error`` summarises |error| as exp(mean |log ratio|) - 1, as the
experiments do.

Example (one entry measured at e = 0.6 is fitted back to 0.6)::

    >>> fit = fit_steps([entry_measured_at_0_6])                     # doctest: +SKIP
    >>> round(fit.efficiency, 4)                                      # doctest: +SKIP
    0.6
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from simulator.calibrate.step_timing import TimedEntry

__all__ = ["BOUNDS", "StepRow", "StepsFit", "fit_efficiency", "fit_steps", "geomean_error"]

BOUNDS = (0.05, 1.0)
"""The range of ``gemm_efficiency`` searched: a GEMM at 5% to 100% of its shape-limited rate."""
_X_BOUNDS = (math.log(BOUNDS[0]), math.log(BOUNDS[1]))
_AT_BOUND = 1e-4
"""An optimum within this distance (in log e) of an end of ``BOUNDS`` sits at that end."""


def geomean_error(ratios) -> float:
    """exp(mean |log r|) - 1 over predicted / measured ratios ``ratios`` (0 for none)."""
    ratios = list(ratios)
    return math.exp(sum(abs(math.log(r)) for r in ratios) / len(ratios)) - 1 if ratios else 0.0


@dataclass(frozen=True)
class StepRow:
    """One entry: measured, predicted before and after the fit, and held out (fitted on the others)."""

    name: str
    predict: str
    arrangement: str
    measured_s: float
    before_s: float
    after_s: float
    held_out_efficiency: float | None = None
    """``gemm_efficiency`` fitted on the other entries (None: one entry, or ``--no-holdout``)."""
    held_out_s: float | None = None
    """This entry's step predicted at ``held_out_efficiency``."""

    @property
    def error_before(self) -> float:
        """Uncalibrated predicted / measured - 1."""
        return self.before_s / self.measured_s - 1

    @property
    def error_after(self) -> float:
        """Predicted at the fitted value / measured - 1."""
        return self.after_s / self.measured_s - 1

    @property
    def error_held_out(self) -> float | None:
        """Predicted at the value fitted on the others / measured - 1 (None: not held out)."""
        return None if self.held_out_s is None else self.held_out_s / self.measured_s - 1

    def to_dict(self) -> dict:
        """The ``--json`` entry."""
        return {"name": self.name, "predict": self.predict, "arrangement": self.arrangement,
                "measured_s": self.measured_s, "before_s": self.before_s, "after_s": self.after_s,
                "error_before": self.error_before, "error_after": self.error_after,
                "held_out_efficiency": self.held_out_efficiency, "held_out_s": self.held_out_s,
                "error_held_out": self.error_held_out}


@dataclass(frozen=True)
class StepsFit:
    """What the step fit found (module doc)."""

    efficiency: float
    rms_log_error: float
    at_bound: str | None
    """None, or a sentence saying which end of ``BOUNDS`` the fit sits at and what that means."""
    rows: tuple[StepRow, ...]

    @property
    def held_out(self) -> bool:
        """Whether the rows carry leave-one-out predictions."""
        return any(r.held_out_s is not None for r in self.rows)


def _rms(entries: list[TimedEntry], x: float) -> float:
    e = math.exp(min(x, 0.0))
    return math.sqrt(sum(math.log(t.step_s(e) / t.measured_s) ** 2 for t in entries) / len(entries))


def _bound_sentence(entries: list[TimedEntry], x: float) -> str | None:
    """The sentence for an optimum ``x`` at an end of the range, else None."""
    if x > _X_BOUNDS[1] - _AT_BOUND:
        return (f"gemm_efficiency would go above {BOUNDS[1]:g}: the measured steps are faster than tpsim predicts "
                f"with every GEMM at its full shape-limited rate, so the time the model is missing is not in the "
                f"GEMMs (communication, overlap, a predict line that does not match the job)")
    if x < _X_BOUNDS[0] + _AT_BOUND:
        return (f"gemm_efficiency would go below {BOUNDS[0]:g}: the measured steps are more than "
                f"{1 / BOUNDS[0]:.0f} times slower than GEMMs at their full rate allow; check that each predict "
                f"line is the job measured")
    return None


def fit_efficiency(entries: list[TimedEntry]) -> tuple[float, float, str | None]:
    """(e, rms log error at e, the at-bound sentence or None) for ``entries`` (module doc)."""
    from scipy.optimize import brentq, minimize_scalar  # here: only calibrate needs scipy, slow to import

    lo, hi = _X_BOUNDS
    if len(entries) == 1:
        entry = entries[0]

        def gap(x: float) -> float:
            return math.log(entry.step_s(math.exp(min(x, 0.0))) / entry.measured_s)

        g_lo, g_hi = gap(lo), gap(hi)
        if g_hi >= 0:  # still too slow at e = 1
            x = hi
        elif g_lo <= 0:  # still too fast at e = 0.05
            x = lo
        else:
            x = brentq(gap, lo, hi, xtol=1e-9, rtol=1e-12)
    else:
        found = minimize_scalar(lambda x: _rms(entries, x), bounds=(lo, hi), method="bounded",
                                options={"xatol": 1e-7})
        x = min((float(found.x), lo, hi), key=lambda v: (_rms(entries, v), v != found.x))
    e = BOUNDS[0] if x <= lo else min(math.exp(x), BOUNDS[1])  # the bound itself, not exp(log(0.05))
    return e, _rms(entries, x), _bound_sentence(entries, x)


def fit_steps(entries: list[TimedEntry], holdout: bool = True) -> StepsFit:
    """The fit on every entry, and (``holdout``, two entries or more) each entry fitted on the others."""
    e, rms, at_bound = fit_efficiency(entries)
    rows = []
    for i, t in enumerate(entries):
        held_e = held_s = None
        if holdout and len(entries) > 1:
            held_e = fit_efficiency(entries[:i] + entries[i + 1:])[0]
            held_s = t.step_s(held_e)
        rows.append(StepRow(t.entry.label, t.entry.predict, t.arrangement, t.measured_s, t.step_s(None),
                            t.step_s(e), held_e, held_s))
    return StepsFit(e, rms, at_bound, tuple(rows))
