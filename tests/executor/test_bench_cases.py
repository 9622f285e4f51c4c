"""`tpsim bench` without ranks: the microbenchmark schedules, size and shape parsing, rows, tables, bad input."""

from __future__ import annotations

import json

import pytest

from executor.bench_cases import BenchPoint, BenchSettings, collective_case, gemm_case, group_blocks
from executor.bench_command import parse_shapes, parse_sizes
from executor.bench_report import bench_record, bench_rows, tables
from simulator.calibrate.from_bench import samples_from_bench
from simulator.cli import main
from simulator.errors import InputError
from simulator.ir.ops import AllGather, Gemm, Recv, Send, Wait


def test_group_blocks_cover_the_ranks_all_at_once_or_one():
    assert group_blocks(8, 2, "all") == [(0, 1), (2, 3), (4, 5), (6, 7)]
    assert group_blocks(4, 3, "all") == [(0, 1, 2)]
    assert group_blocks(8, 4, "one") == [(0, 1, 2, 3)]
    with pytest.raises(InputError, match="group size 5 must be in 1..4"):
        group_blocks(4, 5, "all")


def test_a_collective_case_repeats_one_op_per_member_and_rounds_s_to_whole_elements():
    point = BenchPoint("all_gather", ranks=4, groups=1, nbytes=1000, dtype="float32")
    case = collective_case(point, nproc=4, warmup=2, iters=3)
    bench = case.options["bench"]
    # 1000 B is 250 floats; 62 per rank, so S = 4 x 62 x 4 B = 992 B, as nccl-tests rounds its count.
    assert (bench["nbytes"], bench["count"], bench["warmup_steps"], bench["iters"]) == (992, 248, 2, 3)
    assert all(program == [AllGather(group="g0", inp="inp", out="out")] * 5 for program in case.programs)
    assert case.buffers[0]["out"].shape == (248,) and case.buffers[0]["inp"].shape == (62,)
    assert case.world_size == 4 and not bench["in_place"]


def test_send_is_a_pairwise_exchange_of_async_ops():
    case = collective_case(BenchPoint("send", 2, 2, 4096), nproc=4, warmup=1, iters=2)
    assert case.groups == {} and case.options["bench"]["warmup_steps"] == 4
    assert case.programs[2][:4] == [Send(peer=3, buf="send", handle="s"), Recv(peer=3, buf="recv", handle="r"),
                                    Wait("s"), Wait("r")]
    assert len(case.programs[3]) == 12


def test_a_gemm_case_runs_on_the_first_concurrent_ranks_only():
    case = gemm_case(BenchPoint("gemm", 1, 2, 0, "float32", 8, 4, 2), nproc=4, warmup=1, iters=2)
    assert case.programs[0] == [Gemm(out="c", a="a", b="b")] * 3 and case.programs[2] == []
    assert case.groups == {"gemm": (0, 1)}  # the concurrent ranks synchronise after each gemm
    assert gemm_case(BenchPoint("gemm", 1, 1, 0, "float32", 8, 4, 2), 4, 1, 2).groups == {}
    assert case.buffers[1]["a"].shape == (8, 4) and case.buffers[3] == {}


def test_settings_list_collectives_then_send_then_gemm_and_skip_sizes_below_an_element():
    settings = BenchSettings(ops=("gemm", "all_reduce", "send", "reduce_scatter"), sizes_bytes=(4, 64),
                             gemm_shapes=((16, 16, 16),), warmup=0, iters=1)
    cases = settings.cases(4)
    ops = [(c.options["bench"]["op"], c.options["bench"]["ranks"], c.options["bench"]["nbytes"]) for c in cases]
    # reduce_scatter of 4 B on 2 or 4 ranks is under one float per rank: left out, as nccl-tests does
    assert ops == [("all_reduce", 2, 4), ("all_reduce", 2, 64), ("all_reduce", 4, 4), ("all_reduce", 4, 64),
                   ("reduce_scatter", 2, 64), ("reduce_scatter", 4, 64), ("send", 2, 4), ("send", 2, 64),
                   ("gemm", 1, 0), ("gemm", 1, 0)]
    assert [c.options["bench"]["groups"] for c in cases[-2:]] == [1, 4]  # gemm alone, then on all 4 ranks


