"""A ``TorchDispatchMode`` that adds up the bytes every non-view aten op reads and writes.

The eager-kernel tests (``tests/simulator/test_norm_kernels.py``, ``test_pointwise_kernels.py``) hold tpsim's
byte counts of torchtitan's eager PyTorch code to what torch's dispatcher actually runs: each op's tensor
inputs (a broadcast input at its stored size) and outputs, views excluded (they move no bytes).
"""

from __future__ import annotations

__all__ = ["VIEWS", "byte_counter"]

VIEWS = frozenset({"expand", "view", "t", "_unsafe_view", "unsqueeze", "squeeze", "detach", "alias", "as_strided"})
"""aten ops that only re-describe a tensor's storage."""


def byte_counter(torch, extra_views: tuple[str, ...] = ()):
    """The counting mode's class (torch imported lazily by the caller); ``extra_views``: more ops to treat as
    views (e.g. ``view_as_complex``). Each instance has ``nbytes`` and ``ops`` (the counted ops' names)."""
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    views = VIEWS | set(extra_views)

    class Count(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.nbytes, self.ops = 0, []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if func._overloadpacket.__name__ not in views:
                self.ops.append(func._overloadpacket.__name__)
                for t in tree_flatten((args, kwargs))[0]:
                    if isinstance(t, torch.Tensor):
                        self.nbytes += min(t.numel(), t.untyped_storage().nbytes() // t.element_size()) * t.element_size()
                self.nbytes += sum(t.numel() * t.element_size() for t in tree_flatten(out)[0]
                                   if isinstance(t, torch.Tensor))
            return out

    return Count
