"""A file of measured training steps: what ``tpsim calibrate --from-steps`` fits ``gemm_efficiency`` to.

YAML (or JSON for .json), one mapping with a single key ``steps``, a list of entries::

    steps:
      - name: 7b on one server           # optional; default "step 1", "step 2", ...
        predict: --gpus 8 --model llama3-8b --seq 8192 --global-batch 32 --batch 1 --tp-sizes 1 --pp-sizes 1 --zero 3 --recompute full
        step_s: 3.21                     # seconds per training step, measured
      - predict: ...
        tokens_per_s_per_gpu: 2115       # or the throughput a framework logs: tokens / s / GPU

``predict`` is what you would type after ``tpsim predict`` for the job you measured (``simulator.calibrate.
step_timing`` reads it). Exactly one of ``step_s`` and ``tokens_per_s_per_gpu``, a finite number > 0.
Every problem is one ``InputError`` line naming the file and the entry (``steps.yaml entry 2 (7b): ...``).

Example::

    >>> entries_from_document({"steps": [{"predict": "--gpus 8", "step_s": 2.5}]}, "s.yaml")[0].label
    'step 1'
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from simulator.errors import InputError
from simulator.files import read_text
from topologies.errors import TopologyError
from topologies.fileformat import read_document

__all__ = ["StepEntry", "read_steps", "entries_from_document", "ENTRY_KEYS", "MEASURES"]

MEASURES = ("step_s", "tokens_per_s_per_gpu")
"""The two ways to give an entry's measurement (exactly one per entry)."""
ENTRY_KEYS = ("name", "predict") + MEASURES


@dataclass(frozen=True)
class StepEntry:
    """One measured step: the predict line it ran, and its measurement."""

    index: int
    """1-based position in the file."""
    name: str | None
    predict: str
    """The ``tpsim predict`` arguments of the measured job (without ``predict``)."""
    measure: str
    """Which of ``MEASURES`` the file gave."""
    value: float
    """The measurement, in the unit ``measure`` names."""
    path: str = ""

    @property
    def label(self) -> str:
        """The entry's name, or ``step N``."""
        return self.name or f"step {self.index}"

    @property
    def where(self) -> str:
        """``FILE entry N (NAME)``: how every message names the entry."""
        return f"{self.path} entry {self.index}" + (f" ({self.name})" if self.name else "")

    def step_s(self, gpus: int, tokens_per_step: int) -> float:
        """The measured step time in seconds (a throughput converted by the run's GPUs and tokens per step)."""
        if self.measure == "step_s":
            return self.value
        return tokens_per_step / (self.value * gpus)


def _positive(value, where: str, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise InputError(f"{where}: {key} must be a finite number > 0, got {value!r}")
    return float(value)


def _entry(item, index: int, path: str) -> StepEntry:
    where = f"{path} entry {index}"
    if not isinstance(item, dict):
        raise InputError(f"{where}: an entry is a mapping with predict: and step_s: or tokens_per_s_per_gpu:, "
                         f"got {type(item).__name__}")
    name = item.get("name")
    if name is not None and (not isinstance(name, (str, int, float)) or isinstance(name, bool) or str(name) == ""):
        raise InputError(f"{where}: name must be a non-empty string, got {name!r}")
    if name is not None:
        where += f" ({name})"
    unknown = [str(key) for key in item if key not in ENTRY_KEYS]
    if unknown:
        raise InputError(f"{where}: unknown key {unknown[0]!r}; an entry has {', '.join(ENTRY_KEYS)}")
    given = [key for key in MEASURES if key in item]
    if len(given) != 1:
        raise InputError(f"{where}: give exactly one of step_s and tokens_per_s_per_gpu, got "
                         f"{' and '.join(given) or 'neither'}")
    predict = item.get("predict")
    if not isinstance(predict, str) or not predict.strip():
        raise InputError(f"{where}: predict must be the tpsim predict arguments of the measured job as one string, "
                         f"got {predict!r}")
    return StepEntry(index, None if name is None else str(name), predict.strip(), given[0],
                     _positive(item[given[0]], where, given[0]), path)


def entries_from_document(doc, path: str) -> list[StepEntry]:
    """The entries of a parsed steps document (module doc); InputError naming ``path`` for anything unfit."""
    if not isinstance(doc, dict) or "steps" not in doc:
        raise InputError(f"{path}: a steps file is a mapping with one key, steps: (a list of entries with predict: "
                         f"and step_s: or tokens_per_s_per_gpu:)")
    unknown = [str(key) for key in doc if key != "steps"]
    if unknown:
        raise InputError(f"{path}: unknown key {unknown[0]!r}; a steps file has only steps:")
    items = doc["steps"]
    if not isinstance(items, list) or not items:
        raise InputError(f"{path}: steps must be a non-empty list of entries")
    return [_entry(item, i, path) for i, item in enumerate(items, 1)]


def read_steps(path: str) -> list[StepEntry]:
    """The entries of the steps file at ``path`` (YAML, or JSON for .json)."""
    text = read_text(path, "steps file")
    try:
        doc = read_document(path, text)
    except TopologyError as error:
        raise InputError(f"steps file {path}: {error}") from None
    return entries_from_document(doc, path)
