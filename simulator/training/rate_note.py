"""The note under a training plan saying where its GEMM rate comes from, when that rate is not a sustained one.

A step is mostly GEMMs, and the compute model times them from each GPU's published large-GEMM rate
(``simulator.compute``, ``topologies.compute_rates``). On the A100 that rate is *sustained*: GEMMs back to
back on random operands, as a training step runs them. On the H100, H200, B200 and GB200 the only published
figure is the *maximum achievable matmul* rate, a best case (the tensor cores rest between the timed
GEMMs), and against published runs tpsim's steps read fast there (docs/published.md); on GPUs with no
published figure at all the rate is an assumed fraction of the peak. A plan on such a GPU says so once,
under its table, with the command that replaces the rate by one fitted to a measured step
(``tpsim calibrate --from-steps``). A topology whose ``sim`` sets ``gemm_efficiency`` (calibrated, or set
by hand), or whose GPU carries its own ``gemm_tflops``, gets no note: its rate is the user's.

Example::

    >>> from topologies.presets import build_preset
    >>> from topologies import gpu_nodes
    >>> G = build_preset("dgx-h100:1")
    >>> gemm_rate_note(G, G.nodes[gpu_nodes(G)[0]]["device"])[:45]
    "H100-SXM5-80GB's GEMM rate is a best case (79"
    >>> G = build_preset("dgx-a100:1")
    >>> gemm_rate_note(G, G.nodes[gpu_nodes(G)[0]]["device"]) is None
    True
"""

from __future__ import annotations

import networkx as nx

from simulator.compute import FALLBACK_GEMM_EFFICIENCY
from topologies.compute_rates import COMPUTE_RATES

__all__ = ["gemm_rate_note"]

CALIBRATE = "`tpsim calibrate --from-steps` fits it to a step you measured"


def gemm_rate_note(G: nx.Graph, device: dict) -> str | None:
    """The note for a plan on ``device`` of ``G`` (module doc), or None where the rate is sustained or the user's;
    under ``--dtype fp8`` (``G``'s ``sim.fp8_gemms``) it quotes the FP8 rate."""
    if (G.graph.get("sim") or {}).get("gemm_efficiency") is not None:
        return None
    name = device.get("name", "?")
    rates = COMPUTE_RATES.get(name)
    own = device.get("gemm_tflops", {}).get("bfloat16")
    if rates is None or own is None:
        if own is not None:  # a device of the user's own file, with its own figure
            return None
        return f"{name} has no published GEMM rate ({FALLBACK_GEMM_EFFICIENCY:.0%} of peak assumed); {CALIBRATE}"
    if rates.best_case_tflops is not None or own != rates.gemm_tflops.get("bfloat16"):
        return None  # sustained (the A100), or a figure the user set on the device
    fp8 = (G.graph.get("sim") or {}).get("fp8_gemms") and "float8" in rates.gemm_tflops
    quoted = f"{rates.gemm_tflops['float8']:g} TFLOP/s fp8" if fp8 else f"{own:g} TFLOP/s bf16"
    return (f"{name}'s GEMM rate is a best case ({quoted}, no sustained rate published): measured steps likely "
            f"run slower; {CALIBRATE}")
