"""Real nccl-tests logs from public sources parse, and so do the forms multi-node jobs print them in.

The logs in tests/data/nccl-tests/ (each folder's README names its source and licence) are read as they
were published: every one with its test, rank count, hosts and device. Then variants of a real log, one
form per test: launcher tags (srun, mpirun, SkyPilot), lines of other processes and stderr, NCCL and ssh
lines, no check column, no in-place group, the test named by the command line or the "Collective test
starting" line; and the refusals, each one line naming file and line.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.calibrate.from_nccl_tests import samples_from_nccl_tests
from simulator.calibrate.nccl_lines import op_in_file_name, split_prefix
from simulator.calibrate.nccl_ranks import ranks_from_bandwidths
from simulator.calibrate.nccl_tests import parse_nccl_tests
from simulator.cli import main
from simulator.errors import InputError

DATA = Path(__file__).resolve().parents[1] / "data" / "nccl-tests"
FIXTURES = Path(__file__).resolve().parents[1] / "data" / "nccl-tests-format"
REAL = (DATA / "azure-ndv4-a100" / "all_reduce_perf_8gpu.log").read_text().splitlines()
HEADER = 14  # the "# size count ..." line of REAL, counted from 1

# (folder, file, test, ranks, servers, device, rows, first size, last size, last out-of-place time in us)
LOGS = [
    ("azure-ndv4-a100", "all_reduce_perf_2gpu.log", "all_reduce", 2, 1, "A100-SXM4-40GB", 28, 8, 1 << 30, 5203.1),
    ("azure-ndv4-a100", "all_reduce_perf_4gpu.log", "all_reduce", 4, 1, "A100-SXM4-40GB", 28, 8, 1 << 30, 7173.7),
    ("azure-ndv4-a100", "all_reduce_perf_8gpu.log", "all_reduce", 8, 1, "A100-SXM4-40GB", 28, 8, 1 << 30, 8139.2),
    ("azure-ndv4-a100", "all_reduce_perf_16gpu.log", "all_reduce", 16, 2, "A100-SXM4-40GB", 25, 1024, 16 << 30,
     251757.0),
    ("azure-ndv4-a100", "all_reduce_perf_32gpu.log", "all_reduce", 32, 4, "A100-SXM4-40GB", 23, 1024, 4 << 30,
     67271.0),
    ("azure-ndv4-a100", "all_reduce_perf_64gpu.log", "all_reduce", 64, 8, "A100-SXM4-40GB", 23, 1024, 4 << 30,
     66444.0),
    ("azure-ndv4-a100", "all_reduce_perf_128gpu.log", "all_reduce", 128, 16, "A100-SXM4-40GB", 23, 1024, 4 << 30,
     69831.0),
    ("superbench-a100", "nccl_allgather.log", "all_gather", 8, 1, "A100-SXM4-40GB", 30, 0, 8 << 30, 33646.0),
    ("superbench-a100", "nccl_allreduce.log", "all_reduce", 8, 1, "A100-SXM4-40GB", 33, 0, 8 << 30, 63896.0),
    ("superbench-a100", "nccl_broadcast.log", "broadcast", 8, 1, "A100-SXM4-40GB", 33, 0, 8 << 30, 36896.0),
    ("superbench-a100", "nccl_reduce.log", "reduce", 8, 1, "A100-SXM4-40GB", 33, 0, 8 << 30, 37613.0),
    ("superbench-a100", "nccl_reducescatter.log", "reduce_scatter", 8, 1, "A100-SXM4-40GB", 30, 0, 8 << 30, 32464.0),
    ("gcp-a3ultra-h200", "all_gather_perf_16gpu_skypilot.log", "all_gather", 16, 2, "NVIDIA H200", 24, 1024, 8 << 30,
     24724.0),
    ("gcp-a3ultra-h200", "all_gather_perf_16gpu_gcp.log", "all_gather", 16, 2, "NVIDIA H200", 24, 1024, 8 << 30,
     24739.0),
    # Copied from web pages: no "# Rank" lines (16 ranks read off busbw / algbw), nccl-tests' lines without "#".
    ("nebius-h100", "all_reduce_perf_16gpu.log", "all_reduce", 16, None, None, 31, 8, 8 << 30, 34448.4),
    ("lambda-b200", "all_reduce_perf_16gpu.log", "all_reduce", 16, None, None, 29, 8, 2 << 30, 5784.75),
    ("gcp-a4-b200", "all_reduce_perf_16gpu.log", "all_reduce", 16, None, None, 11, 8 << 20, 8 << 30, 23563.0),
]


@pytest.mark.parametrize("folder, name, op, ranks, servers, device, rows, first, last, last_us", LOGS,
                         ids=[f"{folder}/{name}" for folder, name, *_ in LOGS])
def test_every_published_log_parses(folder, name, op, ranks, servers, device, rows, first, last, last_us):
    log = parse_nccl_tests(str(DATA / folder / name))
    assert (log.op, log.n_ranks, log.n_servers, log.device) == (op, ranks, servers, device)
    assert len(log.rows) == rows and log.rows[0].size_bytes == first and log.rows[-1].size_bytes == last
    assert log.rows[-1].time_us == last_us and len(log.hosts) == (ranks if servers else 0)
    assert (DATA / folder / "README.md").is_file()


def test_every_log_in_the_data_folder_is_in_the_table():
    listed = {(folder, name) for folder, name, *_ in LOGS}
    assert {(p.parent.name, p.name) for p in DATA.glob("*/*.log")} == listed


def _parse(tmp_path, lines, name="all_reduce_perf_8gpu.log"):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return parse_nccl_tests(str(path))


def _times(log):
    return [(row.size_bytes, row.time_us, row.inplace_time_us) for row in log.rows]


def test_srun_tags_and_another_ranks_lines_inside_the_table(tmp_path):
    lines = [f"0: {line}" for line in REAL]
    lines.insert(HEADER + 5, "3: node-7:1234:1240 [3] some warning of rank 3 that is not a row")
    log = _parse(tmp_path, lines)
    assert _times(log) == _times(parse_nccl_tests("x.log", "\n".join(REAL))) and log.n_ranks == 8


def test_mpirun_stderr_ssh_and_nccl_lines_anywhere(tmp_path):
    lines = ["Warning: Permanently added 'node-1' (ED25519) to the list of known hosts.",
             "$ mpirun -np 8 --tag-output ./build/all_reduce_perf -b 8 -e 1G -f 2 -g 1"]
    lines += [f"[1,0]<stdout>:{line}" for line in REAL]
    lines.insert(2 + HEADER, "[1,0]<stdout>:NCCL version 2.18.5+cuda12.2")
    lines.insert(2 + HEADER + 4, "[1,5]<stderr>:Authorization required, but no authorization protocol specified")
    lines.insert(2 + HEADER + 6, "[1,0]<stdout>:node-000000:63453:63453 [0] NCCL INFO Launch mode Parallel")
    log = _parse(tmp_path, lines, "mylog.txt")
    assert (log.op, log.op_source, log.n_ranks, len(log.rows)) == ("all_reduce", "line 2", 8, 28)


def test_skypilot_and_mpirun_tags_come_off_together():
    assert split_prefix("(head, rank=0, pid=3808) [1,0]<stdout>:   1024  16  float") == \
        ("(head, rank=0, pid=3808) [1,0]<stdout>:", "   1024  16  float")
    assert split_prefix(" 12: # nThread 1")[1] == "# nThread 1" and split_prefix("  1024  16")[0] == ""


def _drop_columns(lines, keep):
    """REAL with only the value columns ``keep`` (indices after ``redop``) in the header and rows."""
    out = []
    for number, line in enumerate(lines, start=1):
        words = line.split()
        if number == HEADER:
            out.append("# " + " ".join(words[1:5] + [words[5 + i] for i in keep]))
        elif number > HEADER + 1 and line[:1] != "#":
            out.append("  ".join(words[:4] + [words[4 + i] for i in keep]))
        else:
            out.append(line)
    return out


def test_no_check_column(tmp_path):
    log = _parse(tmp_path, _drop_columns(REAL, [0, 1, 2, 4, 5, 6]))
    assert _times(log) == _times(parse_nccl_tests("x.log", "\n".join(REAL)))


def test_no_in_place_group(tmp_path):
    log = _parse(tmp_path, _drop_columns(REAL, [0, 1, 2, 3]))
    assert [t for _, t, _ in _times(log)] == [row.time_us for row in parse_nccl_tests("x.log", "\n".join(REAL)).rows]
    assert all(row.inplace_time_us is None and row.inplace_busbw_GBps is None for row in log.rows)


def test_the_collective_test_starting_line_names_the_test(tmp_path):
    lines = (FIXTURES / "reduce_perf_4gpu.log").read_text().splitlines()
    log = _parse(tmp_path, ["# nccl-tests version 2.17.6 nccl-headers=22809 nccl-library=22809",
                            "# Collective test starting: reduce_perf", *lines], "job-1234.out")
    assert (log.op, log.op_source) == ("reduce", "line 2")
    assert samples_from_nccl_tests([tmp_path / "job-1234.out"])[0].kind == "reduce"


@pytest.mark.parametrize("name, op", [("all_reduce_perf_8gpu.log", "all_reduce"), ("nccl_allgather.log", "all_gather"),
                                      ("nccl_reducescatter.log", "reduce_scatter"), ("nccl_reduce.log", "reduce"),
                                      ("bcast.log", None), ("results_reduced.txt", None)])
def test_the_file_name_names_the_test_last(name, op):
    assert op_in_file_name(name) == op


@pytest.mark.parametrize("lines, message", [
    (["$ ./build/all_gather_perf -g 8", *REAL],
     r"line 2: names all_reduce_perf but line 1 names all_gather_perf; a log holds one test"),
    ([*REAL[:HEADER + 3], "Segmentation fault (core dumped)", *REAL[HEADER + 3:]],
     rf"line {HEADER + 4}: expected an nccl-tests row .* got 'Segmentation fault"),
    (["ssh: connect to host node-2 port 22: Connection refused"],
     r"line 1: expected an nccl-tests header .* found none; this line is 'ssh: connect"),
    ([*REAL[:HEADER - 1], "# size count type redop time algbw busbw weird time algbw busbw error", *REAL[HEADER:]],
     r"expected time algbw busbw \[error\|#wrong\]"),
], ids=["two-tests", "junk-in-table", "no-table", "bad-header"])
def test_refusals_name_file_and_line(tmp_path, lines, message):
    if lines[0].startswith("$"):
        lines = [lines[0], "# Collective test starting: all_reduce_perf", *lines[1:]]
    with pytest.raises(InputError, match=message):
        _parse(tmp_path, lines)


def test_compare_reads_the_three_forms_of_the_issue(capsys):
    """mpirun tags (Echo 16 GPUs), SkyPilot + mpirun tags with lines before the table, a file name that names
    the test only as SuperBench does: each compares through the command line."""
    for log, topology in [(DATA / "azure-ndv4-a100" / "all_reduce_perf_16gpu.log", "dgx-a100:2"),
                          (DATA / "gcp-a3ultra-h200" / "all_gather_perf_16gpu_skypilot.log", "dgx-h200:2"),
                          (DATA / "superbench-a100" / "nccl_broadcast.log", "dgx-a100")]:
        assert main(["collective", "--compare", str(log), "--topology", topology, "--json"]) == 0
        assert capsys.readouterr().err == ""


def test_a_log_that_names_no_test_is_read_by_its_columns_and_a_contrary_op_refused(tmp_path, capsys):
    path = tmp_path / "job-77.out"
    path.write_text((DATA / "azure-ndv4-a100" / "all_reduce_perf_8gpu.log").read_text())
    assert main(["collective", "--compare", str(path), "--topology", "dgx-a100"]) == 0
    assert "read off the table's columns: redop sum, no root" in capsys.readouterr().out
    assert main(["collective", "--compare", str(path), "--topology", "dgx-a100", "--op", "all_gather"]) == 2
    err = capsys.readouterr().err
    assert err == (f"tpsim collective: error: --op all_gather: {path} is a log of all_reduce (read from its "
                   "columns: redop sum, no root, count = size (all_reduce's layout))\n")


def test_nccl_tests_own_lines_without_their_hash(tmp_path):
    """Logs copied from web pages lose the "#" of nccl-tests' own lines (header, units, trailer, banners):
    read as if it were there; a line that is none of them inside the table is still refused."""
    bare = [line.lstrip("#").strip() if line.startswith("#") else line for line in REAL]
    lines = ["nccl-tests version 2.17.6 nccl-headers=22602 nccl-library=22602",
             "Collective test starting: all_reduce_perf", *bare, "Out of bounds values : 0 OK",
             "Avg bus bandwidth    : 71.4"]
    log = _parse(tmp_path, lines, "copied.txt")
    assert _times(log) == _times(parse_nccl_tests("x.log", "\n".join(REAL)))
    assert (log.op, log.op_source, log.n_ranks, log.device) == ("all_reduce", "line 2", 8, "A100-SXM4-40GB")
    with pytest.raises(InputError, match=rf"line {HEADER + 2}: expected an nccl-tests row .* got .Segmentation"):
        _parse(tmp_path, [*bare[:HEADER + 1], "Segmentation fault", *bare[HEADER + 1:]])


def test_a_log_without_rank_lines_has_the_ranks_its_bandwidths_name(tmp_path):
    """No "# Rank" lines and a multi-process run's "nGpus 1": busbw / algbw names the 16 ranks."""
    log = parse_nccl_tests(str(DATA / "gcp-a4-b200" / "all_reduce_perf_16gpu.log"))
    assert (log.n_ranks, log.gpus_per_thread, log.op_source) == (16, 1, "file name")
    kept = [line for line in REAL if "Rank" not in line]
    assert _parse(tmp_path, kept).n_ranks == 8  # single process, nGpus 8: both say 8


