"""Start N local ranks by fork, rendezvous through a FileStore, watch them, and stop them all on a failure.

Why fork: forked ranks share the parent's imported torch, so 8 ranks reach an initialised process
group in about 0.2 s (1.6 s for 64; torch 2.13 CPU, 2 cores), where spawn or torchrun re-import torch
in every rank (8-11 s).
``torch.set_num_threads(1)`` is called before forking: a parent that ran a multi-threaded matmul and
then forked made every child hang. For NCCL the parent never touches CUDA (its GPU count comes from a
forked probe), so each child initialises CUDA itself on its own device.

Supervision. Each child writes its stdout and stderr to a log file in a private temporary folder, its
result (rank 0) or its traceback (any rank that raises) to a file there, atomically, and exits. The
parent polls its children every few milliseconds:

- a child that exits non-zero ends the job at once: every other rank is killed and ``JobFailed``
  leads with the real cause (``executor.job_report`` orders the failures). In practice the rank that
  raised writes its traceback before it exits, and its peers can only see closed connections after
  that exit. When every failure seen so far is an after-effect (a peer of a killed rank can be reaped
  before it), the launcher reaps for up to half a second more before it reports, so that the dead
  rank is found;
- past ``timeout_s`` (counted from the first fork) every rank is killed and the report names the ranks
  that never arrived (``executor.job_report``);
- children die with the parent (``PR_SET_PDEATHSIG``), so a killed ``tpsim run`` leaves no ranks behind;
  its folder stays (SIGKILL runs no cleanup), and the next launcher sweeps it (``executor.scratch``).
"""

from __future__ import annotations

import ctypes
import os
import pickle
import shutil
import signal
import sys
import time
import traceback
from typing import Callable

import torch

from executor.heartbeat import start_heartbeat
from executor.job_report import failure_report, failures, timeout_report
from executor.progress import ProgressBoard
from executor.run_rank import Rendezvous, RunOptions, run_rank
from executor.scratch import make_folder, sweep_stale
from simulator.errors import InputError
from simulator.files import replacing
from simulator.ir.schedule import Schedule

_POLL_S = 0.005
_SETTLE_S = 0.5


class JobFailed(Exception):
    """A rank raised, died, or the job timed out; ``report`` is the text to show the user."""

    def __init__(self, report: str, reason: str, ranks: list[int]):
        super().__init__(report)
        self.report = report
        self.reason = reason
        """"error" or "timeout"."""
        self.ranks = ranks
        """The failing rank first (error), or the ranks that never arrived (timeout)."""


def _in_a_fork(probe: Callable[[], str]) -> str:
    """``probe()``'s text, computed in a forked child ("" if it fails), so that this process never asks
    CUDA anything: ``torch.cuda.is_available()`` and, where NVML cannot answer, ``device_count()``
    initialise the CUDA driver, and a process that did so cannot fork working CUDA children."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        try:
            os.close(read_end)
            os.write(write_end, probe().encode())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as handle:
        data = handle.read()
    os.waitpid(pid, 0)
    return data.decode()


def visible_gpus() -> int:
    """CUDA devices torch can see, counted in a forked probe so that this process never initialises CUDA.

    The one GPU check for any process that forks ranks later: the launcher, and the test modules'
    skip conditions (evaluated in the pytest process, which forks the ranks of every test after).
    """
    if torch.version.cuda is None:
        return 0
    return int(_in_a_fork(lambda: str(torch.cuda.device_count())) or "0")


def gpu_names() -> list[str]:
    """The names of the visible CUDA devices, read in a forked probe (see ``visible_gpus``)."""
    if torch.version.cuda is None:
        return []
    text = _in_a_fork(lambda: "\n".join(torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())))
    return text.splitlines()


def check_job(schedules: list[Schedule], options: RunOptions, nproc: int) -> None:
    """InputError for a job that cannot start: wrong --nproc, or NCCL without a GPU per rank."""
    for schedule in schedules:
        if schedule.world_size != nproc:
            raise InputError(f"--nproc {nproc} but the schedule ({schedule.algorithm} on grid "
                             f"{list(schedule.grid)}) has {schedule.world_size} ranks")
    if options.backend == "nccl":
        gpus = visible_gpus()
        if gpus < nproc:
            build = f"torch {torch.__version__}, CUDA {torch.version.cuda or 'not built in'}"
            raise InputError(f"--backend nccl needs one CUDA GPU per rank: {nproc} ranks but {gpus} GPUs "
                             f"visible ({build}); use --backend gloo")


Job = Callable[..., list | None]
"""What each rank runs: ``job(schedules, options, rdv, report)``, returning rank 0's results (others None)."""


