"""The chart of `tpsim compare --png`: measured and predicted bars side by side, end to end first.

One pair of horizontal bars per row: "end to end" (the measured median iteration against the simulated
makespan, with a whisker for the measured iterations' min..max), then each op class (mean per rank
of the time in that class). Each pair is labelled with the relative error. A communication class's
bars are hatched over the part spent waiting for peers, where both sides know it (``measured_wait_s``,
``predicted_wait_s``). Drawn with matplotlib's Agg backend (no display needed).
"""

from __future__ import annotations

from simulator.files import save_figure

__all__ = ["plot_comparison"]

MEASURED_COLOUR = "#4C72B0"
PREDICTED_COLOUR = "#DD8452"


def _error_text(rel: float | None) -> str:
    return "n/a" if rel is None else f"{rel * 100:+.1f}%"


def plot_comparison(comparison, path: str) -> None:
    """Draw ``comparison`` (``simulator.compare.measured.Comparison``) to ``path`` as a PNG."""
    import matplotlib  # here, not at the top: only --png needs matplotlib, and it is slow to import

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = ["end to end"] + [row.name for row in comparison.classes]
    measured = [comparison.measured_s] + [row.measured_s for row in comparison.classes]
    predicted = [comparison.predicted_s] + [row.predicted_s for row in comparison.classes]
    errors = [comparison.rel_error] + [row.rel_error for row in comparison.classes]
    ms = 1e3
    height = 0.36
    fig, ax = plt.subplots(figsize=(9.0, 1.6 + 0.55 * len(labels)), dpi=120)
    y = list(range(len(labels)))
    its = comparison.iterations_s
    ax.barh([i - height / 2 for i in y], [v * ms for v in measured], height, color=MEASURED_COLOUR, label="measured")
    ax.barh([i + height / 2 for i in y], [v * ms for v in predicted], height, color=PREDICTED_COLOUR,
            label="predicted (simulated)")
    ax.errorbar([comparison.measured_s * ms], [-height / 2],
                xerr=[[(comparison.measured_s - min(its)) * ms], [(max(its) - comparison.measured_s) * ms]],
                fmt="none", ecolor="black", capsize=3, label=f"measured min..max ({len(its)} iterations)")
    waited = [(i, row) for i, row in enumerate(comparison.classes, start=1)
              if row.measured_wait_s is not None and row.predicted_wait_s is not None]
    if waited:
        for offset, wait in ((-height / 2, "measured_wait_s"), (height / 2, "predicted_wait_s")):
            ax.barh([i + offset for i, _ in waited], [getattr(row, wait) * ms for _, row in waited], height,
                    fill=False, hatch="///", edgecolor="#333333", linewidth=0,
                    label="waiting on peers" if offset < 0 else None)
    top = max(max(measured), max(predicted), max(its)) * ms
    for i, rel in enumerate(errors):
        ax.text(max(measured[i], predicted[i]) * ms + top * 0.01, i, _error_text(rel), va="center", fontsize=8)
    ax.set_yticks(y, labels, fontsize=9)
    ax.invert_yaxis()
    ax.set_xlim(0, top * 1.18)
    ax.set_xlabel("time per iteration (ms): end to end, or the mean per rank spent in each op class")
    meta = comparison.meta
    ax.set_title(f"{meta.get('algorithm')} {meta.get('grid')} on {meta.get('world_size')} ranks "
                 f"({meta.get('backend')}) vs {meta.get('topology')}: end to end "
                 f"{_error_text(comparison.rel_error)}", fontsize=10, parse_math=False)  # names: plain text
    ax.legend(loc="lower right", fontsize=8)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)
