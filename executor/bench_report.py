"""The bench record (``tpsim-bench`` JSON) and its nccl-tests-style tables, from the gathered times.

Record (``format: "tpsim-bench"``, ``version: 1``)::

    backend, nproc, dtype, warmup, iters, groups     how it was measured ("groups": "all" or "one")
    host {hostname, platform, processor, cpu_count, python, torch, cuda, devices,
          load_average_before, load_average_after}   where (1/5/15-minute load averages, os.getloadavg)
    rows [...]                                       one per measurement, in the order they ran:

    collective / send:  op, ranks (group size), groups (groups at once), bytes (nccl-tests S),
                        count (elements in S), dtype, redop ("sum" or "none"), root (group-local, -1
                        none), in_place, time_s (mean over participating ranks of seconds per op,
                        nccl-tests' default -a 1), time_min_s, time_max_s (over those ranks),
                        algbw_GBps (S / time_s), busbw_GBps (algbw x nccl-tests' factor),
                        form ("lock-step", nccl-tests' back-to-back ops, or "interleaved": a gemm
                        before each op, ``executor.bench_cases``), between ([m, k, n] of that gemm;
                        null when lock-step)
    gemm:               op, m, k, n, dtype, concurrent (ranks running it at once), time_s (mean over
                        those ranks of seconds per gemm; on CPU with concurrent > 1, per lock-step
                        phase: one gemm on every rank, then a barrier, less the barrier's own time,
                        at least the rank's back-to-back gemm),
                        time_min_s, time_max_s, flops (2mkn), gflops_per_s (per rank: flops / time_s / 1e9),
                        form ("lock-step"; "interleaved" for the gemm of an interleaved case, timed on
                        its own, with concurrent = the ranks that took part and between_op
                        {op, ranks, bytes}: what ran between the gemms)

S is the buffer of broadcast / reduce / all_reduce, the output of all_gather, the input of
reduce_scatter, the message of send (one exchange: each side sends S and receives S).
"""

from __future__ import annotations

import os
import platform
import socket
import statistics

from simulator.collectives.closed_form import algbw_GBps, busbw_GBps

__all__ = ["FORMAT", "VERSION", "bench_rows", "bench_record", "host_info", "tables"]

FORMAT = "tpsim-bench"
VERSION = 1

_REDOP = {"reduce": "sum", "all_reduce": "sum", "reduce_scatter": "sum"}
_TYPE = {"float32": "float", "float64": "double", "bfloat16": "bfloat16", "float16": "half"}  # nccl-tests names


def _spread(seen: list[float]) -> dict:
    return {"time_s": statistics.fmean(seen), "time_min_s": min(seen), "time_max_s": max(seen)}


def _gemm_row(m: int, k: int, n: int, dtype: str, concurrent: int, seen: list[float], **extra) -> dict:
    flops = 2 * m * k * n
    spread = _spread(seen)
    return {"op": "gemm", "m": m, "k": k, "n": n, "dtype": dtype, "concurrent": concurrent, **spread,
            "flops": flops, "gflops_per_s": flops / spread["time_s"] / 1e9 if spread["time_s"] > 0 else None, **extra}


def bench_rows(cases, times: list[list]) -> list[dict]:
    """One row per case from ``times[case][rank]`` (seconds per op; None for ranks that took no part);
    an interleaved case (``{"op_s", "gemm_s"}`` per rank) gives its op's row and then its gemm's."""
    rows = []
    for case, per_rank in zip(cases, times):
        bench = case.options["bench"]
        seen = [t for t in per_rank if t is not None]
        if not seen:
            raise ValueError(f"bench case {case.algorithm}: no rank reported a time")
        form = bench.get("form", "lock-step")
        if bench["op"] == "gemm":
            rows.append(_gemm_row(bench["m"], bench["k"], bench["n"], bench["dtype"], bench["groups"], seen,
                                  form=form))
            continue
        op_seen = [t["op_s"] for t in seen] if form == "interleaved" else seen
        op, g, nbytes = bench["op"], bench["ranks"], bench["nbytes"]
        spread = _spread(op_seen)
        rows.append({"op": op, "ranks": g, "groups": bench["groups"], "bytes": nbytes, "count": bench["count"],
                     "dtype": bench["dtype"],
                     "redop": _REDOP.get(op, "none"), "root": 0 if op in ("broadcast", "reduce") else -1,
                     "in_place": bench["in_place"], **spread, "algbw_GBps": algbw_GBps(nbytes, spread["time_s"]),
                     "busbw_GBps": busbw_GBps(op, g, nbytes, spread["time_s"]), "form": form,
                     "between": bench.get("between")})
        if form == "interleaved":
            m, k, n = bench["between"]
            rows.append(_gemm_row(m, k, n, bench["dtype"], len(seen), [t["gemm_s"] for t in seen], form=form,
                                  between_op={"op": op, "ranks": g, "bytes": nbytes}))
    return rows


