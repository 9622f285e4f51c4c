"""One measured step's ``tpsim predict`` line, timed in-process on the base topology at any ``gemm_efficiency``.

``timed_entry(entry, base, base_spec, calibration)`` parses the entry's ``predict`` string with `tpsim
predict`'s own parser and checks (``simulator.commands.predict``), resolves the graph it runs on, and
returns a ``TimedEntry`` whose ``step_s(efficiency)`` is the step time the whole-model plan predicts
with ``sim.gemm_efficiency`` set to ``efficiency`` (None: the base topology as it is).

The graph: the base topology (``--topology BASE``, with ``--calibration``), since the fit is per device.
The entry's own ``--topology`` may be left out; where given it must hold the same GPU as the base (else one
error line), and a server count given as ``NAME:N`` rebuilds the base at N servers (``BASE:N``: a preset's
family, or a calibrated topology file, ``topologies.loader``); without one the base is used as given.

What the line must be: a training step (``--global-batch``) whose plan leaves exactly one arrangement (pin
``--tp-sizes``, ``--pp-sizes``, ``--algos``); what it leaves open inside that row (the micro-batch, the
ZeRO stage, recomputation, the pipeline schedule) is searched at each efficiency as `tpsim predict`
searches it, and ``open_settings`` names it. Options that write files or calibrate (``--csv``, ``--png``,
``--trace``, ``--calibration``) are refused. Every problem is one ``InputError`` naming the file and entry.
"""

from __future__ import annotations

import argparse
import copy
import shlex

import networkx as nx

from simulator.calibrate.steps_file import StepEntry
from simulator.compute import FP8, ComputeConfig, ComputeModel
from simulator.errors import InputError
from topologies import gpu_nodes, load_topology

__all__ = ["TimedEntry", "timed_entry", "parse_predict", "device_name"]


_UNSET = "\0unset"
"""``--topology`` of an entry that gives none (no topology spec can hold a NUL)."""


class _EntryParser(argparse.ArgumentParser):
    """`tpsim predict`'s parser, raising instead of exiting: the message goes into the entry's error line."""

    def error(self, message: str) -> None:  # noqa: D102 - argparse API
        raise InputError(message)


def parse_predict(text: str, where: str) -> argparse.Namespace:
    """``text`` parsed as the arguments of `tpsim predict`; InputError naming ``where`` if it does not parse."""
    from simulator.commands import predict

    try:
        tokens = shlex.split(text)
    except ValueError as error:
        raise InputError(f"{where}: predict {text!r} does not parse ({error})") from None
    if tokens and tokens[0] in ("predict", "tpsim"):
        tokens = tokens[1 + (tokens[:2] == ["tpsim", "predict"]):]  # a copied command line
    if any(t in ("-h", "--help") for t in tokens):
        raise InputError(f"{where}: predict: --help has no place in a steps file")
    top = _EntryParser(prog="tpsim", add_help=False)
    predict.register(top.add_subparsers(dest="command", parser_class=_EntryParser))
    try:  # predict requires --topology; the entry may leave it out: a later one given replaces this
        args = top.parse_args(["predict", "--topology", _UNSET, *tokens])
    except InputError as error:
        raise InputError(f"{where}: predict: {error}") from None
    if args.topology == _UNSET:
        args.topology = None
    for option, value in (("--calibration", args.calibration), ("--csv", args.csv), ("--png", args.png),
                          ("--trace", args.trace)):
        if value is not None:
            raise InputError(f"{where}: predict: {option} has no place in a steps file (entries are timed on "
                             f"--topology BASE; give --calibration to tpsim calibrate)")
    if args.global_batch is None:
        raise InputError(f"{where}: predict: a measured step is a training step: give --global-batch G (and the "
                         f"arrangement it ran: --tp-sizes, --pp-sizes, --algos, --batch)")
    return args


def device_name(G: nx.DiGraph) -> str:
    """The name of the device of ``G``'s first GPU."""
    return str(G.nodes[gpu_nodes(G)[0]]["device"].get("name", "?"))


