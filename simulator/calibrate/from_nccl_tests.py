"""nccl-tests logs (all_reduce_perf, all_gather_perf, ...) as ``CollectiveSample``s.

One sample per row: the out-of-place time (``tpsim collective --compare`` compares the same column),
the rank count from the log's device list or ``nGpus``, the test from the log's own "Collective test
starting" or command line, else its file name (``simulator.calibrate.nccl_tests``). nccl-tests' size
column is already the S of ``CollectiveSample``. Rows of the same test, rank count and size in different
logs are repeats of one measurement, merged or refused as conflicting as the parser does within one
log (``merge_repeats``). Example::

    >>> samples = samples_from_nccl_tests(["all_reduce_perf_8gpu.log"])          # doctest: +SKIP
    >>> samples[0]                                                                 # doctest: +SKIP
    CollectiveSample(kind='all_reduce', ranks=8, nbytes=8, time_s=3.144e-05, source='all_reduce_perf_8gpu.log')
"""

from __future__ import annotations

import os

from simulator.calibrate.nccl_tests import NcclTestsLog, merge_repeats, parse_nccl_tests
from simulator.calibrate.samples import CollectiveSample
from simulator.errors import InputError

__all__ = ["samples_from_nccl_tests", "read_nccl_logs", "samples_from_logs"]


def samples_from_nccl_tests(paths) -> list[CollectiveSample]:
    """Samples of every row of every log in ``paths``; InputError names a file that is missing or unfit,
    or two logs whose rows of one test, rank count and size conflict."""
    return samples_from_logs(read_nccl_logs(paths))


def read_nccl_logs(paths) -> list[tuple[str, NcclTestsLog]]:
    """Each log in ``paths`` parsed, with its file name; InputError names a file that is missing, or one
    whose test or rank count cannot be told."""
    logs = []
    for path in paths:
        path = str(path)
        name = os.path.basename(path)
        if not os.path.isfile(path):
            raise InputError(f"nccl-tests log {path} not found")
        log = parse_nccl_tests(path)
        if log.op is None:
            raise InputError(f"{name}: cannot tell which test this is (no command line or 'Collective test starting' "
                             f"line naming it, and its columns fit none of the five tests); name the file after "
                             f"it (all_reduce_perf..., all_gather_perf..., ...) as nccl-tests' binaries are")
        if not log.n_ranks:
            raise InputError(f"{name}: cannot tell how many ranks ran it (no '# Rank' lines, no nGpus in its header, "
                             f"and its busbw / algbw do not pin the count); keep nccl-tests' '# Rank ...' lines in it")
        logs.append((name, log))
    return logs


def samples_from_logs(logs: list[tuple[str, NcclTestsLog]]) -> list[CollectiveSample]:
    """Samples of every row of the ``read_nccl_logs`` logs; InputError where there are none, or where two
    logs' rows of one test, rank count and size conflict."""
    entries = [((log.op, log.n_ranks, row.size_bytes, row.type, row.redop, row.root), (row, name))
               for name, log in logs for row in log.rows]
    if not entries:
        raise InputError("no nccl-tests logs given")
    sources = {id(row): name for _, (row, name) in entries}
    merged = merge_repeats((key, row) for key, (row, _) in entries)
    return [CollectiveSample(op, ranks, row.size_bytes, row.time_us * 1e-6, sources[id(row)])
            for (op, ranks, *_), row in merged]