def host_info(backend: str, load_before: tuple[float, float, float] | None) -> dict:
    """Where the bench ran (imports torch)."""
    # Here, not at the top: the rest of this module (records, tables) is read without torch.
    import torch

    from executor.launch import gpu_names

    devices = gpu_names() if backend == "nccl" else []  # never CUDA in this process: it may fork ranks again
    return {"hostname": socket.gethostname(), "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(), "cpu_count": os.cpu_count(),
            "python": platform.python_version(), "torch": torch.__version__, "cuda": torch.version.cuda,
            "devices": devices, "load_average_before": list(load_before) if load_before else None,
            "load_average_after": list(os.getloadavg())}


def bench_record(settings, nproc: int, backend: str, rows: list[dict], host: dict) -> dict:
    """The ``tpsim-bench`` JSON object (see the module docstring)."""
    return {"format": FORMAT, "version": VERSION, "backend": backend, "nproc": nproc, "dtype": settings.dtype,
            "warmup": settings.warmup, "iters": settings.iters, "groups": settings.groups, "host": host,
            "rows": rows}


def _interleaved_gemms(rows: list[dict]) -> list[dict]:
    """Interleaved gemm rows merged per shape: the median time over the cases that ran it."""
    shapes: dict[tuple, list[dict]] = {}
    for r in rows:
        shapes.setdefault((r["m"], r["k"], r["n"], r["dtype"], r["concurrent"]), []).append(r)
    out = []
    for (m, k, n, dtype, concurrent), same in shapes.items():
        time_s = statistics.median(r["time_s"] for r in same)
        out.append({"m": m, "k": k, "n": n, "dtype": dtype, "concurrent": concurrent, "time_s": time_s,
                    "gflops_per_s": 2 * m * k * n / time_s / 1e9 if time_s > 0 else None, "cases": len(same)})
    return out


def _gemm_lines(rows: list[dict], title: str) -> list[str]:
    lines = [title,
             f"#{'m':>7} {'k':>7} {'n':>7} {'type':>7} {'ranks':>6} {'time':>11} {'GFLOP/s':>9} {'GFLOP/s':>9}",
             f"#{'':>7} {'':>7} {'':>7} {'':>7} {'at once':>6} {'(us)':>11} {'per rank':>9} {'total':>9}"]
    for r in rows:
        rate = r["gflops_per_s"] or 0.0
        lines.append(f" {r['m']:>7} {r['k']:>7} {r['n']:>7} {_TYPE.get(r['dtype'], r['dtype']):>7} "
                     f"{r['concurrent']:>6} {r['time_s'] * 1e6:>11.1f} {rate:>9.2f} {rate * r['concurrent']:>9.2f}")
    return lines


def tables(record: dict) -> list[str]:
    """nccl-tests-style tables: one per (op, group size, groups at once, form), then the gemms."""
    lines = []
    head = (f"{record['backend']} {record['dtype']}, {record['warmup']} warm-up + {record['iters']} timed ops "
            f"per size, time = mean over ranks of seconds per op")
    blocks: dict[tuple, list[dict]] = {}
    for row in record["rows"]:
        form = row.get("form", "lock-step")
        between = tuple(row.get("between") or ())
        key = ("gemm", form) if row["op"] == "gemm" else (row["op"], row["ranks"], row["groups"], form, between)
        blocks.setdefault(key, []).append(row)
    for key, rows in blocks.items():
        if lines:
            lines.append("")
        if key == ("gemm", "lock-step"):
            lines += _gemm_lines(rows, f"# gemm, {head}; with several ranks at once (CPU): one gemm each, then a "
                                       f"barrier, less the barrier")
            continue
        if key == ("gemm", "interleaved"):
            lines += _gemm_lines(_interleaved_gemms(rows), "# gemm between the interleaved ops (each on its own, "
                                 "median over the cases that ran it), time = mean over ranks of seconds per gemm")
            continue
        op, g, count, form, between = key
        what = "exchange between pairs" if op == "send" else f"on {g} ranks"
        at_once = f"{count} {'pair' if op == 'send' else 'group'}{'s' if count > 1 else ''} at once"
        place = "in place" if rows[0]["in_place"] else "out of place"
        how = (f", each after a {'x'.join(map(str, between))} gemm on every rank (interleaved; time from issue "
               f"to completion)" if form == "interleaved" else "")
        lines += [f"# {op} {what}, {at_once}, {place}{how}; {head}",
                  f"#{'size':>12} {'count':>12} {'type':>8} {'redop':>6} {'root':>5} {'time':>11} {'algbw':>8} "
                  f"{'busbw':>8}",
                  f"#{'(B)':>12} {'(elements)':>12} {'':>8} {'':>6} {'':>5} {'(us)':>11} {'(GB/s)':>8} {'(GB/s)':>8}"]
        for r in rows:
            lines.append(f" {r['bytes']:>12} {r['count']:>12} {_TYPE.get(r['dtype'], r['dtype']):>8} {r['redop']:>6} "
                         f"{r['root']:>5} {r['time_s'] * 1e6:>11.1f} {r['algbw_GBps']:>8.3f} {r['busbw_GBps']:>8.3f}")
    return lines
