"""``Calibration``: the calibrated topology, its profile, the fitted values, the error rows, writing files."""

from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx

from simulator.calibrate.rows import ErrorRow, GemmRow, format_gemm_rows, format_rows, summary_lines
from simulator.files import replacing
from simulator.sizes import format_size
from topologies import save_topology
from topologies.profile import Profile, write_profile

__all__ = ["Calibration"]


@dataclass(frozen=True)
class Calibration:
    """The result of ``calibrate``; ``write`` saves ``graph`` as a topology file."""

    graph: nx.DiGraph
    """The base topology with fitted link rates and latencies and fitted ``sim`` keys."""
    parameters: dict
    """Fitted values by name: ``<kind>.bandwidth_scale``, ``<kind>.bandwidth_GBps`` (the class's largest
    edge after scaling), ``<kind>.latency_us``, sim keys, ``gemm_efficiency``, ``half_efficiency_dim``."""
    fit_rows: tuple[ErrorRow, ...]
    """Size buckets the fit used."""
    holdout_rows: tuple[ErrorRow, ...]
    """Size buckets held out by the split: predicted, never fitted."""
    below_rows: tuple[ErrorRow, ...] = ()
    """Buckets under the fit's size floor that the split did not hold out: predicted, never fitted."""
    gemm_rows: tuple[GemmRow, ...] = ()
    """Gemm shapes (fitted at one concurrency, see ``gemm_fit``)."""
    notes: tuple[str, ...] = ()
    """What was fitted from what, what kept its base value, and why (also in ``graph.graph["notes"]``)."""
    fit_min_bytes: int = 0
    """Buckets below this size were not fitted."""
    base_parameters: dict = field(default_factory=dict)
    """The base topology's value of each entry of ``parameters``."""
    profile: Profile | None = None
    """What carries to any topology of the base's node kind (``carry``, ``topologies.profile``)."""

    def report_lines(self) -> list[str]:
        """The tables and summary ``tpsim calibrate`` prints."""
        lines = ["# fitted parameters (base -> fitted)"]
        lines += [f"  {name:<36} {self.base_parameters.get(name, float('nan')):>12.6g} -> {value:<12.6g}"
                  for name, value in self.parameters.items()]
        lines += [""] + format_rows(list(self.fit_rows), "fitted size buckets")
        if self.holdout_rows:
            lines += [""] + format_rows(list(self.holdout_rows), "held-out size buckets (not fitted)")
        if self.below_rows:
            lines += [""] + format_rows(list(self.below_rows),
                                        f"below the fit range (< {format_size(self.fit_min_bytes)}; not fitted)")
        if self.gemm_rows:
            lines += [""] + format_gemm_rows(list(self.gemm_rows))
        lines += [""] + summary_lines(list(self.fit_rows), list(self.holdout_rows))
        if self.below_rows:
            worst = max(abs(r.rel_error) for r in self.below_rows)
            lines.append(f"max |error| below the fit range: {worst * 100:.1f}% ({len(self.below_rows)} buckets)")
        lines += [f"note: {note}" for note in self.notes[1:]]  # the first names the sources, in the file too
        if self.profile is not None and self.profile.undetermined:
            lines.append(f"not determined by these measurements (kept at the preset's values): "
                         f"{', '.join(self.profile.undetermined)}")
        return lines

    def write(self, path: str) -> None:
        """Save ``graph`` to ``path`` (``topologies.save_topology``) atomically: a temporary file in the
        same folder, then renamed over ``path``, so a failure leaves no half-written file."""
        with replacing(path) as temporary:
            save_topology(self.graph, temporary)

    def write_profile(self, path: str) -> None:
        """Save ``profile`` to ``path`` atomically (``topologies.profile.write_profile``)."""
        with replacing(path) as temporary:
            write_profile(self.profile, temporary)
