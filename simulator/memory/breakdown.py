"""``MemoryBreakdown``: one GPU's training memory as five parts and the peak, each part a list of named items.

The parts are the ZeRO paper's model states (parameters, gradients, optimizer state; Rajbhandari et al.
2019, arXiv 1910.02054, section 3.1) and its residual states (activations, and the temporary buffers
that ``workspace`` holds: communication receive buffers, gathered panels, partial sums). The peak is
their sum (``simulator.memory.training`` states when that peak occurs).

Example::

    >>> m = MemoryBreakdown((Item("params", "weights", 2), Item("activations", "X", 5)))
    >>> m.peak_bytes, m.to_dict()["activations_bytes"]
    (7, 5)
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PARTS", "Item", "MemoryBreakdown"]

PARTS = ("params", "grads", "optimizer", "activations", "workspace")
"""The parts of a breakdown, in the order they print."""

_TITLES = {"params": "parameters", "grads": "gradients", "optimizer": "optimizer state",
           "activations": "activations", "workspace": "workspace"}


@dataclass(frozen=True)
class Item:
    """One contribution: ``nbytes`` of ``part`` (one of ``PARTS``), described by ``what``."""

    part: str
    what: str
    nbytes: int

    def __post_init__(self) -> None:
        if self.part not in PARTS:
            raise ValueError(f"memory item part {self.part!r}; valid: {', '.join(PARTS)}")
        if self.nbytes < 0:
            raise ValueError(f"memory item {self.what!r}: negative size {self.nbytes}")


@dataclass(frozen=True)
class MemoryBreakdown:
    """One GPU's memory: its items; each part's bytes is the sum of that part's items."""

    items: tuple[Item, ...]
    rank: int = 0
    """The rank these figures are for: the one with the largest peak (lowest such rank)."""

    def _part(self, part: str) -> int:
        return sum(item.nbytes for item in self.items if item.part == part)

    @property
    def params_bytes(self) -> int:
        return self._part("params")

    @property
    def grads_bytes(self) -> int:
        return self._part("grads")

    @property
    def optimizer_bytes(self) -> int:
        return self._part("optimizer")

    @property
    def activations_bytes(self) -> int:
        return self._part("activations")

    @property
    def workspace_bytes(self) -> int:
        return self._part("workspace")

    @property
    def peak_bytes(self) -> int:
        """Everything at once: the sum of the five parts."""
        return sum(item.nbytes for item in self.items)

    def fits(self, usable_bytes: int) -> bool:
        """Whether the peak fits in ``usable_bytes`` (``simulator.memory.device.usable_device_bytes``)."""
        return self.peak_bytes <= usable_bytes

    def to_dict(self) -> dict:
        """The six byte counts and ``items``: [{"what", "bytes"}] in part order (the JSON form)."""
        data = {f"{part}_bytes": self._part(part) for part in PARTS}
        data["peak_bytes"] = self.peak_bytes
        data["items"] = [{"what": f"{_TITLES[item.part]}: {item.what}", "bytes": item.nbytes}
                         for part in PARTS for item in self.items if item.part == part]
        return data

    def lines(self, format_bytes) -> list[str]:
        """The breakdown as text, one part a line and its items under it (``format_bytes``: bytes -> str)."""
        width = max(len(title) for title in _TITLES.values())
        out = [f"memory per GPU (rank {self.rank}): peak {format_bytes(self.peak_bytes)}"]
        for part in PARTS:
            items = [item for item in self.items if item.part == part]
            head = f"  {_TITLES[part]:<{width}}  {format_bytes(self._part(part)):>9}"
            if len(items) == 1:  # one item: on the part's own line
                out.append(f"{head}  {items[0].what}")
                continue
            out.append(head)
            out += [f"  {'':<{width}}  {format_bytes(item.nbytes):>9}  {item.what}" for item in items]
        return out
