"""`tpsim calibrate --from-steps`: the fit recovers a known gemm_efficiency, leave-one-out, files, one-line errors."""

import json
import math

import pytest

from simulator.cli import main
from topologies import load_topology, save_topology

BASE = "dgx-h100"
# Small blocks, pinned to one arrangement: each predict is a few milliseconds.
SMALL = ("--workload transformer --hidden 1024 --heads 8 --seq 512 --layers 2 --tp-sizes {tp} --pp-sizes 1 "
         "--algos 1d --zero 0 --recompute none --batch 2 --global-batch {batch} --gpus {gpus}")
LINES = {"tp1": SMALL.format(tp=1, batch=16, gpus=8), "tp2": SMALL.format(tp=2, batch=8, gpus=8),
         "tp8": SMALL.format(tp=8, batch=4, gpus=8)}


def _step_s(predict: str, efficiency: float, tmp_path) -> float:
    """The step tpsim predicts for ``predict`` on BASE with every GEMM at ``efficiency``: a 'measurement'."""
    G = load_topology(BASE)
    G.graph["sim"] = {**G.graph["sim"], "gemm_efficiency": efficiency}
    path = tmp_path / f"at-{efficiency}.yaml"
    save_topology(G, str(path))
    return _predicted(predict, ["--topology", str(path)])


def _predicted(predict: str, topology: list[str]) -> float:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["predict", *predict.split(), *topology, "--json"]) == 0
    (row,) = [r for r in json.loads(out.getvalue()) if r["status"] == "ok"]
    return row["step_time_s"]


