"""What each command's work costs on this machine, from its sizes: the measured rates and the estimates.

Measured on the development machine (2 shared cores, AMD EPYC, Python 3.11; CPU seconds and peak RSS
of fresh processes, the garbage collector paused as the commands pause it) with the commands in
``python -m experiments.guard_costs``, which prints each case's estimate beside its measurement:

=====================================================  ============  ==========  =================================
work (what was run)                                    size          measured    rate kept here
=====================================================  ============  ==========  =================================
build 2d [64,64,1] mlp (``build_schedule``)            4.73 M ops    3.0 s       ``BUILD_US_PER_OP`` 0.75 us,
build 2d [128,128,1] mlp                               37.8 M ops    28.1 s      ``BUILD_BYTES_PER_OP`` 40 B
build 1d 4,096 / 3d [16,16,16] mlp                     4,096 ranks   0.16/0.35 s ``BUILD_US_PER_RANK`` 60 us,
                                                                                 ``BUILD_BYTES_PER_RANK`` 5 KB
``tpsim schedule`` 2d [64,64,1] mlp (full validation)  4.73 M ops    21.6 s      ``CHECK_US_PER_OP`` 4 us
``tpsim simulate`` (experiments/README.md's scale      1.2-9.5 M     16.5-126 s  ``SIMULATE_US_PER_OP`` 12 us
table: 2d, cannon25d, summa25d at 4,096 and 16,384)    ops                       (events are 1.0-1.5x the ops),
                                                                                 ``SIMULATE_BYTES_PER_OP`` 80 B
``tpsim predict --gpus 1024 / 4096`` mlp               3.8 / 30.6 M  5.5/31.9 s  ``PREDICT_US_PER_OP`` 1.2 us of
                                                       ops (all                  every arrangement's ops (most
                                                       arrangements)             are bounded, a few simulated)
``tpsim topology show dgx-h100:512 / 2048``            4,096/16,384  1.0/5.0 s,  ``SHOW_US_PER_GPU`` 300 us,
                                                       GPUs          287 MB      ``SHOW_BYTES_PER_GPU`` 18 KB
topology graph build (simulator.limits: 131,072 GPUs)  131,072 GPUs  11 s 0.6 GB ``GRAPH_US_PER_GPU`` 85 us, 5 KB
``tpsim collective`` all_reduce 1,024 / 4,096 ranks    group size    0.66/2.0 s  the graph, plus ``COLLECTIVE_US_
                                                                    76/155 MB    PER_RANK`` 300 us, 16 KB
``tpsim calibrate`` (docs/calibrate.md's Azure logs)    {8,16} /      22.4/1.2 s  ``CALIBRATE_US_PER_RANK2``
of 8 and 16 GPUs / of 2, 4 and 8                       {2,4,8} GPUs              2.5 ms per sample x ranks^2
``tpsim predict --global-batch``, tries / cells:                                 ``TRAIN_MS_PER_TRY`` 40 ms per
gpt3-2.7b on 16 A100s (G 64), gpt3-13b on 64 (G        116 / 300     4.2 s       arrangement x schedule,
256), gpt3-175b on 1,024 A100 80 GB (G 1,536),         254 / 628     16.5 s      ``TRAIN_MS_PER_SETTING`` 10 ms
llama3-405b ``--layers 128`` on 16,384 H100s (G        914 / 1,948   46.4 s      per further ZeRO/recompute cell;
2,048), each ``--simulate-top 0``                      870 / 1,860   40.7 s      60 MB + 400 KB per try
gpt3-175b on 1,024 A100s ``--zero 1 --recompute        914 / 914     36.7 s      + 16 KB per GPU
none`` (4 rows simulated in that)                                    82-639 MB
the 1,024 and 16,384 GPU cases, 4 rows simulated       4 rows        1.2/15.5 s  ``TRAIN_SIM_US_PER_GPU`` 400 us
(4,096 / 65,536 GPU-rows); llama3-405b (126 layers:    4 rows        34.3 s      per GPU per simulated row
pp 1 or 2, its rows ZeRO-3) on 16,384, simulated
``tpsim verify`` 2d [8,8,1] mlp m=4096 h=1024          206 GFLOP     48 s 2.5 GB ``VERIFY_GFLOPS`` 4 GFLOP/s
``tpsim verify`` 1d [2] transformer b=1 h=256 a=4,     8.0 / 22.6    2.3/6.2 s,  (numpy float64),
s=1024 / 2048                                          GFLOP         377/878 MB  ``SCORES_COPIES`` 5
=====================================================  ============  ==========  =================================

How far off (``python -m experiments.guard_costs``, every case end to end in a fresh process; estimate /
measured CPU seconds, then estimate / peak memory): schedule 2d at 1,024 and 4,096 GPUs 1.17 and 1.01,
0.63 and 1.92; simulate summa25d at 1,024 0.85, 0.38;
simulate 2d at 4,096 0.88 (61 s against 69 s), 2.02; predict at 1,024 0.87, 2.45 (both memory ratios
measured at 150 B per simulated op, since lowered to 80 B: 1.2 and 1.5);
topology show of 16,384 GPUs 1.00, 1.00; collective over 4,096 ranks 0.87, 0.43; verify 2d [8,8,1] 0.97,
0.80; verify of a transformer at s = 2,048 0.80, 1.22. The time is within 1.25x everywhere measured
and the memory within 2.5x, the simulation's memory now set low (cannon25d's 644 MB at 1.8 M ops is
2.9x its estimate), so that a refusal is of work that really needs it. The op counts are within 1.3x
of built schedules (``simulator.guard.ops``). Calibration is the loosest: 20 s for the 8 and 16 GPU
logs (measured 22 s), but 5.9 s for the 2, 4 and 8 GPU ones (1.2 s), both far under the budget; its
cost follows the fit's knobs more than the ranks.
The training-plan search (``training_estimate``; ``simulator.guard.training`` counts its sizes): gpt3-2.7b
on 16 GPUs 1.61, 1.28; gpt3-13b on 64 0.80, 1.05; gpt3-175b on 1,024 0.93, 0.92 (``--zero 1 --recompute
none`` 1.06, 0.97); llama3-405b on 16,384 with 128 layers 1.38, 0.88, with its 126 layers 0.81, 0.77.
"""

