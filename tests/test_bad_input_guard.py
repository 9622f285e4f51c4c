"""The resource guard (``simulator.limits``): sizes, values and files that cannot be done are refused up front.

Every row of ``ROWS`` is one bad input to one entry point: it must exit with status 2 and one line on
stderr holding the expected words, no traceback, nothing on stdout, and leave the folder as it was (no
file created, the existing ``{out}`` unchanged). The subprocess cases run under a 1.5 GB address-space
limit and a 20 s timeout: what used to grow to gigabytes or never answer must answer in seconds.
"""

from __future__ import annotations

import json
import os
import resource
import string
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from simulator.algorithms.registry import build_schedule
from simulator.errors import InputError
from simulator.files import read_bytes
from simulator.ir.serialize import schedule_to_dict
from simulator.limits import (MAX_ELEMENTS, MAX_JSON_DEPTH, MAX_RANKS, available_memory_bytes, check_json_depth,
                              loads_json)
from simulator.workloads.workload import Workload
from topologies.presets import build_preset
from topologies.profile import node_kind
from tests.cli_run import run

GEMM = ["--workload", "gemm", "--m", "8", "--k", "8", "--n", "8"]
SMALL = ["--algo", "1d", "--gpus", "2", *GEMM]
BIG = str(10**30)
SENTINEL = "an existing file that a refused command must leave alone\n"
TOPOLOGY_DATA = Path(__file__).resolve().parent / "data" / "topologies"


def _schedule_file(folder: Path, name: str, change) -> str:
    """A valid small schedule's JSON with ``change(data)`` applied."""
    data = schedule_to_dict(build_schedule("1d", Workload.gemm(8, 8, 8), gpus=2))
    change(data)
    path = folder / name
    path.write_text(json.dumps(data))
    return str(path)


def _first_buffer(data: dict) -> dict:
    return next(iter(data["buffers"][0].values()))