def _graph(args, base: nx.DiGraph, base_spec: str, calibration: str | None, where: str) -> nx.DiGraph:
    """The graph the entry runs on (module doc)."""
    if args.topology is None:
        args.topology = base_spec
        return base
    try:
        own = load_topology(args.topology)
    except InputError as error:
        raise InputError(f"{where}: predict --topology {args.topology}: {error}") from None
    if device_name(own) != device_name(base):
        raise InputError(f"{where}: predict --topology {args.topology} has {device_name(own)} GPUs, but --topology "
                         f"{base_spec} has {device_name(base)}: a calibration fits one device; calibrate each on "
                         f"its own")
    _, colon, size = args.topology.rpartition(":")
    if not colon or not size.isdigit():
        args.topology = base_spec
        return base
    root = base_spec if ":" not in base_spec or base_spec.lower().endswith((".yaml", ".yml", ".json")) \
        else base_spec.rpartition(":")[0]
    try:
        G = load_topology(f"{root}:{size}", calibration)
    except InputError as error:
        raise InputError(f"{where}: predict --topology {args.topology}: cannot rebuild --topology {base_spec} at "
                         f"{size} servers ({error})") from None
    args.topology = f"{root}:{size}"
    return G


class TimedEntry:
    """An entry ready to time: its parsed line, its graph, its measured step (module doc)."""

    def __init__(self, entry: StepEntry, args: argparse.Namespace, graph: nx.DiGraph, prepared: tuple):
        self.entry, self.args, self.graph = entry, args, graph
        self._prepared = prepared  # (workload, micro_batch, algorithms, placements, overrides)
        self._memo: dict = {}
        workload = prepared[0]
        self.measured_s = entry.step_s(args.gpus, args.global_batch * workload.seq)
        self.arrangement = ""
        self.open_settings: tuple[str, ...] = tuple(
            name for name, value in (("micro-batch", prepared[1]), ("ZeRO stage", args.zero),
                                     ("recompute", args.recompute)) if value is None)

    def rows(self, efficiency: float | None) -> list:
        """The plan's listed (not skipped) rows with ``sim.gemm_efficiency = efficiency`` (None: as given)."""
        from simulator.commands.predict_training import plan_rows

        G = self.graph.copy()
        sim = dict(G.graph.get("sim") or {})
        if efficiency is not None:
            sim["gemm_efficiency"] = efficiency
        G.graph["sim"] = sim
        workload, micro_batch, algorithms, placements, overrides = self._prepared
        rows, *_ = plan_rows(copy.copy(self.args), G, workload, micro_batch, algorithms, placements, overrides,
                             show_progress=False)
        return rows

    def step_s(self, efficiency: float | None) -> float:
        """The predicted step time, seconds, at ``efficiency`` (remembered: the fit asks again)."""
        if efficiency not in self._memo:
            listed = [r for r in self.rows(efficiency) if not r.skipped]
            self._memo[efficiency] = listed[0].best.step_s
        return self._memo[efficiency]

    def base_cap(self) -> float:
        """The cap the base topology's compute model gives this entry's GEMMs (``simulator.compute``)."""
        sim = self.graph.graph.get("sim") or {}
        dtype = FP8 if sim.get("fp8_gemms") else self.args.dtype
        return ComputeModel(ComputeConfig.from_sim(sim)).cap(self.graph.nodes[gpu_nodes(self.graph)[0]]["device"],
                                                             dtype)


def timed_entry(entry: StepEntry, base: nx.DiGraph, base_spec: str, calibration: str | None) -> TimedEntry:
    """``entry`` parsed, checked and placed on its graph; InputError naming ``entry.where`` for any problem,
    including a plan that leaves no arrangement or more than one."""
    from simulator.commands.predict import algorithms_of, checked_arguments, on_topology, placements_of

    where = entry.where
    args = parse_predict(entry.predict, where)
    try:
        overrides, workload, micro_batch, passes_given = checked_arguments(args)
        G = on_topology(args, _graph(args, base, base_spec, calibration, where))
        args.passes = passes_given
        prepared = (workload, micro_batch, algorithms_of(args.algos), placements_of(args.placement), overrides)
        timed = TimedEntry(entry, args, G, prepared)
        rows = timed.rows(None)
    except InputError as error:
        message = str(error)
        raise InputError(message if message.startswith(where) else f"{where}: predict: {message}") from None
    listed = [r for r in rows if not r.skipped]
    if not listed:
        reasons = "; ".join(f"{r.arrangement.label}: {r.skipped}" for r in rows[:2]) or "no arrangement"
        raise InputError(f"{where}: predict leaves no arrangement to time ({reasons})")
    if len(listed) > 1:
        labels = ", ".join(r.arrangement.label for r in listed[:3]) + (", ..." if len(listed) > 3 else "")
        raise InputError(f"{where}: predict leaves {len(listed)} arrangements ({labels}); pin the one measured "
                         f"with --tp-sizes, --pp-sizes and --algos")
    timed.arrangement = listed[0].arrangement.label
    timed._memo[None] = listed[0].best.step_s
    return timed
