"""`tpsim predict --workers N`: the same rows as one process, from the sweep's executor; bad counts refused."""

from __future__ import annotations

import os

import pytest

import simulator.predict
from simulator.algorithms.arrangement import arrangements
from simulator.predict import predict
from simulator.sweep.executor import WorkerLost, in_order, make_executor
from simulator.sweep.local_pool import LocalPool
from simulator.workloads.workload import Workload
from tests.cli_run import run
from topologies import load_topology


def test_the_local_pool_runs_closures_in_other_processes_and_in_order_puts_them_back():
    big = list(range(100_000))  # inherited by the forked workers, never pickled to them

    def call(i):
        return i, os.getpid(), len(big)

    with LocalPool(3) as pool:
        results = list(in_order(pool.run(call, list(range(6)))))
        again = list(in_order(pool.run(lambda i: -i, [1, 2, 3])))  # a second run forks workers for its own job
    assert [i for i, _, _ in results] == list(range(6)) and {n for _, _, n in results} == {100_000}
    assert os.getpid() not in {pid for _, pid, _ in results}
    assert again == [-1, -2, -3]
    with LocalPool(1) as pool:
        assert list(in_order(pool.run(lambda i: os.getpid(), [0, 1]))) == [os.getpid()] * 2


def test_an_error_in_a_worker_is_raised_here_and_a_dead_worker_is_named():
    def fails_on_two(i):
        if i == 2:
            raise ValueError("two")
        return i

    with pytest.raises(ValueError, match="two"), LocalPool(2) as pool:
        list(pool.run(fails_on_two, list(range(4))))
    with pytest.raises(WorkerLost, match="a worker process died"), LocalPool(2) as pool:
        list(pool.run(lambda i: os._exit(3) if i == 1 else i, list(range(4))))
    with LocalPool(2) as pool:  # the pool is usable after both
        assert sorted(pool.run(abs, [-1, -2])) == [(0, 1), (1, 2)]


def test_predict_runs_its_workers_on_the_sweep_executor(monkeypatch):
    made = []

    def spy(workers, dask=None):
        made.append((workers, dask))
        return make_executor(workers, dask)

    monkeypatch.setattr(simulator.predict, "make_executor", spy)
    G = load_topology("dgx-a100")
    workload = Workload.mlp(4096, 1024)
    rows = predict(G, workload, 8, candidates=arrangements(8, algorithms=("1d", "summa25d")), workers=2)
    assert made == [(2, None)] and rows[0].simulated


@pytest.fixture(scope="module")
def one_process():
    """The case and its rows from one process, by ``prune``: computed once for every worker count."""
    G = load_topology("dgx-a100:8")
    workload = Workload.mlp(32768, 4096)
    candidates = arrangements(64, placements=(None, "depth-major"))
    rows = {prune: predict(G, workload, 64, candidates=candidates, prune=prune) for prune in (True, False)}
    return G, workload, candidates, rows


@pytest.mark.parametrize("prune", [True, False])
@pytest.mark.parametrize("workers", [2, 3])
def test_rows_equal_those_of_one_process(one_process, prune, workers):
    G, workload, candidates, rows = one_process
    one = rows[prune]
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
