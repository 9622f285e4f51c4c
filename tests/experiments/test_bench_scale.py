"""experiments.bench_scale on its 64-GPU smoke cases: figures from a real run, the baseline beside it, bad input."""

import csv

import pytest

from experiments import bench_scale


def _rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_a_quick_case_against_this_very_commit_gives_the_same_output(tmp_path, capsys):
    out = tmp_path / "bench.csv"
    assert bench_scale.main(["--quick", "--case", "1d 64", "--baseline", "HEAD", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    rows = _rows(out)
    assert [r["code"] for r in rows] == ["this checkout", "baseline HEAD"]
    for row in rows:
        assert row["status"] == "ok" and float(row["cpu_s"]) > 0 and float(row["peak_MB"]) > 10
        assert int(row["flows"]) > 0 and int(row["events"]) > 0
    assert rows[0]["flows"] == rows[1]["flows"] and rows[0]["events"] == rows[1]["events"]
    assert " same" in printed.splitlines()[1]


def test_predict_reports_its_bound_rows(tmp_path):
    out = tmp_path / "bench.csv"
    assert bench_scale.main(["--quick", "--case", "predict 64", "--baseline", "none", "--out", str(out)]) == 0
    (row,) = _rows(out)
    assert row["status"] == "ok" and int(row["bound_rows"]) >= 1


def test_run_times_are_left_out_of_the_output_comparison():
    output = "  makespan  43.523 ms\n  simulated 1 collectives, 10 flows, 20 events in 0.06 s\n"
    assert bench_scale._comparable(output) == ["  makespan  43.523 ms"]


def test_the_full_cases_name_every_algorithm_and_the_targets():
    names = {case.name: case for case in bench_scale.cases()}
    for algo in ("1d", "1d-sp", "2d", "cannon25d", "summa25d", "3d"):
        assert names[f"{algo} 4096"].target_s == 60.0
    assert names["summa25d 16384"].target_MB == 2048.0
    assert names["1d 16384"].target_s == 300.0 and "--gpus 16384" in " ".join(names["1d 16384"].argv)
    assert names["predict 1024"].target_s == 30.0 and names["predict 4096"].target_s == 120.0


@pytest.mark.parametrize("argv,message", [(["--case", "nope"], "unknown case 'nope'"),
                                          (["--timeout", "0"], "--timeout must be > 0")])
def test_bad_arguments_get_one_line(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        bench_scale.main(argv + ["--baseline", "none"])
    assert exit_.value.code == 2 and message in capsys.readouterr().err


def test_an_unknown_baseline_is_refused_with_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(bench_scale.tempfile, "tempdir", str(tmp_path))  # where the checkout would have gone
    with pytest.raises(SystemExit) as exit_:
        bench_scale.main(["--quick", "--case", "1d 64", "--baseline", "no-such-rev", "--out", str(tmp_path / "x")])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "cannot check out --baseline no-such-rev" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "x").exists()
    assert not list(tmp_path.glob("tpsim-baseline-*"))  # nothing left behind
