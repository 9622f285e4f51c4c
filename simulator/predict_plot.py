"""The charts of `tpsim predict --png`: one horizontal bar per arrangement, fastest on top.

``plot_predictions`` draws one block's ranking, ``plot_training`` a whole-model training plan (step time
and peak memory per GPU against the device's).

Each bar is split into the critical rank's compute, exposed communication and waiting time (they add
up to the predicted makespan); a tick marks the contention-free analytic bound. Drawn with
matplotlib's Agg backend (no display needed).
"""

from __future__ import annotations

from simulator.errors import InputError
from simulator.files import save_figure

__all__ = ["plot_predictions", "plot_training"]


def plot_predictions(rows, path: str, title: str = "") -> None:
    """Draw the non-skipped ``rows`` (``simulator.predict.Prediction``, ranked) to ``path`` (PNG)."""
    import matplotlib  # here, not at the top: only --png needs matplotlib, and it is slow to import

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = [r for r in rows if not r.skipped and r.simulated]  # rows pruning left at their bound have no split
    if not ok:
        raise InputError("no arrangement fits this workload: nothing to plot")
    labels = [r.arrangement.label for r in ok]
    ms = 1e3
    compute = [r.compute_s * ms for r in ok]
    comm = [r.comm_s * ms for r in ok]
    wait = [r.wait_s * ms for r in ok]
    height = 1.4 + 0.42 * len(ok)
    fig, ax = plt.subplots(figsize=(9.0, height), dpi=120)
    y = list(range(len(ok)))
    ax.barh(y, compute, color="#4C72B0", label="compute")
    ax.barh(y, comm, left=compute, color="#DD8452", label="communication (exposed)")
    ax.barh(y, wait, left=[a + b for a, b in zip(compute, comm)], color="#C0C0C0", label="waiting for peers")
    ax.scatter([r.analytic_s * ms for r in ok], y, marker="|", s=300, color="black", zorder=3,
               label="contention-free bound")
    best = ok[0].time_s
    for i, r in enumerate(ok):
        ax.text(r.time_s * ms, i, f"  {r.time_s * ms:.3g} ms ({r.time_s / best:.2f}x)", va="center", fontsize=8)
    ax.set_yticks(y, labels, fontsize=9)
    ax.invert_yaxis()
    ax.set_xlabel("predicted time per iteration (ms)")
    ax.set_xlim(0, max(r.time_s for r in ok) * ms * 1.35)
    ax.set_title(title, fontsize=10, parse_math=False)  # the topology's name: plain text, never TeX
    # Ranked fastest first, so the top rows are the shortest bars: the legend fits at the upper right.
    ax.legend(loc="upper right", fontsize=8)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)


def plot_training(rows, path: str, title: str = "", device_bytes: int | None = None) -> None:
    """Draw a training plan (``simulator.training.search.PlanRow``, ranked) to ``path`` (PNG): per arrangement,
    its step time stacked as compute / exposed TP comm / exposed DP comm, and beside it its peak memory per
    GPU against the device's usable memory (bars over the line do not fit, drawn hatched)."""
    import matplotlib  # here, not at the top: only --png needs matplotlib, and it is slow to import

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = [r for r in rows if not r.skipped]
    if not shown:
        raise InputError("no arrangement applies to this model and batch: nothing to plot")
    labels = [r.arrangement.label + ("" if r.simulated else " (bound)") for r in shown]
    y = list(range(len(shown)))
    fig, (ax, mx) = plt.subplots(1, 2, figsize=(13.0, 1.6 + 0.36 * len(shown)), dpi=110, sharey=True,
                                 gridspec_kw={"width_ratios": [2.2, 1.0]})
    compute = [r.best.compute_s for r in shown]
    tp = [r.best.tp_comm_s for r in shown]
    dp = [r.best.dp_comm_s for r in shown]
    ax.barh(y, compute, color="#4C72B0", label="compute (incl. optimizer step)")
    ax.barh(y, tp, left=compute, color="#DD8452", label="TP comm (exposed)")
    ax.barh(y, dp, left=[a + b for a, b in zip(compute, tp)], color="#55A868", label="DP comm (exposed)")
    best = shown[0].best.step_s
    for i, r in enumerate(shown):
        ax.text(r.best.step_s, i, f"  {r.best.step_s:.3g} s ({r.best.step_s / best:.2f}x)", va="center", fontsize=7)
    ax.set_yticks(y, labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("step time (s)")
    ax.set_xlim(0, max(r.best.step_s for r in shown) * 1.3)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.6 / len(shown) - 0.06), ncol=3, fontsize=8)
    ax.grid(axis="x", alpha=0.3)
    if any(r.memory is not None for r in shown):
        peaks = [(r.memory.peak_bytes / 1e9) if r.memory is not None else 0.0 for r in shown]
        colors = ["#4C72B0" if r.fits is not False else "#C44E52" for r in shown]
        bars = mx.barh(y, peaks, color=colors)
        for bar, r in zip(bars, shown):
            if r.fits is False:
                bar.set_hatch("//")
        if device_bytes:
            mx.axvline(device_bytes / 1e9, color="black", linestyle="--", label="usable device memory")
            mx.legend(loc="lower right", fontsize=8)
        for i, peak in enumerate(peaks):
            mx.text(peak, i, f" {peak:.1f}", va="center", fontsize=7)
        from matplotlib.ticker import NullFormatter, ScalarFormatter

        mx.set_xscale("log")  # peaks span 10x and more: the fitting ones stay readable beside the others
        mx.xaxis.set_major_formatter(ScalarFormatter())
        mx.xaxis.set_minor_formatter(NullFormatter())
        mx.set_xlim(min(p for p in peaks if p > 0) / 1.5, max(peaks) * 2.0)
        mx.set_xlabel("peak memory per GPU (GB, log scale)")
        mx.grid(axis="x", alpha=0.3)
    fig.suptitle(title, fontsize=9, parse_math=False)
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)