@pytest.mark.parametrize("op, pairs, ranks", [
    ("all_reduce", [(371.23, 696.06), (361.26, 677.35)], 16),
    ("all_gather", [(201.11, 188.54), (150.00, 140.62)], 16),
    ("all_reduce", [(12.34, 24.06)], None),  # 2(n-1)/n x 12.34 is within rounding of 24.06 for n = 39 and 40
    ("broadcast", [(180.0, 180.0)], None),  # factor 1: says nothing
    ("all_reduce", [(0.5, 0.94)], None),  # too few digits
    ("all_reduce", [(100.0, 150.0), (100.0, 175.0)], None),  # rows that disagree
])
def test_ranks_from_bandwidths(op, pairs, ranks):
    assert ranks_from_bandwidths(op, pairs) == ranks


def test_a_log_whose_ranks_cannot_be_told_asks_for_group_size(tmp_path, capsys):
    """A broadcast log without "# Rank" lines: busbw = algbw says nothing about the rank count."""
    kept = [line for line in (DATA / "superbench-a100" / "nccl_broadcast.log").read_text().splitlines()
            if "Rank" not in line and "nThread" not in line]
    path = tmp_path / "nccl_broadcast.log"
    path.write_text("\n".join(kept) + "\n")
    assert main(["collective", "--compare", str(path), "--topology", "dgx-a100"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "cannot tell how many ranks ran it" in err and "give --group-size" in err
    assert main(["collective", "--compare", str(path), "--topology", "dgx-a100", "--group-size", "8"]) == 0
    with pytest.raises(InputError, match=r"nccl_broadcast.log: cannot tell how many ranks ran it .* '# Rank \.\.\.'"):
        samples_from_nccl_tests([path])