from __future__ import annotations

from simulator.guard.check import Estimate
from simulator.guard.ops import estimated_ops

__all__ = ["BUILD_US_PER_OP", "CHECK_US_PER_OP", "SIMULATE_US_PER_OP", "PREDICT_US_PER_OP", "VERIFY_GFLOPS",
           "build_estimate", "simulate_estimate", "predict_estimate", "topology_estimate", "collective_estimate",
           "verify_estimate", "schedule_words", "workload_flops", "attention_scores_bytes", "training_estimate"]

BUILD_US_PER_OP = 0.75
"""CPU microseconds to build one op (``simulator.algorithms.compose``)."""
BUILD_US_PER_RANK = 60.0
"""CPU microseconds per rank on top: its programs, buffers and group records."""
BUILD_BYTES_PER_OP = 40
"""Bytes a built op holds (equal ops are shared, so most of an op is its place in a program)."""
BUILD_BYTES_PER_RANK = 5 << 10
"""Bytes per rank on top of its ops: buffer declarations and the rank's lists."""
CHECK_US_PER_OP = 4.0
"""CPU microseconds per op of ``tpsim schedule``'s full validation (the dry run) and accounting."""
SIMULATE_US_PER_OP = 12.0
"""CPU microseconds per op of ``tpsim simulate``: compiling, the simpy events and the flows it starts."""
SIMULATE_BYTES_PER_OP = 80
"""Peak bytes per op of a simulation: the compiled plan, the events, the result rows."""
PREDICT_US_PER_OP = 1.2
"""CPU microseconds per op of every arrangement ``tpsim predict`` considers (bound all, simulate a few)."""
SHOW_US_PER_GPU = 300.0
"""CPU microseconds per GPU of ``tpsim topology show`` (the graph, then its summary and bisection cut)."""
SHOW_BYTES_PER_GPU = 18 << 10
"""Peak bytes per GPU of ``tpsim topology show``."""
GRAPH_US_PER_GPU = 85.0
"""CPU microseconds per GPU to build a topology graph."""
GRAPH_BYTES_PER_GPU = 5 << 10
"""Bytes per GPU of a topology graph."""
COLLECTIVE_US_PER_RANK = 300.0
"""CPU microseconds per rank of one simulated collective (its plan, flows and routes), on top of the graph."""
COLLECTIVE_BYTES_PER_RANK = 16 << 10
"""Bytes per rank of one simulated collective (its plan, flows and routes)."""
CALIBRATE_US_PER_RANK2 = 2500.0
"""CPU microseconds of ``tpsim calibrate`` per collective sample and squared rank of it."""
VERIFY_GFLOPS = 4.0
"""GFLOP/s of the numpy interpreter in float64 (``tpsim verify``), one process."""
TRAIN_MS_PER_TRY = 40.0
"""CPU milliseconds per arrangement x pipeline schedule the training-plan search bounds (its micro-batch
search, memory model and bound under the first ZeRO/recompute setting)."""
TRAIN_MS_PER_SETTING = 10.0
"""CPU milliseconds per further ZeRO/recompute setting of each of those the search may bound."""
TRAIN_SIM_US_PER_GPU = 400.0
"""CPU microseconds per GPU of one simulated training step (the reduction waves over every data-parallel group):
measured 240 (pipelined rows) to 525 (unpipelined ZeRO-3 rows, every micro-batch's reduction and gathers)."""
TRAIN_BYTES_PER_GPU = 16 << 10
"""Peak bytes per GPU of the training-plan search (the graph, its routes, the simulated reduction's flows)."""
TRAIN_BYTES_PER_TRY = 400 << 10
"""Peak bytes per arrangement x pipeline schedule of the search (the block schedules, times and memory parts
it caches)."""
TRAIN_BASE_BYTES = 60 << 20
"""Peak bytes of the search whatever its size (the interpreter, numpy, the commands' modules)."""
SCORES_COPIES = 5
"""[b, a, s, s] float64 arrays a transformer's verification holds at once (scores, probabilities, their
gradients, the reference's and a rank's): its peak RSS grew 5.0 bytes per byte of one such array."""


