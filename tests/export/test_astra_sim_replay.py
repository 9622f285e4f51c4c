"""Exported traces replayed by ASTRA-sim itself, where a built ASTRA-sim binary is named.

ASTRA-sim is a C++ build, not a package, so this runs only when ``TPSIM_ASTRA_SIM`` names its analytical
binary (``AstraSim_Analytical_Congestion_Unaware``); elsewhere it is skipped. Every rank must finish,
and with the compute replayed and the network idle but for the collectives, each rank's exposed
communication must be what is left of its time after the compute durations the trace carries.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.cli_run import run
from tests.export.chakra_reader import decode_all, type_name

BINARY = os.environ.get("TPSIM_ASTRA_SIM")
pytestmark = pytest.mark.skipif(not BINARY or not Path(BINARY).is_file(),
                                reason="set TPSIM_ASTRA_SIM to an ASTRA-sim analytical binary to replay traces")

SYSTEM = {"scheduling-policy": "LIFO", "endpoint-delay": 10, "active-chunks-per-dimension": 2,
          "preferred-dataset-splits": 4, "all-reduce-implementation": ["ring"], "all-gather-implementation": ["ring"],
          "reduce-scatter-implementation": ["ring"], "all-to-all-implementation": ["ring"],
          "collective-optimization": "localBWAware", "local-mem-bw": 3350, "boost-mode": 0}
"""ASTRA-sim's own H100 example system configuration (examples/system/native_collectives)."""
NETWORK = "topology: [ Switch ]\nnpus_count: [ 8 ]\nbandwidth: [ 400.0 ]\nlatency: [ 936.25 ]\n"
FINISHED = re.compile(r"sys\[(\d+)\] finished, (\d+) cycles, exposed communication (\d+) cycles")


def replay(folder: Path, tmp_path: Path) -> dict[int, tuple[int, int]]:
    """rank -> (finish ns, exposed communication ns) as ASTRA-sim reports them."""
    (tmp_path / "system.json").write_text(json.dumps(SYSTEM))
    (tmp_path / "network.yml").write_text(NETWORK)
    (tmp_path / "memory.json").write_text(json.dumps({"memory-type": "NO_MEMORY_EXPANSION"}))
    done = subprocess.run([BINARY, f"--workload-configuration={folder}/tpsim",
                           f"--comm-group-configuration={folder}/comm_group.json",
                           f"--system-configuration={tmp_path}/system.json",
                           f"--network-configuration={tmp_path}/network.yml",
                           f"--remote-memory-configuration={tmp_path}/memory.json"],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return {int(r): (int(t), int(c)) for r, t, c in FINISHED.findall(done.stdout + done.stderr)}


@pytest.mark.parametrize("argv", [
    ["--algo", "1d", "--gpus", "8", "--workload", "mlp", "--m", "8192", "--hidden", "4096"],
    ["--algo", "summa25d", "--grid", "2,2,2", "--workload", "gemm", "--m", "8192", "--k", "4096", "--n", "4096",
     "--lower-p2p", "--chunks", "4"],
])
def test_astra_sim_replays_every_rank_to_the_end(capsys, tmp_path, argv):
    folder = tmp_path / "traces"
    status, _, err = run(capsys, "export", "--chakra", folder, *argv, "--topology", "dgx-h100")
    assert status == 0, err
    finished = replay(folder, tmp_path)
    assert sorted(finished) == list(range(8))
    for rank, nodes in enumerate(decode_all(folder, 8)):
        compute_ns = sum(n.duration_micros for n in nodes if type_name(n) == "COMP_NODE") * 1000
        total, exposed = finished[rank]
        assert total - exposed == compute_ns and exposed > 0
