"""`tpsim predict`'s pruning: bound first, simulate only what could win, each schedule once."""

from __future__ import annotations

import json

import pytest

from simulator.algorithms.arrangement import arrangements
from simulator.predict import predict
from simulator.workloads.workload import Workload
from topologies import load_topology
from tests.cli_run import run

CASES = [
    ("dgx-a100:8", Workload.mlp(32768, 4096), 64, None),
    ("a100-4gpu:4", Workload.mlp(8192, 2048), 16, ("linear", "depth-major")),
    ("dgx-a100", Workload.transformer(8, 64, 256, 8, None, 0.0), 8, None),
    ("dgx-a100", Workload.gemm(4096, 4096, 4096), 4, None),
]


@pytest.mark.parametrize("topology, workload, gpus, placements", CASES)
def test_pruning_keeps_the_winner_and_every_simulated_time(topology, workload, gpus, placements):
    G = load_topology(topology)
    candidates = arrangements(gpus, placements=(None,) if placements is None else
                              tuple(None if p == "linear" else p for p in placements))
    full = predict(G, workload, gpus, candidates=candidates)
    pruned = predict(G, workload, gpus, candidates=candidates, prune=True)
    by_label = {r.arrangement.label: r for r in full}
    assert pruned[0].time_s == full[0].time_s  # the fastest time; a tie may name another arrangement first
    best = pruned[0].time_s
    assert [r.arrangement.label for r in pruned if r.skipped] == [r.arrangement.label for r in full if r.skipped]
    for row in pruned:
        other = by_label[row.arrangement.label]
        if row.status == "ok":
            assert (row.time_s, row.analytic_s, row.memory_bytes) == (other.time_s, other.analytic_s,
                                                                       other.memory_bytes)
        elif row.status == "bound":
            assert row.time_s is None and row.bound_s > best
            if row.analytic_s is not None:  # stopped after the analytic bound: full's
                assert row.analytic_s == other.analytic_s
            else:  # stopped at the solo-rank bound, which is below the analytic one
                assert row.solo_s <= other.analytic_s
            assert other.time_s >= row.bound_s * (1 - 1e-12)  # the bound it was pruned on is a real bound
        elif row.status == "duplicate":
            twin = by_label[row.duplicate_of]
            assert (other.time_s, other.analytic_s) == (twin.time_s, twin.analytic_s)
    assert sum(r.status == "ok" for r in pruned) <= sum(r.status == "ok" for r in full)


def test_2d_and_summa25d_on_a_flat_grid_are_one_schedule():
    rows = predict(load_topology("dgx-a100"), Workload.gemm(4096, 4096, 4096), 4, prune=True)
    twins = {r.arrangement.label: r.duplicate_of for r in rows if r.duplicate_of}
    assert twins == {"summa25d [2,2,1]": "2d [2,2,1]"}


def _out(capsys, args):
    status, out, err = run(capsys, *args)
    assert status == 0, err
    return out


def test_cli_json_names_each_status_and_no_prune_simulates_everything(capsys):
    args = ["predict", "--gpus", "64", "--topology", "dgx-a100:8", "--workload", "mlp", "--m", "32768",
            "--hidden", "4096", "--json"]
    pruned = json.loads(_out(capsys, args))
    assert [r["status"] for r in pruned].count("ok") == 1
    assert {r["status"] for r in pruned} == {"ok", "bound", "duplicate"}
    assert [r["duplicate_of"] for r in pruned if r["status"] == "duplicate"] == ["2d [8,8,1]"]
    full = json.loads(_out(capsys, [*args, "--no-prune"]))
    assert {r["status"] for r in full} == {"ok"} and len(full) == len(pruned)
    assert full[0]["time_s"] == pruned[0]["time_s"]


def test_table_says_what_was_not_simulated(capsys):
    out = _out(capsys, ["predict", "--gpus", "4", "--topology", "dgx-a100", "--workload", "gemm", "--m", "4096",
                        "--k", "4096", "--n", "4096", "--algos", "2d,summa25d"])
    assert "not simulated 1: their bound already exceeds the best simulated time" in out
    assert "summa25d [2,2,1]: the same schedule as 2d [2,2,1]" in out
