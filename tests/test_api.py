"""``simulator.api``: docs/api.md's example runs as written, and each function returns what its command prints."""

from __future__ import annotations

import doctest
import json
from pathlib import Path

import pytest

from simulator import api
from simulator.errors import InputError
from tests.cli_run import run

PAGE = Path(__file__).resolve().parent.parent / "docs" / "api.md"


def test_the_api_page_runs_as_written():
    failed, tried = doctest.testfile(str(PAGE), module_relative=False, optionflags=doctest.ELLIPSIS)
    assert tried >= 10 and failed == 0


def test_flags_follow_the_command_line():
    assert api._flags({"global_batch": 64, "overlap": True, "no_prune": False, "gpus": None,
                       "algos": ["megatron", "tesseract"], "topology": {"server": "dgx-h100", "servers": 2,
                                                                        "rail_optimised": False}}) == [
        "--global-batch", "64", "--overlap", "--algos", "megatron,tesseract",
        "--topology", "server=dgx-h100,servers=2,rail_optimised=false"]


def test_collective_and_rank_equal_the_command(capsys):
    argv = ("--op", "all_gather", "--group-size", "4", "--bytes", "1MiB", "--topology", "a100-4gpu")
    status, out, _ = run(capsys, "collective", *argv, "--json")
    got = api.collective(op="all_gather", group_size=4, bytes="1MiB", topology="a100-4gpu")
    assert status == 0 and got.record == json.loads(out) and got.busbw_GBps == json.loads(out)["busbw_GBps"]
    gemm = ("--workload", "gemm", "--m", "512", "--k", "256", "--n", "128")
    status, out, _ = run(capsys, "predict", "--topology", "a100-4gpu", *gemm)
    rows = api.rank(topology="a100-4gpu", workload="gemm", m=512, k=256, n=128)
    table = out.splitlines()
    for row in rows:
        if row.status == "ok":
            assert any(line.split()[0] == str(row.rank) and row.arrangement in line for line in table[2:])


@pytest.mark.parametrize("call,says", [
    (lambda: api.collective(op="all_reduce", group_size=4, bytes="1MiB", topology="a100-4gpu", bogus=1),
     "tpsim collective: error: unrecognized arguments: --bogus 1"),
    (lambda: api.simulate(algo="4d", topology="a100-4gpu", workload="gemm", m=8, k=8, n=8),
     "argument --algo: invalid choice: '4d'"),
    (lambda: api.simulate(algo="optimus", topology="a100-4gpu:2", workload="gemm", m=8, k=8, n=8),
     "--algo optimus without --gpus or --grid takes 8 ranks from the topology a100-4gpu:2"),
    (lambda: api.collective(op="all_reduce", group_size=4, bytes="1MiB", topology={"sever": "dgx-h100"}),
     "unknown key sever (did you mean server?)"),
])
def test_a_mistake_raises_the_commands_line(call, says):
    with pytest.raises(InputError) as caught:
        call()
    assert says in str(caught.value) and "\n" not in str(caught.value)