def test_sizes_and_shapes_parse_as_nccl_tests_ranges():
    assert parse_sizes("1KiB:8KiB") == (1024, 2048, 4096, 8192)
    assert parse_sizes("1KiB:64KiB:4") == (1024, 4096, 16384, 65536)
    assert parse_sizes("4KiB,1KiB") == (1024, 4096)
    assert parse_shapes("512x512x512, 64x8x2") == ((512, 512, 512), (64, 8, 2))
    with pytest.raises(InputError, match="MIN <= MAX"):
        parse_sizes("8KiB:1KiB")
    with pytest.raises(InputError, match="expected MxKxN"):
        parse_shapes("512x512")


def _fake_record():
    settings = BenchSettings(ops=("broadcast", "gemm"), sizes_bytes=(1 << 20,), gemm_shapes=((64, 64, 64),),
                             group_sizes=(2,), warmup=1, iters=2)
    cases = settings.cases(2)
    times = [[1e-3, 3e-3], [2e-6, None], [4e-6, 6e-6]]  # times[case][rank]: seconds per op
    return settings, bench_record(settings, 2, "gloo", bench_rows(cases, times), {"hostname": "h"})


def test_rows_average_the_ranks_as_nccl_tests_does():
    _, record = _fake_record()
    bcast, gemm1, gemm2 = record["rows"]
    assert bcast["time_s"] == pytest.approx(2e-3) and (bcast["time_min_s"], bcast["time_max_s"]) == (1e-3, 3e-3)
    assert bcast["algbw_GBps"] == pytest.approx((1 << 20) / 2e-3 / 1e9) == bcast["busbw_GBps"]
    assert (gemm1["concurrent"], gemm1["time_s"]) == (1, 2e-6)
    assert (gemm2["concurrent"], gemm2["time_s"], gemm2["time_max_s"]) == (2, pytest.approx(5e-6), 6e-6)
    assert gemm2["gflops_per_s"] == pytest.approx(2 * 64**3 / 5e-6 / 1e9)
    text = "\n".join(tables(record))
    assert "# broadcast on 2 ranks, 1 group at once, in place" in text and "# gemm" in text
    assert "1048576       262144    float   none     0      2000.0" in text


def test_samples_from_bench_map_rows_to_collective_and_gemm_samples(tmp_path):
    _, record = _fake_record()
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(record))
    collectives, gemms = samples_from_bench(str(path))
    assert [(c.kind, c.ranks, c.nbytes) for c in collectives] == [("broadcast", 2, 1 << 20)]
    assert [(g.m, g.concurrent, g.time_s) for g in gemms] == [(64, 1, 2e-6), (64, 2, pytest.approx(5e-6))]
    assert "bench.json" in collectives[0].source


@pytest.mark.parametrize("content, message", [
    ({"format": "tpsim-measured", "version": 1}, "not a bench record"),
    ({"format": "tpsim-bench", "version": 0, "rows": []}, "version 0; this tpsim reads version 1"),
    ({"format": "tpsim-bench", "version": 1, "rows": [{"op": "gemm", "m": 4}]}, r"rows\[0\]: missing 'k'"),
    ({"format": "tpsim-bench", "version": 1, "rows": [{"op": "nope", "ranks": 2, "bytes": 4, "time_s": 1.0}]},
     "kind must be one of"),
])
def test_samples_from_bench_rejects_other_records_in_one_line(tmp_path, content, message):
    path = tmp_path / "b.json"
    path.write_text(json.dumps(content))
    with pytest.raises(InputError, match=message):
        samples_from_bench(str(path))


