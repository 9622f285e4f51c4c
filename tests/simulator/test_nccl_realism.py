"""Realism without fitting: dgx-a100 predictions against real nccl-tests all_reduce logs; the log parser.

The logs (tests/data/nccl-tests/azure-ndv4-a100, see its README) are nccl-tests
all_reduce_perf on 2, 4 and 8 A100 SXM4 GPUs of one server. The preset's rates are published figures
(topologies.rates) and the collective parameters NCCL's constants (simulator.collectives.params); no
number is fitted to these logs. From 1 MiB to 1 GiB every prediction must be within 15% of the
measured out-of-place time. (Below 1 MiB the measured times are bound by one thread launching the
kernels of all GPUs, 4 us per GPU, which the model does not contain.)
"""

from pathlib import Path

import pytest
import simpy

from simulator.calibrate.nccl_tests import parse_nccl_tests
from simulator.collectives import run_collective
from simulator.errors import InputError
from simulator.network.flow_network import FlowNetwork
from topologies import gpu_nodes, load_topology

LOGS = Path(__file__).resolve().parents[1] / "data" / "nccl-tests" / "azure-ndv4-a100"
TOLERANCE = 0.15


def predicted_errors(n: int) -> dict[int, float]:
    """Size -> simulated / measured - 1 for every size from 1 MiB to 1 GiB of the n-GPU log."""
    log = parse_nccl_tests(str(LOGS / f"all_reduce_perf_{n}gpu.log"))
    G = load_topology("dgx-a100")
    env = simpy.Environment()
    net = FlowNetwork(env, G)
    members = gpu_nodes(G)[:n]
    errors = {}
    for row in log.rows:
        if not (1 << 20) <= row.size_bytes <= (1 << 30):
            continue
        start = env.now
        proc = run_collective(env, net, "all_reduce", members, row.size_bytes)
        env.run(until=proc)
        errors[row.size_bytes] = (env.now - start) / (row.time_us * 1e-6) - 1
    return errors


@pytest.mark.parametrize("n", [2, 4, 8])
def test_dgx_a100_all_reduce_within_15_percent_from_1MiB_to_1GiB(n):
    errors = predicted_errors(n)
    assert len(errors) == 11
    bad = {size: f"{e:+.1%}" for size, e in errors.items() if abs(e) > TOLERANCE}
    assert not bad, f"{n} GPUs: sizes off by more than 15%: {bad}"


def test_parser_reads_the_real_logs():
    log = parse_nccl_tests(str(LOGS / "all_reduce_perf_8gpu.log"))
    assert (log.op, log.n_ranks, len(log.rows)) == ("all_reduce", 8, 28)
    first, last = log.rows[0], log.rows[-1]
    assert (first.size_bytes, first.count, first.type, first.redop, first.root) == (8, 2, "float", "sum", None)
    assert (first.time_us, first.inplace_time_us) == (31.44, 32.30)
    assert (last.size_bytes, last.time_us, last.algbw_GBps, last.busbw_GBps) == (1073741824, 8139.2, 131.92, 230.86)


NEW_FORMAT = """\
# nThread 1 nGpus 1 minBytes 1024 maxBytes 2048 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1
# Using devices
#  Rank  0 Group  0 Pid 1 on host device  0 [0x07] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid 2 on host device  1 [0x0a] NVIDIA H100 80GB HBM3
host:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
        1024           256     float    none      -1    10.50    0.10    0.05      0     9.90    0.10    0.05    N/A
        2048           512     float    none      -1    11.00    0.19    0.09      0      N/A     N/A     N/A    N/A
# Avg bus bandwidth    : 0.07
"""


def test_parser_reads_the_newer_format_with_root_and_na():
    log = parse_nccl_tests("all_gather_perf.log", NEW_FORMAT)
    assert (log.op, log.n_ranks) == ("all_gather", 2)
    assert [(r.size_bytes, r.redop, r.root, r.time_us) for r in log.rows] == [(1024, "none", -1, 10.5),
                                                                             (2048, "none", -1, 11.0)]
    assert log.rows[1].inplace_time_us is None


def test_parser_reads_a_broadcast_log_without_redop():
    text = ("#  size  count  type  root  time  algbw  busbw  error  time  algbw  busbw  error\n"
            "    64     16 float     0  5.0   0.01   0.01  0e+00   5.1   0.01   0.01  0e+00\n")
    log = parse_nccl_tests("broadcast_perf_4gpu.log", text)
    assert (log.op, log.rows[0].root, log.rows[0].redop) == ("broadcast", 0, None)


@pytest.mark.parametrize("text, message", [
    ("hello world\n", r"x.log line 1: expected an nccl-tests header"),
    ("# size count type redop time algbw busbw error time algbw busbw error\n 8 2 float sum 1.0\n",
     r"x.log line 2: expected 12 columns"),
    ("# size count type redop time algbw busbw error time algbw busbw error\n"
     " 8 2 float sum fast 0 0 0 1 0 0 0\n", r"x.log line 2: column time is 'fast', not a number"),
    ("# just a comment\n", r"x.log: no nccl-tests rows found"),
    ("# nThread 1 nGpus many\n", r"x.log line 1: column nGpus is 'many', not a number"),
])
def test_parser_rejects_other_formats_naming_file_and_line(text, message):
    with pytest.raises(InputError, match=message):
        parse_nccl_tests("x.log", text)
