"""`tpsim run` on gloo refuses, in one line and before any rank starts, a run whose arithmetic alone outlasts
--timeout at this host's gemm rate (executor.estimate); and says so first when it takes more than a few seconds.

Most rows fix the rates (``SLOW``: a core without bfloat16 instructions, as the issue saw, bfloat16 at
0.5 GFLOP/s, float32 at 50) and the cores (2), so that the messages are exact on any machine; the last
rows use the real probe with a timeout no CPU core can meet.
"""

from __future__ import annotations

import hashlib

import pytest

pytest.importorskip("torch")

import executor.estimate  # noqa: E402
from executor.estimate import estimate, probe_rates  # noqa: E402
from simulator.algorithms.registry import build_schedule  # noqa: E402
from simulator.cli import main  # noqa: E402
from simulator.workloads.workload import Workload  # noqa: E402

SLOW = {"bfloat16": 0.5, "float32": 50.0, "float64": 25.0}
CORES = 2


def gemm(n: int, *extra: str) -> tuple[str, ...]:
    return ("--workload", "gemm", "--m", str(n), "--k", str(n), "--n", str(n), *extra)


def one_d(gpus: int, *extra: str) -> tuple[str, ...]:
    return ("--algo", "1d", "--gpus", str(gpus), "--nproc", str(gpus), *extra)


MLP = ("--workload", "mlp", "--m", "2048", "--hidden", "1024")
TRANSFORMER = ("--workload", "transformer", "--batch", "4", "--seq", "512", "--hidden", "1024", "--heads", "16")

