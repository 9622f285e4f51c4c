"""A sweep on a real local Dask cluster of two worker processes writes the same rows as the local pool."""

from __future__ import annotations

import csv
import sys

import pytest
from distributed import Client, LocalCluster

from simulator.cli import main
from tests.cli_run import run

SPEC = """\
axes:
  model: [gpt3-125m, gpt3-350m]
  topology: [dgx-a100:1, dgx-a100:2]
  tp-sizes: ["1,2", "3"]
fixed:
  global-batch: 8
  gpus: 4
  simulate-top: 1
"""


@pytest.fixture(scope="module")
def cluster():
    """A Dask cluster of two single-threaded worker processes on this machine, started once for the module."""
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as local, \
            Client(local) as client:
        assert len(client.scheduler_info()["workers"]) == 2
        yield local.scheduler_address


@pytest.fixture(scope="module")
def pooled(tmp_path_factory):
    """(spec path, the local pool's file as bytes)."""
    folder = tmp_path_factory.mktemp("sweep")
    spec = folder / "spec.yaml"
    spec.write_text(SPEC)
    assert main(["sweep", str(spec), "--out", str(folder / "pool.csv"), "--workers", "2"]) == 0
    return spec, (folder / "pool.csv").read_bytes()


def test_the_cluster_writes_the_local_pools_rows(cluster, pooled, tmp_path, capsys):
    spec, data = pooled
    out = tmp_path / "dask.csv"
    status, stdout, err = run(capsys, "sweep", spec, "--out", out, "--dask", cluster)
    assert (status, err) == (0, "")
    assert stdout.splitlines()[0] == (f"tpsim sweep: 8 plans (2 model x 2 topology x 2 tp-sizes), 0 done, "
                                      f"8 to run on the Dask cluster at {cluster}")
    assert out.read_bytes() == data
    rows = list(csv.DictReader(data.decode().splitlines()))
    assert [r["status"] for r in rows] == ["ok", "refused"] * 4  # tp 3 does not divide 4 GPUs


def test_parquet_holds_the_same_rows(cluster, pooled, tmp_path, capsys):
    pq = pytest.importorskip("pyarrow.parquet")
    spec, data = pooled
    out = tmp_path / "rows.parquet"
    status, stdout, _ = run(capsys, "sweep", spec, "--out", out, "--dask", cluster)
    assert status == 0 and stdout.splitlines()[-1].endswith(f"in {out}")
    assert not (tmp_path / "rows.parquet.partial.csv").exists()
    table = pq.read_table(out)
    rows = list(csv.reader(data.decode().splitlines()))
    assert table.column_names == rows[0]

    def text(value):
        return "" if value is None else repr(value) if isinstance(value, float) else str(value)

    assert [[text(v) for v in row.values()] for row in table.to_pylist()] == rows[1:]
    assert table.schema.field("step_time_s").type == "double" and table.schema.field("grid").type == "string"
    status, stdout, _ = run(capsys, "sweep", spec, "--out", out)
    assert status == 0 and stdout.strip().endswith(f"all done already: {out}")


def test_parquet_without_pyarrow_is_one_line(pooled, tmp_path, capsys, monkeypatch):
    spec, _ = pooled
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # as if not installed: importing it fails
    status, out, err = run(capsys, "sweep", spec, "--out", tmp_path / "rows.parquet")
    assert (status, out) == (2, "")
    assert err == (f"tpsim sweep: error: --out {tmp_path / 'rows.parquet'}: Parquet needs pyarrow, which is not "
                   f"installed (pip install pyarrow); or write a .csv\n")


def test_dask_without_an_address_starts_its_own_cluster(tmp_path, capsys):
    spec = tmp_path / "spec.yaml"
    spec.write_text("axes:\n  global-batch: [8, 16]\nfixed:\n  model: gpt3-125m\n  topology: dgx-a100:1\n"
                    "  gpus: 2\n  simulate-top: 1\n")
    status, stdout, err = run(capsys, "sweep", spec, "--dask", "--workers", "2", "--out", tmp_path / "a.csv")
    assert (status, err) == (0, "") and "on a local Dask cluster of 2 processes" in stdout
    assert run(capsys, "sweep", spec, "--out", tmp_path / "b.csv")[0] == 0
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()
