"""A table that nothing names is read as the test its own columns say (redop, root, what count counts).

Every published log in tests/data/nccl-tests is first read with its name and command line, then again as
a bare table under a neutral name: the columns must name the same test (and, for all_gather and
reduce_scatter, the same rank count). Then the layouts the columns cannot tell apart, which read as
nothing, and the command line's one-line answer for each.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.calibrate.nccl_columns import op_from_columns
from simulator.calibrate.nccl_lines import op_named
from simulator.calibrate.nccl_tests import parse_nccl_tests
from simulator.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "nccl-tests"
LOGS = sorted(DATA.glob("*/*.log"))


def _bare(path: Path) -> str:
    """The log as a web page might show it: without any line that names its test."""
    return "\n".join(line for line in path.read_text().splitlines() if not op_named(line))


@pytest.mark.parametrize("path", LOGS, ids=[f"{p.parent.name}/{p.name}" for p in LOGS])
def test_every_published_log_reads_as_its_own_test_from_its_columns_alone(path):
    named = parse_nccl_tests(str(path))
    bare = parse_nccl_tests("pasted.log", _bare(path))
    assert (bare.op, bare.n_ranks, len(bare.rows)) == (named.op, named.n_ranks, len(named.rows))
    assert bare.op_source.startswith("columns: ") and named.op in bare.op_source


def test_all_gather_and_reduce_scatter_give_their_rank_count_from_the_count_column():
    # 16 ranks that busbw / algbw alone could not pin at 128 ranks: the count column does.
    rows = [(1 << 30, (1 << 30) // 4 // 128, "float", "sum", -1)]
    assert op_from_columns(rows)[:2] == ("reduce_scatter", 128)
    assert op_from_columns([(1 << 20, 1 << 14, "bfloat16", "none", -1)])[:2] == ("all_gather", 32)


@pytest.mark.parametrize("rows, why", [
    ([(1 << 20, 1 << 18, "float", "none", -1)], "sendrecv: one whole buffer, no reduction"),
    ([(1 << 20, 1 << 15, "float", "none", 0)], "gather/scatter: a root and one rank's share"),
    ([(1 << 20, 1 << 18, "float", "sum", -1), (1 << 21, 1 << 16, "float", "sum", -1)], "rows that disagree"),
    ([(1 << 20, 1 << 18, "float8", "sum", -1)], "a type nccl-tests does not print"),
    ([(1 << 20, 3, "float", "sum", -1)], "a count that is no share of the size"),
    ([(0, 0, "float", "sum", -1)], "only empty rows"),
])
def test_layouts_the_columns_cannot_tell_read_as_nothing(rows, why):
    assert op_from_columns(rows) is None, why


def test_old_layouts_without_redop_or_root_columns():
    # Older nccl-tests print no redop for all_gather/broadcast and no root for all_reduce/reduce_scatter.
    assert op_from_columns([(1 << 20, 1 << 17, "float", None, None)])[:2] == ("all_gather", 2)
    assert op_from_columns([(1 << 20, 1 << 18, "float", None, 0)])[0] == "broadcast"
    assert op_from_columns([(1 << 20, 1 << 18, "float", "sum", None)])[0] == "all_reduce"
    assert op_from_columns([(1 << 20, 1 << 18, "float", "sum", 3)])[0] == "reduce"


def test_compare_says_it_read_the_test_off_the_columns(tmp_path, capsys):
    log = tmp_path / "nebius_2_nodes.txt"
    log.write_text(_bare(DATA / "gcp-a3ultra-h200" / "all_gather_perf_16gpu_gcp.log"))
    assert main(["collective", "--topology", "dgx-h200:2", "--compare", str(log)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "# all_gather on 16 ranks of dgx-h200:2 vs nebius_2_nodes.txt"
    assert lines[1].startswith("# the test, read off the table's columns: redop none, no root, "
                               "count = size / 16 ranks")


def test_compare_asks_for_op_where_the_columns_fit_none_of_the_five(tmp_path, capsys):
    text = _bare(DATA / "azure-ndv4-a100" / "all_reduce_perf_8gpu.log").replace("  sum  ", " none  ")
    log = tmp_path / "table.txt"
    log.write_text(text)
    assert main(["collective", "--topology", "dgx-a100", "--compare", str(log)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot tell which test this is" in err[0] and err[0].endswith("give --op")