ROWS = [
    # bfloat16 on a core without its instructions: float32 is the way out, and the message says so
    (one_d(2, *gemm(2048), "--dtype", "bfloat16", "--timeout", "60"),
     "--timeout 60: the run's arithmetic alone takes about 309 s here (6 iterations x 25.8 GFLOP on the busiest "
     "of 2 ranks at 0.5 GFLOP/s (bfloat16)), more than the timeout; use smaller sizes, --dtype float32 (about "
     "3.1 s), fewer --iters/--warmup or --timeout 928 or more (gloo's communication comes on top)"),
    (one_d(2, *gemm(4096), "--dtype", "bfloat16"), "--timeout 300: the run's arithmetic alone takes about 2,474 s"),
    (one_d(2, *gemm(4096), "--dtype", "bfloat16"), "--dtype float32 (about 25 s)"),
    (one_d(2, *gemm(2048), "--dtype", "bfloat16", "--timeout", "1"), "use smaller sizes, fewer --iters/--warmup or"),
    (one_d(2, *gemm(1024), "--dtype", "bfloat16", "--timeout", "10"), "about 39 s here"),
    (one_d(4, *gemm(2048), "--dtype", "bfloat16", "--timeout", "60"),
     "on the busiest of 4 ranks at 0.25 GFLOP/s (bfloat16, 2 cores)"),
    (one_d(8, *gemm(1024), "--dtype", "bfloat16", "--timeout", "30"), "at 0.125 GFLOP/s (bfloat16, 2 cores)"),
    (("--algo", "2d", "--grid", "2,2,1", "--nproc", "4", *gemm(2048), "--dtype", "bfloat16", "--timeout", "60"),
     "6 iterations x 12.9 GFLOP on the busiest of 4 ranks"),
    (("--algo", "summa25d", "--grid", "2,2,2", "--nproc", "8", *MLP, "--dtype", "bfloat16", "--timeout", "60"),
     "--timeout 60: the run's arithmetic alone takes about 619 s here"),
    (("--algo", "cannon25d", "--grid", "2,2,2", "--nproc", "8", *MLP, "--dtype", "bfloat16", "--timeout", "60"),
     "--dtype float32 (about 6.2 s)"),
    (("--algo", "1d", "--gpus", "2", "--nproc", "2", *TRANSFORMER, "--dtype", "bfloat16", "--timeout", "60"),
     "the run's arithmetic alone takes about"),
    (("--algo", "1d-sp", "--gpus", "2", "--nproc", "2", *MLP, "--dtype", "bfloat16", "--timeout", "60"),
     "(bfloat16)), more than the timeout"),
    # float32 that is simply too much for the timeout: no dtype advice
    (one_d(2, *gemm(1024), "--dtype", "float32", "--iters", "100", "--timeout", "5"),
     "--timeout 5: the run's arithmetic alone takes about 6.5 s here (101 iterations x 3.22 GFLOP on the busiest "
     "of 2 ranks at 50 GFLOP/s (float32)), more than the timeout; use smaller sizes, fewer --iters/--warmup or "
     "--timeout 20 or more"),
    (one_d(2, *gemm(4096), "--dtype", "float32", "--timeout", "20"), "about 25 s here"),
    (one_d(2, *gemm(2048), "--dtype", "float32", "--iters", "1000", "--timeout", "60"), "1001 iterations x 25.8 GFLOP"),
    (one_d(2, *gemm(4096), "--dtype", "float64", "--timeout", "20"), "at 25 GFLOP/s (float64)"),
    (one_d(2, *gemm(4096), "--dtype", "float64", "--timeout", "30"), "use smaller sizes, --dtype float32 (about 25 s)"),
    # one iteration in all: no "fewer --iters" advice
    (one_d(2, *gemm(2048), "--dtype", "bfloat16", "--warmup", "0", "--iters", "1", "--timeout", "20"),
     "(1 iteration x 25.8 GFLOP on the busiest of 2 ranks at 0.5 GFLOP/s (bfloat16)), more than the timeout; use "
     "smaller sizes, --dtype float32 (about 0.52 s) or --timeout 155 or more"),
    (one_d(2, *gemm(2048), "--dtype", "bfloat16", "--warmup", "5", "--iters", "5", "--timeout", "100"),
     "10 iterations x 25.8 GFLOP"),
    # the outputs it would have written are neither created nor touched
    (one_d(2, *gemm(2048), "--dtype", "bfloat16", "--timeout", "60", "--json", "OUT"), "about 309 s here"),
    (one_d(2, *gemm(2048), "--dtype", "bfloat16", "--timeout", "60", "--trace", "OUT"), "about 309 s here"),
    # a timeout that is too short even for float32: float32 is not offered
    (one_d(2, *gemm(2048), "--dtype", "bfloat16", "--timeout", "2"), "use smaller sizes, fewer --iters/--warmup or "
                                                                       "--timeout 928 or more"),
]