def _files(folder: Path, needed: set[str] | None = None) -> dict[str, Path]:
    """The inputs the rows name as ``{key}``, made in ``folder``: all, or the costly ones only where ``needed``
    names them (a 131,073-GPU file and a dozen schedules per row were most of this table's time)."""
    def want(*keys: str) -> bool:
        return needed is None or any(key in needed for key in keys)

    deep_array = "[" * 5000 + "]" * 5000  # past the C decoder's recursion limit
    deep_object = '{"a":' * (MAX_JSON_DEPTH + 36) + "1" + "}" * (MAX_JSON_DEPTH + 36)  # parses; the guard refuses
    files = {"deep": "deep.json", "deep100": "deep100.json", "deep_yaml": "deep.yaml", "deep_placement": "deep.txt",
             "latin1": "latin1.json", "gpus_file": "gpus.json", "bigint": "bigint.json", "bigint_yaml": "bigint.yaml"}
    (folder / files["deep"]).write_text(deep_array)
    (folder / files["deep100"]).write_text(deep_object)
    (folder / files["deep_yaml"]).write_text(deep_object)
    (folder / files["deep_placement"]).write_text("[" * 200 + "]" * 200)
    (folder / files["latin1"]).write_bytes(b'{"format": "caf\xe9"}')
    (folder / files["bigint"]).write_text("[" + "9" * 5000 + "]")  # past int()'s 4,300 digits: a ValueError
    (folder / files["bigint_yaml"]).write_text("name: " + "9" * 5000 + "\n")
    if want("gpus_file"):
        nodes = [{"name": f"g{i}", "kind": "gpu"} for i in range(131_073)]
        (folder / files["gpus_file"]).write_text(json.dumps({"name": "many", "nodes": nodes, "links": []}))
    for name in ("zero.json", "zero.yaml", "zero.txt", "zero.log"):  # a device behind a name tpsim reads as a file
        (folder / name).symlink_to("/dev/zero")
    with open(folder / "huge.yaml", "wb") as handle:  # sparse: 300 MiB on paper, no disk
        handle.truncate(300 << 20)
    os.link(folder / "huge.yaml", folder / "huge.json")
    os.mkfifo(folder / "fifo.json")
    paths = {key: folder / name for key, name in files.items()}
    paths.update({name.replace(".", "_"): folder / name for name in ("zero.json", "zero.yaml", "zero.txt", "zero.log",
                                                                      "huge.yaml", "huge.json", "fifo.json")})
    # Schedule files with sizes past the limits, the whole-schedule fields wrong (simulator.ir.file_header), and
    # a list for a string.
    for key, name, change in [
            ("wide_buffer", "wide.json", lambda d: _first_buffer(d).update(shape=[2**40, 8])),
            ("many_elements", "elements.json", lambda d: d["tensors"].update(A=[2**30, 2**30])),
            ("many_ranks", "ranks.json", lambda d: d.update(buffers=[{}] * (MAX_RANKS + 1))),
            ("grid_negative", None, lambda d: d.update(grid=[-2, -2, -2])),
            ("grid_empty", None, lambda d: d.update(grid=[])),
            ("grid_product", None, lambda d: d.update(grid=[3])),
            ("version_true", None, lambda d: d.update(version=True)),
            ("programs_empty", None, lambda d: d.update(programs=[[] for _ in d["programs"]])),
            ("algorithm_list", None, lambda d: d.update(algorithm=["1d"]))]:
        if want(key):
            paths[key] = Path(_schedule_file(folder, name or f"{key}.json", change))
    # Topology and profile files: an unknown GraphML encoding, YAML anchors, a misspelt key, values past physics.
    graphml = folder / "encoding.graphml"
    graphml.write_text("<?xml version='1.0' encoding='bogus-encoding'?>\n<graphml></graphml>\n")
    paths["bad_encoding"] = graphml
    paths["anchors_yaml"] = folder / "anchors.yaml"
    paths["anchors_yaml"].write_text("name: &a x\nnotes: *a\nnodes: []\nlinks: []\n")
    kind = node_kind(build_preset("dgx-a100")) if want("simm", "fast_link", "slow_sim", "sim_key", "sim_nested") else ""
    profiles = {"simm": {"simm": {"collective_base_latency_us": 9.0}},
                "fast_link": {"node_kind": kind, "links": {"nvswitch": {"bandwidth_GBps": 230000.0}}},
                "slow_sim": {"node_kind": kind, "sim": {"collective_base_latency_us": 2e6}}}
    profiles["sim_key"] = {"node_kind": kind, "sim": {"gemm_effciency": 0.5}}  # a misspelt key inside sim
    profiles["sim_nested"] = {"node_kind": kind, "sim": {"collective_kind_bytes_factors": {"allreduce": 2.0}}}
    for key, body in profiles.items():
        if not want(key):
            continue
        paths[key] = folder / f"{key}.json"
        paths[key].write_text(json.dumps({"format": "tpsim-calibration", "version": 1, **body}))
    # Topology files, YAML, JSON and compact, with a key inside sim that the simulator would not read.
    text = (TOPOLOGY_DATA / "two-servers.yaml").read_text()
    assert "collective_base_latency_us: 8.0" in text
    paths["sim_key_yaml"] = folder / "sim-key.yaml"
    paths["sim_key_yaml"].write_text(text.replace("collective_base_latency_us: 8.0", "collective_base_latncy_us: 8.0"))
    paths["sim_key_json"] = folder / "sim-key.json"
    doc = yaml.safe_load(text)
    doc["sim"]["collective_kind_bytes_factors"] = {"all_reduce": 1.0, "alltoall": 2.0}
    paths["sim_key_json"].write_text(json.dumps(doc))
    paths["sim_key_cluster"] = folder / "cluster.yaml"
    paths["sim_key_cluster"].write_text("server: dgx-a100\nservers: 2\ncalibration: sim_key.json\n")
    paths["out"] = folder / "out.json"
    paths["out"].write_text(SENTINEL)
    paths["out_yaml"] = folder / "out.yaml"
    paths["out_yaml"].write_text(SENTINEL)
    paths["new"] = folder / "new.json"
    paths["new_yaml"] = folder / "new.yaml"
    paths["new_csv"] = folder / "new.csv"
    return paths


