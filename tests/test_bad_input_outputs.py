"""Outputs never destroy anything: every file every command writes, refused where it cannot be written safely.

``WRITERS`` lists each output of each writing command: the command line with ``{target}`` where that
output goes and ``{input}`` where it reads a file (if it reads one). ``CLASSES`` are the targets no
command may write: a FIFO, a socket, a device node, a folder, a place it cannot create a file in, a
path through a regular file, an empty name, one of its own inputs (by name, through a symbolic link,
through a hard link), another of its outputs, an image format matplotlib does not know. Every pair
(writer, class) that applies is a row: exit status 2, one line on stderr naming the problem, no
traceback, nothing on stdout, the folder exactly as before (no temporary left, no input changed),
and the command itself never called (``_guarded``: the check comes before any work).

Then every writer runs for real over an existing target reached through a symbolic link, beside a
temporary a killed write left: the target gets the new output, the link stays a link, the stale
temporary is swept, and nothing else appears.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import stat
from pathlib import Path

import pytest

import simulator.cli
from simulator.algorithms.registry import build_schedule
from simulator.command_files import OUTPUTS
from simulator.ir.serialize import schedule_to_dict
from simulator.timing.simulation import simulate
from simulator.workloads.workload import Workload
from tests.cli_run import run
from topologies import load_topology

ROOT = Path(__file__).resolve().parent.parent
LOG = ROOT / "tests" / "data" / "nccl-tests" / "azure-ndv4-a100" / "all_reduce_perf_8gpu.log"
GEMM = ["--workload", "gemm", "--m", "8", "--k", "8", "--n", "8"]
SMALL = ["--algo", "1d", "--gpus", "2", *GEMM]
OLD = "an earlier output that a refused command must leave alone\n"

# (id, argv, suffix of the target, argv reading {input} (None: the command reads no file), torch needed)
PLAN = ["--workload", "transformer", "--batch", "1", "--seq", "16", "--hidden", "16", "--heads", "2", "--layers", "2",
        "--global-batch", "2", "--algos", "1d"]
"""A whole-model plan small enough to trace in a fraction of a second."""

WRITERS = [
    ("schedule-out", ["schedule", *SMALL, "--out", "{target}"], ".json",
     ["schedule", "--schedule", "{input}", "--out", "{target}"], False),
    ("simulate-trace", ["simulate", *SMALL, "--topology", "loopback:2", "--trace", "{target}"], ".json",
     ["simulate", "--schedule", "{input}", "--topology", "loopback:2", "--trace", "{target}"], False),
    ("predict-csv", ["predict", "--gpus", "2", "--topology", "loopback:2", *GEMM, "--algos", "1d", "--csv", "{target}"],
     ".csv", ["predict", "--gpus", "2", "--topology", "{input}", *GEMM, "--csv", "{target}"], False),
    ("predict-png", ["predict", "--gpus", "2", "--topology", "loopback:2", *GEMM, "--algos", "1d", "--png", "{target}"],
     ".png", ["predict", "--gpus", "2", "--topology", "loopback:2", "--placement", "{input}", *GEMM, "--png",
              "{target}"], False),
    ("predict-trace", ["predict", "--gpus", "2", "--topology", "loopback:2", *PLAN, "--trace", "{target}"], ".json",
     ["predict", "--gpus", "2", "--topology", "{input}", *PLAN, "--trace", "{target}"], False),
    ("topology-show-png", ["topology", "show", "loopback:2", "--png", "{target}"], ".png",
     ["topology", "show", "{input}", "--png", "{target}"], False),
    ("topology-save-out", ["topology", "save", "loopback:2", "{target}"], ".yaml",
     ["topology", "save", "{input}", "{target}"], False),
    ("calibrate-output", ["calibrate", "--from-nccl-tests", str(LOG), "--topology", "dgx-a100", "-o", "{target}"],
     ".yaml", ["calibrate", "--from-nccl-tests", "{input}", "--topology", "dgx-a100", "-o", "{target}"], False),
    ("calibrate-profile", ["calibrate", "--from-nccl-tests", str(LOG), "--topology", "dgx-a100", "-o", "{aux}.yaml",
                           "--profile", "{target}"], ".yaml",
     ["calibrate", "--from-nccl-tests", str(LOG), "--topology", "dgx-a100", "--calibration", "{input}", "-o",
      "{aux}.yaml", "--profile", "{target}"], False),
    ("compare-trace", ["compare", "{measured}", "--topology", "loopback:4", "--trace", "{target}"], ".json",
     ["compare", "{input}", "--topology", "loopback:4", "--trace", "{target}"], False),
    ("compare-png", ["compare", "{measured}", "--topology", "loopback:4", "--png", "{target}"], ".png",
     ["compare", "{measured}", "--topology", "loopback:4", "--calibration", "{input}", "--png", "{target}"], False),
    ("run-out", ["run", *SMALL, "--nproc", "2", "--warmup", "0", "--iters", "1", "--out", "{target}"], ".json",
     ["run", "--schedule", "{input}", "--nproc", "2", "--out", "{target}"], True),
    ("run-trace", ["run", *SMALL, "--nproc", "2", "--warmup", "0", "--iters", "1", "--trace", "{target}"], ".json",
     ["run", "--schedule", "{input}", "--nproc", "2", "--trace", "{target}"], True),
    ("bench-out", ["bench", "--nproc", "1", "--ops", "gemm", "--gemm-shapes", "8x8x8", "--warmup", "1", "--iters", "1",
                   "--out", "{target}"], ".json", None, True),
    ("sweep-out", ["sweep", "{spec}", "--overwrite", "--out", "{target}"], ".csv", ["sweep", "{input}", "--out", "{target}"], False),
]
_COMMANDS = simulator.cli.build_parser()._subparsers._group_actions[0].choices
WRITERS = [w for w in WRITERS if w[1][0] in _COMMANDS]  # a sub-command whose module is not installed is skipped

SWEEP_SPEC = "axes:\n  tp-sizes: ['1', '2']\nfixed:\n  model: gpt3-125m\n  topology: dgx-a100:1\n  gpus: 2\n" \
             "  global-batch: 8\n  simulate-top: 1\n"
"""Two small training plans for `tpsim sweep` (a spec is axes of predict options and fixed ones)."""

# A second output of the same command, for the "twice" rows: (writer id, the option and its {twin} value).
TWINS = {"predict-csv": ["--png", "{twin}"], "run-out": ["--trace", "{twin}"], "calibrate-output": ["--profile",
                                                                                                    "{twin}"],
         "compare-trace": ["--png", "{twin}"]}


def _fifo(d: Path) -> str:
    os.mkfifo(d / "target")
    return "target"


def _socket(d: Path) -> str:
    server = socket.socket(socket.AF_UNIX)
    server.bind("target")  # relative: the test runs in d, and a socket's path is at most 107 bytes
    server.close()
    return "target"


def _device(d: Path) -> str:
    if os.geteuid() != 0:
        pytest.skip("making a device node needs root")
    os.mknod(d / "target", stat.S_IFCHR | 0o666, os.makedev(1, 3))  # /dev/null's numbers, in the test's folder
    return "target"


def _folder(d: Path) -> str:
    (d / "target").mkdir()
    return "target"


def _through_a_file(d: Path) -> str:
    (d / "afile").write_text(OLD)
    return "afile/target"


# (id, make the target in folder d -> its path, words in the refusal)
CLASSES = [
    ("fifo", _fifo, "it is a FIFO (named pipe), and tpsim writes only regular files"),
    ("socket", _socket, "it is a socket, and tpsim writes only regular files"),
    ("device", _device, "it is a character device, and tpsim writes only regular files"),
    ("folder", _folder, "it is a folder, and tpsim writes only regular files (it replaces the whole file); give a "
                        "file name inside it"),
    ("folder-link", lambda d: (_folder(d), os.symlink("target", d / "link"), "link")[-1], "(a link to "),
    ("unwritable", lambda d: "/proc/tpsim-no-such-folder/target", "cannot write in /proc"),
    ("through-a-file", _through_a_file, "cannot write it, "),
    ("empty", lambda d: "", "'': give a file name"),
]


def _input_rows():
    """Each reading command with its output named as one of its inputs: the same name, a link, a hard link."""
    for name, _, suffix, reads, torch in WRITERS:
        if reads is None:
            continue
        for how in ("same-name", "symlink", "hardlink"):
            yield pytest.param(name, reads, suffix, how, torch, id=f"{name}-{how}")


def _prepare(d: Path, suffix: str) -> dict[str, str]:
    """The files rows name: an existing input, a measured record, a side output's stem."""
    (d / f"input{suffix}").write_text(OLD)
    (d / "measured.json").write_text(OLD)
    (d / "spec.yaml").write_text(SWEEP_SPEC)
    return {"input": f"input{suffix}", "measured": "measured.json", "aux": "side", "spec": "spec.yaml"}