def _steps(tmp_path, entries: list[dict], name: str = "steps.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps({"steps": entries}))
    return str(path)


def _calibrate(tmp_path, steps: str, *extra: str) -> int:
    return main(["calibrate", "--from-steps", steps, "--topology", BASE, "-o", str(tmp_path / "out.yaml"), *extra])


def _json(capsys) -> dict:
    return json.loads(capsys.readouterr().out)


def test_one_entry_measured_at_0_6_fits_0_6_and_the_file_predicts_it(tmp_path, capsys):
    measured = _step_s(LINES["tp2"], 0.6, tmp_path)
    steps = _steps(tmp_path, [{"name": "tp2", "predict": LINES["tp2"], "step_s": measured}])
    assert _calibrate(tmp_path, steps, "--profile", str(tmp_path / "p.yaml"), "--json") == 0
    data = _json(capsys)
    assert data["gemm_efficiency"] == pytest.approx(0.6, abs=1e-3)
    assert data["base_gemm_efficiency"] > 0.7  # H100's cap from its published rate, not the fitted value
    (entry,) = data["entries"]
    assert entry["error_after"] == pytest.approx(0.0, abs=1e-6) and entry["held_out_s"] is None
    # The written topology, and the profile carried to the preset, predict the measured step.
    assert _predicted(LINES["tp2"], ["--topology", str(tmp_path / "out.yaml")]) == pytest.approx(measured, rel=1e-6)
    assert _predicted(LINES["tp2"], ["--topology", BASE, "--calibration", str(tmp_path / "p.yaml")]) == \
        pytest.approx(measured, rel=1e-6)
    assert "gemm_efficiency" in (tmp_path / "p.yaml").read_text()


def test_entries_all_measured_at_0_6_fit_and_hold_out_at_0_6(tmp_path, capsys):
    entries = [{"name": k, "predict": v, "step_s": _step_s(v, 0.6, tmp_path)} for k, v in LINES.items()]
    assert _calibrate(tmp_path, _steps(tmp_path, entries), "--json") == 0
    data = _json(capsys)
    assert data["gemm_efficiency"] == pytest.approx(0.6, abs=1e-3)
    assert data["rms_log_error"] < 1e-3
    for entry in data["entries"]:
        assert entry["held_out_efficiency"] == pytest.approx(0.6, abs=1e-3)
        assert abs(entry["error_held_out"]) < 1e-3
        assert entry["error_before"] < 0  # the preset's cap (0.83) is faster than 0.6


def test_leave_one_out_fits_each_entry_on_the_others(tmp_path, capsys):
    """Entries measured at 0.5, 0.6, 0.7: the one at 0.5, held out, is predicted at a value fitted on the
    other two (between 0.6 and 0.7), and its predicted step is tpsim's at that value."""
    at = {"tp1": 0.5, "tp2": 0.6, "tp8": 0.7}
    entries = [{"name": k, "predict": LINES[k], "step_s": _step_s(LINES[k], e, tmp_path)} for k, e in at.items()]
    assert _calibrate(tmp_path, _steps(tmp_path, entries), "--json") == 0
    data = _json(capsys)
    assert 0.5 < data["gemm_efficiency"] < 0.7
    rows = {r["name"]: r for r in data["entries"]}
    held = rows["tp1"]["held_out_efficiency"]
    assert 0.6 < held < 0.7
    assert rows["tp1"]["held_out_s"] == pytest.approx(_step_s(LINES["tp1"], held, tmp_path), rel=1e-9)
    assert rows["tp1"]["error_held_out"] < 0 < rows["tp8"]["error_held_out"]  # too fast / too slow, as built
    ratios = [r["held_out_s"] / r["measured_s"] for r in data["entries"]]
    assert data["geomean_error_held_out"] == pytest.approx(
        math.exp(sum(abs(math.log(r)) for r in ratios) / 3) - 1)


def test_no_holdout_skips_it_and_the_text_report_says_what_it_fitted(tmp_path, capsys):
    entries = [{"name": k, "predict": v, "step_s": _step_s(v, 0.6, tmp_path)} for k, v in list(LINES.items())[:2]]
    assert _calibrate(tmp_path, _steps(tmp_path, entries), "--no-holdout") == 0
    text = capsys.readouterr().out
    assert "# held out" not in text and "gemm_efficiency" in text and "-> 0.6" in text


def test_a_throughput_fits_as_the_step_it_implies(tmp_path, capsys):
    step = _step_s(LINES["tp1"], 0.6, tmp_path)
    tokens = 16 * 512 / step / 8  # global batch x seq per step, over 8 GPUs
    steps = _steps(tmp_path, [{"predict": LINES["tp1"], "tokens_per_s_per_gpu": tokens}])
    assert _calibrate(tmp_path, steps, "--json") == 0
    data = _json(capsys)
    assert data["entries"][0]["measured_s"] == pytest.approx(step) and data["entries"][0]["name"] == "step 1"
    assert data["gemm_efficiency"] == pytest.approx(0.6, abs=1e-3)


def test_an_entry_may_name_the_base_at_another_size(tmp_path, capsys):
    line = SMALL.format(tp=1, batch=32, gpus=16)
    uncalibrated = _predicted(line, ["--topology", f"{BASE}:2"])
    steps = _steps(tmp_path, [{"predict": f"{line} --topology {BASE}:2", "step_s": 1.2 * uncalibrated}])
    assert _calibrate(tmp_path, steps, "--json") == 0
    (entry,) = _json(capsys)["entries"]
    assert entry["arrangement"] == "data parallel dp=16" and entry["before_s"] == pytest.approx(uncalibrated)


GOOD = LINES["tp1"]
BAD = [
    ({"steps": []}, "steps must be a non-empty list"),
    ([{"predict": GOOD, "step_s": 1}], "a steps file is a mapping with one key, steps:"),
    ({"steps": [{"predict": GOOD, "step_s": 1}], "extra": 1}, "unknown key 'extra'"),
    ({"steps": [{"predict": GOOD, "step_s": 1, "tokens_per_s_per_gpu": 5}]}, "entry 1: give exactly one of"),
    ({"steps": [{"predict": GOOD}]}, "entry 1: give exactly one of step_s and tokens_per_s_per_gpu, got neither"),
    ({"steps": [{"predict": GOOD, "step_s": 0}]}, "entry 1: step_s must be a finite number > 0, got 0"),
    ({"steps": [{"predict": GOOD, "step_s": -2.0}]}, "step_s must be a finite number > 0"),
    ({"steps": [{"predict": GOOD, "step_s": "fast"}]}, "step_s must be a finite number > 0, got 'fast'"),
    ({"steps": [{"predict": GOOD, "step_s": 1, "stepp": 2}]}, "entry 1: unknown key 'stepp'"),
    ({"steps": [{"predict": "", "step_s": 1}]}, "predict must be the tpsim predict arguments"),
    ({"steps": [{"name": "q", "predict": GOOD + " --model 'x", "step_s": 1}]}, "(No closing quotation)"),
    ({"steps": [{"predict": GOOD + " --bogus", "step_s": 1}]}, "predict: unrecognized arguments: --bogus"),
    ({"steps": [{"predict": GOOD.replace("--tp-sizes 1", "--tp-sizes 1,2"), "step_s": 1}]},
     "predict leaves 2 arrangements"),
    ({"steps": [{"predict": GOOD.replace(" --global-batch 16", ""), "step_s": 1}]}, "give --global-batch G"),
    ({"steps": [{"predict": GOOD + " --topology dgx-a100", "step_s": 1}]},
     "has A100-SXM4-40GB GPUs, but --topology dgx-h100 has H100-SXM5-80GB"),
    ({"steps": [{"predict": GOOD + " --csv x.csv", "step_s": 1}]}, "--csv has no place in a steps file"),
    ({"steps": [{"predict": GOOD, "step_s": 1e-6}]}, "gemm_efficiency would go above 1"),  # faster than peak
    ({"steps": [{"predict": GOOD, "step_s": 1e4}]}, "gemm_efficiency would go below 0.05"),
]


@pytest.mark.parametrize("doc, message", BAD, ids=[m for _, m in BAD])
def test_bad_steps_are_one_line_exit_2_and_nothing_written(tmp_path, capsys, doc, message):
    path = tmp_path / "steps.json"
    path.write_text(json.dumps(doc))
    assert _calibrate(tmp_path, str(path), "--profile", str(tmp_path / "p.yaml")) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and err.startswith("tpsim calibrate: error: ")
    assert "steps.json" in err
    assert not (tmp_path / "out.yaml").exists() and not (tmp_path / "p.yaml").exists()


def test_a_fit_at_a_bound_is_written_with_force(tmp_path, capsys):
    steps = _steps(tmp_path, [{"predict": GOOD, "step_s": 1e-6}])
    assert _calibrate(tmp_path, steps, "--force") == 0
    assert "note: at a bound: gemm_efficiency would go above 1" in capsys.readouterr().out
    assert load_topology(str(tmp_path / "out.yaml")).graph["sim"]["gemm_efficiency"] == 1.0


def test_bad_files_and_collective_options_are_one_line(tmp_path, capsys):
    assert _calibrate(tmp_path, str(tmp_path / "missing.yaml")) == 2
    assert "missing.yaml" in capsys.readouterr().err
    bad_yaml = tmp_path / "bad.yaml"
    bad_yaml.write_text("steps: [\n")
    assert _calibrate(tmp_path, str(bad_yaml)) == 2
    assert capsys.readouterr().err.startswith("tpsim calibrate: error: steps file ")
    steps = _steps(tmp_path, [{"predict": GOOD, "step_s": 1}])
    assert _calibrate(tmp_path, steps, "--holdout-ranks", "4") == 2
    assert "--holdout-ranks apply to --from-bench and --from-nccl-tests" in capsys.readouterr().err
    assert not (tmp_path / "out.yaml").exists()
