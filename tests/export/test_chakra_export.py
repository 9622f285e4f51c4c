"""`tpsim export --chakra`: the traces, read back with Chakra's own reader, against the IR's accounting.

Without ``--lower-p2p`` every op but a wait is one node, in program order, so node i of a rank is its
i-th issued op: counts, sizes, FLOPs, groups and dependencies are checked op by op and summed against
``simulator.ir.accounting.account``; the durations against the compute model called directly.
"""

from __future__ import annotations

from collections import Counter

import pytest

from simulator.algorithms.registry import build_schedule
from simulator.compute import ComputeConfig, ComputeModel
from simulator.export.files import ATTR_FIELDS
from simulator.export.nodes import COMM_TYPES, roofline_bytes
from simulator.ir.accounting import account
from simulator.ir.ops import CommOp, Recv, Send, Wait
from tests.cli_run import run
from tests.export.chakra_reader import (CASES, ancestors, attrs, comm_groups, decode, decode_all, issued_ops,
                                        schedule_of, type_name, value)
from topologies import gpu_nodes, load_topology

TOPOLOGY = "dgx-h100"


def export(capsys, tmp_path, case: str, *extra: str):
    out = tmp_path / case
    status, stdout, stderr = run(capsys, "export", "--chakra", out, *CASES[case][0], "--topology", TOPOLOGY, *extra)
    assert status == 0, stderr
    return out, stdout


@pytest.mark.parametrize("case", ["1d", "2d", "summa25d", "cannon25d"])
def test_nodes_match_the_ir_op_by_op_and_the_accounting_in_total(capsys, tmp_path, case):
    out, stdout = export(capsys, tmp_path, case)
    schedule = schedule_of(case)
    graphs = decode_all(out, schedule.world_size)
    assert not (out / f"tpsim.{schedule.world_size}.et").exists()
    groups = comm_groups(out)
    assert groups == {str(i + 1): list(ranks) for i, ranks in enumerate(schedule.groups.values())}
    assert decode(out / "tpsim.0.et")[0].version == "1.0.0"
    for rank, (nodes, acct) in enumerate(zip(graphs, account(schedule))):
        ops = issued_ops(schedule, rank)
        assert [node.id for node in nodes] == list(range(len(ops)))
        flops = payload = p2p = 0
        by_kind = Counter()
        for node, (step, op) in zip(nodes, ops):
            for name, (field, _) in attrs(node).items():
                assert field == ATTR_FIELDS[name], (name, field)
            assert value(node, "is_cpu_op") is False
            if not isinstance(op, CommOp):
                assert type_name(node) == "COMP_NODE"
                assert value(node, "num_ops") == schedule.flops(rank, op)
                expected = roofline_bytes(schedule, rank, op) if schedule.flops(rank, op) else 0
                assert value(node, "tensor_size") == expected
                flops += value(node, "num_ops")
                continue
            size = value(node, "comm_size")
            assert size == schedule.payload_bytes(rank, op)
            payload += size
            if isinstance(op, (Send, Recv)):
                assert type_name(node) == ("COMM_SEND_NODE" if isinstance(op, Send) else "COMM_RECV_NODE")
                src, dst = (rank, op.peer) if isinstance(op, Send) else (op.peer, rank)
                assert (value(node, "comm_src"), value(node, "comm_dst")) == (src, dst)
                p2p += 1
                continue
            assert type_name(node) == "COMM_COLL_NODE"
            kind = value(node, "comm_type")
            assert kind == getattr(pytest.importorskip("chakra.schema.protobuf.et_def_pb2"), COMM_TYPES[op.kind])
            members = groups[value(node, "pg_name")]
            assert members == list(schedule.groups[op.group]) and rank in members
            by_kind[f"{op.kind}/{len(members)}"] += 1
        assert (flops, payload, p2p) == (acct.flops, acct.payload_bytes, acct.p2p_messages)
        assert by_kind == acct.collectives_by_kind and sum(by_kind.values()) == acct.collectives
    assert f"wrote {schedule.world_size} Chakra traces" in stdout