ROWS = [
    # ranks, grids and topology sizes: refused before anything is built
    (["schedule", "--algo", "1d", "--gpus", "1000000", *GEMM, "--out", "{new}"],
     "--gpus 1000000: 1,000,000 ranks is more than tpsim simulates (at most 65,536 ranks)"),
    (["schedule", "--algo", "2d", "--grid", "1000,1000,1", *GEMM, "--out", "{out}"],
     "--grid 1000,1000,1: 1,000,000 ranks is more than tpsim simulates"),
    (["simulate", "--algo", "1d", "--gpus", "100000", *GEMM, "--topology", "loopback:8", "--trace", "{new}"],
     "--gpus 100000: 100,000 ranks"),
    (["predict", "--gpus", "1000000", "--topology", "dgx-a100:2", *GEMM, "--csv", "{new_csv}"],
     "--gpus 1000000: 1,000,000 ranks is more than tpsim simulates"),
    (["predict", "--gpus", "8", "--topology", "dgx-a100:1000000000", *GEMM, "--csv", "{new_csv}"],
     "dgx-a100:1000000000: 8,000,000,000 GPUs is more than a tpsim topology holds (at most 131,072 GPUs)"),
    (["simulate", *SMALL, "--topology", "dgx-h100:20000"], "dgx-h100:20000: 160,000 GPUs is more than"),
    (["topology", "show", "torus-3d:1000x1000x1000"], "torus-3d:1000x1000x1000: 1,000,000,000 GPUs"),
    (["topology", "show", "loopback:" + "9" * 40], "a 40-digit number of ranks; too many GPUs"),
    (["topology", "show", "torus-3d:" + "9" * 5000 + "x1x1"], "a 5004-character shape; too many GPUs"),
    (["topology", "show", "dgx-h100:" + "9" * 5000], "a 5000-digit number of servers; too many GPUs"),
    (["topology", "save", "dgx-a100:20000", "{out_yaml}"], "dgx-a100:20000: 160,000 GPUs"),
    (["topology", "show", "{gpus_file}"], "gpus.json: its nodes: 131,073 GPUs is more than a tpsim topology holds"),
    (["collective", "--op", "all_reduce", "--group-size", "100000", "--bytes", "1MiB", "--topology", "loopback:8"],
     "--group-size 100000: 100,000 ranks is more than tpsim simulates"),
    # tensor sizes: each extent, each tensor's elements, the FLOPs
    (["schedule", "--algo", "1d", "--gpus", "2", "--workload", "gemm", "--m", BIG, "--k", "8", "--n", "8"],
     f"--m {BIG}: 1,000,000,000,000,000,000,000,000,000,000 is over the largest tensor extent, 2,147,483,647"),
    (["verify", "--algo", "1d", "--gpus", "2", "--workload", "gemm", "--m", str(2**62), "--k", "8", "--n", "8"],
     f"--m {2**62}: "),
    (["schedule", "--algo", "1d", "--gpus", "2", "--workload", "gemm", "--m", "2**70", "--k", "8", "--n", "8"],
     "argument --m: invalid int value: '2**70'"),
    (["simulate", "--algo", "1d", "--gpus", "2", "--workload", "mlp", "--m", "8", "--hidden", BIG, "--topology",
      "loopback:2"], f"--hidden {BIG}: "),
    (["schedule", "--algo", "1d", "--gpus", "2", "--workload", "gemm", "--m", "100000000", "--k", "100000000",
      "--n", "8", "--out", "{new}"],
     "tensor A [100000000, 100000000]: 10,000,000,000,000,000 elements is over the most one tensor may hold, "
     "281,474,976,710,656 (2^48)"),
    (["predict", "--gpus", "8", "--topology", "dgx-a100", "--workload", "gemm", "--m", "16777216", "--k", "16777216",
      "--n", "16777216"], "FLOPs (forward and backward) is over 9,223,372,036,854,775,807 (2^63 - 1, int64)"),
    (["schedule", "--algo", "1d", "--gpus", "2", "--workload", "transformer", "--batch", "1", "--seq", "20000000",
      "--hidden", "16", "--heads", "8"], "the attention scores (b*a*s*s) are 3,200,000,000,000,000 elements"),
    (["simulate", "--algo", "1d", "--gpus", "2", "--model", "gpt3-125m", "--batch", "1", "--layers", BIG,
      "--topology", "loopback:2"], f"--layers {BIG}: "),
    # seeds and tolerances
    (["verify", *SMALL, "--seed", "-1"], "--seed -1: a seed is an integer from 0 to 4,294,967,295 (2^32 - 1)"),
    (["verify", *SMALL, "--seed", str(2**64)], f"--seed {2**64}: a seed is an integer from 0 to"),
    (["verify", *SMALL, "--seed", str(2**32)], f"--seed {2**32}: "),
    (["verify", *SMALL, "--tolerance", "nan"], "--tolerance nan: a tolerance is a finite number > 0"),
    (["verify", *SMALL, "--tolerance", "-1"], "--tolerance -1.0: a tolerance is a finite number > 0"),
    (["verify", *SMALL, "--tolerance", "inf"], "--tolerance inf: "),
    (["verify", *SMALL, "--tolerance", "0"], "--tolerance 0.0: "),
    # byte sizes
    (["collective", "--op", "all_reduce", "--group-size", "8", "--bytes", "2000000000000000000000", "--topology",
      "loopback:8"], "2,000,000,000,000,000,000,000 bytes is over the largest size tpsim takes"),
    (["collective", "--op", "all_reduce", "--group-size", "8", "--bytes", "1" + "0" * 5000, "--topology", "loopback:8"],
     "a 5001-digit number; sizes are at most 2^50 bytes"),
    # files: devices, sizes, encodings, nesting, contents past the limits
    (["verify", "--schedule", "/dev/zero"], "schedule /dev/zero: not a text file (a NUL byte at offset 0)"),
    (["simulate", "--schedule", "/dev/urandom", "--topology", "loopback:2"], "schedule /dev/urandom: not a text file"),
    (["schedule", "--schedule", "{deep}", "--out", "{new}"], "deep.json: nested deeper than 64 levels of lists"),
    (["verify", "--schedule", "{deep100}"], "deep100.json: nested deeper than 64 levels of lists and objects"),
    (["verify", "--schedule", "{latin1}"], "latin1.json: not UTF-8 text (byte 0xe9 at offset 15)"),
    (["verify", "--schedule", "{fifo_json}"], "fifo.json: not valid JSON"),
    (["verify", "--schedule", "{bigint}"], "bigint.json: an integer of 5,000 digits; tpsim reads integers of at most"),
    (["topology", "show", "{bigint}"], "bigint.json: an integer of 5,000 digits"),
    (["topology", "show", "{bigint_yaml}"], "bigint.yaml: bad YAML: Exceeds the limit (4300 digits)"),
    (["simulate", *SMALL, "--topology", "loopback:2", "--placement", "{bigint}"],
     "placement file {bigint}: an integer of 5,000 digits"),
    (["verify", "--schedule", "{wide_buffer}"], "shape [1099511627776, 8]: 1,099,511,627,776 is over the largest"),
    (["simulate", "--schedule", "{many_elements}", "--topology", "loopback:2"],
     "tensor 'A' [1073741824, 1073741824]: 1,152,921,504,606,846,976 elements is over the most"),
    (["schedule", "--schedule", "{many_ranks}"], "ranks.json: buffers: 65,537 ranks is more than tpsim simulates"),
    (["topology", "show", "{zero_json}"], "zero.json: not a text file (a NUL byte at offset 0)"),
    (["topology", "save", "{zero_yaml}", "{out_yaml}"], "zero.yaml: not a text file"),
    (["topology", "show", "{huge_yaml}"], "huge.yaml is 300 MiB; tpsim reads at most 256 MiB from a topology file"),
    (["topology", "show", "{deep100}"], "deep100.json: nested deeper than 64 levels"),
    (["topology", "show", "{deep_yaml}"], "deep.yaml: nested deeper than 64 levels"),
    (["simulate", *SMALL, "--topology", "loopback:2", "--placement", "{deep_placement}"],
     "placement file {deep_placement}: nested deeper than 64 levels"),
    (["simulate", *SMALL, "--topology", "loopback:2", "--placement", "{zero_txt}"],
     "placement file {zero_txt}: not a text file"),
    (["collective", "--compare", "{zero_log}", "--topology", "loopback:8"], "nccl-tests log {zero_log}: not a text"),
    (["compare", "{zero_json}", "--topology", "loopback:2", "--trace", "{new}"], "measured run {zero_json}: not a"),
    (["compare", "{huge_json}", "--topology", "loopback:2"], "huge.json is 300 MiB; tpsim reads at most 256 MiB"),
    (["compare", "{deep}", "--topology", "loopback:2"], "deep.json: nested deeper than 64 levels"),
    (["calibrate", "--from-bench", "{deep100}", "--topology", "loopback:2", "-o", "{new_yaml}"],
     "deep100.json: nested deeper than 64 levels"),
    (["calibrate", "--from-bench", "{zero_json}", "--topology", "loopback:2", "-o", "{out_yaml}"],
     "bench file {zero_json}: not a text file"),
    # schedule files: fields that used to be accepted or end in a traceback
    (["verify", "--schedule", "{grid_negative}"], "grid [-2, -2, -2]: expected a non-empty list of integers >= 1 "
                                                  "(the process grid, e.g. [2] or [q, q, d]) whose product is the "
                                                  "file's 2 ranks"),
    (["simulate", "--schedule", "{grid_empty}", "--topology", "loopback:2"], "grid []: expected a non-empty list"),
    (["schedule", "--schedule", "{grid_product}", "--out", "{new}"],
     "grid [3] has 3 ranks but the file declares 2 (one buffers entry per rank)"),
    (["verify", "--schedule", "{version_true}"], "schedule format version True; this tpsim reads 1"),
    (["verify", "--schedule", "{programs_empty}"], "every rank's program is empty; a schedule needs at least one op"),
    (["simulate", "--schedule", "{algorithm_list}", "--topology", "loopback:2"], "'algorithm' must be str, got list"),
    # topology and profile files
    (["topology", "show", "{bad_encoding}"], "not a readable GraphML file: unknown encoding: bogus-encoding"),
    (["topology", "show", "{anchors_yaml}"], "anchors.yaml: bad YAML at line 1: an anchor (&a); tpsim reads YAML "
                                             "without anchors and aliases: write each value out"),
    (["topology", "save", "dgx-a100", "--calibration", "{anchors_yaml}", "{new_yaml}"], "an anchor (&a)"),
    (["topology", "show", "dgx-a100", "--calibration", "{simm}"],
     "simm.json: unknown key 'simm' in the calibration profile (did you mean 'sim'?); known: format, version"),
    (["topology", "show", "{sim_key_yaml}"], "sim-key.yaml: unknown key 'collective_base_latncy_us' in the sim "
                                             "section (did you mean 'collective_base_latency_us'?); known: "
                                             "collective_base_latency_us, collective_step_latency_us"),
    (["simulate", *SMALL, "--topology", "{sim_key_json}"], "sim-key.json: unknown key 'alltoall' in the sim section's "
                                                            "collective_kind_bytes_factors; known: broadcast, reduce"),
    (["predict", "--gpus", "8", "--topology", "dgx-a100", *GEMM, "--calibration", "{sim_key}"],
     "sim_key.json: unknown key 'gemm_effciency' in the calibration profile's sim section (did you mean "
     "'gemm_efficiency'?); known: collective_base_latency_us"),
    (["topology", "save", "dgx-a100", "--calibration", "{sim_nested}", "{new_yaml}"],
     "unknown key 'allreduce' in the calibration profile's sim section's collective_kind_bytes_factors (did you "
     "mean 'all_reduce'?)"),
    (["topology", "show", "{sim_key_cluster}"], "cluster.yaml: {sim_key}: unknown key 'gemm_effciency' in the calibration "
                                                "profile's sim section"),
    (["simulate", *SMALL, "--topology", "dgx-a100", "--calibration", "{fast_link}"],
     "bandwidth_GBps 2.3e+05 is 766.67x its published peak 300 GB/s (at most 10% over it)"),
    (["topology", "show", "dgx-a100", "--calibration", "{slow_sim}"],
     "sim collective_base_latency_us: 2e+06 us; a latency is from 0 to 1e+06 us (one second)"),
    # values that decide nothing sensible
    (["schedule", "--algo", "1d", "--gpus", "2", "--workload", "transformer", "--batch", "1", "--seq", "8", "--hidden",
      "16", "--heads", "2", "--dropout", "-1"], "dropout must be a probability in [0, 1), got -1.0"),
    (["predict", "--gpus", "8", "--topology", "dgx-a100", "--model", "gpt3-125m", "--global-batch", "8",
      "--bucket-mb", "1e-320", "--csv", "{new_csv}"],
     "a bucket size is a finite number of MB > 0, at least 1e-06 (one byte)"),
    (["collective", "--op", "all_reduce", "--group-size", "8", "--bytes", "1MiB", "--topology", "dgx-a100", "--algo",
      "nvls"], "--algo nvls: topology dgx-a100 has no NVLink SHARP (NVLS needs a third-generation NVSwitch, Hopper "
               "or later; its sim collective_nvls is false); valid here: ring, double_binary_tree"),
    (["collective", "--op", "all_reduce", "--group-size", "16", "--bytes", "1MiB", "--topology", "dgx-a100:2",
      "--algo", "nvls_tree"], "--algo nvls_tree: topology dgx-a100:2 has no NVLink SHARP"),
]

