"""The bar chart of `tpsim predict --png`: one horizontal bar per arrangement, fastest on top.

Each bar is split into the critical rank's compute, exposed communication and waiting time (they add
up to the predicted makespan); a tick marks the contention-free analytic bound. Drawn with
matplotlib's Agg backend (no display needed).
"""

from __future__ import annotations

from simulator.errors import InputError

__all__ = ["plot_predictions"]


def plot_predictions(rows, path: str, title: str = "") -> None:
    """Draw the non-skipped ``rows`` (``simulator.predict.Prediction``, ranked) to ``path`` (PNG)."""
    import matplotlib  # here, not at the top: only --png needs matplotlib, and it is slow to import

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = [r for r in rows if not r.skipped]
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
    ax.set_title(title, fontsize=10)
    # Ranked fastest first, so the top rows are the shortest bars: the legend fits at the upper right.
    ax.legend(loc="upper right", fontsize=8)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