def _snapshot(d: Path) -> dict[str, object]:
    state = {}
    for path in sorted(d.rglob("*")):
        info = path.lstat()
        kind = stat.S_IFMT(info.st_mode)
        state[str(path.relative_to(d))] = (kind, os.readlink(path) if path.is_symlink() else None,
                                           path.read_bytes() if stat.S_ISREG(kind) else None)
    return state


def _never(_args):
    raise AssertionError("the command ran although an output was refused")


def _guarded(monkeypatch) -> None:
    """Make every command's function fail the test: a refusal must come before it is called."""
    build = simulator.cli.build_parser

    def parser_without_work(*args, **kwargs):
        parser = build(*args, **kwargs)
        stack = [parser]
        while stack:
            current = stack.pop()
            if current.get_default("func") is not None:
                current.set_defaults(func=_never)
            stack += [choice for action in current._actions if hasattr(action, "choices")
                      and isinstance(action.choices, dict) for choice in action.choices.values()]
        return parser

    monkeypatch.setattr(simulator.cli, "build_parser", parser_without_work)


def _check_refused(capsys, monkeypatch, d: Path, argv: list[str], message: str) -> None:
    _guarded(monkeypatch)
    before = _snapshot(d)
    status, out, err = run(capsys, *argv)
    assert status == 2, err
    assert len(err.splitlines()) == 1 and err.endswith("\n") and "Traceback" not in err, err
    assert err.startswith(f"tpsim {argv[0]}: error: ") and message in err, err
    assert out == ""
    assert _snapshot(d) == before