TORCH_ROWS = [
    (["run", *SMALL, "--nproc", "100000"], "--nproc 100000: at most 512 ranks run on one host"),
    (["run", *SMALL, "--nproc", "2", "--seed", "-1", "--out", "{new}"], "--seed -1: a seed is an integer"),
    (["run", *SMALL, "--nproc", "2", "--seed", str(2**64)], f"--seed {2**64}: "),
    (["run", *SMALL, "--nproc", "2", "--tolerance", "nan", "--out", "{out}"], "--tolerance nan: a tolerance is"),
    (["run", *SMALL, "--nproc", "2", "--tolerance", "inf"], "--tolerance inf: "),
    (["run", *SMALL, "--nproc", "2", "--timeout", "inf"], "--timeout inf: a time limit is a finite number"),
    (["run", "--algo", "1d", "--gpus", "2", "--nproc", "2", "--workload", "gemm", "--m", "2097152", "--k",
      "2097152", "--n", "8", "--dtype", "float32", "--out", "{new}", "--trace", "{out}"],
     "running 1d [2] gemm M=2097152 K=2097152 N=8 float32 on 2 local ranks needs at least 131,072.6 GiB (the "
     "largest rank 65,536.3 GiB: its buffers and its largest output block's float64 reference), more than the"),
    (["run", "--schedule", "/dev/zero", "--nproc", "2"], "schedule /dev/zero: not a text file"),
    (["bench", "--nproc", "100000", "--out", "{new}"], "--nproc 100000: at most 512 ranks run on one host"),
    (["bench", "--nproc", "2", "--timeout", "nan"], "--timeout nan: a time limit is a finite number of seconds"),
    (["bench", "--nproc", "2", "--gemm-shapes", "100000000x100000000x8"],
     "--gemm-shapes 100000000x100000000x8: a matrix [100000000, 100000000]: 10,000,000,000,000,000 elements"),
    (["bench", "--nproc", "2", "--sizes", "1KiB:2000000000000000000000", "--out", "{out}"],
     "bytes is over the largest size tpsim takes"),
]


