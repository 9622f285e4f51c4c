"""A sweep on a real local Dask cluster of two worker processes writes the same rows as the local pool."""

from __future__ import annotations

import csv
import sys

import pytest
from distributed import Client

from simulator.cli import main
from simulator.sweep.dask_cluster import DaskCluster
from simulator.sweep.executor import make_executor
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
    """The address of a Dask cluster of two worker processes on this machine, started once for the module
    as `tpsim sweep --dask --workers 2` starts its own."""
    with make_executor(workers=2, dask=True) as local:
        assert isinstance(local, DaskCluster) and local.describe() == "a local Dask cluster of 2 processes"
        with Client(local.scheduler_address) as client:
            info = client.scheduler_info()["workers"].values()
            assert len(info) == 2 and all(worker["nthreads"] == 1 for worker in info)
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


def test_an_address_dask_cannot_use_is_one_line(pooled, tmp_path, capsys):
    spec, _ = pooled
    status, _, err = run(capsys, "sweep", spec, "--out", tmp_path / "rows.csv", "--dask", "udp://127.0.0.1:1")
    assert status == 2 and len(err.splitlines()) == 1
    assert err.startswith("tpsim sweep: error: --dask udp://127.0.0.1:1: cannot reach the scheduler (unknown address "
                          "scheme 'udp'")


def test_dask_without_the_cluster_extra_is_one_line(pooled, tmp_path, capsys, monkeypatch):
    spec, _ = pooled
    monkeypatch.setitem(sys.modules, "distributed", None)  # as if not installed: importing it fails
    status, _, err = run(capsys, "sweep", spec, "--out", tmp_path / "rows.csv", "--dask")
    assert status == 2 and err == ("tpsim sweep: error: --dask needs Dask distributed, which is not installed: "
                                   "pip install -e '.[cluster]' (or pip install 'dask[distributed]')\n")
