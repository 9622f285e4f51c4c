"""Samples: their validation, nccl-tests logs of every test read as samples (format fixtures), splits."""

from pathlib import Path

import pytest

from simulator.calibrate import CollectiveSample, GemmSample
from simulator.calibrate.from_nccl_tests import samples_from_nccl_tests
from simulator.calibrate.holdout import alternate_sizes, holdout_union, ranks_in, sizes_in
from simulator.errors import InputError

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "nccl-tests-format"  # layouts only, made-up numbers
REAL = Path(__file__).resolve().parents[1] / "data" / "nccl-tests" / "azure-ndv4-a100" / "all_reduce_perf_8gpu.log"


@pytest.mark.parametrize("kind", ["all_gather", "reduce_scatter", "broadcast", "reduce"])
def test_every_nccl_tests_layout_reads_as_samples(kind):
    samples = samples_from_nccl_tests([FIXTURES / f"{kind}_perf_4gpu.log"])
    assert [(s.kind, s.ranks) for s in samples] == [(kind, 4)] * 6
    assert [s.nbytes for s in samples] == [1024 << (2 * i) for i in range(6)]
    assert samples[0].time_s == pytest.approx(10.02e-6) and samples[0].source == f"{kind}_perf_4gpu.log"


def test_the_real_log_gives_out_of_place_times():
    samples = samples_from_nccl_tests([REAL])
    assert len(samples) == 28 and samples[-1] == CollectiveSample("all_reduce", 8, 1 << 30, 8139.2e-6,
                                                                 "all_reduce_perf_8gpu.log")


@pytest.mark.parametrize("make, message", [
    (lambda: CollectiveSample("alltoall", 2, 8, 1e-5), "kind must be one of"),
    (lambda: CollectiveSample("send", 4, 8, 1e-5), "a send has ranks = 2"),
    (lambda: CollectiveSample("all_reduce", 0, 8, 1e-5), "ranks must be an integer >= 1"),
    (lambda: CollectiveSample("all_reduce", 2, -1, 1e-5), "nbytes must be an integer >= 0"),
    (lambda: CollectiveSample("all_reduce", 2, 8, 0.0), "time_s must be a finite number > 0"),
    (lambda: GemmSample(4, 4, 4, "int8", 1e-5), "dtype must be one of"),
    (lambda: GemmSample(4, 0, 4, "float32", 1e-5), "k must be an integer >= 1"),
    (lambda: GemmSample(4, 4, 4, "float32", 1e-5, concurrent=0), "concurrent must be an integer >= 1"),
])
def test_bad_samples_name_the_field(make, message):
    with pytest.raises(InputError, match=message):
        make()


def test_alternate_holds_out_every_other_size_of_each_series():
    samples = [CollectiveSample("all_reduce", n, 1 << k, 1e-5) for n in (2, 8) for k in range(20, 31)]
    held = alternate_sizes(samples)
    assert [k for k in range(20, 31) if held(CollectiveSample("all_reduce", 2, 1 << k, 1e-5))] == [21, 23, 25, 27, 29]
    split = holdout_union(sizes_in([1 << 20]), ranks_in([8]))
    assert split(CollectiveSample("all_reduce", 2, 1 << 20, 1e-5)) and split(CollectiveSample("send", 2, 8, 1e-5)) is False