@pytest.mark.parametrize("name, argv, suffix, _reads, torch", [w for w in WRITERS], ids=[w[0] for w in WRITERS])
@pytest.mark.parametrize("kind, make, message", CLASSES, ids=[c[0] for c in CLASSES])
def test_an_output_that_is_not_a_regular_file_is_refused(capsys, monkeypatch, tmp_path, name, argv, suffix, _reads,
                                                         torch, kind, make, message):
    monkeypatch.chdir(tmp_path)
    names = _prepare(tmp_path, suffix)
    target = make(tmp_path)
    _check_refused(capsys, monkeypatch, tmp_path, [a.format(target=target, **names) for a in argv], message)


@pytest.mark.parametrize("name, reads, suffix, how, torch", list(_input_rows()))
def test_an_output_that_is_an_input_is_refused(capsys, monkeypatch, tmp_path, name, reads, suffix, how, torch):
    monkeypatch.chdir(tmp_path)
    names = _prepare(tmp_path, suffix)
    target = names["input"]
    if how == "symlink":
        os.symlink(target, tmp_path / f"link{suffix}")
        target = f"link{suffix}"
    elif how == "hardlink":
        os.link(target, tmp_path / f"hard{suffix}")
        target = f"hard{suffix}"
    argv = [a.format(target=target, **names) for a in reads]
    _check_refused(capsys, monkeypatch, tmp_path, argv, f"{target} is also the ")


@pytest.mark.parametrize("name", sorted(TWINS))
@pytest.mark.parametrize("how", ["same-name", "symlink"])
def test_two_outputs_of_one_command_in_one_file_are_refused(capsys, monkeypatch, tmp_path, name, how):
    monkeypatch.chdir(tmp_path)
    _, argv, suffix, _, _ = next(w for w in WRITERS if w[0] == name)
    names = _prepare(tmp_path, suffix)
    target = "out.png"  # a name every output takes, an image included
    twin = target
    if how == "symlink":
        os.symlink(target, tmp_path / "twin.png")
        twin = "twin.png"
    argv = [a.format(target=target, twin=twin, **names) for a in [*argv, *TWINS[name]]]
    _check_refused(capsys, monkeypatch, tmp_path, argv, "name the same file")


@pytest.mark.parametrize("name, argv", [(w[0], w[1]) for w in WRITERS if w[2] == ".png"],
                         ids=[w[0] for w in WRITERS if w[2] == ".png"])
