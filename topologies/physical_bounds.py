"""Physical bounds on a topology's rates and latencies: no link faster than its published peak, no latency past 1 s.

A link's ``bandwidth_GBps`` is what the model moves per direction; where its published peak is known
(``peak_bandwidth_GBps``, ``topologies.rates``) a rate above it is impossible hardware, not a good fit.
Calibration can produce one from a bad log: an 8-GPU nccl-tests log fitted to a 4-GPU topology put
InfiniBand at 2.3x its peak, a row of 1e-300 us put NVSwitch at 230 TB/s. ``PEAK_MARGIN`` allows for
measurement noise (a published NCCL figure sits within 4% of the measured rates, ``topologies.rates``);
past it the topology is refused, whether it comes from ``tpsim calibrate``, a file or a profile applied
to a preset. Latencies (a link's ``latency_us``, the ``sim`` section's ``*_us`` keys) must be at most
``MAX_LATENCY_US``, one second: no interconnect step takes longer, and the simulator's time would be
dominated by a typo.
"""

from __future__ import annotations

import math

import networkx as nx

from topologies.errors import TopologyError

__all__ = ["PEAK_MARGIN", "MAX_LATENCY_US", "check_physical_bounds"]

PEAK_MARGIN = 0.10
"""How far above its published peak a link's rate may be (10%) before it is refused."""

MAX_LATENCY_US = 1e6
"""The longest latency a link or a ``sim`` ``*_us`` key may have: one second."""


def check_physical_bounds(G: nx.DiGraph) -> None:
    """TopologyError for the first link faster than its peak allows or latency over a second (module doc)."""
    for a, b, data in G.edges(data=True):
        rate, peak = data.get("bandwidth_GBps"), data.get("peak_bandwidth_GBps")
        if isinstance(rate, (int, float)) and isinstance(peak, (int, float)) and peak > 0:
            if rate > peak * (1 + PEAK_MARGIN):
                raise TopologyError(f"link {a}-{b} ({data.get('kind')}): bandwidth_GBps {rate:.4g} is "
                                    f"{rate / peak:.2f}x its published peak {peak:g} GB/s (at most {PEAK_MARGIN:.0%} "
                                    f"over it); a rate that high comes from a wrong measurement, e.g. a log of more "
                                    f"GPUs than the topology")
        latency = data.get("latency_us")
        if isinstance(latency, (int, float)) and latency > MAX_LATENCY_US:
            raise TopologyError(f"link {a}-{b}: latency_us {latency:g} is over {MAX_LATENCY_US:g} us (one second)")
    sim = G.graph.get("sim") or {}
    if isinstance(sim, dict):
        for key, value in sim.items():
            if (str(key).endswith("_us") and isinstance(value, (int, float)) and not isinstance(value, bool)
                    and math.isfinite(value) and not 0 <= value <= MAX_LATENCY_US):
                raise TopologyError(f"sim {key}: {value:g} us; a latency is from 0 to {MAX_LATENCY_US:g} us (one "
                                    f"second)")
