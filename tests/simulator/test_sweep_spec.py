"""`tpsim sweep` specs: the Cartesian product, the hash, and every bad spec refused in one line before any work."""

from __future__ import annotations

import pytest

from simulator.errors import InputError
from simulator.sweep.spec import parse_spec
from tests.cli_run import run

GOOD = """\
axes:
  topology: [dgx-a100:1, dgx-a100:2]
  global-batch: [8, 16]
fixed:
  model: gpt3-125m
  simulate_top: 1
"""


def test_the_plans_are_the_cartesian_product_last_axis_fastest_with_gpus_from_the_topology(tmp_path, capsys):
    spec = tmp_path / "s.yaml"
    spec.write_text(GOOD)
    status, out, err = run(capsys, "sweep", spec, "--dry-run")
    assert (status, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == f"tpsim sweep: 4 plans (2 topology x 2 global-batch), spec {parse_spec(GOOD, 's').digest}"
    tail = "--model gpt3-125m --simulate-top 1"
    assert lines[1:] == [
        f"     0  tpsim predict --topology dgx-a100:1 --global-batch 8 --gpus 8 {tail}",
        f"     1  tpsim predict --topology dgx-a100:1 --global-batch 16 --gpus 8 {tail}",
        f"     2  tpsim predict --topology dgx-a100:2 --global-batch 8 --gpus 16 {tail}",
        f"     3  tpsim predict --topology dgx-a100:2 --global-batch 16 --gpus 16 {tail}",
    ]
    assert not (tmp_path / "s.csv").exists()


def test_the_hash_follows_the_values_not_the_layout():
    same = "# a comment\naxes: {topology: [dgx-a100:1, dgx-a100:2], global_batch: [8, 16]}\n" \
           "fixed: {model: gpt3-125m, simulate-top: 1}\n"
    assert parse_spec(same, "s").digest == parse_spec(GOOD, "s").digest
    assert parse_spec(GOOD.replace("16]", "32]"), "s").digest != parse_spec(GOOD, "s").digest
    assert parse_spec(GOOD, "s").size == 4


def test_a_repeatable_option_and_a_flag_become_their_arguments(tmp_path, capsys):
    spec = tmp_path / "s.yaml"
    spec.write_text("axes:\n  overlap: [false, true]\nfixed:\n  topology: dgx-a100:1\n  global-batch: 8\n"
                    "  model: gpt3-125m\n  algo-override: [all_reduce=ring, broadcast=tree]\n")
    status, out, _ = run(capsys, "sweep", spec, "--dry-run")
    assert status == 0
    args = "--algo-override all_reduce=ring --algo-override broadcast=tree"
    assert out.splitlines()[1:] == [
        f"     0  tpsim predict --gpus 8 --topology dgx-a100:1 --global-batch 8 --model gpt3-125m {args}",
        f"     1  tpsim predict --overlap --gpus 8 --topology dgx-a100:1 --global-batch 8 --model gpt3-125m {args}",
    ]


BAD = [
    ("axes: [1, 2]\n", "axes is a mapping of option -> list of values"),
    ("axes:\n  topology: [dgx-a100:1\n", "bad YAML at line"),
    ("sweeps: {}\n", "unknown key 'sweeps' at the top; valid: axes, fixed"),
    ("axes:\n  global-batch: []\nfixed:\n  topology: dgx-a100:1\n", "global-batch: the axis is empty"),
    ("axes:\n  global-batch: 8\nfixed:\n  topology: dgx-a100:1\n", "an axis is a list of values"),
    ("axes:\n  global-batch: [8, 8]\nfixed:\n  topology: dgx-a100:1\n", "8 is listed twice"),
    ("fixed:\n  topology: dgx-a100:1\n  model: gpt3-125m\n", "global-batch is required"),
    ("axes:\n  global-batch: [8]\n  topology: [dgx-a100:1]\nfixed:\n  global_batch: 16\n",
     "global-batch is given twice (axes and fixed)"),
    ("axes:\n  global-bacth: [8]\nfixed:\n  topology: dgx-a100:1\n",
     "unknown key 'global-bacth' (did you mean global-batch?): not a `tpsim predict` option"),
    ("axes:\n  workers: [2]\n  global-batch: [8]\nfixed:\n  topology: dgx-a100:1\n",
     "unknown key 'workers': the sweep sets it"),
    ("axes:\n  zero: [0, x]\n  global-batch: [8]\nfixed:\n  topology: dgx-a100:1\n",
     "zero 'x': argument --zero: invalid int value: 'x'"),
    ("axes:\n  zero: [0, 7]\n  global-batch: [8]\nfixed:\n  topology: dgx-a100:1\n",
     "zero 7: --zero 7: ZeRO stages are 0, 1, 2, 3"),
    ("axes:\n  dtype: [int4]\n  global-batch: [8]\nfixed:\n  topology: dgx-a100:1\n",
     "dtype 'int4': argument --dtype: invalid choice: 'int4'"),
    ("axes:\n  model: [gpt3-125m, gpt9]\n  global-batch: [8]\nfixed:\n  topology: dgx-a100:1\n",
     "model 'gpt9': unknown model 'gpt9'"),
    ("axes:\n  topology: [dgx-a100:1, dgx-z100:2]\n  global-batch: [8]\n", "topology 'dgx-z100:2': "),
    ("axes:\n  global-batch: [8, 0]\nfixed:\n  topology: dgx-a100:1\n",
     "global-batch 0: --global-batch 0: must be an integer from 1 to 1,048,576"),
    ("axes:\n  global-batch: [8]\n  overlap: [yes-please]\nfixed:\n  topology: dgx-a100:1\n",
     "overlap 'yes-please': --overlap is a flag; give true or false"),
    ("axes:\n  global-batch: [8]\n  algos: [1d, 4d]\nfixed:\n  topology: dgx-a100:1\n",
     "algos '4d': --algos '4d': unknown algorithm '4d'"),
    ("axes:\n  global-batch: [8]\nfixed:\n  topology: dgx-a100:1\n  simulate-top: -1\n",
     "simulate-top -1: --simulate-top -1: must be >= 0"),
]


@pytest.mark.parametrize("text, message", BAD, ids=[m.split(":")[0][:30] for _, m in BAD])
def test_a_bad_spec_is_one_line_and_exit_2_before_any_work(tmp_path, capsys, text, message):
    spec = tmp_path / "bad.yaml"
    spec.write_text(text)
    status, out, err = run(capsys, "sweep", spec, "--out", tmp_path / "rows.csv")
    assert (status, out) == (2, "")
    assert len(err.splitlines()) == 1 and err.startswith(f"tpsim sweep: error: {spec}") and message in err, err
    assert not (tmp_path / "rows.csv").exists()


@pytest.mark.parametrize("argv, message", [
    (("--out", "rows.txt"), "--out rows.txt: write a .csv or a .parquet file"),
    (("--workers", "0"), "--workers must be 1..256 (processes), got 0"),
    (("--resume",), "--resume: "),
    (("--ray",), "--ray: sweeps run on Dask distributed, not Ray: --dask [ADDRESS]"),
])
def test_bad_options_are_one_line(tmp_path, capsys, argv, message):
    spec = tmp_path / "s.yaml"
    spec.write_text(GOOD)
    status, out, err = run(capsys, "sweep", spec, *argv)
    assert (status, out, len(err.splitlines())) == (2, "", 1) and message in err, err


def test_a_yaml_alias_bomb_is_refused_in_one_short_line():
    # Anchors under fixed, the bomb (10^9 leaves if expanded) as an axis value: the YAML reader refuses the
    # first anchor before anything is expanded.
    text = "fixed:\n  l0: &l0 [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]\n" + "".join(
        f"  l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]\n" for i in range(1, 10)) + "axes:\n  model: [*l9]\n"
    with pytest.raises(InputError, match=r"^b\.yaml: bad YAML at line 2: an anchor \(&l0\); tpsim reads YAML without "
                                         r"anchors and aliases") as error:
        parse_spec(text, "b.yaml")
    assert len(str(error.value)) < 300


def test_parse_spec_names_the_file():
    with pytest.raises(InputError, match=r"^my\.yaml: a sweep spec is a mapping"):
        parse_spec("- 1\n", "my.yaml")