def run_local(schedules: list[Schedule], options: RunOptions, nproc: int, job: Job = run_rank,
              on_poll: Callable[[ProgressBoard], None] | None = None) -> list[dict]:
    """Run ``schedules`` (one after another, in one job) on ``nproc`` forked ranks; rank 0's results.

    ``job`` is the per-rank function: ``run_rank`` (``tpsim run``), or ``executor.bench.bench_rank``
    (``tpsim bench``, whose microbenchmarks are schedules too). ``on_poll(board)`` is called at every
    poll while the ranks run (a progress line; it must be quick). Raises InputError before forking for
    a job that cannot start, JobFailed when a rank fails or the job outlasts ``options.timeout_s``.
    """
    check_job(schedules, options, nproc)
    torch.set_num_threads(1)
    sweep_stale()  # the folders of launchers killed before they could remove theirs
    folder = make_folder()
    board = ProgressBoard(nproc)
    deadline = time.monotonic() + options.timeout_s
    # pid -> rank of every child not yet reaped; only these may be killed (a reaped pid can be reused)
    children: dict[int, int] = {}
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        parent = os.getpid()
        for rank in range(nproc):
            pid = os.fork()
            if pid == 0:  # pragma: no cover - runs in the child, which never returns
                _child(schedules, options, rank, nproc, folder, board, parent, job)
            children[pid] = rank
        _watch(children, nproc, schedules, options, folder, board, deadline, on_poll)
        with open(os.path.join(folder, "result.pkl"), "rb") as handle:
            return pickle.load(handle)
    finally:
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for pid in children:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
        shutil.rmtree(folder, ignore_errors=True)


def _child(schedules, options, rank, nproc, folder, board, parent, job) -> None:  # pragma: no cover - child
    code = 1
    try:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        _die_with_parent(parent)
        start_heartbeat(board, rank, os.getpid())  # so a stopped rank is named at the timeout
        log = os.open(os.path.join(folder, f"rank{rank}.log"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(nproc),
                          LOCAL_WORLD_SIZE=str(nproc))
        rdv = Rendezvous(rank, nproc, rank, os.path.join(folder, "store"))
        results = job(schedules, options, rdv, lambda *state: board.update(rank, *state))
        if rank == 0:
            _dump(os.path.join(folder, "result.pkl"), results)
        code = 0
    except BaseException as error:  # noqa: BLE001 - every failure is reported to the parent
        _dump(os.path.join(folder, f"rank{rank}.err"),
              {"rank": rank, "time": time.time(), "traceback": traceback.format_exc(),
               "summary": f"{type(error).__name__}: {error}".splitlines()[0]})
    finally:
        os._exit(code)


def _die_with_parent(parent: int) -> None:  # pragma: no cover - child
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:
        os._exit(1)


def _dump(path: str, data) -> None:
    with replacing(path) as tmp, open(tmp, "wb") as handle:
        pickle.dump(data, handle)


def _watch(running: dict[int, int], nproc: int, schedules, options, folder, board: ProgressBoard,
           deadline: float, on_poll: Callable[[ProgressBoard], None] | None = None) -> None:
    """Reap children as they exit (removing them from ``running``) until all are done or one fails."""
    exits: dict[int, tuple[int, float]] = {}  # rank -> (exit code, when it was reaped)
    while running:
        if _reap(running, exits):
            _settle(running, exits, folder, nproc)
            raise JobFailed(*failure_report(exits, folder, nproc))
        if running and time.monotonic() > deadline:
            raise JobFailed(*timeout_report(sorted(running.values()), schedules, options, board))
        if running:
            if on_poll is not None:
                on_poll(board)
            time.sleep(_POLL_S)


def _reap(running: dict[int, int], exits: dict[int, tuple[int, float]]) -> bool:
    """Reap every child that has exited, recording its exit code; True when one of them failed."""
    failed = False
    for pid in list(running):
        done, status = os.waitpid(pid, os.WNOHANG)
        if done == 0:
            continue
        rank = running.pop(pid)
        code = os.waitstatus_to_exitcode(status)
        exits[rank] = (code, time.time())
        failed = failed or code != 0
    return failed


def _settle(running: dict[int, int], exits: dict[int, tuple[int, float]], folder: str, nproc: int) -> None:
    """Give the cause of a failure up to ``_SETTLE_S`` to show itself when none is known yet.

    A rank killed by a signal writes nothing; its peers then fail with secondary "Connection closed"
    errors, and one of them can be reaped first (or a peer's error file written before the dead
    rank is reapable). So while no failure seen is a SIGKILL or a real traceback (every one is another
    death or an after-effect), keep reaping a little longer. It runs once, on the failure path: reading
    the error files again at each poll costs nothing that matters there.
    """
    until = time.monotonic() + _SETTLE_S
    while running and time.monotonic() < until and failures(exits, folder, nproc)[0]["order"] >= 2:
        time.sleep(_POLL_S)
        _reap(running, exits)
