"""Placement: linear by default, named grid-aware orders, permutation files, and clear errors."""

import json

import pytest

from topologies import PLACEMENTS, TopologyError, load_topology, resolve_placement
from topologies.builders import nvswitch_node

G8 = nvswitch_node(8)


def server_of(G, gpu):
    return G.nodes[gpu]["server"]


def test_default_and_linear_put_rank_r_on_gpu_r():
    assert resolve_placement(None, G8, 8, None) == [f"gpu{r}" for r in range(8)]
    assert resolve_placement("linear", G8, 3, None) == ["gpu0", "gpu1", "gpu2"]


def test_named_placements_follow_the_rank_formula():
    q, d = 2, 2
    depth = resolve_placement("depth-major", G8, 8, (q, q, d))
    column = resolve_placement("column-major", G8, 8, (q, q, d))
    for k in range(d):
        for j in range(q):
            for i in range(q):
                r = k * q * q + j * q + i
                assert depth[r] == f"gpu{(j * q + i) * d + k}"
                assert column[r] == f"gpu{k * q * q + i * q + j}"
    assert set(PLACEMENTS) == {"linear", "depth-major", "column-major"}


def test_depth_major_keeps_depth_groups_inside_4_gpu_servers():
    G = load_topology("a100-4gpu:16")  # 64 GPUs, 4 per server
    q, d = 4, 4
    linear = resolve_placement("linear", G, 64, (q, q, d))
    depth = resolve_placement("depth-major", G, 64, (q, q, d))
    for j in range(q):
        for i in range(q):
            group = [k * q * q + j * q + i for k in range(d)]
            assert len({server_of(G, depth[r]) for r in group}) == 1
            assert len({server_of(G, linear[r]) for r in group}) == d
    # Under linear placement every row group is inside one server instead.
    assert all(len({server_of(G, linear[k * 16 + j * 4 + i]) for i in range(4)}) == 1
               for k in range(4) for j in range(4))


def test_permutation_files_json_and_text(tmp_path):
    json_file = tmp_path / "p.json"
    json_file.write_text(json.dumps([3, 2, 1, 0]))
    text_file = tmp_path / "p.txt"
    text_file.write_text("# reversed pairs\n1, 0\n3 2\n")
    assert resolve_placement(str(json_file), G8, 4, None) == ["gpu3", "gpu2", "gpu1", "gpu0"]
    assert resolve_placement(str(text_file), G8, 4, None) == ["gpu1", "gpu0", "gpu3", "gpu2"]


@pytest.mark.parametrize(
    "content, world, match",
    [("[0, 1, 1, 2]", 4, "GPU 1 is given to ranks 1 and 2"),
     ("[0, 9]", 2, r"rank 1 -> GPU 9 is out of range 0..7"),
     ("[0, -1]", 2, r"rank 1 -> GPU -1 is out of range"),
     ("[0, 1, 2]", 4, "lists 3 GPUs for world size 4"),
     ("0 one", 2, "entry 2 must be a GPU index, got 'one'"),
     ("[1.5, 0]", 2, "entry 1 must be a GPU index, got 1.5"),
     ("# first line\n0\n1\ntrue", 3, "entry 3 must be a GPU index, got 'true'"),
     ("[0, 1", 2, "bad JSON at line 1")],
)
def test_bad_permutation_files(tmp_path, content, world, match):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(TopologyError, match=match):
        resolve_placement(str(path), G8, world, None)


@pytest.mark.parametrize(
    "spec, world, grid, match",
    [("linear", 16, None, "world size 16 needs 16 GPUs, the topology has 8"),
     ("depth-major", 8, None, "depth-major needs a grid"),
     ("depth-major", 8, (2, 2, 3), r"grid \[2,2,3\] has q\*q\*d = 12 ranks, world size is 8"),
     ("column-major", 8, (2, 4, 1), "equal first two factors"),
     ("zigzag", 8, None, 'unknown placement "zigzag", known: linear, depth-major, column-major'),
     ("missing.json", 8, None, "placement file missing.json: No such file"),
     ("linear", 0, None, "world size must be a positive integer")],
)
def test_placement_errors_name_the_problem(spec, world, grid, match):
    with pytest.raises(TopologyError, match=match):
        resolve_placement(spec, G8, world, grid)
