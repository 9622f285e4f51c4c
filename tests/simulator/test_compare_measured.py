"""`tpsim compare` on a record the executor really wrote (2 gloo ranks): every op class matched, errors finite,
peer waits split out on both sides."""

from __future__ import annotations

import json
import math

import pytest

pytest.importorskip("torch")

from simulator.cli import main  # noqa: E402


def test_compare_reads_what_tpsim_run_writes(tmp_path, capsys):
    measured = tmp_path / "measured.json"
    assert main(["run", "--algo", "1d", "--gpus", "2", "--workload", "mlp", "--m", "32", "--hidden", "16",
                 "--nproc", "2", "--warmup", "1", "--iters", "3", "--out", str(measured)]) == 0
    capsys.readouterr()
    assert main(["compare", str(measured), "--topology", "loopback:2", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    record = json.loads(measured.read_text())
    assert data["measured_s"] == record["time_s"] and data["predicted_s"] > 0
    assert math.isfinite(data["rel_error"]) and len(data["measured_iterations_s"]) == 3
    kinds = {c["class"] for c in data["classes"]}
    assert {"gemm", "local/slice", "all_reduce"} <= kinds
    assert sum(c["ops"] for c in data["classes"]) == len(record["ops"])
    # gloo ranks on one host: the measured side splits out its peer waits too.
    reduce = next(c for c in data["classes"] if c["class"] == "all_reduce")
    assert len(record["clock_origins_s"]) == 2 and 0 <= reduce["measured_wait_s"] <= reduce["measured_s"]
    assert 0 <= reduce["predicted_wait_s"] <= reduce["predicted_s"]