def schedule_words(algorithm: str, grid: tuple[int, ...], workload) -> str:
    """``2d [256,256,1] mlp M=131072 H=12288``: the schedule an estimate is about."""
    return f"{algorithm} [{','.join(map(str, grid))}] {workload.label()}"


def _ops_words(ops: int, ranks: int) -> str:
    return f"{ops:,} ops ({ops / max(1, ranks):,.0f} per rank x {ranks:,} ranks)"


def build_estimate(algorithm: str, grid: tuple[int, ...], workload, passes: str = "both", *, repeat: int = 1,
                   check: bool = False) -> Estimate:
    """Building the schedule (``repeat``: a pipelined step's layers x micro-batches); ``check`` adds
    ``tpsim schedule``'s full validation and accounting."""
    ops, ranks = estimated_ops(algorithm, grid, workload, passes)
    ops *= repeat
    seconds = ops * (BUILD_US_PER_OP + (CHECK_US_PER_OP if check else 0.0)) * 1e-6 + ranks * BUILD_US_PER_RANK * 1e-6
    nbytes = ops * BUILD_BYTES_PER_OP + ranks * BUILD_BYTES_PER_RANK
    steps = f" x {repeat:,} (layers x micro-batches)" if repeat > 1 else ""
    return Estimate(f"building {schedule_words(algorithm, grid, workload)}{steps}: {_ops_words(ops, ranks)}",
                    seconds, nbytes)


def simulate_estimate(ops: int, ranks: int, gpus: int, what: str = "", build: bool = False) -> Estimate:
    """Simulating ``ops`` ops of ``ranks`` ranks (``what``: the schedule's words) on a topology of ``gpus``
    GPUs, its graph included; ``build``: the schedule is built here first."""
    per_op = SIMULATE_US_PER_OP + (BUILD_US_PER_OP if build else 0.0)
    seconds = ops * per_op * 1e-6 + (ranks * BUILD_US_PER_RANK if build else 0.0) * 1e-6 + gpus * GRAPH_US_PER_GPU * 1e-6
    nbytes = ops * (SIMULATE_BYTES_PER_OP + BUILD_BYTES_PER_OP) + ranks * BUILD_BYTES_PER_RANK
    subject = f"{what}: " if what else ""
    return Estimate(f"simulating {subject}{_ops_words(ops, ranks)} on {gpus:,} GPUs", seconds,
                    nbytes + gpus * GRAPH_BYTES_PER_GPU)


def predict_estimate(candidates, workload, passes: str, *, prune: bool = True, workers: int = 1,
                     cores: int | None = None) -> Estimate:
    """Timing every arrangement of ``candidates`` (``Arrangement``s) for ``workload``: the search's size.
    Without ``prune`` every one is simulated; ``workers`` processes share the work over ``cores``."""
    sizes = [estimated_ops(c.algorithm, c.grid, workload, passes) for c in candidates]
    total = sum(ops for ops, _ in sizes)
    largest = max(sizes, default=(0, 1))
    rate = PREDICT_US_PER_OP if prune else BUILD_US_PER_OP + SIMULATE_US_PER_OP
    parallel = max(1, min(workers, cores or 1))
    seconds = total * rate * 1e-6 / parallel
    nbytes = workers * (largest[0] * (SIMULATE_BYTES_PER_OP + BUILD_BYTES_PER_OP) + largest[1] * BUILD_BYTES_PER_RANK)
    return Estimate(f"timing {len(candidates):,} arrangements of {largest[1]:,} ranks: {total:,} ops in all",
                    seconds, nbytes)


