"""The engine on the real flow network: a whole 2-rank timeline, every time from the closed forms by hand.

Two GPUs joined by one 10 GB/s link of 1 us per hop; NCCL's Simple protocol with no start-up ramp, 8 us
per collective. Then a ring all_reduce of S bytes over 2 ranks takes 8 us + 2 x 1 us + S / B and a
send of S bytes 8 us + 1 us + S / B (``simulator.collectives.closed_form``'s table), and a gemm what the compute model says.
"""

from __future__ import annotations

import networkx as nx
import pytest

from simulator.compute import ComputeConfig, ComputeModel
from simulator.ir.builder import ScheduleBuilder
from simulator.ir.ops import AllReduce, Gemm, Recv, Send, Wait
from simulator.timing.simulation import simulate
from simulator.workloads.workload import Workload

DEVICE = {"name": "toy", "peak_tflops": {"float64": 1.0, "float32": 1.0, "bfloat16": 2.0, "float16": 2.0},
          "mem_bandwidth_GBps": 100.0, "memory_GB": 1.0}
B = 10e9
ALPHA = 1e-6
BASE = 8e-6


def _graph() -> nx.DiGraph:
    G = nx.DiGraph(name="pair", sim={"collective_base_latency_us": 8.0, "collective_startup_bytes": 0,
                                     "collective_protocol": "simple", "gemm_efficiency": 0.5})
    for i in range(2):
        G.add_node(f"gpu{i}", kind="gpu", gpu_index=i, server=i, device=DEVICE)
    for a, b in (("gpu0", "gpu1"), ("gpu1", "gpu0")):
        G.add_edge(a, b, bandwidth_GBps=B / 1e9, latency_us=ALPHA * 1e6, kind="nvlink")
    return G


def test_whole_timeline_on_the_flow_network():
    b = ScheduleBuilder("custom", (2,), Workload.gemm(2, 2, 2), "fwd", "float32", 2, {"world": (0, 1)})
    for r in range(2):
        b.buffer(r, "A", (500, 200))  # 400 kB
        b.buffer(r, "W", (200, 300))
        b.buffer(r, "Y", (500, 300))  # 600 kB
    b.emit(0, Gemm(out="Y", a="A", b="W"))
    b.emit(0, AllReduce(group="world", buf="Y"))
    b.emit(0, Send(peer=1, buf="A", handle="s"))
    b.emit(0, Wait(handle="s"))
    b.emit(1, AllReduce(group="world", buf="Y"))
    b.emit(1, Recv(peer=0, buf="A"))
    schedule = b.build()
    result = simulate(schedule, _graph())

    gemm = ComputeModel(ComputeConfig(gemm_efficiency=0.5)).gemm_time_s(DEVICE, "float32", 500, 200, 300)
    all_reduce = BASE + 2 * ALPHA + 600_000 / B  # ring, n = 2: 2(n-1) steps, 2(n-1)/n S bytes
    send = BASE + ALPHA + 400_000 / B
    t1 = gemm + all_reduce
    expected = [(0.0, 0, "start gemm"), (0.0, 1, "start all_reduce"), (gemm, 0, "end gemm"),
                (gemm, 0, "start all_reduce"), (t1, 0, "end all_reduce"), (t1, 0, "start send"),
                (t1, 0, "start wait"), (t1, 1, "end all_reduce"), (t1, 1, "start recv"),
                (t1 + send, 0, "end send"), (t1 + send, 0, "end wait"), (t1 + send, 1, "end recv")]
    events = sorted((r["start_s"], r["rank"], f"start {r['kind']}") for r in result.op_records())
    events += [(r["end_s"], r["rank"], f"end {r['kind']}") for r in result.op_records()]
    events.sort(key=lambda e: (round(e[0], 15), e[1], e[2]))
    assert [(rank, what) for _, rank, what in events] == [(rank, what) for _, rank, what in expected]
    assert [t for t, _, _ in events] == pytest.approx([t for t, _, _ in expected], rel=1e-12, abs=1e-18)
    r0, r1 = result.per_rank
    assert (r0.compute_s, r0.wait_s) == (gemm, 0.0)
    assert r1.wait_s == pytest.approx(gemm, rel=1e-12)
    assert r0.comm_s == pytest.approx(all_reduce + send, rel=1e-12)
    assert result.makespan_s == pytest.approx(t1 + send, rel=1e-12)
    link = {(u.src, u.dst): u for u in result.links}
    # The ring sends 2(n-1)/n S = S bytes each way (reduce-scatter then all-gather), then the 400 kB send.
    assert link[("gpu0", "gpu1")].bytes == pytest.approx(600_000 + 400_000)
    assert link[("gpu1", "gpu0")].bytes == pytest.approx(600_000)
