"""Micro-benchmark of simulator.network.flow_network: flows per second of wall time on a few traffic patterns.

Not a test (nothing is asserted): run ``python experiments/bench_network.py [--gpus 1024]`` and read
the table. Patterns, on a two-level tree of 8-GPU NVSwitch servers joined by one NIC each to a core
switch (built here with networkx, so the benchmark needs only the simulator):

- ``independent``: every GPU sends to its neighbour inside its server, in rounds (components of 2 flows).
- ``ring``: one ring over all GPUs per round (a single component through the core switch).
- ``staggered``: every GPU sends to a GPU in the next server, start times spread over a round, so
  rates change at almost every event (the worst case for the fairness recomputation).

Fixed seed; the figures are wall-clock seconds on the machine it runs on.
"""

from __future__ import annotations

import argparse
import random
import time

import networkx as nx
import simpy

from simulator.network.flow_network import FlowNetwork, HopRouter
from simulator.progress import Progress


def cluster(n_gpus: int, per_server: int = 8) -> nx.DiGraph:
    """Servers of ``per_server`` GPUs on an NVSwitch (230 GB/s), one 24 GB/s uplink each to a core."""
    G = nx.DiGraph()
    for s in range(n_gpus // per_server):
        sw = f"n{s}/nvswitch"
        for i in range(per_server):
            g = f"gpu{s * per_server + i}"
            for a, b in ((g, sw), (sw, g)):
                G.add_edge(a, b, bandwidth_GBps=230.0, latency_us=0.3, kind="nvswitch")
        for a, b in ((sw, "core"), ("core", sw)):
            G.add_edge(a, b, bandwidth_GBps=24.0 * per_server / 8, latency_us=1.0, kind="ib")
    return G


def run(pattern: str, n_gpus: int, rounds: int, seed: int = 0) -> tuple[int, int, float, float]:
    """Simulate one pattern; return (flows, rate changes, simulated s, wall s)."""
    G = cluster(n_gpus)
    env = simpy.Environment()
    net = FlowNetwork(env, G, router=HopRouter(G))
    rng = random.Random(seed)
    gpus = [f"gpu{i}" for i in range(n_gpus)]

    def driver():
        for r in range(rounds):
            events = []
            if pattern == "independent":
                for i in range(0, n_gpus, 2):
                    events.append(net.transfer(gpus[i], gpus[i + 1], 1 << 20))
            elif pattern == "ring":
                for i in range(n_gpus):
                    events.append(net.transfer(gpus[i], gpus[(i + 1) % n_gpus], 1 << 20))
            else:
                for i in range(n_gpus):
                    env.process(_late(events, gpus[i], gpus[(i + 8) % n_gpus], rng.random() * 1e-4))
                yield env.timeout(1e-4)
            yield simpy.AllOf(env, events)

    def _late(events, src, dst, delay):
        yield env.timeout(delay)
        events.append(net.transfer(src, dst, 1 << 20))
        yield events[-1]

    env.process(driver())
    t0 = time.perf_counter()
    env.run()
    return net.flow_count, net.rate_changes, env.now, time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=50)
    args = parser.parse_args()
    print(f"{'pattern':<12} {'flows':>8} {'rate chg':>9} {'wall s':>8} {'flows/s':>10}")
    patterns = ("independent", "ring", "staggered")
    with Progress("experiments.bench_network", total=len(patterns), unit="pattern") as progress:
        for pattern in patterns:
            progress.phase(pattern)
            flows, changes, _, wall = run(pattern, args.gpus, args.rounds)
            print(f"{pattern:<12} {flows:>8} {changes:>9} {wall:>8.2f} {flows / wall:>10.0f}", flush=True)
            progress.update()


if __name__ == "__main__":
    main()
