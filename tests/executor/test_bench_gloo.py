"""`tpsim bench` on real gloo ranks: the tables, the tpsim-bench JSON, and the samples calibration reads."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

torch = pytest.importorskip("torch")

from executor_cases import gpu_count  # noqa: E402

from simulator.calibrate.from_bench import samples_from_bench  # noqa: E402
from simulator.cli import main  # noqa: E402
from simulator.errors import InputError  # noqa: E402

COLLECTIVE_KEYS = {"op", "ranks", "groups", "bytes", "count", "dtype", "redop", "root", "in_place", "time_s",
                   "time_min_s", "time_max_s", "algbw_GBps", "busbw_GBps", "form", "between"}
GEMM_KEYS = {"op", "m", "k", "n", "dtype", "concurrent", "time_s", "time_min_s", "time_max_s", "flops",
             "gflops_per_s", "form"}


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    """One small 2-rank bench of everything: (stdout, record, path)."""
    path = tmp_path_factory.mktemp("bench") / "bench.json"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):  # capsys is function-scoped; one job serves the whole module
        status = main(["bench", "--backend", "gloo", "--nproc", "2", "--sizes", "4KiB,64KiB", "--warmup", "1",
                       "--iters", "2", "--gemm-shapes", "32x16x8", "--out", str(path)])
    assert status == 0, out.getvalue()
    return out.getvalue(), json.loads(path.read_text()), str(path)


def test_every_op_and_size_is_one_row_with_the_documented_keys(bench):
    _, record, _ = bench
    assert (record["format"], record["version"], record["backend"], record["nproc"]) == ("tpsim-bench", 1, "gloo", 2)
    assert {"hostname", "cpu_count", "torch", "load_average_before", "load_average_after"} <= set(record["host"])
    comm = [r for r in record["rows"] if r["op"] != "gemm"]
    assert [(r["op"], r["bytes"]) for r in comm] == [
        (op, size) for op in ("broadcast", "reduce", "all_reduce", "all_gather", "reduce_scatter", "send")
        for size in (4096, 65536)]
    assert all(set(r) == COLLECTIVE_KEYS and r["ranks"] == 2 and r["groups"] == 1 for r in comm)
    assert all(r["form"] == "lock-step" and r["between"] is None for r in comm)
    assert all(0 < r["time_min_s"] <= r["time_s"] <= r["time_max_s"] for r in comm)
    gemms = [r for r in record["rows"] if r["op"] == "gemm"]
    assert [r["concurrent"] for r in gemms] == [1, 2]
    assert set(gemms[0]) == GEMM_KEYS and set(gemms[1]) == GEMM_KEYS
    assert all(r["flops"] == 2 * 32 * 16 * 8 and r["gflops_per_s"] > 0 for r in gemms)


def test_the_tables_are_nccl_tests_style(bench):
    stdout, record, path = bench
    assert stdout.startswith("# tpsim bench: 2 ranks, gloo, ")
    assert "# all_reduce on 2 ranks, 1 group at once, in place; gloo float32, 1 warm-up + 2 timed ops" in stdout
    header = "#        size        count     type  redop  root        time    algbw    busbw"
    assert stdout.count(header) == 6
    row = next(r for r in record["rows"] if r["op"] == "all_reduce" and r["bytes"] == 65536)
    line = next(li for li in stdout.splitlines() if li.split()[:5] == ["65536", "16384", "float", "sum", "-1"]
                and f"{row['time_s'] * 1e6:.1f}" in li)
    assert f"{row['busbw_GBps']:.3f}" in line
    assert stdout.rstrip().endswith(f"wrote bench JSON {path}")


def test_the_record_becomes_calibration_samples(bench):
    _, record, path = bench
    collectives, gemms = samples_from_bench(path)
    assert len(collectives) == 12 and len(gemms) == 2
    assert {c.kind for c in collectives} == {"broadcast", "reduce", "all_reduce", "all_gather", "reduce_scatter",
                                             "send"}
    assert all(c.ranks == 2 and c.time_s > 0 for c in collectives)
    assert [(g.m, g.k, g.n, g.concurrent) for g in gemms] == [(32, 16, 8, 1), (32, 16, 8, 2)]


def test_the_interleaved_form_times_the_op_and_the_gemm_before_it_apart(tmp_path, capsys):
    path = tmp_path / "interleaved.json"
    assert main(["bench", "--backend", "gloo", "--nproc", "2", "--ops", "all_reduce,send,gemm", "--sizes", "64KiB",
                 "--warmup", "1", "--iters", "2", "--gemm-shapes", "64x32x16,16x16x16", "--gemm-concurrency", "2",
                 "--form", "interleaved", "--out", str(path)]) == 0
    stdout = capsys.readouterr().out
    rows = json.loads(path.read_text())["rows"]
    # Per op and size: one case per gemm shape, each an op row then its gemm's row; then the lock-step gemms.
    shapes = [[64, 32, 16], [16, 16, 16]]
    assert [(r["op"], r["form"], r.get("between") or [r["m"], r["k"], r["n"]]) for r in rows] == [
        *[(kind, "interleaved", shape) for op in ("all_reduce", "send") for shape in shapes
          for kind in (op, "gemm")],
        ("gemm", "lock-step", [64, 32, 16]), ("gemm", "lock-step", [16, 16, 16])]
    gemms = [r for r in rows if r["op"] == "gemm" and r["form"] == "interleaved"]
    assert all(r["concurrent"] == 2 and r["between_op"]["bytes"] == 65536 and r["time_s"] > 0 for r in gemms)
    assert "each after a 64x32x16 gemm on every rank (interleaved; time from issue to completion)" in stdout
    assert "# gemm between the interleaved ops" in stdout
    # Calibration takes the interleaved collectives, and both kinds of gemm, marked apart.
    collectives, samples = samples_from_bench(str(path))
    assert len(collectives) == 4 and all("interleaved" in c.source for c in collectives)
    assert sorted((g.after_comm, g.m) for g in samples) == [(False, 16), (False, 64), (True, 16), (True, 16),
                                                           (True, 64), (True, 64)]
    with pytest.raises(InputError, match="no lock-step collective rows .* tpsim bench --form lock-step"):
        samples_from_bench(str(path), "lock-step")


def test_nccl_without_a_gpu_per_rank_is_bad_input(capsys):
    if gpu_count() >= 2:  # the fork-safe count: later tests fork ranks from this process
        pytest.skip("this machine has the GPUs")
    assert main(["bench", "--backend", "nccl", "--nproc", "2", "--ops", "all_reduce", "--sizes", "4KiB"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tpsim bench: error: --backend nccl needs one CUDA GPU per rank") and err.count("\n") == 1