def _snapshot(folder: Path) -> dict[str, object]:
    """Every entry's kind and, for regular files, size, time and (when small) content."""
    state = {}
    for path in sorted(folder.rglob("*")):
        if path.is_symlink():
            state[path.name] = ("link", os.readlink(path))
        elif path.is_fifo():
            state[path.name] = "fifo"
        else:
            info = path.stat()
            small = info.st_size < (1 << 20)
            state[path.name] = (info.st_size, info.st_mtime_ns, path.read_bytes() if small else None)
    return state


def _check_row(capsys, tmp_path: Path, argv: list[str], message: str) -> None:
    needed = {field for text in (*argv, message) for _, field, _, _ in string.Formatter().parse(text) if field}
    paths = {key: str(value) for key, value in _files(tmp_path, needed).items()}
    argv = [arg.format(**paths) for arg in argv]
    message = message.format(**paths)
    before = _snapshot(tmp_path)
    status, out, err = run(capsys, *argv)
    assert status == 2, err
    assert message in err
    assert len(err.splitlines()) == 1 and err.endswith("\n") and "Traceback" not in err
    assert out == ""
    assert _snapshot(tmp_path) == before


@pytest.mark.parametrize("argv, message", ROWS, ids=[f"{row[0][0]}-{i}" for i, row in enumerate(ROWS)])
def test_bad_input_is_refused_in_one_line(capsys, tmp_path, argv, message) -> None:
    _check_row(capsys, tmp_path, argv, message)


