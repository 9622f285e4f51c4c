"""Bad input to the flags of issue 15: grids no --gpus P has, --out and the deprecated --json FILE, and
collective's --group-size and its deprecated --ranks.

Every row: exit status 2, exactly one line on stderr holding the expected text, no traceback, nothing on
stdout, and the folder untouched (no file created, the existing ``old.json`` unchanged). ``{out}`` in a
row is a file that must not appear, ``{old}`` one that exists and must keep its bytes. None of these
rows needs torch: `run` and `bench` refuse them before importing it.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from simulator.cli import main

GEMM = ["--workload", "gemm", "--m", "8", "--k", "8", "--n", "8"]
RUN = ["run", "--algo", "1d", "--gpus", "2", *GEMM, "--nproc", "2"]
BENCH = ["bench", "--nproc", "2", "--ops", "gemm", "--gemm-shapes", "8x8x8"]
COLLECTIVE = ["collective", "--op", "all_reduce", "--bytes", "1MiB", "--topology", "dgx-a100"]

CASES = [
    # --gpus P without a grid for the algorithm: the real reason, not "grids with q*q*d = P: none".
    (["schedule", "--algo", "2d", "--gpus", "8", *GEMM],
     "2d on --gpus 8: no grid fits; 2d needs P = q^2 GPUs (a [q,q,1] grid; summa25d and cannon25d also take "
     "depth d > 1), which 8 is not"),
    (["schedule", "--algo", "2d", "--gpus", "12", *GEMM, "--out", "{out}"], "2d needs P = q^2 GPUs"),
    (["simulate", "--algo", "2d", "--gpus", "8", *GEMM, "--topology", "dgx-a100", "--trace", "{out}"],
     "2d on --gpus 8: no grid fits; 2d needs P = q^2 GPUs"),
    (["verify", "--algo", "2d", "--gpus", "2", *GEMM], "2d needs P = q^2 GPUs (a [q,q,1] grid"),
    (["run", "--algo", "2d", "--gpus", "8", *GEMM, "--nproc", "8", "--out", "{out}"], "2d needs P = q^2 GPUs"),
    (["schedule", "--algo", "cannon25d", "--gpus", "2", *GEMM],
     "cannon25d on --gpus 2: no grid fits; cannon25d needs P = q*q*c GPUs with the depth c dividing q "
     "(a [q,q,c] grid), which 2 is not"),
    (["simulate", "--algo", "cannon25d", "--gpus", "18", *GEMM, "--topology", "dgx-a100:4"],
     "cannon25d on --gpus 18: no grid fits"),
    (["schedule", "--algo", "3d", "--gpus", "9", *GEMM],
     "3d on --gpus 9: no grid fits; 3d needs P = q^3 GPUs (a [q,q,q] cube), which 9 is not"),
    (["schedule", "--algo", "3d", *GEMM], "3d needs --grid Q,Q,Q or --gpus P (P = q^3 GPUs)"),
    # Non-positive --gpus with a square-grid algorithm: was a ValueError / TypeError traceback.
    (["schedule", "--algo", "2d", "--gpus", "-1", *GEMM], "--gpus must be >= 1, got -1"),
    (["schedule", "--algo", "3d", "--gpus", "-8", *GEMM], "--gpus must be >= 1, got -8"),
    (["schedule", "--algo", "summa25d", "--gpus", "0", *GEMM], "--gpus must be >= 1, got 0"),
    (["verify", "--algo", "cannon25d", "--gpus", "-4", *GEMM], "--gpus must be >= 1, got -4"),
    # run: --out, and --json FILE (the deprecated spelling of --out FILE).
    ([*RUN, "--json", "{out}", "--out", "{old}"], "is the deprecated form of --out FILE, and --out"),
    ([*RUN, "--json", ""], "--json '': --json takes no file now; write one with --out FILE"),
    ([*RUN, "--out", ""], "--out '': give a file name"),
    ([*RUN, "-o", ""], "--out '': give a file name"),
    ([*RUN, "--out", "{old}", "--trace", "{old}"], "--out and --trace name the same file"),
    # The deprecated form's errors are its own line, without the note.
    ([*RUN, "--json", "{old}", "--trace", "{old}"], "--out and --trace name the same file"),
    (["run", "--algo", "2d", "--gpus", "8", *GEMM, "--nproc", "8", "--json", "{out}"], "2d needs P = q^2 GPUs"),
    # bench: the same two options.
    ([*BENCH, "--json", "{out}", "--out", "{old}"], "is the deprecated form of --out FILE, and --out"),
    ([*BENCH, "--json", ""], "--json '': --json takes no file now"),
    ([*BENCH, "--out", ""], "--out '': give a file name"),
    (["bench", "--nproc", "1", "--ops", "send", "--json", "{out}"], "nothing to measure"),
    # collective: --group-size, and --ranks its deprecated name.
    ([*COLLECTIVE, "--group-size", "0"], "--group-size 0: a group has at least 1 rank"),
    ([*COLLECTIVE, "--group-size", "-2"], "--group-size -2: a group has at least 1 rank"),
    ([*COLLECTIVE, "--group-size", "9"], "--group-size 9: topology dgx-a100 has only 8 GPUs"),
    (["collective", "--bytes", "1MiB", "--topology", "dgx-a100"], "give --op (or --compare LOG, which names it and"),
    ([*COLLECTIVE, "--ranks", "4", "--group-size", "8"],
     "--ranks 4 is the deprecated name of --group-size, given too (8); give --group-size N only"),
    ([*COLLECTIVE, "--ranks", "9"], "--group-size 9: topology dgx-a100 has only 8 GPUs"),
    ([*COLLECTIVE, "--ranks", "0"], "--group-size 0: a group has at least 1 rank"),
    # --tp-comm-overlap-cfg: configures --tp-comm-overlap, and names one of simulator.algorithms.ub_configs
    (["schedule", "--algo", "1d-sp", "--gpus", "2", *GEMM, "--tp-comm-overlap-cfg", "te-default", "--out", "{out}"],
     "--tp-comm-overlap-cfg te-default configures --tp-comm-overlap: give both"),
    (["schedule", "--algo", "1d-sp", "--gpus", "2", *GEMM, "--tp-comm-overlap", "--tp-comm-overlap-cfg", "nope"],
     "unknown --tp-comm-overlap-cfg 'nope'; valid: te-default, ub_cfg_h100_h6144_tp2_mbs2_seqlen2048"),
    # run and bench: what decides whether they can start, before torch is imported
    (["run", "--algo", "1d", "--gpus", "2", *GEMM, "--nproc", "0", "--out", "{out}"],
     "--nproc 0: give at least 1 local rank (--nproc N, N >= 1)"),
    (["run", "--algo", "1d", "--gpus", "2", *GEMM, "--nproc", "-3"], "--nproc -3: give at least 1 local rank"),
    (["bench", "--nproc", "1", "--ops", "gemm", "--gemm-shapes", "3000000x3000000x3000000", "--out", "{out}"],
     "bench gemm 3000000x3000000x3000000 float32 on 1 rank needs at least 100,582.8 GiB (its buffers, summed over "
     "its ranks), more than the"),
    # run: the schedule file and every flag that decides whether it can start (executor.preflight)
    (["run", "--schedule", "{old}", "--nproc", "2"], "old.json: not a tpsim schedule (format None, expected 'tpsim-schedule')"),
    ([*RUN, "--warmup", "-1", "--out", "{out}"], "--warmup must be >= 0, got -1"),
    ([*RUN, "--iters", "0"], "--iters must be >= 1, got 0"),
    (["run", "--algo", "1d", "--gpus", "4", *GEMM, "--nproc", "2"], "--nproc 2 but the schedule (1d on grid [4]) has 4 ranks"),
    ([*RUN, "--inject-fault", "x"], "--inject-fault 'x': expected RANK:STEP[:ACTION]"),
    (["run", "--algo", "1d", "--gpus", "2", "--nproc", "2", "--workload", "gemm", "--m", "2097152", "--k", "2097152",
      "--n", "8", "--out", "{out}"], "on 2 local ranks needs at least 98,304.5 GiB"),
]

BEFORE_TORCH = [row for row in CASES if row[0][0] in ("run", "bench")]
"""The run and bench rows, refused before torch is imported (``test_run_and_bench_refuse_before_torch``)."""


def _snapshot(folder) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in folder.iterdir()}


@pytest.mark.parametrize("argv, message", CASES, ids=[f"{i}-{argv[0]}" for i, (argv, _) in enumerate(CASES)])
def test_bad_flag_is_one_line_exit_2_and_writes_nothing(argv, message, tmp_path, capsys):
    old = tmp_path / "old.json"
    old.write_text('{"previous": true}\n')
    before = _snapshot(tmp_path)
    argv = [a.format(out=tmp_path / "out.json", old=old) for a in argv]
    try:
        status = main(argv)
    except SystemExit as exit_:  # argparse's own errors
        status = exit_.code
    out, err = capsys.readouterr()
    assert status == 2, (status, err)
    assert err.count("\n") == 1 and err.endswith("\n"), err
    assert err.startswith(f"tpsim {argv[0]}: error: ") and message in err, err
    assert "Traceback" not in err and out == ""
    assert _snapshot(tmp_path) == before


CHILD = """
import io, json, sys
from simulator.cli import main
rows = []
for argv in json.loads(sys.argv[1]):
    sys.stderr = io.StringIO()
    try:
        status = main(argv)
    except SystemExit as exit_:
        status = exit_.code
    rows.append([status, sys.stderr.getvalue()])
sys.stderr = sys.__stderr__
print(json.dumps({"torch": "torch" in sys.modules, "rows": rows}))
"""


def test_run_and_bench_refuse_before_torch(tmp_path):
    """In one fresh interpreter, where nothing imported torch first, every run and bench row in turn: each is
    refused with its line, and torch is still not imported after all of them."""
    (tmp_path / "old.json").write_text('{"previous": true}\n')
    argvs = [[a.format(out=tmp_path / "out.json", old=tmp_path / "old.json") for a in argv] for argv, _ in BEFORE_TORCH]
    done = subprocess.run([sys.executable, "-c", CHILD, json.dumps(argvs)], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path)
    result = json.loads(done.stdout.splitlines()[-1])
    assert [(status, message in err) for (status, err), (_, message) in zip(result["rows"], BEFORE_TORCH)] == \
        [(2, True)] * len(BEFORE_TORCH), result["rows"]
    assert result["torch"] is False
