"""Chakra trace files: one ``PREFIX.RANK.et`` per rank and the communicator-group JSON, written whole or not at all.

An ``.et`` file is what MLCommons' ``mlc-chakra`` package writes and reads: a ``GlobalMetadata``
message then one ``Node`` message per node, each prefixed by its length as a varint
(``chakra.src.third_party.utils.protolib.encodeMessage``), with the schema's own compiled classes
(``chakra.schema.protobuf.et_def_pb2``). Attribute value fields are the ones Chakra's feeder reads
each attribute from (``ATTR_FIELDS``). Durations are whole microseconds (``duration_micros``),
rounded to the nearest.

The communicator-group file (``COMM_GROUP_FILE``) maps each group id, as a string, to its global
ranks in group-local order: ASTRA-sim's ``--comm-group-configuration``.

Everything is written into a fresh temporary folder beside the target and renamed into place once
complete, so a failure leaves no half-written folder; an existing target is replaced only when asked.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from simulator.errors import InputError
from simulator.export.nodes import EtNode

__all__ = ["ATTR_FIELDS", "COMM_GROUP_FILE", "SCHEMA_VERSION", "check_target", "chakra_modules", "write_traces",
           "trace_path"]

ATTR_FIELDS = {"is_cpu_op": "bool_val", "num_ops": "int64_val", "tensor_size": "uint64_val",
               "comm_type": "int64_val", "comm_size": "int64_val", "pg_name": "string_val",
               "comm_src": "int32_val", "comm_dst": "int32_val", "comm_tag": "int32_val"}
"""Chakra attribute -> the ``AttributeProto`` field its feeder reads (chakra src/feeder et_feeder_node.cpp)."""

COMM_GROUP_FILE = "comm_group.json"
SCHEMA_VERSION = "1.0.0"
"""``GlobalMetadata.version``, as ``mlc-chakra`` 1.0.0's own generator writes it."""


def chakra_modules():
    """(``et_def_pb2``, ``protolib``) of the installed ``mlc-chakra``; InputError saying how to install it."""
    try:
        from chakra.schema.protobuf import et_def_pb2
        from chakra.src.third_party.utils import protolib
    except ImportError as error:
        raise InputError(f"writing Chakra traces needs the mlc-chakra package ({error}); install it with "
                         f"pip install 'tpsim[chakra]' (or pip install mlc-chakra)") from None
    return et_def_pb2, protolib


def trace_path(directory: str | Path, prefix: str, rank: int) -> Path:
    """Where rank ``rank``'s trace goes: ``DIR/PREFIX.RANK.et``, the name ASTRA-sim looks for."""
    return Path(directory) / f"{prefix}.{rank}.et"


def check_target(directory: str | Path, force: bool) -> None:
    """Refuse a target that is a file, or a folder with something in it unless ``force``."""
    path = Path(directory)
    if path.exists() and not path.is_dir():
        raise InputError(f"--chakra {directory}: is a file; name a folder (it is created)")
    if path.is_dir() and any(path.iterdir()) and not force:
        raise InputError(f"--chakra {directory}: folder is not empty; name a new or empty folder, or add "
                         f"--force to replace it")


def _proto_node(pb2, node: EtNode):
    proto = pb2.Node(id=node.id, name=node.name, type=pb2.NodeType.Value(node.type),
                     duration_micros=max(0, round(node.duration_s * 1e6)))
    proto.ctrl_deps.extend(node.ctrl_deps)
    proto.data_deps.extend(node.data_deps)
    for name, value in node.attrs.items():
        if name == "comm_type":
            value = pb2.CollectiveCommType.Value(value)
        proto.attr.append(pb2.AttributeProto(name=name, **{ATTR_FIELDS[name]: value}))
    return proto


def write_traces(graphs: list[list[EtNode]], groups: dict[int, tuple[int, ...]], directory: str | Path,
                 prefix: str = "tpsim", force: bool = False) -> list[Path]:
    """Write every rank's trace and the group file into ``directory``; return the trace paths."""
    pb2, protolib = chakra_modules()
    check_target(directory, force)
    target = Path(directory)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(staging, 0o777 & ~umask)  # mkdtemp's private 0700 would outlive the rename
    try:
        for rank, nodes in enumerate(graphs):
            with open(trace_path(staging, prefix, rank), "wb") as out:
                protolib.encodeMessage(out, pb2.GlobalMetadata(version=SCHEMA_VERSION))
                for node in nodes:
                    protolib.encodeMessage(out, _proto_node(pb2, node))
        with open(staging / COMM_GROUP_FILE, "w") as out:
            lines = [f"  {json.dumps(str(gid))}: {json.dumps(list(ranks))}" for gid, ranks in groups.items()]
            out.write("{\n" + ",\n".join(lines) + "\n}\n")
        _replace(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return [trace_path(target, prefix, rank) for rank in range(len(graphs))]


def _replace(staging: Path, target: Path) -> None:
    """Rename the complete ``staging`` folder to ``target``, moving an old one out of the way first."""
    if not target.exists():
        os.rename(staging, target)
        return
    old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old.", dir=target.parent))
    os.rename(target, old / "previous")
    try:
        os.rename(staging, target)
    except BaseException:
        os.rename(old / "previous", target)
        raise
    finally:
        shutil.rmtree(old, ignore_errors=True)
