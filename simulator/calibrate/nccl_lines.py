"""One line of nccl-tests output as real jobs print it: launcher prefixes, NCCL's own lines, the test's name.

Multi-node jobs rarely hand over nccl-tests' output bare. Launchers tag each line with where it came from,
and a log holds more than the table: the job's own command line, ssh and X11 warnings, NCCL's
``NCCL INFO``/``NCCL WARN`` lines and its ``NCCL version 2.x.y+cudaZ`` banner. This module takes such a
line apart:

- ``split_prefix``: the launcher tags in front, any number of them, outermost first:
  Open MPI's ``--tag-output`` ``[1,0]<stdout>:`` / ``[1,3]<stderr>:``, Slurm's ``srun --label``
  ``0: `` (also `` 12: ``), MPICH/Intel MPI's ``-prepend-rank`` ``[0] ``, and Ray/SkyPilot's
  ``(head, rank=0, pid=3808) ``. Returns the tags as one string (lines of one process share it) and the
  text. A data row never starts with a tag: its first token is an integer without a colon or bracket.
- ``is_noise``: NCCL's own lines and the usual job noise, skipped wherever they appear.
- ``op_named``: the test a line names (``all_reduce_perf``, ``all_gather_perf_mpi``, ``# Collective test
  starting: reduce_scatter_perf``), and ``op_in_file_name`` the one a file name names (``all_reduce_perf``,
  also ``allreduce``/``reducescatter`` as SuperBench names its logs).
- ``rank_line``: ``# Rank 3 Group 0 Pid 1234 on node-1 device 3 [0x4d] NVIDIA A100-SXM4-40GB`` as
  (rank, host, device name); older versions print no ``Group``.
- ``unmarked_comment``: one of nccl-tests' own ``#`` lines printed without its ``#`` (the header, the
  units line, ``Avg bus bandwidth``...), as logs copied from web pages and notebooks often show them: the
  line with the ``#`` put back, so that it reads as nccl-tests printed it.

Example::

    >>> split_prefix("(head, rank=0, pid=38) [1,0]<stdout>:#  Rank  0 Group  0 Pid  7 on h device  0 [0x8f] H200")
    ('(head, rank=0, pid=38) [1,0]<stdout>:', '#  Rank  0 Group  0 Pid  7 on h device  0 [0x8f] H200')
    >>> rank_line("#  Rank  0 Group  0 Pid  7 on h device  0 [0x8f] NVIDIA H200")
    (0, 'h', 'NVIDIA H200')
    >>> op_named("mpirun -np 16 ./build/all_reduce_perf_mpi -b 8 -e 8G"), op_in_file_name("nccl_reducescatter.log")
    ('all_reduce', 'reduce_scatter')
"""

from __future__ import annotations

import os
import re

__all__ = ["split_prefix", "is_noise", "is_stderr", "op_named", "op_in_file_name", "rank_line", "unmarked_comment"]

_PREFIXES = (
    re.compile(r"\([^()]*\)\s"),  # Ray / SkyPilot: "(head, rank=0, pid=3808) ", "(worker1, rank=1, ...) "
    re.compile(r"\[\d+,\d+\]<(?:stdout|stderr)>:"),  # Open MPI --tag-output
    re.compile(r"\s*\d+:\s?"),  # srun --label: "0: ", " 12: "
    re.compile(r"\[\d+\]\s"),  # MPICH / Intel MPI -prepend-rank: "[0] "
)
_NOISE = re.compile(r"NCCL (?:INFO|WARN|TRACE|version)|^Warning: |^Authorization required|^X11 forwarding|"
                    r"^Permanently added|^--------------------------------")
_OP = re.compile(r"(?<![A-Za-z])(all_reduce|all_gather|reduce_scatter|broadcast|reduce)_perf")
_OP_FILE = re.compile(r"(?<![A-Za-z])(all_?reduce|all_?gather|reduce_?scatter|broadcast|reduce)(?![A-Za-z])")
_RANK = re.compile(r"#?\s*Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)\s+device\s+\d+\s+"
                   r"\[[^\]]*\]\s+(.*\S)\s*$")
# How each of nccl-tests' own "#" lines begins (src/common.cu): the run header, the device list, the
# table's two header lines, the out-of-place/in-place banner, the trailer and the newer versions' banners.
_OWN_LINES = re.compile(r"(?:nThread\s+\d+\s+nGpus|Using devices|Rank\s+\d+\s+(?:Group|Pid)\s|size\s+count\s+type\s|"
                        r"\(B\)\s+\(elements\)|out-of-place\s+in-place|Out of bounds values|Avg bus bandwidth|"
                        r"nccl-tests version|Collective test starting|Errors with asterisks)")
_CANONICAL = {"allreduce": "all_reduce", "allgather": "all_gather", "reducescatter": "reduce_scatter"}


def split_prefix(line: str) -> tuple[str, str]:
    """(the launcher tags in front of ``line``, the rest): see the module doc."""
    tags = ""
    while True:
        for pattern in _PREFIXES:
            match = pattern.match(line)
            if match and match.end() > 0:
                tags += match.group(0)
                line = line[match.end():]
                break
        else:
            return tags.strip(), line


def is_stderr(tags: str) -> bool:
    """Whether Open MPI tagged the line as the process's stderr (never part of the table)."""
    return "<stderr>" in tags


def is_noise(text: str) -> bool:
    """NCCL's own lines (INFO, WARN, TRACE, the version banner) and the usual ssh/X11/mpirun warnings."""
    return bool(_NOISE.search(text.strip()))


def op_named(text: str) -> str | None:
    """The collective of the nccl-tests binary ``text`` names (``all_gather_perf``, ``reduce_perf_mpi``)."""
    match = _OP.search(text)
    return match.group(1) if match else None


def op_in_file_name(path: str) -> str | None:
    """The collective the file name of ``path`` names: ``all_reduce_perf_8gpu.log``, ``nccl_allgather.log``."""
    match = _OP_FILE.search(os.path.basename(str(path)).lower())
    if not match:
        return None
    return _CANONICAL.get(match.group(1), match.group(1))


def rank_line(text: str) -> tuple[int, str, str] | None:
    """(rank, host, device name) of a ``# Rank ... on HOST device ...`` line, None for any other line."""
    # Interleaved output can split a line with another process's tag ("node-[1,0]<stdout>:00000C").
    match = _RANK.match(_PREFIXES[1].sub("", text).strip())
    return (int(match.group(1)), match.group(2), match.group(3)) if match else None


def unmarked_comment(text: str) -> str | None:
    """``text`` with its "#" put back where it is one of nccl-tests' own "#" lines printed without it
    (``size count type ... time algbw busbw``, ``Avg bus bandwidth : 137.2``), else None.

        >>> unmarked_comment("Avg bus bandwidth    : 137.179"), unmarked_comment("1048576  262144  float")
        ('# Avg bus bandwidth    : 137.179', None)
    """
    return "# " + text if _OWN_LINES.match(text) else None
