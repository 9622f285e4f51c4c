"""Published figure against tpsim's prediction: the rows, CSV and PNG every paper reproduction writes.

A reproduction script (``experiments.repro_*``) sets up a paper's configuration, asks tpsim for the
figure the paper reports (a speedup, a scaling efficiency, a throughput), and records one
``Comparison`` per published figure: where the number comes from, what tpsim predicted, the commands
that produced the prediction and one or two sentences on the gap. ``write_csv`` and ``write_png``
give every script the same two outputs, and ``tpsim_json`` runs a tpsim command in this process and
returns its ``--json`` output.

Example::

    >>> row = Comparison(paper="Optimus", claim="2-D over 1-D, training", configuration="64 GPUs",
    ...                  published=1.48, predicted=1.30, unit="x", source="arXiv 2104.05343, abstract")
    >>> round(row.ratio, 3)
    0.878
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
import os
import textwrap
from dataclasses import asdict, dataclass, field, fields

from experiments.outputs import OUT, default_folder
from simulator.calibrate.from_steps import geomean_error
from simulator.files import replacing, save_figure
from simulator.cli import main as tpsim

__all__ = ["Comparison", "geomean_error", "tpsim_json", "pinned_row", "write_csv", "write_png", "script_arguments", "within", "report",
           "error_summary"]

WITHIN = 0.15  # the bar: a claim is reproduced when predicted / published is within 15%


@dataclass(frozen=True)
class Comparison:
    """One published figure and tpsim's prediction of it."""

    paper: str
    claim: str
    configuration: str
    published: float
    predicted: float
    unit: str
    source: str
    explanation: str = ""
    commands: tuple[str, ...] = field(default_factory=tuple)

    @property
    def ratio(self) -> float:
        """Predicted over published (1.0 is an exact reproduction)."""
        return self.predicted / self.published

    @property
    def reproduced(self) -> bool:
        """True when the prediction is within 15% of the published figure."""
        return within(self.ratio)

    def as_row(self) -> dict:
        """The CSV row: every field, the ratio and the verdict; commands joined by ' ; '."""
        row = asdict(self)
        row["commands"] = " ; ".join(self.commands)
        row["ratio"] = f"{self.ratio:.3f}"
        row["reproduced"] = "yes" if self.reproduced else "no"
        return row


def within(ratio: float, tolerance: float = WITHIN) -> bool:
    """True when ``ratio`` is within ``tolerance`` of 1 (predicted / published)."""
    return abs(ratio - 1.0) <= tolerance


def tpsim_json(args: list[str]):
    """Run ``tpsim ARGS --json`` in this process and return the parsed JSON; exit on a non-zero status."""
    out = io.StringIO()
    argv = [*args, "--json"] if "--json" not in args else list(args)
    with contextlib.redirect_stdout(out):
        status = tpsim(argv)
    if status != 0:
        raise SystemExit(f"tpsim {' '.join(argv)} exited with status {status}")
    return json.loads(out.getvalue())


def pinned_row(args: list[str]) -> dict:
    """The one row ``tpsim predict ARGS`` prints for a command pinned to one arrangement (``--json``), fitting
    in memory or not; exit if it prints none."""
    rows = [r for r in tpsim_json(args) if r["status"] == "ok"]
    if not rows:
        raise SystemExit(f"tpsim {' '.join(args)}: no row")
    return rows[0]