@pytest.mark.parametrize("case", ["1d", "2d", "summa25d", "cannon25d"])
def test_dependencies_keep_program_order_and_reads_after_writes(capsys, tmp_path, case):
    out, _ = export(capsys, tmp_path, case)
    schedule = schedule_of(case)
    for rank, nodes in enumerate(decode_all(out, schedule.world_size)):
        for node in nodes:
            assert all(dep < node.id for dep in node.data_deps), "ids are not topological"
            assert set(node.ctrl_deps) <= set(node.data_deps)
        before = ancestors(nodes)
        ops = issued_ops(schedule, rank)
        node_of = {step: i for i, (step, _) in enumerate(ops)}
        last_writer: dict[str, int] = {}
        blocking_before: list[int] = []
        for i, (step, op) in enumerate(ops):
            for buf in op.reads():  # a data edge straight to the last writer, not only through the order
                if buf in last_writer:
                    assert last_writer[buf] in nodes[i].data_deps, f"rank {rank} step {step}: no edge for {buf}"
            assert set(blocking_before) <= before[i], f"rank {rank} step {step} runs ahead of a blocking op"
            for buf in op.writes():
                last_writer[buf] = i
            if not (isinstance(op, CommOp) and op.handle is not None):
                blocking_before.append(i)
        program = schedule.programs[rank]
        for wait_step, op in enumerate(program):  # an async op is complete before anything after its wait
            if isinstance(op, Wait):
                issued = next(s for s in range(wait_step) if getattr(program[s], "handle", None) == op.handle)
                for later in range(wait_step + 1, len(program)):
                    if later in node_of:
                        assert node_of[issued] in before[node_of[later]]


def test_asynchronous_broadcasts_overlap_the_compute_before_their_wait(capsys, tmp_path):
    out, _ = export(capsys, tmp_path, "2d", "--overlap")
    algo, workload, grid, _ = CASES["2d"][1]
    schedule = build_schedule(algo, workload, "both", "bfloat16", grid=grid, overlap=True)
    overlapped = 0
    for rank, nodes in enumerate(decode_all(out, schedule.world_size)):
        before = ancestors(nodes)
        ops = issued_ops(schedule, rank)
        for i, (_, op) in enumerate(ops):
            if isinstance(op, CommOp) and op.handle is not None:
                overlapped += sum(1 for j in range(i + 1, len(ops))
                                  if not isinstance(ops[j][1], CommOp) and i not in before[j])
    assert overlapped > 0


def test_sends_and_receives_pair_by_source_destination_and_tag(capsys, tmp_path):
    out, _ = export(capsys, tmp_path, "cannon25d")
    schedule = schedule_of("cannon25d")
    sends, recvs = Counter(), Counter()
    for rank, nodes in enumerate(decode_all(out, schedule.world_size)):
        for node in nodes:
            if type_name(node) in ("COMM_SEND_NODE", "COMM_RECV_NODE"):
                key = (value(node, "comm_src"), value(node, "comm_dst"), value(node, "comm_tag"),
                       value(node, "comm_size"))
                (sends if type_name(node) == "COMM_SEND_NODE" else recvs)[key] += 1
                assert rank == key[0 if type_name(node) == "COMM_SEND_NODE" else 1]
    assert sends and sends == recvs and set(sends.values()) == {1}


def test_compute_nodes_carry_the_compute_model_duration(capsys, tmp_path):
    out, stdout = export(capsys, tmp_path, "2d")
    schedule = schedule_of("2d")
    G = load_topology(TOPOLOGY)
    model = ComputeModel(ComputeConfig.from_sim(G.graph.get("sim")))
    gpus = gpu_nodes(G)
    timed = 0
    for rank, nodes in enumerate(decode_all(out, schedule.world_size)):
        program = schedule.programs[rank]
        for node, (step, op) in zip(nodes, issued_ops(schedule, rank)):
            if isinstance(op, CommOp):
                assert node.duration_micros >= 1  # 2 MB broadcasts and reduces: microseconds on NVLink
                continue
            after_comm = step > 0 and (isinstance(program[step - 1], (CommOp, Wait)))
            seconds = model.op_time_s(schedule, rank, op, G.nodes[gpus[rank]]["device"], after_comm)
            assert node.duration_micros == round(seconds * 1e6)
            timed += seconds > 1e-6
    assert timed > 0
    assert f"on {TOPOLOGY} (the durations the nodes carry)" in stdout
