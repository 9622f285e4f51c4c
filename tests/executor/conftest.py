"""Executor test fixtures; the schedules themselves live in ``executor_cases`` (importable from the tests
whatever pytest's import mode: this folder is put on ``sys.path`` here)."""

from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from executor_cases import mixed_schedule  # noqa: E402


@pytest.fixture
def mixed():
    """The hand-made schedule that uses every op kind (``executor_cases.mixed_schedule``)."""
    return mixed_schedule()