@pytest.mark.parametrize("argv, message", TORCH_ROWS, ids=[f"{row[0][0]}-{i}" for i, row in enumerate(TORCH_ROWS)])
def test_bad_run_and_bench_input_is_refused_in_one_line(capsys, tmp_path, argv, message) -> None:
    pytest.importorskip("torch")
    _check_row(capsys, tmp_path, argv, message)


# -- under a memory limit, in a child: what used to take gigabytes or never end ----------------------------------

CHILD_CPU_S = 15
"""CPU seconds a refusal may take in its child process: the kernel stops it past that (SIGXCPU), and the test
checks the child's own CPU time, which a loaded host does not stretch as it stretches wall-clock time."""


def _limited() -> None:  # pragma: no cover - runs in the child
    limit = 1536 << 20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CPU, (CHILD_CPU_S, CHILD_CPU_S + 1))


def _deep_file(folder: Path) -> str:
    path = folder / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    return str(path)


SUBPROCESS_ROWS = [
    (lambda folder: ["verify", "--schedule", "/dev/zero"], "not a text file"),
    (lambda folder: ["simulate", "--schedule", _deep_file(folder), "--topology", "loopback:2"],
     "nested deeper than 64 levels"),
    (lambda folder: ["predict", "--gpus", "8", "--topology", "dgx-a100:1000000000", *GEMM],
     "8,000,000,000 GPUs is more than a tpsim topology holds"),
    (lambda folder: ["schedule", "--algo", "1d", "--gpus", "1000000", *GEMM], "1,000,000 ranks is more than"),
    (lambda folder: ["topology", "show", "dgx-h100:1000000000"], "GPUs is more than a tpsim topology holds"),
]


