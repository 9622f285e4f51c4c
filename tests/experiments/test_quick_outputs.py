"""A --quick run never writes over the committed full-run results in experiments/out/."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from experiments import bench_scale, cpu_loop, repro_3d
from experiments.outputs import OUT, default_folder
from experiments.published import script_arguments

ROOT = Path(__file__).resolve().parents[2]


def _digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


def test_the_default_folder_is_experiments_out_for_a_full_run_and_a_fresh_temporary_one_under_quick():
    assert default_folder("x", quick=False) == OUT
    first, second = default_folder("x", quick=True), default_folder("x", quick=True)
    assert first != second and all(os.path.isdir(f) and not f.startswith(OUT) for f in (first, second))


def test_a_reproduction_writes_to_experiments_out_only_when_not_quick():
    full = script_arguments("d", "repro_3d", [])
    assert (full.csv, full.png) == (os.path.join(OUT, "repro_3d.csv"), os.path.join(OUT, "repro_3d.png"))
    quick = script_arguments("d", "repro_3d", ["--quick"])
    assert not os.path.abspath(quick.csv).startswith(str(ROOT / OUT)) and quick.csv.endswith("repro_3d.csv")
    given = script_arguments("d", "repro_3d", ["--quick", "--csv", "a.csv", "--png", "b.png"])
    assert (given.csv, given.png) == ("a.csv", "b.png")


def test_a_quick_reproduction_leaves_experiments_out_as_it_was(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)  # the defaults are relative to the repository root
    before = _digests(ROOT / OUT)
    repro_3d.cli(["--quick"])
    out = capsys.readouterr().out
    written = out.strip().splitlines()[-1]
    assert written.startswith("wrote ") and str(OUT) not in written.split(" and ")[0].split()[-1]
    assert _digests(ROOT / OUT) == before


class _Stop(Exception):
    pass


def test_bench_scale_and_cpu_loop_take_a_temporary_folder_under_quick(monkeypatch, tmp_path):
    calls = []

    def record(name, quick):
        calls.append((name, quick))
        return str(tmp_path)

    monkeypatch.setattr(bench_scale, "default_folder", record)
    assert bench_scale.main(["--quick", "--list"]) == 0
    assert bench_scale.main(["--list"]) == 0  # a full run keeps experiments/out/bench_scale.csv: no call
    assert calls == [("bench_scale", True)]

    def stop(name, quick):
        calls.append((name, quick))
        raise _Stop

    monkeypatch.setattr(cpu_loop, "default_folder", stop)
    with pytest.raises(_Stop):
        cpu_loop.main(["--quick"])
    assert calls[-1] == ("cpu_loop", True)
