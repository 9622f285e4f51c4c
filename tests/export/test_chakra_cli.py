"""`tpsim export --chakra`: the folder it writes, --schedule FILE, and bad input (one line, exit 2, nothing written)."""

from __future__ import annotations

import sys

import pytest

from simulator.export.files import write_traces
from simulator.export.nodes import EtNode
from tests.cli_run import run
from tests.export.chakra_reader import CASES, decode_all

GEMM = CASES["2d"][0]
TOPOLOGY = ("--topology", "dgx-h100")


def leftovers(folder):
    """Hidden staging folders the writer left behind."""
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def test_a_saved_schedule_exports_the_same_traces_as_its_generator_arguments(capsys, tmp_path):
    status, _, err = run(capsys, "schedule", *GEMM, "--out", tmp_path / "s.json")
    assert status == 0, err
    assert run(capsys, "export", "--chakra", tmp_path / "a", *GEMM, *TOPOLOGY)[0] == 0
    assert run(capsys, "export", "--chakra", tmp_path / "b", "--schedule", tmp_path / "s.json", *TOPOLOGY)[0] == 0
    for rank in range(4):
        name = f"tpsim.{rank}.et"
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    assert (tmp_path / "a" / "comm_group.json").read_text() == (tmp_path / "b" / "comm_group.json").read_text()


def test_prefix_names_the_files_and_an_empty_folder_is_used(capsys, tmp_path):
    (tmp_path / "empty").mkdir()
    status, out, err = run(capsys, "export", "--chakra", tmp_path / "empty", "--prefix", "summa", *GEMM, *TOPOLOGY)
    assert status == 0, err
    assert sorted(p.name for p in (tmp_path / "empty").iterdir()) == \
        ["comm_group.json"] + [f"summa.{r}.et" for r in range(4)]
    assert len(decode_all(tmp_path / "empty", 4, prefix="summa")[3]) > 0
    assert f"--workload-configuration={tmp_path / 'empty'}/summa " in out
    assert leftovers(tmp_path) == []


def test_a_folder_with_files_is_kept_unless_forced(capsys, tmp_path):
    target = tmp_path / "traces"
    target.mkdir()
    (target / "notes.txt").write_text("mine")
    status, out, err = run(capsys, "export", "--chakra", target, *GEMM, *TOPOLOGY)
    assert (status, out) == (2, "")
    assert err.count("\n") == 1 and "folder is not empty" in err and "--force" in err
    assert [p.name for p in target.iterdir()] == ["notes.txt"]
    status, _, err = run(capsys, "export", "--chakra", target, *GEMM, *TOPOLOGY, "--force")
    assert status == 0, err
    assert not (target / "notes.txt").exists() and (target / "tpsim.3.et").exists()
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("argv, message", [
    (["--schedule", "{tmp}/missing.json", *TOPOLOGY], "missing.json"),
    (["--algo", "2d", "--grid", "2,2,1", "--workload", "gemm", "--m", "8", "--k", "8", "--n", "8",
      "--topology", "no-such-cluster"], "no-such-cluster"),
    ([*GEMM, *TOPOLOGY, "--chunks", "4"], "add --lower-p2p"),
    ([*GEMM, *TOPOLOGY, "--lower-p2p", "--chunks", "0"], "--chunks 0: must be 1..1024"),
    ([*GEMM, *TOPOLOGY, "--prefix", "a/b"], "--prefix 'a/b'"),
    (["--algo", "2d", "--grid", "3,3,1", "--workload", "gemm", "--m", "8", "--k", "8", "--n", "8", *TOPOLOGY],
     ""),
])
def test_bad_input_is_one_line_and_writes_nothing(capsys, tmp_path, argv, message):
    argv = [arg.replace("{tmp}", str(tmp_path)) for arg in argv]
    status, out, err = run(capsys, "export", "--chakra", tmp_path / "out", *argv)
    assert (status, out) == (2, "")
    assert err.startswith("tpsim export: error: ") and err.count("\n") == 1 and message in err
    assert not (tmp_path / "out").exists() and leftovers(tmp_path) == []


def test_a_file_in_the_way_is_refused(capsys, tmp_path):
    (tmp_path / "f").write_text("x")
    status, _, err = run(capsys, "export", "--chakra", tmp_path / "f", *GEMM, *TOPOLOGY)
    assert status == 2 and "is a file" in err and (tmp_path / "f").read_text() == "x"


def test_without_mlc_chakra_the_export_says_how_to_install_it(capsys, tmp_path, monkeypatch):
    for name in [n for n in sys.modules if n == "chakra" or n.startswith("chakra.")] + ["chakra"]:
        monkeypatch.setitem(sys.modules, name, None)  # as if not installed: its import fails
    status, _, err = run(capsys, "export", "--chakra", tmp_path / "out", *GEMM, *TOPOLOGY)
    assert status == 2 and "pip install 'tpsim[chakra]'" in err and err.count("\n") == 1
    assert not (tmp_path / "out").exists()


def test_a_failure_while_writing_leaves_the_target_as_it_was(tmp_path):
    good = EtNode(0, "x", "COMP_NODE", 0, [], [], 0.0, {"num_ops": 1})
    bad = EtNode(1, "y", "COMP_NODE", 1, [0], [0], 0.0, {"no_such_attribute": 1})  # rank 1 fails mid-file
    with pytest.raises(KeyError):
        write_traces([[good], [good, bad]], {1: (0, 1)}, tmp_path / "new")
    assert not (tmp_path / "new").exists() and leftovers(tmp_path) == []
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "keep.txt").write_text("mine")
    with pytest.raises(KeyError):
        write_traces([[good], [good, bad]], {1: (0, 1)}, tmp_path / "old", force=True)
    assert [p.name for p in (tmp_path / "old").iterdir()] == ["keep.txt"] and leftovers(tmp_path) == []
    write_traces([[good], [good]], {1: (0, 1)}, tmp_path / "old", force=True)
    assert sorted(p.name for p in (tmp_path / "old").iterdir()) == ["comm_group.json", "tpsim.0.et", "tpsim.1.et"]
    assert leftovers(tmp_path) == []
