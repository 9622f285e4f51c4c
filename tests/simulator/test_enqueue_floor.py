"""The host's enqueue floor under nccl-tests times: the header's nGpus, and --compare applying it."""

import json

import pytest

from simulator.calibrate.enqueue_floor import ENQUEUE_S_PER_GPU, enqueue_floor_s, measured_time_s
from simulator.calibrate.nccl_tests import parse_nccl_tests
from simulator.cli import main

AZURE = "tests/data/nccl-tests/azure-ndv4-a100"


def test_floor_is_one_enqueue_per_gpu_of_the_thread():
    assert enqueue_floor_s(8) == pytest.approx(8 * ENQUEUE_S_PER_GPU)
    assert measured_time_s(1e-6, 8) == pytest.approx(8 * ENQUEUE_S_PER_GPU)
    assert measured_time_s(1e-3, 8) == 1e-3  # a GPU time above the floor is what is measured
    assert measured_time_s(14.6e-6) == 14.6e-6  # one GPU per thread: 4.3 us is below any collective


@pytest.mark.parametrize("name, per_thread", [("all_reduce_perf_8gpu.log", 8), ("all_reduce_perf_2gpu.log", 2),
                                              ("all_reduce_perf_16gpu.log", 1)])
def test_gpus_per_thread_is_read_from_the_header(name, per_thread):
    assert parse_nccl_tests(f"{AZURE}/{name}").gpus_per_thread == per_thread


def test_the_published_single_process_floor_matches_the_constant():
    # The smallest size of the 8-GPU single-process log sits on the floor: within 10% of 8 x 4.3 us.
    log = parse_nccl_tests(f"{AZURE}/all_reduce_perf_8gpu.log")
    smallest = min(log.rows, key=lambda row: row.size_bytes)
    assert smallest.time_us * 1e-6 == pytest.approx(enqueue_floor_s(log.gpus_per_thread), rel=0.1)


def _compare(capsys, tmp_path, n_gpus):
    log = tmp_path / "all_reduce_perf.log"
    log.write_text(f"# nThread 1 nGpus {n_gpus}\n"
                   "#  size count type redop time algbw busbw error time algbw busbw error\n"
                   "        8       2 float sum 31.44 0.00 0.00 1e-07 32.30 0.00 0.00 1e-07\n"
                   " 1048576 262144 float sum 59.46 17.63 30.85 0e+00 60.17 17.43 30.50 0e+00\n")
    code = main(["collective", "--topology", "dgx-a100", "--compare", str(log), "--json"])
    assert code == 0
    return {r["bytes"]: r for r in json.loads(capsys.readouterr().out)}


def test_compare_puts_small_sizes_on_the_floor_of_an_eight_gpu_thread(capsys, tmp_path):
    rows = _compare(capsys, tmp_path, 8)
    small, large = rows[8], rows[2**20]
    assert small["host_floor_s"] == pytest.approx(8 * ENQUEUE_S_PER_GPU)
    assert small["simulated_time_s"] < small["host_floor_s"] == small["time_s"]
    assert small["error"] == pytest.approx(small["time_s"] / 31.44e-6 - 1)
    assert large["time_s"] == large["simulated_time_s"] > large["host_floor_s"]


def test_compare_leaves_a_one_gpu_thread_at_the_simulated_time(capsys, tmp_path):
    rows = _compare(capsys, tmp_path, 1)
    assert all(r["time_s"] == r["simulated_time_s"] for r in rows.values())


def test_compare_table_marks_the_rows_on_the_floor(capsys, tmp_path):
    log = tmp_path / "all_reduce_perf.log"
    log.write_text("# nThread 1 nGpus 8\n#  size count type redop time algbw busbw error time algbw busbw error\n"
                   "        8       2 float sum 31.44 0.00 0.00 1e-07 32.30 0.00 0.00 1e-07\n")
    assert main(["collective", "--topology", "dgx-a100", "--compare", str(log)]) == 0
    out = capsys.readouterr().out
    assert "enqueue floor of 34.4 us" in out
    [row] = [line for line in out.splitlines() if not line.startswith("#")]
    assert row.split()[2] == "34.40*"
