"""Calibration on real nccl-tests logs predicts what it did not see within 10% from 1 MiB up.

The logs (tests/data/nccl-tests/azure-ndv4-a100, see its README) are all_reduce_perf on 2, 4
and 8 A100 SXM4 GPUs of one server; the base is the dgx-a100 preset. The fit uses sizes of 1 MiB and
more (``tpsim calibrate``'s default for nccl-tests logs). Three splits: (a) fit the 2- and 8-GPU logs
at every other size, predict the whole 4-GPU log and the other sizes; (b) hold out whole sizes
(every other size of every log, the command's default); (c) hold out 4 MiB and 64 MiB everywhere
(within 15%: ``TOLERANCE_4MIB_OUT``).
"""

from pathlib import Path

import pytest

from simulator.calibrate.fit import calibrate
from simulator.calibrate.from_nccl_tests import samples_from_nccl_tests
from simulator.calibrate.holdout import alternate_sizes, holdout_union, ranks_in, sizes_in
from simulator.calibrate.rows import format_rows
from topologies import load_topology

LOGS = Path(__file__).resolve().parents[1] / "data" / "nccl-tests" / "azure-ndv4-a100"
MIB = 1 << 20
TOLERANCE = 0.10
TOLERANCE_4MIB_OUT = 0.15
"""With 4 MiB held out of every log the end of the start-up regime is free between 2 and 8 MiB: capped at
16 MiB and at the NVSwitch rate (``knobs``), the fit puts it at 4.0 MiB at 230 GB/s and 4 MiB on 4 GPUs
comes out 11.4% slow (13.6% while the knobs the logs do not pin stayed where the solver left them). It was
within 10% only while the start-up could be an 807 MiB per-byte cost."""
FIT_TOLERANCE = 0.125


@pytest.fixture(scope="module")
def samples():
    return samples_from_nccl_tests([LOGS / f"all_reduce_perf_{n}gpu.log" for n in (2, 4, 8)])


def _splits(samples):
    big = [s for s in samples if s.nbytes >= MIB]
    return {
        "2+8 GPUs, every other size": holdout_union(ranks_in([4]), alternate_sizes(big)),
        "every other size": alternate_sizes(big),
        "4MiB and 64MiB": sizes_in([4 * MIB, 64 * MIB]),
    }


_FITS: dict = {}


def _fit(samples, split):
    if split not in _FITS:  # each fit takes ~1 s; two tests share the first split's
        _FITS[split] = calibrate(load_topology("dgx-a100"), samples, [], holdout=_splits(samples)[split],
                                 fit_min_bytes=MIB)
    return _FITS[split]


@pytest.mark.parametrize("split", ["2+8 GPUs, every other size", "every other size", "4MiB and 64MiB"])
def test_held_out_sizes_of_1MiB_and_more_are_within_10_percent(samples, split):
    cal = _fit(samples, split)
    held = [r for r in cal.holdout_rows if r.nbytes >= MIB]
    table = "\n".join(format_rows(held, f"held out: {split}"))
    assert held
    tolerance = TOLERANCE_4MIB_OUT if split == "4MiB and 64MiB" else TOLERANCE
    bad = [r for r in held if abs(r.rel_error) > tolerance]
    assert not bad, f"held-out sizes off by more than {tolerance:.0%}:\n{table}"
    # The fitted rows themselves: within 12%. One point, 16 MiB on 8 GPUs (235.6 us, busbw 125 GB/s between
    # 8 MiB's 98 and 32 MiB's 163), stays 10.4-12.1% low: NCCL's tree on one server is a chain (its
    # ring's speed), and the flat binary tree that used to fit it (depth 3 instead of 7) is not NCCL's.
    assert max(abs(r.rel_error) for r in cal.fit_rows) < FIT_TOLERANCE


def test_the_4gpu_split_fits_only_2_and_8_gpus_and_predicts_all_of_the_4gpu_log(samples):
    cal = _fit(samples, "2+8 GPUs, every other size")
    assert {r.ranks for r in cal.fit_rows} == {2, 8}
    assert sorted(r.nbytes for r in cal.fit_rows if r.ranks == 2) == [MIB << (2 * i) for i in range(6)]
    assert sum(1 for r in cal.holdout_rows if r.ranks == 4) == 28  # the whole 4-GPU log, 8 B .. 1 GiB
    assert all(r.nbytes < MIB for r in cal.below_rows)
    assert set(cal.parameters) >= {"nvswitch.bandwidth_GBps", "nvswitch.latency_us", "collective_base_latency_us",
                                   "collective_startup_bytes", "collective_channel_bandwidth_GBps"}
    assert "nic.bandwidth_scale" not in cal.parameters  # no sample crosses a NIC
    notes = cal.graph.graph["notes"]
    assert "all_reduce_perf_2gpu.log" in notes and "links of kind nic" in notes
