"""Sampled link utilisation during a simulation, for the trace's counter tracks.

The flow network knows each active flow's rate; a sampler process reads, at regular simulated times,
the fraction of each link's capacity in use. The period adapts: it starts at 1 us and doubles (keeping
every other sample) whenever twice the wanted number of samples has accumulated, so any run ends with
between ``samples`` and ``2 * samples`` points on a regular grid, whatever its length.

It reads the network's active flows (``FlowNetwork._active``: each flow's ``links`` and ``rate``) and
capacities (``_cap``, ``_link_id``); if a future network lacks them, the sampler records nothing.
"""

from __future__ import annotations

import simpy

__all__ = ["LinkSampler"]


class LinkSampler:
    """Samples every link's utilisation until the engine's ranks have all finished."""

    def __init__(self, env: simpy.Environment, net, engine, samples: int, first_period_s: float = 1e-6):
        self.env = env
        self.net = net
        self.engine = engine
        self.samples = max(1, int(samples))
        self.period_s = first_period_s
        self.points: list[tuple[float, dict[int, float]]] = []
        self.supported = all(hasattr(net, name) for name in ("_active", "_cap", "_link_id"))
        if self.supported:
            env.process(self._run())

    def _snapshot(self) -> dict[int, float]:
        used: dict[int, float] = {}
        for flow in self.net._active.values():
            for link in flow.links:
                used[link] = used.get(link, 0.0) + flow.rate
        cap = self.net._cap
        return {link: rate / cap[link] for link, rate in used.items()}

    def _run(self):
        while self.engine.running:
            self.points.append((self.env.now, self._snapshot()))
            if len(self.points) >= 2 * self.samples:
                self.points = self.points[::2]
                self.period_s *= 2
            yield self.env.timeout(self.period_s)

    def series(self, links) -> dict[str, list[tuple[float, float]]]:
        """For each ``LinkUsage`` in ``links``: "src->dst" -> [(time_s, utilisation)], ending at 0."""
        if not self.supported:
            return {}
        out = {}
        end = self.env.now
        for usage in links:
            link = self.net._link_id.get((usage.src, usage.dst))
            if link is None:
                continue
            points = [(t, snap.get(link, 0.0)) for t, snap in self.points]
            points.append((end, 0.0))
            out[f"{usage.src}->{usage.dst}"] = points
        return out
