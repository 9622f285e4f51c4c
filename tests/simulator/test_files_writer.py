"""The one writer (``simulator.files.replacing``) under kills and concurrent writers, and its target rules.

A write killed with SIGKILL leaves the old file whole and a temporary that the next write of the same
target sweeps at once; a temporary a live writer holds is never swept, however old; a temporary that
may not be locked yet (mkstemp's mode, young) is left for ``STALE_AFTER_S``; ``/dev/null`` is refused
without being touched.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from simulator.errors import InputError
from simulator.files import replacing, write_json_atomic
from simulator.output_paths import STALE_AFTER_S, check_replaceable, is_temporary_of, real_target, sweep_stale

CHILD = """
import os, signal, sys
from simulator.files import replacing
with replacing(sys.argv[1]) as tmp:
    with open(tmp, "w") as handle:
        handle.write("half a new file")
        handle.flush()
    print(tmp, flush=True)
    {then}
"""


def _child(target, then: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", CHILD.format(then=then), str(target)], stdout=subprocess.PIPE,
                            stdin=subprocess.PIPE, text=True)


def test_a_killed_write_leaves_the_old_file_and_the_next_write_sweeps_its_temporary(tmp_path):
    target = tmp_path / "s.json"
    target.write_text("old\n")
    child = _child(target, "os.kill(os.getpid(), signal.SIGKILL)")
    temporary = child.stdout.readline().strip()
    assert child.wait() == -signal.SIGKILL
    assert target.read_text() == "old\n" and os.path.exists(temporary) and is_temporary_of(
        os.path.basename(temporary), target)
    write_json_atomic(target, {"new": True})
    assert target.read_text() == '{"new":true}\n'
    assert sorted(os.listdir(tmp_path)) == ["s.json"]


def test_a_live_writer_keeps_its_temporary_however_old(tmp_path):
    target = tmp_path / "s.json"
    child = _child(target, "sys.stdin.readline()")  # holds the lock until told to go on
    temporary = child.stdout.readline().strip()
    try:
        old = time.time() - 3600
        os.utime(temporary, (old, old))
        assert sweep_stale(target) == []
        write_json_atomic(target, {"other": 1})  # a second writer of the same target meanwhile
        assert os.path.exists(temporary)
    finally:
        child.communicate("go\n")
    assert child.returncode == 0 and target.read_text() == "half a new file"  # the last rename wins, whole
    assert sorted(os.listdir(tmp_path)) == ["s.json"]


def test_a_temporary_perhaps_not_yet_locked_waits_its_grace(tmp_path):
    target = tmp_path / "s.json"
    young = tmp_path / ".s.json.abcdefgh.json"
    young.write_text("")
    young.chmod(0o600)  # mkstemp's mode: its writer may not hold the lock yet
    assert sweep_stale(target) == [] and young.exists()
    assert sweep_stale(target, now=time.time() + STALE_AFTER_S + 1) == [young] and not young.exists()


def test_dev_null_is_refused_without_being_touched():
    before = os.stat("/dev/null")
    with pytest.raises(InputError, match="/dev/null: it is a character device"):
        check_replaceable("/dev/null", real_target("/dev/null"))
    with pytest.raises(InputError, match="it is a character device"):
        with replacing("/dev/null"):
            pytest.fail("a temporary was offered for /dev/null")
    after = os.stat("/dev/null")
    assert (after.st_ino, after.st_rdev) == (before.st_ino, before.st_rdev)


def test_a_link_is_followed_and_stays_a_link(tmp_path):
    (tmp_path / "real.json").write_text("old\n")
    os.symlink("real.json", tmp_path / "link.json")
    write_json_atomic(tmp_path / "link.json", [1])
    assert os.readlink(tmp_path / "link.json") == "real.json" and (tmp_path / "real.json").read_text() == "[1]\n"
    assert sorted(os.listdir(tmp_path)) == ["link.json", "real.json"]


def test_what_the_block_raises_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "s.csv"
    target.write_text("old\n")
    with pytest.raises(KeyError):
        with replacing(target) as tmp, open(tmp, "w") as handle:
            handle.write("new")
            raise KeyError("a bug while writing")
    assert target.read_text() == "old\n" and os.listdir(tmp_path) == ["s.csv"]