@pytest.mark.parametrize("make_argv, message", SUBPROCESS_ROWS, ids=["dev-zero", "deep-json", "servers", "gpus",
                                                                    "topology"])
def test_refused_within_seconds_and_a_memory_limit(tmp_path, make_argv, message) -> None:
    argv = make_argv(tmp_path)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([sys.executable, "-m", "simulator.cli", *argv], capture_output=True, text=True,
                          preexec_fn=_limited, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)})
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    child_cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and len(done.stderr.splitlines()) == 1 and done.stdout == ""
    assert child_cpu_s < CHILD_CPU_S, f"the refusal used {child_cpu_s:.1f} s of CPU"


# -- the checks themselves ---------------------------------------------------------------------------------------

def test_a_yaml_alias_bomb_is_walked_once_per_container() -> None:
    """Nine levels of ten aliases each are 10^9 paths; the depth check visits each list once."""
    level: list = [1]
    for _ in range(9):
        level = [level] * 10
    began = time.process_time()  # CPU time: walking 10^9 paths would take hours of it, the 91 lists none
    check_json_depth(level, "bomb")
    assert time.process_time() - began < 1.0


def test_depth_is_counted_exactly() -> None:
    ok = json.dumps(_nest(MAX_JSON_DEPTH))
    assert loads_json(ok, "f") is not None
    with pytest.raises(InputError, match="f: nested deeper than 64 levels"):
        loads_json(json.dumps(_nest(MAX_JSON_DEPTH + 1)), "f")


