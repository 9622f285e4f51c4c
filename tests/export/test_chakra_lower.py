"""`tpsim export --chakra --lower-p2p`: broadcasts and reduces as send/recv chains, read back with Chakra's reader.

Held to the IR: no broadcast or reduce node is left, the other collectives are untouched, every send
meets exactly one receive (source, destination, tag, size), and each rank moves the bytes the
collective's accounting gives it: every member but the chain's first receives the payload S once,
every member but its last sends it once ((n-1) S on the wire per collective, NCCL's busbw factor 1),
cut into ``--chunks`` messages per hop. The traces must also replay to the end when every send waits
for its receive (no deadlock).
"""

from __future__ import annotations

from collections import Counter

import pytest

from simulator.algorithms.registry import build_schedule
from simulator.ir.accounting import account
from simulator.ir.ops import Broadcast, CommOp, Recv, Reduce, Send
from simulator.workloads.workload import Workload
from tests.cli_run import run
from tests.export.chakra_reader import (CASES, ancestors, comm_groups, decode_all, replay_finishes, schedule_of,
                                        type_name, value)

TOPOLOGY = "dgx-h100"


def export(capsys, tmp_path, case: str, *extra: str):
    out = tmp_path / f"{case}{''.join(extra)}"
    status, stdout, stderr = run(capsys, "export", "--chakra", out, *CASES[case][0], "--topology", TOPOLOGY, *extra)
    assert status == 0, stderr
    return out, stdout


def chain_roles(schedule, rank: int, op) -> tuple[bool, bool]:
    """(receives, sends) of ``rank`` in the chain of ``op``: a broadcast flows from the root, so the root
    only sends and the member before it only receives; a reduce flows to the root, so the root only
    receives and the member after it only sends."""
    members = schedule.groups[op.group]
    n, root = len(members), op.root
    if isinstance(op, Broadcast):
        return rank != members[root], rank != members[(root - 1) % n]
    return rank != members[(root + 1) % n], rank != members[root]


@pytest.mark.parametrize("case", ["2d", "summa25d", "cannon25d"])
@pytest.mark.parametrize("chunks", [1, 3])
def test_chains_move_each_rank_the_bytes_of_its_collectives(capsys, tmp_path, case, chunks):
    extra = ("--lower-p2p",) + (("--chunks", str(chunks)) if chunks > 1 else ())
    out, stdout = export(capsys, tmp_path, case, *extra)
    schedule = schedule_of(case)
    graphs = decode_all(out, schedule.world_size)
    sends, recvs = Counter(), Counter()
    expected_wire = 0
    for rank, (nodes, acct) in enumerate(zip(graphs, account(schedule))):
        want_recv = want_send = 0
        want_nodes = 0
        other = Counter()
        for op in schedule.programs[rank]:
            if isinstance(op, (Broadcast, Reduce)):
                size = schedule.payload_bytes(rank, op)
                receives, sends_ = chain_roles(schedule, rank, op)
                want_recv += receives * size
                want_send += sends_ * size
                want_nodes += chunks * (receives + sends_)
                members = schedule.groups[op.group]
                expected_wire += (len(members) - 1) * size if rank == members[0] else 0
            elif isinstance(op, Recv):
                want_recv += schedule.payload_bytes(rank, op)
                want_nodes += 1
            elif isinstance(op, Send):
                want_send += schedule.payload_bytes(rank, op)
                want_nodes += 1
            elif isinstance(op, CommOp):
                other[f"{op.kind}/{len(schedule.groups[op.group])}"] += 1
        kinds = Counter(type_name(node) for node in nodes)
        assert kinds["COMM_SEND_NODE"] + kinds["COMM_RECV_NODE"] == want_nodes
        assert kinds["COMP_NODE"] == sum(not isinstance(op, CommOp) for op in schedule.programs[rank]
                                         if op.kind != "wait")
        colls = Counter()
        for node in nodes:
            kind = type_name(node)
            if kind == "COMM_COLL_NODE":
                colls[value(node, "comm_type")] += 1
            elif kind in ("COMM_SEND_NODE", "COMM_RECV_NODE"):
                key = (value(node, "comm_src"), value(node, "comm_dst"), value(node, "comm_tag"),
                       value(node, "comm_size"))
                (sends if kind == "COMM_SEND_NODE" else recvs)[key] += 1
        assert sum(colls.values()) == sum(other.values())
        assert sum(size for (src, _, _, size) in sends if src == rank) == want_send
        assert sum(size for (_, dst, _, size) in recvs if dst == rank) == want_recv
        lowered = acct.collectives_by_kind - Counter({k: v for k, v in acct.collectives_by_kind.items()
                                                      if not k.startswith(("broadcast/", "reduce/"))})
        assert sum(lowered.values()) + sum(other.values()) == acct.collectives
    assert sends == recvs and set(sends.values()) == {1}
    ir_sends = sum(schedule.payload_bytes(r, op) for r, program in enumerate(schedule.programs)
                   for op in program if isinstance(op, Send))
    assert sum(size for (_, _, _, size) in sends) == expected_wire + ir_sends
    assert replay_finishes(graphs, comm_groups(out))
    assert "broadcasts and reduces as send/recv chains" in stdout


def test_a_chain_forwards_each_chunk_only_after_receiving_it(capsys, tmp_path):
    out = tmp_path / "q3"  # 3-member groups: the middle member both receives and sends
    status, _, err = run(capsys, "export", "--chakra", out, "--algo", "2d", "--grid", "3,3,1", "--workload", "gemm",
                         "--m", "384", "--k", "384", "--n", "384", "--topology", "dgx-h100:2", "--lower-p2p",
                         "--chunks", "2")
    assert status == 0, err
    schedule = build_schedule("2d", Workload.gemm(384, 384, 384), "both", "bfloat16", grid=(3, 3, 1))
    checked = Counter()
    graphs = decode_all(out, 9)
    for rank, nodes in enumerate(graphs):
        for node in nodes:  # data flows away from a broadcast's root and into a reduce's
            if " chunk " in node.name:
                group, root = node.name.split()[1].split("@")
                if schedule.groups[group][int(root)] == rank:
                    assert type_name(node) == ("COMM_SEND_NODE" if node.name.startswith("bc") else "COMM_RECV_NODE")
        before = ancestors(nodes)
        last_recv: dict[str, int] = {}
        for node in nodes:
            if " chunk " not in node.name:
                continue
            label = node.name.rsplit(" ", 1)[0]  # "rd col_i0_k0@0 dB_part>~ chunk 1/2"
            if type_name(node) == "COMM_RECV_NODE":
                last_recv[label] = node.id
            elif label in last_recv:
                assert last_recv[label] in before[node.id]
                checked[node.name[:2]] += 1
    assert checked["rd"] > 0 and checked["bc"] > 0
    assert replay_finishes(graphs, comm_groups(out))


@pytest.mark.parametrize("case", ["1d", "summa25d", "cannon25d"])
def test_unlowered_traces_replay_to_the_end_too(capsys, tmp_path, case):
    out, _ = export(capsys, tmp_path, case)
    schedule = schedule_of(case)
    assert replay_finishes(decode_all(out, schedule.world_size), comm_groups(out))


def test_lowering_leaves_a_schedule_without_broadcasts_or_reduces_alone(capsys, tmp_path):
    plain, _ = export(capsys, tmp_path, "1d")
    lowered, _ = export(capsys, tmp_path, "1d", "--lower-p2p")
    for rank in range(4):
        assert (plain / f"tpsim.{rank}.et").read_bytes() == (lowered / f"tpsim.{rank}.et").read_bytes()
