"""`tpsim calibrate`: the report, a file the simulator loads and reproduces, one-line errors, no half files."""

import json
import re
from pathlib import Path

import pytest

from simulator.cli import main
from topologies import load_topology

LOGS = Path(__file__).resolve().parents[1] / "data" / "nccl-tests" / "azure-ndv4-a100"
LOG_FILES = [str(LOGS / f"all_reduce_perf_{n}gpu.log") for n in (2, 4, 8)]
FIXTURES = Path(__file__).resolve().parents[1] / "data" / "nccl-tests-format"


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory):
    """Run the command once on the real logs: (output path, printed report)."""
    out = tmp_path_factory.mktemp("cal") / "calibrated.yaml"
    import contextlib
    import io

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        status = main(["calibrate", "--from-nccl-tests", *LOG_FILES, "--topology", "dgx-a100", "-o", str(out)])
    assert status == 0
    return out, printed.getvalue()


def test_the_report_has_per_bucket_tables_and_summary_lines(calibrated):
    _, report = calibrated
    for heading in ("# fitted parameters", "# fitted size buckets", "# held-out size buckets (not fitted)",
                    "# below the fit range (< 1MiB; not fitted)"):
        assert heading in report
    assert "     all_reduce     4     2MiB " in report  # a held-out row: kind, ranks, size, measured, ...
    assert "max |error|      fit:" in report and "max |error| held-out:" in report
    held = next(line for line in report.splitlines() if line.startswith("max |error| held-out"))
    assert float(held.split(":")[1].split("%")[0]) < 10.0


