"""Sampled link utilisation during a simulation, for the trace's counter tracks.

The flow network knows each active flow's rate; a sampler process reads, at regular simulated times,
the fraction of each link's capacity in use. The period adapts: it starts at 1 us and doubles (keeping
every other sample) whenever twice the wanted number of samples has accumulated, so any run ends with
between ``samples`` and ``2 * samples`` points on a regular grid, whatever its length.

It reads ``FlowNetwork.link_utilisation()`` (the used fraction of every busy link's capacity, now).
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
        self.points: list[tuple[float, dict[tuple, float]]] = []
        env.process(self._run())

    def _run(self):
        while self.engine.running:
            self.points.append((self.env.now, self.net.link_utilisation()))
            if len(self.points) >= 2 * self.samples:
                self.points = self.points[::2]
                self.period_s *= 2
            yield self.env.timeout(self.period_s)

    def series(self, links) -> dict[str, list[tuple[float, float]]]:
        """For each ``LinkUsage`` in ``links``: its printed name -> [(time_s, utilisation)], ending at 0."""
        out = {}
        end = max(self.env.now, max(self.engine.finish_s, default=0.0))
        for usage in links:
            link = (usage.src, usage.dst)
            points = [(t, snap.get(link, 0.0)) for t, snap in self.points]
            points.append((end, 0.0))
            out[usage.label] = points
        return out
