"""`tpsim predict` and ``simulator.predict``: enumeration, ranking, skipped arrangements, outputs."""

from __future__ import annotations

import csv
import io
import json
import sys

import pytest

from simulator.algorithms.registry import build_schedule
from simulator.cli import main
from simulator.errors import InputError
from simulator.predict import Arrangement, arrangements, memory_bytes, predict
from simulator.workloads.workload import Workload
from topologies import TopologyError, load_topology
from tests.cli_run import run


def test_every_legal_arrangement_of_64_gpus():
    labels = [a.label for a in arrangements(64)]
    assert labels == ["1d [64]", "1d-sp [64]", "2d [8,8,1]", "cannon25d [8,8,1]", "cannon25d [4,4,4]",
                      "summa25d [8,8,1]",
                      "summa25d [4,4,4]", "summa25d [2,2,16]", "summa25d [1,1,64]", "3d [4,4,4]"]
    with_variants = [a.label for a in arrangements(16, ("2d", "1d"), placements=(None, "depth-major"), overlap=True)]
    assert with_variants == ["2d [4,4,1]", "2d+overlap [4,4,1]", "2d [4,4,1] depth-major",
                             "2d+overlap [4,4,1] depth-major", "1d [16]"]


def test_predictions_are_ranked_and_bounded_and_sizes_that_do_not_divide_are_skipped():
    G = load_topology("dgx-a100")
    workload = Workload.gemm(96, 21, 24)  # K = 21 does not split over q = 2
    rows = predict(G, workload, gpus=8)
    ok = [r for r in rows if not r.skipped]
    assert [r.time_s for r in ok] == sorted(r.time_s for r in ok)
    assert all(r.time_s >= r.analytic_s * (1 - 1e-12) for r in ok)
    assert all(r.compute_s + r.comm_s + r.wait_s == pytest.approx(r.time_s, rel=1e-12) for r in ok)
    assert {r.arrangement.label for r in ok} == {"1d [8]", "1d-sp [8]", "summa25d [1,1,8]"}
    assert [(r.arrangement.label, r.skipped) for r in rows[len(ok):]] == [
        ("cannon25d [2,2,2]", "cannon25d on [2,2,2]: K=21 must be divisible by q = 2"),
        ("summa25d [2,2,2]", "summa25d on [2,2,2]: K=21 must be divisible by q = 2"),
        ("3d [2,2,2]", "3d on [2,2,2]: K=21 must be divisible by q^2 = 4")]
    for r in ok:
        grid = dict(gpus=8) if r.algorithm.startswith("1d") else dict(grid=r.grid)
        assert r.memory_bytes == memory_bytes(build_schedule(r.algorithm, workload, "both", "bfloat16", **grid))


def test_a_placement_that_does_not_fit_is_skipped_with_its_reason():
    G = load_topology("dgx-a100")
    rows = predict(G, Workload.gemm(64, 32, 32), gpus=8,
                   candidates=[Arrangement("1d", (8,), "depth-major"), Arrangement("summa25d", (2, 2, 4))])
    assert [(r.arrangement.label, r.skipped) for r in rows] == [
        ("1d [8] depth-major", "placement depth-major needs a grid [q,q,d]"),
        ("summa25d [2,2,4]", "placement: world size 16 needs 16 GPUs, the topology has 8")]


def test_a_placement_that_is_wrong_for_every_arrangement_stops_the_prediction():
    """An unknown name is the user's mistake, not one arrangement's misfit: no table of skips."""
    with pytest.raises(TopologyError, match='unknown placement "no-such-placement"'):
        predict(load_topology("dgx-a100"), Workload.gemm(64, 32, 32), gpus=8,
                candidates=[Arrangement("summa25d", (2, 2, 2), "no-such-placement")])


@pytest.mark.parametrize("error", [ValueError("a bug"), KeyError("a bug"), InputError("a bug")])
# Building the schedule, and compiling it for the topology (patched where simulation.py looks it up).
@pytest.mark.parametrize("target", ["simulator.predict.build_schedule", "simulator.timing.simulation.compile_schedule"])
def test_an_exception_other_than_not_applicable_propagates_instead_of_becoming_a_skipped_row(
        monkeypatch, target, error):
    def broken(*args, **kwargs):
        raise error

    monkeypatch.setattr(target, broken)
    with pytest.raises(type(error), match="a bug"):
        predict(load_topology("dgx-a100"), Workload.gemm(64, 32, 32), gpus=8)


