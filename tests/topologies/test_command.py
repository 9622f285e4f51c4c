"""``tpsim topology``: show (text, --json, --png), list, save; bad input is one stderr line, status 2."""

import json

import pytest

from simulator.cli import main


def run(capsys, *argv):
    status = main(["topology", *argv])
    out, err = capsys.readouterr()
    return status, out, err


def test_show_a_preset_as_text(capsys):
    status, out, err = run(capsys, "show", "dgx-a100:2")
    assert status == 0 and err == ""
    assert out.startswith("dgx-a100:2: 16 GPUs in 2 nodes (16x A100-SXM4-40GB)")
    assert "nvswitch     16 x 230 (300)" in out and "ib           32 x 24 (25)" in out
    assert "injection/GPU  254 GB/s (nvswitch 230 + nic 24)" in out
    assert "bisection      192 GB/s (max-flow by server, n0 | n1)\n" in out


def test_show_names_the_least_of_several_cuts(capsys):
    status, out, _ = run(capsys, "show", "torus-3d:2x8x8")
    assert status == 0
    assert "bisection      1226.67 GB/s (max-flow across y of 2x8x8, y < 4 | y >= 4: least of 3 balanced cuts)\n" in out
    status, out, _ = run(capsys, "show", "dgx-a100")
    assert "injection/GPU  230 GB/s (nvswitch 230)\n" in out


@pytest.mark.parametrize("spec, gpus, nodes, bisection", [("dgx-a100", 8, 1, 920.0), ("torus-3d", 64, 64, 1226.67),
                                                          ("loopback:4", 4, 1, 10.0), ("a100-4gpu:4", 16, 4, 192.0)])
def test_show_json(capsys, spec, gpus, nodes, bisection):
    status, out, _ = run(capsys, "show", spec, "--json")
    summary = json.loads(out)
    assert status == 0
    assert (summary["gpus"], summary["nodes"]) == (gpus, nodes)
    assert summary["bisection_GBps"] == pytest.approx(bisection, rel=1e-5)
    assert summary["bisection_GBps"] == min(cut["GBps"] for cut in summary["bisection_cuts"])
    assert summary["bisection_cut"] in [cut["cut"] for cut in summary["bisection_cuts"]]


@pytest.mark.parametrize("name", ["dgx-a100", "dgx-h100", "dgx-h200", "a100-4gpu", "pcie-8gpu", "torus-3d", "loopback",
                                  "dgx-a100-80gb", "dgx-b200", "gb200-nvl72", "dgx-2h", "v100-4gpu", "rtx5000-4gpu"])
def test_every_preset_shows(capsys, name):
    assert run(capsys, "show", name)[0] == 0


def test_show_png_draws_a_two_node_cluster(capsys, tmp_path):
    png = tmp_path / "cluster.png"
    status, _, _ = run(capsys, "show", "dgx-h100:2", "--png", str(png))
    assert status == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000


def test_list_and_save_then_show_the_file(capsys, tmp_path):
    status, out, _ = run(capsys, "list")
    assert status == 0 and len(out.splitlines()) == 13 and out.startswith("dgx-a100")
    path = tmp_path / "custom.yaml"
    assert run(capsys, "save", "a100-4gpu:2", str(path))[0] == 0
    status, out, _ = run(capsys, "show", str(path), "--json")
    assert status == 0 and json.loads(out)["name"] == "a100-4gpu:2"


@pytest.mark.parametrize(
    "text, match",
    [("nodes: [{name: gpu0, kind: gpu}]\nlinks: []\n", "GPU gpu0 has no device"),
     ("links: [oops\n", "bad YAML"),
     ("nodes: []\nlinks: [{a: p, b: q, bandwidth_GBps: 1, latency_us: 0, kind: ib}]\n", 'unknown node "p" in link 1')],
)
def test_bad_files_are_one_line_and_status_2(capsys, tmp_path, text, match):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    status, out, err = run(capsys, "show", str(path))
    assert status == 2 and out == ""
    assert len(err.splitlines()) == 1 and err.startswith("tpsim topology: error: ") and match in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    "argv, match",
    [(["show", "dgx-z"], 'unknown preset "dgx-z", known: dgx-a100'), (["show", "missing.json"], "not found"),
     (["show", "loopback", "--png", "x.jpg"], "must end in .png"), (["save", "loopback", "out.csv"], "use a name ending")],
)
def test_bad_arguments_are_one_line_and_status_2(capsys, argv, match):
    status, _, err = run(capsys, *argv)
    assert status == 2 and len(err.splitlines()) == 1 and match in err