def test_an_unknown_image_format_is_one_line(capsys, monkeypatch, tmp_path, name, argv):
    monkeypatch.chdir(tmp_path)
    names = _prepare(tmp_path, ".png")
    _check_refused(capsys, monkeypatch, tmp_path, [a.format(target="out.xyz", **names) for a in argv],
                   "out.xyz: unknown image format '.xyz'; give a name ending in ")


def test_a_missing_folder_is_probed_without_leaving_one(capsys, monkeypatch, tmp_path):
    """A folder the writer would make is tried (and removed) by the check; the refusal leaves none."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ok.csv").write_text(OLD)
    argv = ["predict", "--gpus", "2", "--topology", "loopback:2", *GEMM, "--csv", "ok.csv", "--png", "new/deep/x.xyz"]
    _check_refused(capsys, monkeypatch, tmp_path, argv, "unknown image format")


def _options(parser, key=""):
    """(command key, dest, help) of every option that takes a value, through every sub-command."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _options(sub, f"{key} {name}".strip())
        elif action.nargs != 0 and action.dest != "help":
            yield key, action.dest, action.help or ""


def test_every_option_that_writes_a_file_is_checked_before_work():
    """An option whose help says it writes, draws or saves a file is in OUTPUTS (so it gets the checks and
    the writer's rules), and every OUTPUTS entry is an option of its command."""
    options = list(_options(simulator.cli.build_parser()))
    writes = {(key, dest) for key, dest, text in options if re.match(r"(also )?(write|draw|save)\b|the file to write",
                                                                      text)}
    commands = {key for key, _, _ in options}  # a command whose module is not installed is not listed here
    listed = {(key, dest) for key, dests in OUTPUTS.items() if key in commands for dest in dests}
    assert writes <= listed, sorted(writes - listed)
    assert listed <= {(key, dest) for key, dest, _ in options}, sorted(listed - {(k, d) for k, d, _ in options})
    assert {name for name, *_ in WRITERS} >= {f"{key.replace(' ', '-')}-{dest}" for key, dest in listed
                                              if dest != "json"}  # and WRITERS runs each of them


# -- every writer, for real ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def measured_text() -> str:
    """A tpsim-measured record of 2-D SUMMA [2,2,1] whose 'measurements' are the simulator's, on loopback:4."""
    schedule = build_schedule("2d", Workload.mlp(64, 16), "both", "float32", grid=(2, 2, 1))
    result = simulate(schedule, load_topology("loopback:4"), timeline=True)
    return json.dumps({"format": "tpsim-measured", "version": 1, "algorithm": schedule.algorithm,
                       "grid": list(schedule.grid), "backend": "gloo", "world_size": 4, "time_s": result.makespan_s,
                       "median_iteration": 0, "clock_origins_s": [0.0] * 4,
                       "iterations": [{"iteration": 0, "time_s": result.makespan_s,
                                       "rank_time_s": [result.makespan_s] * 4}],
                       "ops": result.op_records(), "schedule": schedule_to_dict(schedule)})


@pytest.mark.parametrize("name, argv, suffix, _reads, torch", WRITERS, ids=[w[0] for w in WRITERS])
def test_every_writer_replaces_through_a_link_and_sweeps_what_a_kill_left(capsys, monkeypatch, tmp_path,
                                                                          measured_text, name, argv, suffix,
                                                                          _reads, torch):
    if torch:
        pytest.importorskip("torch")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "measured.json").write_text(measured_text)
    (tmp_path / "spec.yaml").write_text(SWEEP_SPEC)
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / f"out{suffix}"
    target.write_text(OLD)
    os.symlink(target, f"link{suffix}")
    stale = target.parent / f".out{suffix}.abc_1234{suffix}"  # what a writer killed before its rename leaves
    stale.write_text("half a file")
    stale.chmod(0o644)  # its writer had locked it (module simulator.output_paths)
    untouched = target.parent / f".out{suffix}.not-ours"  # not a tpsim temporary's name
    untouched.write_text("someone else's")
    status, _, err = run(capsys, *[a.format(target=f"link{suffix}", measured="measured.json", aux="side",
                                            spec="spec.yaml") for a in argv])
    assert status == 0, err
    assert os.path.islink(f"link{suffix}") and os.readlink(f"link{suffix}") == str(target)
    assert target.read_bytes() != OLD.encode() and target.stat().st_size > 0
    assert sorted(p.name for p in target.parent.iterdir()) == sorted([target.name, untouched.name])
    shutil.rmtree(tmp_path / "real")
