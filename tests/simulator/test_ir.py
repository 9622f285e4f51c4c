"""The IR's data form: lossless JSON round trips, the loader's errors, the step x rank printout."""

from __future__ import annotations

import json
import os
import stat

import pytest

from simulator.algorithms.registry import build_schedule
from simulator.errors import InputError
from simulator.files import write_json_atomic
from simulator.ir.ops import AllGather, Broadcast, Gemm, Local, Recv, ReduceScatter, Send, Slice, Wait
from simulator.ir.printout import format_schedule
from simulator.ir.schedule import BufferSpec
from simulator.ir.serialize import (load_schedule, op_from_dict, op_to_dict, save_schedule, schedule_from_dict,
                                    schedule_to_dict)
from simulator.workloads.workload import Workload


@pytest.mark.parametrize("algorithm, grid", [("1d", {"gpus": 4}), ("2d", {"grid": (2, 2, 1)}),
                                             ("summa25d", {"grid": (2, 2, 2)})])
@pytest.mark.parametrize("workload", [Workload.gemm(8, 4, 4), Workload.mlp(8, 4)])
def test_json_round_trip_is_lossless(tmp_path, algorithm, grid, workload) -> None:
    schedule = build_schedule(algorithm, workload, "both", "bfloat16", **grid)
    path = tmp_path / "s.json"
    save_schedule(schedule, path)
    loaded = load_schedule(path)
    assert loaded == schedule
    assert schedule_to_dict(loaded) == json.loads(path.read_text())


def test_every_op_kind_round_trips() -> None:
    ops = [Gemm("C", "A", "B", trans_a=True, accumulate=True), Local("gelu_backward", "d", ("a", "b")),
           Local("zero", "z"), Slice("o", "s", (0, 2), None, None, (1, 3)), Broadcast("g", 1, "x", handle="h"),
           AllGather("g", "i", "o", axis=1), ReduceScatter("g", "i", "o"), Send(3, "x", handle="s"),
           Recv(2, "y"), Wait("s")]
    for op in ops:
        assert op_from_dict(json.loads(json.dumps(op_to_dict(op))), "here") == op


@pytest.mark.parametrize("record, message", [
    ({"op": "fft", "out": "x"}, r"here: unknown op 'fft'; valid: gemm, local"),
    ({"op": "gemm", "out": "C", "a": "A"}, r"gemm is missing field 'b'"),
    ({"op": "gemm", "out": "C", "a": "A", "b": "B", "colour": 1}, r"gemm has no field 'colour'"),
    ({"op": "broadcast", "group": "g", "root": "0", "buf": "x"}, r"broadcast.root: expected an integer"),
    ({"op": "local", "fn": "relu", "out": "x", "inputs": ["y"]}, r"unknown fn 'relu'"),
    ({"op": "slice", "out": "o", "src": "s", "src_rows": [1]}, r"slice.src_rows: expected null or \[start, stop\]"),
    ("gemm", r"an op must be an object"),
])
def test_malformed_ops_name_the_field(record, message) -> None:
    with pytest.raises(InputError, match=message):
        op_from_dict(record, "here")


