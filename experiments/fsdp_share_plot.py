"""The FSDP rows' error against their communication share, one marker per row: repro_fsdp's second PNG.

x: FSDP's collectives of one micro-batch over tpsim's compute time of it (``repro_fsdp.comm_share``);
y: tpsim / published tokens per second per GPU. One colour per GPU, filled markers for rows with
activation checkpointing, hollow ones without. A bar per row (``experiments.published.write_png``) shows
each figure; this shows the trend the bars hide.
"""

from __future__ import annotations

from simulator.files import save_figure

__all__ = ["Point", "write_share_png"]

Point = tuple[str, bool, float, float]
"""(GPU, checkpointed, communication share, tpsim / published)."""

_COLOURS = ("#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3")


def write_share_png(points: list[Point], path: str, title: str) -> None:
    """Draw ``points`` to ``path`` (PNG) through tpsim's one writer (``simulator.files.save_figure``)."""
    import matplotlib  # here, not at the top: matplotlib is slow to import and only the PNG needs it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    fig, ax = plt.subplots(figsize=(7.5, 4.8), dpi=120)
    for colour, device in zip(_COLOURS, dict.fromkeys(p[0] for p in points)):
        for checkpointed in (True, False):
            mine = [p for p in points if p[0] == device and p[1] == checkpointed]
            if mine:
                ax.scatter([100 * p[2] for p in mine], [p[3] for p in mine], s=28, edgecolors=colour,
                           facecolors=colour if checkpointed else "none",
                           label=f"{device}, {'checkpointing' if checkpointed else 'no checkpointing'}")
    ax.axhline(1.0, color="#8C8C8C", linewidth=0.8)
    ax.set_xscale("log")  # the shares span 0.3% to 50%
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda x, _: f"{x:g}"))
    ax.set_xlabel("FSDP collectives per micro-batch / tpsim's compute of it (%)")
    ax.set_ylabel("tpsim / published tokens/s per GPU")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)
