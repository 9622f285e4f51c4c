"""`tpsim collective`: JSON fields, the nccl-tests-style sweep, --compare, and one-line errors."""

import json

import pytest

from simulator.cli import main
from simulator.errors import InputError
from simulator.sizes import format_size, parse_size


def run(capsys, *argv):
    code = main(["collective", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_has_time_and_nccl_tests_bandwidths(capsys):
    code, out, _ = run(capsys, "--op", "all_reduce", "--group-size", "8", "--bytes", "1GiB", "--topology", "dgx-a100",
                       "--json")
    r = json.loads(out)
    assert code == 0 and r["bytes"] == 2**30 and (r["algorithm"], r["protocol"]) == ("ring", "simple")
    assert r["algbw_GBps"] == pytest.approx(2**30 / r["time_s"] / 1e9)
    assert r["busbw_GBps"] == pytest.approx(r["algbw_GBps"] * 1.75)
    assert r["time_s"] == pytest.approx(r["analytic_time_s"], rel=1e-9)
    assert 220 < r["busbw_GBps"] < 231  # 230 GB/s NVSwitch, minus the fixed latencies


@pytest.mark.parametrize("op, factor", [("all_gather", 0.75), ("broadcast", 1.0)])
def test_busbw_factors_and_overrides(capsys, op, factor):
    code, out, _ = run(capsys, "--op", op, "--group-size", "4", "--bytes", "64MiB", "--topology", "dgx-a100",
                       "--algo", "direct" if op == "all_gather" else "binomial_tree", "--protocol", "simple", "--json")
    r = json.loads(out)
    assert r["busbw_GBps"] == pytest.approx(r["algbw_GBps"] * factor)
    assert r["protocol"] == "simple" and r["algorithm"] in ("direct", "binomial_tree")


def test_sweep_prints_28_sizes_from_8_bytes_to_1_GiB(capsys):
    code, out, _ = run(capsys, "--op", "reduce_scatter", "--group-size", "4", "--sweep", "--topology", "dgx-a100")
    rows = [line.split() for line in out.splitlines() if not line.startswith("#")]
    assert code == 0 and len(rows) == 28
    assert rows[0][0] == "8" and rows[-1][0] == str(2**30) and rows[-1][3] == "sum"


def test_placement_file_puts_ranks_on_other_gpus(capsys, tmp_path):
    # Two ranks on GPUs of different servers: the broadcast crosses InfiniBand (24 GB/s), not NVSwitch.
    placement = tmp_path / "two.json"
    placement.write_text("[8, 0]")
    argv = ["--op", "broadcast", "--group-size", "2", "--bytes", "64MiB", "--topology", "dgx-a100:2", "--json"]
    near = json.loads(run(capsys, *argv)[1])
    code, out, _ = run(capsys, *argv, "--placement", str(placement))
    far = json.loads(out)
    assert code == 0 and far["busbw_GBps"] < 25 < 150 < near["busbw_GBps"]


def test_compare_against_a_log(capsys, tmp_path):
    log = tmp_path / "all_reduce_perf_2gpu.log"
    log.write_text("# nThread 1 nGpus 2\n#  size count type redop time algbw busbw error time algbw busbw error\n"
                   " 1048576 262144 float sum 59.46 17.63 17.63 0e+00 60.17 17.43 17.43 0e+00\n")
    code, out, _ = run(capsys, "--topology", "dgx-a100", "--compare", str(log), "--json")
    [r] = json.loads(out)
    assert code == 0 and (r["op"], r["ranks"], r["bytes"]) == ("all_reduce", 2, 2**20)
    assert r["error"] == pytest.approx(r["time_s"] / 59.46e-6 - 1)


@pytest.mark.parametrize("argv, message", [
    (["--op", "all_reduce", "--group-size", "8", "--bytes", "1M", "--topology", "dgx-a100"],
     "unit 'M' is ambiguous; write MB (10^6) or MiB (2^20)"),
    (["--op", "all_reduce", "--group-size", "9", "--bytes", "1MB", "--topology", "dgx-a100"],
     "--group-size 9: topology dgx-a100 has only 8 GPUs"),
    (["--op", "broadcast", "--group-size", "4", "--bytes", "1MB", "--topology", "dgx-a100", "--algo", "ring"],
     "broadcast: algorithm 'ring' is not available; valid: chain, binomial_tree"),
    (["--op", "all_reduce", "--group-size", "4", "--topology", "dgx-a100"],
     "give exactly one of --bytes SIZE, --sweep or --compare LOG"),
    (["--op", "all_reduce", "--group-size", "0", "--bytes", "8", "--topology", "dgx-a100"],
     "--group-size 0: a group has at least 1 rank"),
])
def test_bad_input_is_one_line_and_status_2(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and message in err


@pytest.mark.parametrize("text, nbytes", [("1048576", 2**20), ("1MiB", 2**20), ("1GiB", 2**30), ("64KB", 64000),
                                          ("4 kib", 4096), ("1.5KiB", 1536), ("2GB", 2 * 10**9), ("1_024", 1024)])
def test_sizes(text, nbytes):
    assert parse_size(text) == nbytes


@pytest.mark.parametrize("text, message", [("1K", "ambiguous; write KB"), ("1.5B", "not a whole number of bytes"),
                                          ("ten", "not a byte size"), ("3 parsecs", "unknown unit 'parsecs'")])
def test_bad_sizes(text, message):
    with pytest.raises(InputError, match=message):
        parse_size(text)


def test_format_size():
    assert [format_size(s) for s in (8, 1536, 2**20, 3 * 2**30)] == ["8B", "1536B", "1MiB", "3GiB"]