def test_loader_errors_are_one_clear_line(tmp_path) -> None:
    good = schedule_to_dict(build_schedule("2d", Workload.gemm(4, 2, 2), "fwd", grid=(2, 2, 1)))
    cases = {
        "missing.json": (None, r"cannot read schedule .*missing.json"),
        "text.json": ("not json {", r"not valid JSON"),
        "other.json": ({"format": "something"}, r"not a tpsim schedule"),
        "future.json": ({**good, "version": 9}, r"version 9; this tpsim reads 1"),
        "shape.json": ({**good, "buffers": [{"A": {"shape": [2, "x"], "dtype": "float32"}}] + good["buffers"][1:]},
                       r"rank 0 buffer 'A' shape: expected a list of integers"),
        "dtype.json": ({**good, "buffers": [{"A": {"shape": [2, 1], "dtype": "int8"}}] + good["buffers"][1:]},
                       r"buffer dtype 'int8' unknown"),
        "step.json": ({**good, "programs": [[{"op": "gemm"}]] + good["programs"][1:]},
                      r"rank 0 step 0: gemm is missing field 'out'"),
        "size-type.json": ({**good, "workload": {"name": "gemm", "m": 4, "k": 2, "n": "2"}},
                           r"workload gemm field 'n' must be an integer, got '2'"),
        "size-extra.json": ({**good, "workload": {"name": "mlp", "m": 4, "hidden": 2, "k": 2}},
                            r"workload mlp has no field 'k'; fields: m, hidden"),
        "size-zero.json": ({**good, "workload": {"name": "gemm", "m": 0, "k": 2, "n": 2}}, r"M must be >= 1, got 0"),
        "workload.json": ({**good, "workload": {"name": "conv"}}, r"one of gemm \(m, k, n\); mlp \(m, hidden\)"),
        "workload-list.json": ({**good, "workload": {"name": ["gemm"]}}, r"expected a name and sizes, one of gemm"),
        "pass.json": ({**good, "passes": "forward"}, r"pass 'forward' unknown; valid: fwd, bwd, both"),
        "tensor.json": ({**good, "tensors": {**good["tensors"], "Q": [4, 2]}},
                        r"tensor 'Q' is not one of workload gemm's"),
        "undeclared.json": ({**good, "programs": [[{"op": "gemm", "out": "Q", "a": "A", "b": "B"}]]
                             + good["programs"][1:]}, r"rank 0 step 0 \(Q=A\*B\): rank 0: buffer 'Q' is not declared"),
    }
    for name, (content, message) in cases.items():
        path = tmp_path / name
        if content is not None:
            path.write_text(content if isinstance(content, str) else json.dumps(content))
        with pytest.raises(InputError, match=message) as info:
            load_schedule(path)
        assert "\n" not in str(info.value)


def test_written_files_get_open_s_permissions_and_their_missing_folders(tmp_path) -> None:
    """The shared atomic writer: 0o666 less the umask (not mkstemp's 0o600), folders made, no temporaries left."""
    schedule = build_schedule("1d", Workload.gemm(4, 2, 2), "fwd", gpus=2)
    saved, trace = tmp_path / "runs" / "1d" / "s.json", tmp_path / "trace.json"
    old = os.umask(0o022)
    try:
        save_schedule(schedule, saved)
        os.umask(0o027)
        write_json_atomic(trace, {"traceEvents": []})
    finally:
        os.umask(old)
    assert stat.S_IMODE(saved.stat().st_mode) == 0o644
    assert stat.S_IMODE(trace.stat().st_mode) == 0o640
    assert load_schedule(saved) == schedule
    assert os.listdir(saved.parent) == ["s.json"]


def test_unwritable_paths_are_one_line_naming_the_path(tmp_path) -> None:
    (tmp_path / "afile").write_text("")
    (tmp_path / "adir").mkdir()
    with pytest.raises(InputError, match=r"cannot write .*afile/s.json: .*afile is a file, not a folder$"):
        write_json_atomic(tmp_path / "afile" / "s.json", {})
    with pytest.raises(InputError, match=r"cannot write .*adir: it is a folder, and tpsim writes only regular files"):
        write_json_atomic(tmp_path / "adir", {})
    assert sorted(os.listdir(tmp_path)) == ["adir", "afile"] and os.listdir(tmp_path / "adir") == []


def test_schedule_from_dict_rejects_a_non_object() -> None:
    with pytest.raises(InputError, match="expected a JSON object"):
        schedule_from_dict([1, 2])


def test_buffer_spec_validates() -> None:
    assert BufferSpec((3, 4), "bfloat16").nbytes == 24
    with pytest.raises(ValueError, match="positive extents"):
        BufferSpec((3, 0), "float32")


def test_step_by_rank_printout() -> None:
    schedule = build_schedule("2d", Workload.gemm(4, 2, 2), "fwd", grid=(2, 2, 1))
    lines = format_schedule(schedule).splitlines()
    assert lines[1].split() == ["step", "rank", "0", "rank", "1", "rank", "2", "rank", "3"]
    assert lines[2].split()[:4] == ["0", "bc", "row_j0_k0@0", "A"]
    assert "C+=A_ws*B_ws" in lines[-1]
    assert len(lines) == 2 + 6  # header, column titles, 2 steps x (2 broadcasts + gemm)
    narrow = format_schedule(schedule, ranks=[3], width=8)
    assert narrow.splitlines()[2] == "   0  bc row_~"


def test_ops_carry_no_instance_dict():
    # A 4,096-rank schedule holds over a million ops; a dict each would be ~100 bytes apiece more.
    from simulator.ir.ops import OP_TYPES

    for cls in OP_TYPES.values():
        assert "__dict__" not in dir(cls), cls.__name__