def _digest(path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


def _fixed(monkeypatch):
    monkeypatch.setattr(executor.estimate, "probe_rates", lambda dtypes: {d: SLOW[d] for d in dtypes})
    monkeypatch.setattr(executor.estimate, "cores", lambda: CORES)


def _check_refused(capsys, tmp_path, argv, message):
    fresh, kept = tmp_path / "fresh.json", tmp_path / "kept.json"
    kept.write_text('{"kept": true}\n')
    before = _digest(kept)
    argv = [a.replace("OUT", str(fresh)) for a in argv]
    for out in (fresh, kept):
        full = ["run", *[a.replace(str(fresh), str(out)) for a in argv]]
        status = main(full)
        stdout, stderr = capsys.readouterr()
        assert status == 2, stderr
        assert stdout == "" and "Traceback" not in stderr
        assert len(stderr.splitlines()) == 1 and stderr.startswith("tpsim run: error: --timeout "), stderr
        assert message in stderr, stderr
    assert not fresh.exists() and _digest(kept) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.json"]


@pytest.mark.parametrize("argv, message", ROWS, ids=[f"row{i}" for i in range(len(ROWS))])
def test_a_run_that_cannot_finish_in_time_is_refused_in_one_line(capsys, tmp_path, monkeypatch, argv, message):
    _fixed(monkeypatch)
    _check_refused(capsys, tmp_path, argv, message)


def test_a_saved_schedule_is_not_told_to_change_its_dtype(capsys, tmp_path, monkeypatch):
    schedule = tmp_path / "s.json"
    assert main(["schedule", *one_d(2, *gemm(2048), "--dtype", "bfloat16")[:4], *gemm(2048), "--dtype", "bfloat16",
                 "--out", str(schedule)]) == 0
    capsys.readouterr()
    _fixed(monkeypatch)
    status = main(["run", "--schedule", str(schedule), "--nproc", "2", "--timeout", "60"])
    _, err = capsys.readouterr()
    assert status == 2 and len(err.splitlines()) == 1
    assert "about 309 s here" in err and "--dtype" not in err


@pytest.mark.parametrize("argv, message", [
    (one_d(2, *gemm(4096), "--dtype", "bfloat16", "--timeout", "0.01"), "--timeout 0.01: the run's arithmetic alone"),
    (one_d(2, *gemm(4096), "--dtype", "float32", "--timeout", "0.01"), "(float32)), more than the timeout"),
], ids=["bfloat16", "float32"])
def test_with_the_real_probe_an_impossible_timeout_is_refused(capsys, tmp_path, argv, message):
    # 1.24 TFLOP of arithmetic per rank in 0.01 s: 124 TFLOP/s per core, which no CPU has
    _check_refused(capsys, tmp_path, argv, message)


def test_a_long_but_possible_run_says_so_first_and_runs(capsys, monkeypatch):
    # A fixed rate of 0.001 GFLOP/s makes a 256^3 float32 gemm (forward and both gradients) look like 50 s (past the note's 5 s) while the
    # real run takes milliseconds, so nothing here depends on how fast or loaded this host is. The floor that
    # decides whether to probe at all is lowered with it, or so small a run would never be probed.
    monkeypatch.setattr(executor.estimate, "FLOOR_GFLOPS", 0.001)
    monkeypatch.setattr(executor.estimate, "probe_rates", lambda dtypes: {d: 0.001 for d in dtypes})
    monkeypatch.setattr(executor.estimate, "cores", lambda: CORES)
    status = main(["run", *one_d(2, *gemm(256), "--dtype", "float32", "--iters", "1", "--warmup", "0"),
                   "--timeout", "3600"])
    out, err = capsys.readouterr()
    assert status == 0 and "correct" in out
    assert err.splitlines() == ["tpsim run: the arithmetic alone takes about 50 s here (1 iteration x 0.0503 GFLOP "
                                "on the busiest of 2 ranks at 0.001 GFLOP/s (float32)); --timeout 3600"]


def test_a_quick_run_is_not_probed(capsys, monkeypatch):
    def probe(_dtypes):
        raise AssertionError("probed a run that is quick at any rate")

    monkeypatch.setattr(executor.estimate, "probe_rates", probe)
    status = main(["run", *one_d(2, *gemm(64), "--dtype", "bfloat16")])
    out, err = capsys.readouterr()
    assert status == 0 and err == ""


def test_the_estimate_counts_the_busiest_rank_its_iterations_and_the_shared_cores():
    schedule = build_schedule("1d", Workload.gemm(64, 32, 16), "both", "float32", gpus=4)
    flops = 3 * 2 * 64 * 32 * 16 // 4  # forward and both gradients, split over 4 ranks
    found = estimate(schedule, 6, {"float32": 2.0}, n_cores=2)
    assert found.flops_per_iteration == flops and found.iterations == 6
    assert found.seconds == pytest.approx(6 * flops / 2e9 * 2)  # 4 ranks on 2 cores: half a core each
    assert found.rate_GFLOPs == pytest.approx(1.0)
    assert estimate(schedule, 6, {"float32": 2.0}, n_cores=8).seconds == pytest.approx(6 * flops / 2e9)


def test_the_probe_measures_every_dtype_asked_for():
    rates = probe_rates({"float32", "bfloat16"})
    assert set(rates) == {"float32", "bfloat16"} and all(0 < r < 1e5 for r in rates.values())
