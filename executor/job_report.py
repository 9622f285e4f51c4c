"""What a failed local job reports: the rank that caused it first, or where each rank was when it timed out.

``executor.launch`` supervises the ranks and calls these on its failure paths; each returns the
(report, reason, ranks) of ``JobFailed``. A failed job's report leads with the **real cause**: a rank
killed by SIGKILL (it writes nothing: the out-of-memory killer, a user), named with its signal and the
last lines of its output; else the first real traceback; then other deaths without a traceback
(another signal, a bare exit status); ranks whose error is a communication after-effect ("Connection
closed by peer", resets, timeouts) come last, the earliest first within each kind. A timed-out job's
report names first the ranks that stopped responding (a rank stopped by SIGSTOP, or frozen: its
heartbeat stopped, ``executor.heartbeat``), then those that never arrived: busy in their own code (or
not yet at the rendezvous) rather than blocked on their peers, read from the shared ``ProgressBoard``.
"""

from __future__ import annotations

import os
import pickle
import re
import signal

from executor.heartbeat import silent_ranks
from executor.progress import WAITING, ProgressBoard

__all__ = ["failures", "failure_report", "timeout_report"]

# Errors a rank sees because a peer died: never the cause when another rank has a real one.
_SECONDARY = re.compile(r"Connection closed|Connection reset|connection reset|Broken pipe|timed out|"
                        r"Timeout|DistBackendError|ECONNRESET|peer", re.IGNORECASE)


def failures(exits: dict[int, tuple[int, float]], folder: str, nproc: int) -> list[dict]:
    """Every failed rank, the likeliest cause first: killed by SIGKILL (nothing else kills a rank
    before the launcher decides: the OOM killer, a user), a real traceback, another death without
    one, a communication after-effect; the earliest first within each."""
    found = []
    for rank in range(nproc):
        path = os.path.join(folder, f"rank{rank}.err")
        if os.path.exists(path):
            with open(path, "rb") as handle:
                error = pickle.load(handle)
            error["order"] = 3 if _SECONDARY.search(error["summary"]) else 1
            found.append(error)
        elif rank in exits and exits[rank][0] != 0:
            code, when = exits[rank]
            if code < 0:
                how = f"was killed by {signal.Signals(-code).name} (signal {-code})"
            else:
                how = f"exited with status {code}"
            found.append({"rank": rank, "time": when, "summary": f"{how} without a Python traceback",
                             "traceback": None, "order": 0 if code == -signal.SIGKILL else 2})
    found.sort(key=lambda f: (f["order"], f["time"]))
    return found


def failure_report(exits: dict[int, tuple[int, float]], folder: str, nproc: int) -> tuple[str, str, list[int]]:
    """``JobFailed``'s (report, "error", ranks) for a job one of whose ranks failed: the likeliest cause
    first (``failures``), with its traceback or the last lines of its output, then up to four others."""
    found = failures(exits, folder, nproc)
    first = found[0]
    if first["traceback"] is None:
        hint = " (the kernel's out-of-memory killer sends SIGKILL)" if first["order"] == 0 else ""
        tail = _log_tail(os.path.join(folder, f"rank{first['rank']}.log"))
        lines = [f"rank {first['rank']} {first['summary']}{hint}; the other ranks were stopped"]
        if tail:
            lines += ["last lines of its output:", tail]
    else:
        lines = [f"rank {first['rank']} failed first; the other ranks were stopped. Its traceback:",
                 first["traceback"].rstrip()]
    for other in found[1:5]:
        lines.append(f"rank {other['rank']} also failed: {other['summary']}")
    if len(found) > 5:
        lines.append(f"... and {len(found) - 5} more ranks")
    return "\n".join(lines), "error", [f["rank"] for f in found]


def timeout_report(unfinished: list[int], schedules, options, board: ProgressBoard) -> tuple[str, str, list[int]]:
    """``JobFailed``'s (report, "timeout", ranks) for a job past ``--timeout``: first the ranks that stopped
    responding (stopped by a signal, or no heartbeat: ``executor.heartbeat``), then the ranks that never
    arrived (busy in their own code, per the ``ProgressBoard``), with where each is; then those blocked
    waiting for them."""
    silent = silent_ranks(board, unfinished)
    missing = [r for r in unfinished if r not in silent and board.state(r)[0] not in WAITING]
    waiting = [r for r in unfinished if r not in silent and r not in missing]
    head = f"timed out after {options.timeout_s:g} s (--timeout)"
    parts = [f"rank {r} stopped responding: {why}; it was {_position(board.state(r), schedules, r)}"
             for r, why in silent.items()]
    if missing:
        if len(missing) == 1:
            where = f"it is {_position(board.state(missing[0]), schedules, missing[0])}"
        else:
            where = "; ".join(f"rank {r} {_position(board.state(r), schedules, r)}" for r in missing[:8])
        parts.append(f"rank{'s' if len(missing) > 1 else ''} {_ranks(missing)} never arrived: {where}")
    if parts:
        text = f"{head}: " + "; ".join(parts)
    else:
        text = (f"{head}: no rank is missing; ranks {_ranks(waiting)} are all blocked in communication "
                f"(a deadlock, or --timeout too short)")
    if waiting:
        sample = "; ".join(f"rank {r} {_position(board.state(r), schedules, r)}" for r in waiting[:4])
        text += f"\nwaiting for {'them' if parts else 'each other'}: ranks {_ranks(waiting)} ({sample})"
    return text, "timeout", [*silent, *missing] or waiting


def _position(state: tuple[str, int, int, int], schedules, rank: int) -> str:
    name, index, iteration, step = state
    if step < 0 or index < 0:
        return name
    op = schedules[index].programs[rank][step]
    prefix = f"schedule {index} " if len(schedules) > 1 else ""
    return f"{name} at {prefix}iteration {iteration} step {step} ({op.short()})"


def _ranks(ranks: list[int]) -> str:
    return ", ".join(map(str, ranks))


def _log_tail(path: str, lines: int = 10) -> str:
    try:
        with open(path, errors="replace") as handle:
            return "".join(handle.readlines()[-lines:]).rstrip()
    except OSError:
        return ""