def _nest(depth: int) -> list:
    value: list = []
    for _ in range(depth - 1):
        value = [value]
    return value


def test_a_fifo_nobody_writes_reads_as_empty(tmp_path) -> None:
    os.mkfifo(tmp_path / "p")
    assert read_bytes(tmp_path / "p", "schedule") == b""


def test_a_file_at_the_limit_is_read_and_one_byte_more_is_not(tmp_path) -> None:
    path = tmp_path / "f.txt"
    path.write_bytes(b"x" * 100)
    assert read_bytes(path, "log", limit=100) == b"x" * 100
    with pytest.raises(InputError, match="log .* is 100 bytes; tpsim reads at most 99 bytes from a log file"):
        read_bytes(path, "log", limit=99)


def test_available_memory_is_known_here() -> None:
    assert available_memory_bytes() > 0


def test_the_largest_workload_within_the_limits_is_accepted() -> None:
    """2^24 x 2^24 is exactly MAX_ELEMENTS: accepted (only a symbolic schedule is built)."""
    assert 2**24 * 2**24 == MAX_ELEMENTS
    Workload.gemm(2**24, 2**24, 8)
    with pytest.raises(InputError, match="elements is over"):
        Workload.gemm(2**24 + 1, 2**24, 8)


def test_run_memory_counts_buffers_and_the_reference() -> None:
    pytest.importorskip("torch")
    from executor.memory import check_run_memory, rank_bytes
    from executor.reference import peak_bytes

    schedule = build_schedule("1d", Workload.gemm(64, 32, 16), gpus=2)
    workload = Workload.gemm(64, 32, 16)
    needs = rank_bytes(schedule)
    for rank, need in enumerate(needs):
        buffers = sum(spec.nbytes for spec in schedule.buffers[rank].values())
        reference = max(peak_bytes(workload, b.tensor, b.rows, b.cols) for b in schedule.outputs if b.rank == rank)
        assert need == buffers + reference
    check_run_memory(schedule, "gloo")  # a few MiB: fits


def test_run_memory_refusal_names_the_need_and_the_memory(monkeypatch) -> None:
    pytest.importorskip("torch")
    from executor.memory import check_run_memory, rank_bytes

    schedule = build_schedule("1d", Workload.gemm(64, 32, 16), gpus=2)
    monkeypatch.setattr("simulator.limits.available_memory_bytes", lambda: sum(rank_bytes(schedule)) - 1)
    with pytest.raises(InputError, match=r"on 2 local ranks needs at least [0-9.]+ MiB \(the largest rank [0-9.]+ "
                                         r"MiB: .*\), more than the [0-9.]+ MiB of memory available here; run "
                                         r"smaller sizes"):
        check_run_memory(schedule, "gloo")
