"""`tpsim predict --workers N`: the same rows as one process, from forked workers; bad counts refused."""

from __future__ import annotations

import os

import pytest

from simulator.algorithms.arrangement import arrangements
from simulator.predict import predict
from simulator.workers import ordered_map
from simulator.workloads.workload import Workload
from tests.cli_run import run
from topologies import load_topology


def test_ordered_map_keeps_input_order_and_runs_in_other_processes():
    pids = list(ordered_map(lambda i: (i, os.getpid()), range(6), workers=3))
    assert [i for i, _ in pids] == list(range(6))
    assert os.getpid() not in {pid for _, pid in pids}
    assert list(ordered_map(lambda i: os.getpid(), [0, 1], workers=1)) == [os.getpid()] * 2


def test_an_error_in_a_worker_is_raised_here():
    def fails_on_two(i):
        if i == 2:
            raise ValueError("two")
        return i

    with pytest.raises(ValueError, match="two"):
        list(ordered_map(fails_on_two, range(4), workers=2))


@pytest.mark.parametrize("prune", [True, False])
@pytest.mark.parametrize("workers", [2, 3])
def test_rows_equal_those_of_one_process(prune, workers):
    G = load_topology("dgx-a100:8")
    workload = Workload.mlp(32768, 4096)
    candidates = arrangements(64, placements=(None, "depth-major"))
    one = predict(G, workload, 64, candidates=candidates, prune=prune)
    many = predict(G, workload, 64, candidates=candidates, prune=prune, workers=workers)
    assert many == one
    assert sum(r.status == "bound" for r in many) > 0 or not prune  # the case really prunes


def test_the_cli_prints_the_same_table_with_workers(capsys):
    args = ["predict", "--gpus", "16", "--topology", "a100-4gpu:4", "--workload", "mlp", "--m", "8192",
            "--hidden", "2048"]
    one = run(capsys, *args)
    two = run(capsys, *args, "--workers", "2")
    assert one[0] == two[0] == 0 and one[1] == two[1]


@pytest.mark.parametrize("extra,message", [
    (["--workers", "0"], "--workers must be 1..256 (processes), got 0"),
    (["--workers", "2", "--global-batch", "8"], "--workers applies to ranking one block"),
])
def test_bad_worker_counts_get_one_line(capsys, extra, message):
    status, _, err = run(capsys, "predict", "--gpus", "8", "--topology", "dgx-a100", "--model", "gpt2-small",
                         *extra)
    assert status == 2 and message in err and len(err.strip().splitlines()) == 1
