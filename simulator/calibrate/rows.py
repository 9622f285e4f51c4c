"""Per-size-bucket error rows (measured vs predicted) and the tables ``tpsim calibrate`` prints.

A bucket is one (kind, ranks, nbytes); several samples of one bucket (repeats) are summarised by
their median time. rel_error = predicted / measured - 1 (+5% means the model is 5% slow).
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.sizes import format_size

__all__ = ["ErrorRow", "GemmRow", "format_rows", "format_gemm_rows", "summary_lines", "max_abs_error"]

MIB = 1 << 20


@dataclass(frozen=True)
class ErrorRow:
    """One size bucket: measured and predicted seconds."""

    kind: str
    ranks: int
    nbytes: int
    measured_s: float
    """Median measured time of the bucket's samples."""
    predicted_s: float
    """The calibrated topology's time from the flow simulation (what ``tpsim collective`` prints)."""
    rel_error: float
    """predicted / measured - 1."""
    samples: int = 1
    """Samples in the bucket."""


@dataclass(frozen=True)
class GemmRow:
    """One gemm shape: measured and predicted seconds."""

    m: int
    k: int
    n: int
    dtype: str
    concurrent: int
    measured_s: float
    predicted_s: float
    rel_error: float
    fitted: bool
    """False for samples at another concurrency than the one fitted (shown, not fitted)."""
    after_comm: bool = False
    """Timed right after a collective (``tpsim bench --form interleaved``), not back to back."""


def max_abs_error(rows, min_bytes: int = 0) -> float | None:
    """Largest |rel_error| among rows of at least ``min_bytes``; None when there are none."""
    errors = [abs(r.rel_error) for r in rows if r.nbytes >= min_bytes]
    return max(errors) if errors else None


def _time(seconds: float) -> str:
    return f"{seconds * 1e6:.2f}"


def format_rows(rows: list[ErrorRow], title: str) -> list[str]:
    """A fixed-width table: kind, ranks, size, measured, predicted, error."""
    lines = [f"# {title}",
             f"#{'kind':>14} {'ranks':>5} {'size':>8} {'measured':>11} {'predicted':>11} {'error':>7}",
             f"#{'':>14} {'':>5} {'':>8} {'(us)':>11} {'(us)':>11} {'':>7}"]
    for r in sorted(rows, key=lambda r: (r.kind, r.ranks, r.nbytes)):
        lines.append(f" {r.kind:>14} {r.ranks:>5} {format_size(r.nbytes):>8} {_time(r.measured_s):>11} "
                     f"{_time(r.predicted_s):>11} {r.rel_error * 100:>+6.1f}%")
    return lines


def format_gemm_rows(rows: list[GemmRow]) -> list[str]:
    """A fixed-width gemm table: shape, dtype, concurrency, measured, predicted, error."""
    lines = ["# gemm (fitted rows marked *; timed back to back on every rank, or right after a collective)",
             f"#{'m x k x n':>22} {'dtype':>9} {'conc':>5} {'timed':>10} {'measured':>11} {'predicted':>11} "
             f"{'error':>7}",
             f"#{'':>22} {'':>9} {'':>5} {'':>10} {'(us)':>11} {'(us)':>11} {'':>7}"]
    for r in rows:
        shape = f"{r.m}x{r.k}x{r.n}"
        mark = "*" if r.fitted else " "
        timed = "after comm" if r.after_comm else "lock-step"
        lines.append(f" {shape:>22} {r.dtype:>9} {r.concurrent:>4}{mark} {timed:>10} {_time(r.measured_s):>11} "
                     f"{_time(r.predicted_s):>11} {r.rel_error * 100:>+6.1f}%")
    return lines


def summary_lines(fit_rows: list[ErrorRow], holdout_rows: list[ErrorRow]) -> list[str]:
    """Max |error| of fit and held-out rows, for sizes >= 1 MiB and overall."""
    lines = []
    for label, rows in (("fit", fit_rows), ("held-out", holdout_rows)):
        big, every = max_abs_error(rows, MIB), max_abs_error(rows)
        text = lambda e: "-" if e is None else f"{e * 100:.1f}%"  # noqa: E731
        count_big = sum(1 for r in rows if r.nbytes >= MIB)
        lines.append(f"max |error| {label:>8}: {text(big):>6} for sizes >= 1MiB ({count_big} buckets), "
                     f"{text(every):>6} overall ({len(rows)} buckets)")
    return lines