@pytest.mark.parametrize("argv, message", [
    (["--nproc", "0"], "--nproc must be >= 1"),
    (["--nproc", "2", "--ops", "all_reduce,bogus"], "unknown bogus"),
    (["--nproc", "2", "--sizes", "1KiB:1K"], "ambiguous"),
    (["--nproc", "2", "--group-sizes", "4"], "--group-sizes 4: a collective group has 2..2 ranks"),
    (["--nproc", "2", "--gemm-shapes", "4x4"], "expected MxKxN"),
    (["--nproc", "2", "--gemm-concurrency", "3"], "--gemm-concurrency 3: must be in 1..2"),
    (["--nproc", "2", "--iters", "0"], "--iters must be >= 1"),
    (["--nproc", "1", "--ops", "send"], "nothing to measure"),
])
def test_bad_bench_arguments_are_one_line_and_exit_2(capsys, argv, message):
    assert main(["bench", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tpsim bench: error: ") and message in err and err.count("\n") == 1


def test_an_interleaved_case_runs_a_gemm_before_every_op():
    case = collective_case(BenchPoint("broadcast", 2, 2, 4096), nproc=4, warmup=1, iters=2, between=(8, 4, 2))
    bench = case.options["bench"]
    assert (bench["form"], bench["between"], bench["steps_per_rep"], bench["warmup_steps"]) == (
        "interleaved", [8, 4, 2], 2, 2)
    assert case.programs[3][:2] == [Gemm(out="c", a="a", b="b"), case.programs[3][1]]
    assert case.programs[3][1].kind == "broadcast" and len(case.programs[3]) == 6
    assert case.buffers[2]["a"].shape == (8, 4) and case.buffers[2]["buf"].shape == (1024,)
    send = collective_case(BenchPoint("send", 2, 1, 64), nproc=2, warmup=0, iters=1, between=(4, 4, 4))
    assert [op.kind for op in send.programs[0]] == ["gemm", "send", "recv", "wait", "wait"]
    assert collective_case(BenchPoint("send", 2, 1, 64), 2, 0, 1).options["bench"]["form"] == "lock-step"
    with pytest.raises(InputError, match="needs a shape MxKxN of positive extents"):
        collective_case(BenchPoint("send", 2, 1, 64), 2, 0, 1, between=(4, 0, 4))


def test_settings_measure_each_size_in_the_forms_asked_once_per_gemm_shape():
    settings = BenchSettings(ops=("all_reduce",), sizes_bytes=(64,), group_sizes=(2,),
                             gemm_shapes=((8, 8, 8), (4, 4, 4)), forms=("lock-step", "interleaved"), warmup=0, iters=1)
    forms = [(c.options["bench"]["form"], c.options["bench"]["between"]) for c in settings.cases(2)]
    assert forms == [("lock-step", None), ("interleaved", [8, 8, 8]), ("interleaved", [4, 4, 4])]
    with pytest.raises(InputError, match="--form sideways: valid forms are lock-step, interleaved"):
        BenchSettings(forms=("sideways",))


def test_interleaved_times_become_an_op_row_then_its_gemm_row():
    case = collective_case(BenchPoint("all_reduce", 2, 1, 1 << 20), nproc=2, warmup=0, iters=1, between=(64, 64, 64))
    rows = bench_rows([case], [[{"op_s": 1e-3, "gemm_s": 4e-6}, {"op_s": 3e-3, "gemm_s": 6e-6}]])
    op, gemm = rows
    assert (op["op"], op["form"], op["between"], op["time_s"]) == ("all_reduce", "interleaved", [64, 64, 64],
                                                                    pytest.approx(2e-3))
    assert (gemm["op"], gemm["form"], gemm["concurrent"], gemm["time_s"]) == ("gemm", "interleaved", 2,
                                                                              pytest.approx(5e-6))
    assert gemm["between_op"] == {"op": "all_reduce", "ranks": 2, "bytes": 1 << 20}
    record = bench_record(BenchSettings(), 2, "gloo", rows, {})
    text = "\n".join(tables(record))
    assert "each after a 64x64x64 gemm on every rank (interleaved" in text
    assert "# gemm between the interleaved ops" in text and "5.0" in text


def test_the_form_a_fit_takes_is_chosen_named_or_refused(tmp_path):
    from simulator.calibrate.from_bench import bench_form

    lock_step = {"rows": [{"op": "broadcast"}, {"op": "gemm", "form": "lock-step"}]}  # older rows: no form key
    both = {"rows": [{"op": "broadcast", "form": "lock-step"}, {"op": "broadcast", "form": "interleaved"}]}
    assert bench_form(lock_step, "auto") == "lock-step" and bench_form(both, "auto") == "interleaved"
    assert bench_form(both, "lock-step") == "lock-step"
    with pytest.raises(InputError, match="no interleaved collective rows .* tpsim bench --form interleaved"):
        bench_form(lock_step, "interleaved", "b.json")
    with pytest.raises(InputError, match="valid forms are auto, lock-step, interleaved"):
        bench_form(both, "sideways")