def topology_estimate(gpus: int, what: str, show: bool = False) -> Estimate:
    """Building the graph of ``gpus`` GPUs (``show``: and ``tpsim topology show``'s summary of it)."""
    us, nbytes = (SHOW_US_PER_GPU, SHOW_BYTES_PER_GPU) if show else (GRAPH_US_PER_GPU, GRAPH_BYTES_PER_GPU)
    return Estimate(f"the topology {what} of {gpus:,} GPUs", gpus * us * 1e-6, gpus * nbytes)


def collective_estimate(ranks: int, gpus: int, sizes: int = 1) -> Estimate:
    """Simulating a collective over ``ranks`` ranks at ``sizes`` message sizes, one after another, on a
    topology of ``gpus`` GPUs (its graph built already)."""
    times = f" x {sizes} sizes" if sizes > 1 else ""
    return Estimate(f"simulating a collective over {ranks:,} ranks{times} on {gpus:,} GPUs",
                    sizes * ranks * COLLECTIVE_US_PER_RANK * 1e-6, ranks * COLLECTIVE_BYTES_PER_RANK)


def calibrate_estimate(sample_ranks: list[int], gemms: int = 0) -> Estimate:
    """Fitting a topology to collective samples over ``sample_ranks`` ranks each (and ``gemms`` gemm rows):
    every fitted knob's evaluation re-simulates every sample, whose cost grows with its ranks squared."""
    work = sum(ranks * ranks for ranks in sample_ranks)
    return Estimate(f"fitting {len(sample_ranks):,} collective samples of up to {max(sample_ranks, default=0):,} "
                    f"ranks and {gemms:,} gemm samples", work * CALIBRATE_US_PER_RANK2 * 1e-6,
                    max(sample_ranks, default=0) * COLLECTIVE_BYTES_PER_RANK)


def attention_scores_bytes(workload) -> int:
    """Float64 bytes of the [b, a, s, s] arrays a transformer's verification holds at its peak (0 for
    others): ``SCORES_COPIES`` of the scores, which the dense reference holds whole however the ranks
    split them."""
    if workload.name != "transformer":
        return 0
    return SCORES_COPIES * 8 * workload.batch * workload.heads * workload.seq * workload.seq


def workload_flops(workload) -> int:
    """The workload's forward and backward FLOPs: 6 m k n per linear, and a transformer's attention core
    (12 b s^2 h), as ``simulator.limits.check_workload_sizes`` counts them."""
    flops = sum(6 * workload.m * linear.k * linear.n for linear in workload.linears())
    if workload.name == "transformer":
        flops += 12 * workload.batch * workload.seq * workload.seq * workload.hidden
    return flops


def verify_estimate(what: str, flops: int, float64_bytes: int, workload) -> Estimate:
    """Verifying: the interpreter's arithmetic (``flops``, in float64) and its arrays (``float64_bytes``:
    every rank's buffers and the dense reference's tensors) plus the reference's attention scores."""
    scores = attention_scores_bytes(workload)
    return Estimate(f"verifying {what}: {flops / 1e9:,.3g} GFLOP in float64", flops / (VERIFY_GFLOPS * 1e9),
                    float64_bytes + scores)


def training_estimate(rows: int, tries: int, cells: int, simulate_top: int, gpus: int) -> Estimate:
    """``tpsim predict --global-batch``'s search: ``rows`` arrangements (tensor x pipeline x data), ``tries``
    with their pipeline schedules, ``cells`` with the ZeRO/recompute settings each may bound, the leading
    ``simulate_top`` simulated on ``gpus`` GPUs (each one's reduction waves over every one of them)."""
    seconds = (tries * TRAIN_MS_PER_TRY + (cells - tries) * TRAIN_MS_PER_SETTING) * 1e-3 + \
        simulate_top * gpus * TRAIN_SIM_US_PER_GPU * 1e-6
    return Estimate(f"searching {rows:,} training arrangements of {gpus:,} GPUs ({cells:,} schedule and "
                    f"ZeRO/recompute settings to bound, {simulate_top} to simulate)", seconds,
                    TRAIN_BASE_BYTES + tries * TRAIN_BYTES_PER_TRY + gpus * TRAIN_BYTES_PER_GPU)
