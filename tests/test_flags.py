"""Flags that mean one thing in every command (issue 15): one default dtype, ``--json`` on stdout and
``--out`` for files, ``--group-size``, ``tpsim --version``, help without module paths, tidy headers."""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import re

import pytest

from executor.__main__ import build_parser as build_torchrun_parser
from executor.command import json_out_from_args
from simulator.cli import build_parser
from simulator.commands.schedule_args import DEFAULT_DTYPE
from tests.cli_run import run

needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch not installed")

GEMM = ["--workload", "gemm", "--m", "16", "--k", "8", "--n", "8"]
MLP = ["--workload", "mlp", "--m", "8", "--hidden", "4"]
TRANSFORMER = ["--workload", "transformer", "--batch", "2", "--seq", "4", "--hidden", "8", "--heads", "2"]
MODULE_PATH = re.compile(r"\b(simulator|executor|topologies)\.[a-z_]")


def _parsers(parser: argparse.ArgumentParser, path: tuple[str, ...] = ("tpsim",)):
    """Every (command path, parser) under ``parser``, itself first."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, (*path, name))


PARSERS = dict(_parsers(build_parser()))
PARSERS[("python -m executor",)] = build_torchrun_parser()


# -- --version -----------------------------------------------------------------------------------------
def test_version_prints_the_installed_distributions_version_and_exits_0(capsys):
    status, out, err = run(capsys, "--version")
    assert (status, out, err) == (0, f"tpsim {importlib.metadata.version('tpsim')}\n", "")


# -- help ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", list(PARSERS), ids=[" ".join(p) for p in PARSERS])
def test_help_has_no_module_paths_or_rest_quotes(path):
    text = PARSERS[path].format_help()
    assert "``" not in text, text
    assert not MODULE_PATH.search(text), MODULE_PATH.search(text).group(0)


@pytest.mark.parametrize("path", list(PARSERS), ids=[" ".join(p) for p in PARSERS])
def test_every_command_has_a_description_and_every_argument_a_help(path):
    parser = PARSERS[path]
    assert parser.description, path
    bare = [action.option_strings or action.dest for action in parser._actions
            if not isinstance(action, argparse._SubParsersAction) and not action.help]
    assert bare == [], path


def test_topology_save_explains_both_arguments():
    helps = {a.dest: a.help for a in PARSERS[("tpsim", "topology", "save")]._actions}
    assert helps["topology"].startswith("a preset (dgx-a100")
    assert helps["out"] == "the file to write; its suffix picks the format: .yaml, .yml, .json, .graphml"


# -- one default dtype -----------------------------------------------------------------------------------
@pytest.mark.parametrize("command", ["schedule", "verify", "simulate", "run", "predict"])
def test_every_command_that_builds_a_workload_defaults_to_bfloat16_and_says_so(command):
    assert DEFAULT_DTYPE == "bfloat16"
    dtype = next(a for a in PARSERS[("tpsim", command)]._actions if a.dest == "dtype")
    assert f"(default {DEFAULT_DTYPE})" in dtype.help


def test_bench_states_its_own_dtype_default():
    dtype = next(a for a in PARSERS[("tpsim", "bench")]._actions if a.dest == "dtype")
    assert dtype.default == "float32" and "(default float32)" in dtype.help


def test_verify_help_says_it_computes_in_float64():
    dtype = next(a for a in PARSERS[("tpsim", "verify")]._actions if a.dest == "dtype")
    assert "verify computes in float64 whatever it is" in dtype.help


def test_simulate_gives_predicts_time_for_predicts_row_without_a_dtype(capsys):
    """The issue's case: predict's top row copied into simulate gives the same time (both bfloat16)."""
    status, out, _ = run(capsys, "predict", "--gpus", "4", "--topology", "dgx-a100", *MLP, "--algos", "1d",
                         "--json")
    [row] = [r for r in json.loads(out) if r["status"] == "ok"]
    status, out, _ = run(capsys, "simulate", "--algo", "1d", "--gpus", "4", "--topology", "dgx-a100", *MLP, "--json")
    assert status == 0 and json.loads(out)["makespan_s"] == row["time_s"]


# -- headers ---------------------------------------------------------------------------------------------
def test_schedule_header_names_the_workload_by_its_sizes(capsys):
    status, out, _ = run(capsys, "schedule", "--algo", "2d", "--grid", "2,2,1", *MLP)
    assert status == 0 and out.splitlines()[0] == "2d grid [2, 2, 1] on 4 ranks, mlp M=8 H=4, pass both, bfloat16"


def test_verify_header_names_the_workload_by_its_sizes(capsys):
    status, out, _ = run(capsys, "verify", "--algo", "1d", "--gpus", "2", *MLP)
    assert status == 0 and out.splitlines()[0] == ("1d grid [2] mlp M=8 H=4 pass both: max relative error per "
                                                   "output (float64 interpreter, seed 0)")


def test_show_header_names_a_transformer_by_its_sizes(capsys):
    status, out, _ = run(capsys, "schedule", "--algo", "1d", "--gpus", "2", *TRANSFORMER, "--show")
    assert status == 0
    assert out.splitlines()[0] == "1d [2] transformer B=2 S=4 H=8 A=2 F=32 pass=both dtype=bfloat16, 2 ranks"


@pytest.mark.parametrize("argv", [["schedule", "--algo", "summa25d", "--grid", "2,2,2", *GEMM],
                                  ["schedule", "--algo", "summa25d", "--grid", "2,2,2", *GEMM, "--show"],
                                  ["verify", "--algo", "cannon25d", "--grid", "2,2,2", *GEMM]])
def test_no_header_prints_a_python_dict(argv, capsys):
    status, out, _ = run(capsys, *argv)
    assert status == 0 and "{'" not in out and "gemm M=16 K=8 N=8" in out.splitlines()[0]


# -- collective --group-size -----------------------------------------------------------------------------
COLLECTIVE = ["collective", "--op", "all_reduce", "--bytes", "1MiB", "--topology", "dgx-a100"]


def test_collective_takes_group_size(capsys):
    status, out, err = run(capsys, *COLLECTIVE, "--group-size", "4", "--json")
    assert status == 0 and err == "" and json.loads(out)["ranks"] == 4


def test_collective_ranks_still_works_with_a_one_line_note(capsys):
    _, new, _ = run(capsys, *COLLECTIVE, "--group-size", "4")
    status, old, err = run(capsys, *COLLECTIVE, "--ranks", "4")
    assert status == 0 and old == new
    assert err == "tpsim collective: note: --ranks is deprecated; use --group-size 4\n"


def test_schedule_ranks_is_still_the_display_range(capsys):
    status, out, _ = run(capsys, "schedule", "--algo", "1d", "--gpus", "4", *GEMM, "--pass", "fwd", "--show",
                         "--ranks", "1-2")
    assert status == 0 and "showing ranks 1..2" in out.splitlines()[0]


# -- --json and --out in run and bench -------------------------------------------------------------------
@pytest.mark.parametrize("given, json_, out, noted", [
    ({"json": False, "out": None}, False, None, False),
    ({"json": True, "out": None}, True, None, False),
    ({"json": False, "out": "m.json"}, False, "m.json", False),
    ({"json": True, "out": "m.json"}, True, "m.json", False),
    ({"json": "m.json", "out": None}, False, "m.json", True),  # the deprecated --json FILE
])
def test_json_out_from_args(given, json_, out, noted):
    args = argparse.Namespace(**given)
    note = json_out_from_args(args, "tpsim run")
    assert (args.json, args.out) == (json_, out)
    assert note == ("tpsim run: note: --json FILE is deprecated; use --out m.json (--json alone prints the JSON "
                    "on stdout)" if noted else None)


def test_run_and_bench_parse_json_as_a_flag_with_an_optional_deprecated_file():
    for command, required in (("run", ["--algo", "1d", "--gpus", "2", *GEMM, "--nproc", "2"]),
                              ("bench", ["--nproc", "2"])):
        parse = PARSERS[("tpsim", command)].parse_args
        assert (parse([*required, "--json"]).json, parse([*required, "--json"]).out) == (True, None)
        assert parse([*required, "--json", "--out", "a.json"]).out == "a.json"
        assert parse([*required, "-o", "a.json"]).out == "a.json"
        assert parse([*required, "--json", "a.json"]).json == "a.json"
        assert parse([*required, "--json=a.json"]).json == "a.json"


TINY_RUN = ["run", "--algo", "1d", "--gpus", "2", *GEMM, "--dtype", "float32", "--nproc", "2", "--warmup", "0",
            "--iters", "1"]


@needs_torch
def test_run_json_prints_the_measured_record_on_stdout_and_writes_nothing(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    status, out, err = run(capsys, *TINY_RUN, "--json")
    record = json.loads(out)
    assert status == 0 and err == "" and record["format"] == "tpsim-measured" and record["ok"]
    assert list(tmp_path.iterdir()) == []


@needs_torch
def test_run_json_and_out_print_and_write_the_same_record(capsys, tmp_path):
    path = tmp_path / "m.json"
    status, out, err = run(capsys, *TINY_RUN, "--json", "-o", str(path))
    assert status == 0 and err == "" and json.loads(out) == json.loads(path.read_text())


@needs_torch
def test_run_out_writes_the_record_and_prints_the_summary(capsys, tmp_path):
    path = tmp_path / "m.json"
    status, out, err = run(capsys, *TINY_RUN, "--out", str(path))
    assert status == 0 and err == "" and json.loads(path.read_text())["dtype"] == "float32"
    assert out.splitlines()[0].startswith("1d grid [2] gemm (m=16, k=8, n=8) both float32 on 2 ranks (gloo): correct")
    assert out.splitlines()[-1] == f"wrote measured JSON {path}"


@needs_torch
def test_run_json_file_still_writes_it_with_a_one_line_deprecation_note(capsys, tmp_path):
    path = tmp_path / "m.json"
    status, out, err = run(capsys, *TINY_RUN, "--json", str(path))
    assert status == 0 and json.loads(path.read_text())["format"] == "tpsim-measured"
    assert out.splitlines()[-1] == f"wrote measured JSON {path}"
    assert err == (f"tpsim run: note: --json FILE is deprecated; use --out {path} (--json alone prints the JSON "
                   f"on stdout)\n")


TINY_BENCH = ["bench", "--nproc", "2", "--ops", "gemm", "--gemm-shapes", "8x8x8", "--gemm-concurrency", "1",
              "--warmup", "0", "--iters", "1"]


@needs_torch
def test_bench_json_prints_the_record_and_out_writes_it(capsys, tmp_path):
    path = tmp_path / "b.json"
    status, out, err = run(capsys, *TINY_BENCH, "--json", "--out", str(path))
    record = json.loads(out)
    assert status == 0 and record["format"] == "tpsim-bench" and record == json.loads(path.read_text())
    assert "deprecated" not in err


@needs_torch
def test_bench_json_file_still_writes_it_with_a_one_line_deprecation_note(capsys, tmp_path):
    path = tmp_path / "b.json"
    status, out, err = run(capsys, *TINY_BENCH, "--json", str(path))
    assert status == 0 and json.loads(path.read_text())["format"] == "tpsim-bench"
    assert out.startswith("# tpsim bench: 2 ranks") and out.splitlines()[-1] == f"wrote bench JSON {path}"
    notes = [line for line in err.splitlines() if "deprecated" in line]
    assert notes == [f"tpsim bench: note: --json FILE is deprecated; use --out {path} (--json alone prints the "
                     f"JSON on stdout)"]