def test_a_bug_inside_an_arrangement_is_a_traceback_of_tpsim_predict_not_a_skipped_row(monkeypatch, capsys):
    def broken(*args, **kwargs):
        raise ValueError("a bug")

    monkeypatch.setattr("simulator.timing.simulation.compile_schedule", broken)
    with pytest.raises(ValueError, match="a bug"):  # out of main: Python prints the traceback, exit status 1
        main(["predict", "--gpus", "8", "--topology", "dgx-a100", "--workload", "gemm", "--m", "64", "--k", "32",
              "--n", "32"])
    assert capsys.readouterr().out == ""


def test_cli_table_json_csv_png(capsys, tmp_path):
    common = ("predict", "--gpus", "8", "--topology", "a100-4gpu:2", "--workload", "gemm", "--m", "512",
              "--k", "256", "--n", "128")
    status, out, err = run(capsys, *common, "--csv", str(tmp_path / "p.csv"), "--png", str(tmp_path / "p.png"))
    assert status == 0 and err == ""
    lines = out.splitlines()
    assert lines[0] == "tpsim predict: gemm (m=512, k=256, n=128) fwd+bwd bfloat16 on 8 GPUs of a100-4gpu:2"
    assert lines[1].split()[:3] == ["#", "arrangement", "time"]
    assert lines[2].split()[0] == "1" and lines[2].rstrip().endswith("1.00x")
    with open(tmp_path / "p.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert [r["rank"] for r in rows] == [str(i) for i in range(1, len(rows) + 1)]
    assert (tmp_path / "p.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    status, out, _ = run(capsys, *common, "--json", "--placement", "all", "--algos", "summa25d,1d")
    data = json.loads(out)
    assert status == 0 and isinstance(data, list)
    assert all({"algorithm", "grid", "time_s", "placement", "status"} <= set(row) for row in data)
    assert {row["placement"] for row in data} == {"linear", "depth-major", "column-major"}
    times = [row["time_s"] for row in data if row["status"] == "ok"]
    assert times == sorted(times)


@pytest.mark.parametrize("argv, message", [
    (("--gpus", "8", "--topology", "nope"), "preset"),
    (("--gpus", "0", "--topology", "dgx-a100"), "--gpus must be >= 1"),
    (("--gpus", "16", "--topology", "dgx-a100"), "world size 16 needs 16 GPUs"),
    (("--gpus", "8", "--topology", "dgx-a100", "--algos", "4d"), "unknown algorithm '4d'"),
    (("--gpus", "8", "--topology", "dgx-a100", "--placement", "nope"), 'unknown placement "nope"'),
    (("--gpus", "3", "--topology", "dgx-a100", "--algos", "2d", "--png", "never.png"),  # 2d needs a square
     "no arrangement fits this workload: nothing to plot"),
])
def test_user_errors_are_one_line_and_exit_2(capsys, argv, message):
    status, out, err = run(capsys, "predict", *argv, "--workload", "mlp", "--m", "64", "--hidden", "16")
    assert status == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and message in err


@pytest.mark.parametrize("topology", ["a100-4gpu:16", "dgx-a100:8"])
def test_the_main_job_ranks_the_10_arrangements_of_64_gpus(capsys, topology):
    status, out, err = run(capsys, "predict", "--gpus", "64", "--topology", topology, "--workload", "mlp",
                           "--m", "32768", "--hidden", "4096", "--json", "--no-prune")
    assert status == 0 and err == ""  # not a terminal: no progress bar
    data = json.loads(out)
    assert len(data) == 10 and all(row["status"] == "ok" for row in data)
    assert all({"algorithm", "grid", "time_s"} <= set(row) for row in data)
    assert {(row["algorithm"], tuple(row["grid"])) for row in data} == {
        ("1d", (64,)), ("1d-sp", (64,)), ("2d", (8, 8, 1)), ("cannon25d", (8, 8, 1)), ("cannon25d", (4, 4, 4)),
        ("summa25d", (8, 8, 1)), ("summa25d", (4, 4, 4)), ("summa25d", (2, 2, 16)), ("summa25d", (1, 1, 64)),
        ("3d", (4, 4, 4))}
    times = [row["time_s"] for row in data]
    assert times == sorted(times) and times[0] > 0


class _Terminal(io.StringIO):
    """A stderr that says it is a terminal, as `tpsim predict` asks before drawing its progress bar."""

    def isatty(self) -> bool:
        return True


def test_the_progress_bar_is_drawn_on_stderr_when_it_is_a_terminal(capsys, monkeypatch):
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    status = main(["predict", "--gpus", "8", "--topology", "dgx-a100", "--workload", "gemm", "--m", "64",
                   "--k", "32", "--n", "32"])
    out, _ = capsys.readouterr()
    assert status == 0 and out.startswith("tpsim predict:")
    bar = terminal.getvalue()
    assert "/6 " in bar and "arrangement" in bar  # tqdm's "n/6 [...]" with our unit
    assert "tpsim predict" not in bar  # the table stays on stdout