def write_csv(rows: list[Comparison], path: str) -> None:
    """Write ``rows`` to ``path`` through tpsim's one writer (``simulator.files.replacing``: a temporary file
    renamed over it, so a failed run leaves no half-written CSV)."""
    columns = [f.name for f in fields(Comparison)] + ["ratio", "reproduced"]
    with replacing(path) as tmp, open(tmp, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        for row in rows:
            writer.writerow(row.as_row())


def write_png(rows: list[Comparison], path: str, title: str) -> None:
    """Draw published and predicted side by side, one pair of bars per row, to ``path`` (PNG)."""
    import matplotlib  # here, not at the top: matplotlib is slow to import and only the PNG needs it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # Wrapped, so that neighbouring labels do not run into each other.
    labels = [textwrap.fill(r.claim, 20) + "\n" + textwrap.fill(r.configuration, 22) for r in rows]
    x = range(len(rows))
    width = 0.38
    fig, ax = plt.subplots(figsize=(max(6.0, 1.6 * len(rows) + 2.0), 5.4), dpi=120)
    ax.bar([i - width / 2 for i in x], [r.published for r in rows], width, color="#8C8C8C", label="published")
    ax.bar([i + width / 2 for i in x], [r.predicted for r in rows], width, color="#4C72B0", label="tpsim")
    for i, r in enumerate(rows):
        ax.annotate(f"{r.ratio:.2f}", (i + width / 2, r.predicted), ha="center", va="bottom", fontsize=8)
    ax.set_xticks(list(x), labels, fontsize=7)
    units = sorted({r.unit for r in rows})
    ax.set_ylabel(" / ".join(units))
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)


def script_arguments(description: str, name: str, argv: list[str] | None = None,
                     extra: list[tuple[str, str]] = ()) -> argparse.Namespace:
    """The flags every reproduction takes: --quick, --csv FILE, --png FILE (defaults experiments/out/NAME.*, or
    under --quick a temporary folder: ``experiments.outputs``); ``extra`` adds a script's own on/off flags as
    (flag, help), e.g. ``--paper-code``."""
    parser = argparse.ArgumentParser(prog=f"python -m experiments.{name}", description=description)
    parser.add_argument("--quick", action="store_true",
                        help="a reduced form that finishes in under a minute (the CI smoke test)")
    parser.add_argument("--csv", metavar="FILE", help=f"default {OUT}/{name}.csv (--quick: a temporary folder)")
    parser.add_argument("--png", metavar="FILE", help=f"default {OUT}/{name}.png (--quick: a temporary folder)")
    for flag, help_text in extra:
        parser.add_argument(flag, action="store_true", help=help_text)
    args = parser.parse_args(argv)
    if args.csv is None or args.png is None:
        folder = default_folder(name, args.quick)
        args.csv = args.csv or os.path.join(folder, f"{name}.csv")
        args.png = args.png or os.path.join(folder, f"{name}.png")
    for path in (args.csv, args.png):
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    return args


def error_summary(rows: list[Comparison]) -> str:
    """Geomean of |error| (as a ratio) over ``rows`` and the largest error, one line."""
    worst = max(rows, key=lambda r: abs(r.ratio - 1.0))
    return (f"geomean error {geomean_error(r.ratio for r in rows):.1%}, largest {worst.ratio - 1:+.1%} "
            f"({worst.claim}, {worst.configuration})")


def _value(value: float, unit: str) -> str:
    if unit == "x":
        return f"{value:.2f}x"
    if unit == "efficiency":
        return f"{value:.0%}"
    return f"{value:.1f}"


def report(rows: list[Comparison], args: argparse.Namespace, title: str,
           plotted: list[Comparison] | None = None) -> None:
    """What every reproduction ends with: the markdown table of ``rows`` and how many are within 15% on
    stdout, the CSV of ``rows`` and the PNG of ``plotted`` (default: ``rows``) at ``args.csv``, ``args.png``."""
    print("| claim | configuration | published | tpsim | tpsim / published | within 15% |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r.claim} | {r.configuration} | {_value(r.published, r.unit)} | {_value(r.predicted, r.unit)} | "
              f"{r.ratio:.2f} | {'yes' if r.reproduced else 'no'} |")
    print(f"\n{sum(r.reproduced for r in rows)} of {len(rows)} within 15%")
    write_csv(rows, args.csv)
    write_png(rows if plotted is None else plotted, args.png, title)
    print(f"wrote {args.csv} and {args.png}")