def test_the_written_topology_loads_and_tpsim_collective_reproduces_the_fit(calibrated, capsys):
    out, report = calibrated
    G = load_topology(str(out))
    assert G.graph["name"] == "dgx-a100-calibrated" and "Fitted (log-time least squares" in G.graph["notes"]
    predicted = {}
    for line in report.splitlines():
        words = line.split()
        if len(words) == 6 and words[0] == "all_reduce" and words[1] == "4":
            predicted[words[2]] = float(words[4])
    assert main(["collective", "--topology", str(out), "--compare", LOG_FILES[1], "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    from simulator.sizes import format_size

    for row in rows:
        # The fit predicts the GPUs' time; --compare adds the host's enqueue floor of the log's nGpus.
        assert row["simulated_time_s"] * 1e6 == pytest.approx(predicted[format_size(row["bytes"])], abs=0.006)


def test_json_output_and_explicit_holdout(tmp_path, capsys):
    out = tmp_path / "c.json"
    args = ["calibrate", "--from-nccl-tests", *LOG_FILES, "--topology", "dgx-a100", "-o", str(out),
            "--holdout-ranks", "4", "--holdout-sizes", "alternate", "--json"]
    assert main(args) == 0
    record = json.loads(capsys.readouterr().out)
    assert {r["ranks"] for r in record["fit_rows"]} == {2, 8}
    assert all(abs(r["rel_error"]) < 0.10 for r in record["holdout_rows"] if r["nbytes"] >= 1 << 20)
    assert load_topology(str(out)).graph["sim"]["collective_startup_bytes"] == record["parameters"][
        "collective_startup_bytes"]


def _error(capsys, args) -> str:
    assert main(args) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tpsim calibrate: error: "), captured.err
    return lines[0]


def _write(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("make_input, message", [
    (lambda d: ["--from-nccl-tests", _write(d / "all_reduce_perf_8gpu.log", "hello world\n")],
     "all_reduce_perf_8gpu.log line 1: expected an nccl-tests header"),
    (lambda d: ["--from-nccl-tests", str(d / "missing_perf.log")], "nccl-tests log .*missing_perf.log not found"),
    # Rows as sendrecv prints them (no reduction, no root, the whole buffer): none of the five tests.
    (lambda d: ["--from-nccl-tests", _write(d / "mylog.txt", (FIXTURES / "broadcast_perf_4gpu.log").read_text()
                                            .replace("none       0 ", "none      -1 "))],
     "mylog.txt: cannot tell which test"),
    (lambda d: ["--from-bench", _write(d / "b.json", '{"format": "tpsim-run", "version": 1}')], "not a bench record"),
    (lambda d: ["--from-bench", _write(d / "b.json", '{"format": "tpsim-bench", "version": 99, "rows": []}')],
     "bench record version 99"),
    (lambda d: ["--from-bench", _write(d / "b.json", "{not json")], "not valid JSON"),
    (lambda d: ["--from-bench", str(d / "none.json")], "cannot read bench file"),
])
def test_bad_inputs_are_one_line_exit_2_and_write_nothing(tmp_path, capsys, make_input, message):
    out = tmp_path / "calibrated.yaml"
    line = _error(capsys, ["calibrate", *make_input(tmp_path), "--topology", "dgx-a100", "-o", str(out)])
    assert re.search(message, line), line
    assert not out.exists() and [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


@pytest.mark.parametrize("extra, message", [
    (["--topology", "nosuch.yaml"], "topology file nosuch.yaml not found"),
    (["--topology", "dgx-z"], 'unknown preset "dgx-z"'),
    (["--topology", "loopback:4"], "on 8 ranks does not fit topology loopback:4, which has 4 GPUs"),
    (["--topology", "dgx-a100", "--holdout-sizes", "4M"], "unit 'M' is ambiguous"),
    (["--topology", "dgx-a100", "--holdout-ranks", "four"], "'four' is not a rank count"),
    (["--topology", "dgx-a100", "--holdout-ranks", "2,4,8"], "no collective bucket left to fit"),
    (["--topology", "dgx-a100", "--no-holdout", "--holdout-ranks", "4"], "--no-holdout contradicts"),
])
def test_bad_options_are_one_line_exit_2(tmp_path, capsys, extra, message):
    out = tmp_path / "calibrated.yaml"
    line = _error(capsys, ["calibrate", "--from-nccl-tests", *LOG_FILES, *extra, "-o", str(out)])
    assert message in line
    assert not out.exists()


def test_bad_output_path_is_refused_before_any_work(tmp_path, capsys):
    for out, message in ((tmp_path / "c.txt", "is a .yaml, .yml or .json file"),
                         (tmp_path / "no" / "c.yaml", "does not exist")):
        line = _error(capsys, ["calibrate", "--from-nccl-tests", str(tmp_path / "x_perf.log"), "--topology",
                               "dgx-a100", "-o", str(out)])
        assert message in line


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    from simulator.calibrate.result import Calibration

    old = tmp_path / "calibrated.yaml"
    old.write_text("old contents\n")
    G = load_topology("loopback:2")

    def broken_save(graph, path):
        Path(path).write_text("half a fi")
        raise OSError("disk full")

    monkeypatch.setattr("simulator.calibrate.result.save_topology", broken_save)
    with pytest.raises(OSError, match="disk full"):
        Calibration(G, {}, (), ()).write(str(old))
    assert old.read_text() == "old contents\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["calibrated.yaml"]


def test_from_bench_reads_a_bench_record_and_fits_links_and_gemms(tmp_path, capsys):
    """A tpsim-bench v1 record whose times the simulator made from known loopback parameters."""
    from simulator.calibrate.fit import simulate_buckets
    from simulator.calibrate.knobs import apply_values, collective_knobs
    from simulator.compute import ComputeConfig, ComputeModel
    from topologies import gpu_nodes

    base = load_topology("loopback:4")
    base.graph["sim"]["collective_protocol"] = "simple"
    truth = {"loopback.bandwidth_scale": 0.5, "loopback.latency_us": 30.0, "collective_base_latency_us": 80.0,
             "collective_startup_bytes": 64 << 10, "collective_channel_bandwidth_GBps": 0.8}
    knobs = collective_knobs(base, ["loopback"])
    true_graph = apply_values(base, knobs, [truth[k.name] for k in knobs])
    keys = [(op, r, 4 << (2 * k)) for op in ("all_reduce", "broadcast") for r in (2, 4) for k in range(10)]
    keys += [("send", 2, 4 << (2 * k)) for k in range(10)]
    rows = [{"op": op, "ranks": r, "groups": 1, "bytes": s, "time_s": t}
            for (op, r, s), t in zip(keys, simulate_buckets(true_graph, keys))]
    device = base.nodes[gpu_nodes(base)[0]]["device"]
    model = ComputeModel(ComputeConfig(gemm_efficiency=0.3, half_efficiency_dim=64.0))
    rows += [{"op": "gemm", "m": d, "k": d, "n": d, "dtype": "float32", "concurrent": 4,
              "time_s": model.gemm_time_s(device, "float32", d, d, d)} for d in (64, 256, 1024)]
    bench = tmp_path / "bench.json"
    bench.write_text(json.dumps({"format": "tpsim-bench", "version": 1, "rows": rows}))
    out = tmp_path / "loopback-calibrated.yaml"
    assert main(["calibrate", "--from-bench", str(bench), "--topology", "loopback:4", "--protocol", "simple",
                 "-o", str(out), "--no-holdout", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    for name, value in truth.items():
        assert record["parameters"][name] == pytest.approx(value, rel=0.03), name
    assert record["parameters"]["gemm_efficiency"] == pytest.approx(0.3, rel=0.03)
    assert record["fit_min_bytes"] == 0 and record["holdout_rows"] == []
    assert load_topology(str(out)).graph["sim"]["collective_protocol"] == "simple"
    # all_reduce holds the most buckets (20, as broadcast, first in kind order): broadcast and send get a
    # factor (1 here: one set of rates made every kind), which the written file keeps.
    factors = load_topology(str(out)).graph["sim"]["collective_kind_bytes_factors"]
    assert factors == pytest.approx({"broadcast": 1.0, "send": 1.0}, rel=0.03)
    assert main(["calibrate", "--from-bench", str(bench), "--topology", "loopback:4", "--protocol", "simple",
                 "-o", str(out), "--no-holdout", "--no-kind-factors", "--json"]) == 0
    assert not any(name.startswith("kind_factor.") for name in json.loads(capsys.readouterr().out)["parameters"])
    assert "collective_kind_bytes_factors" not in load_topology(str(out)).graph["sim"]
