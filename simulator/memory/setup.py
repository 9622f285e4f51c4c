"""``TrainingSetup``: how one arrangement is trained (optimizer, ZeRO stage, recomputation, data parallelism).

Example::

    >>> TrainingSetup(optimizer="adam", zero=1, dp=8, layers=40, vocab=50257).zero
    1
    >>> TrainingSetup(zero=4)
    Traceback (most recent call last):
    ...
    simulator.errors.InputError: --zero 4: ZeRO stages are 0, 1, 2, 3
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

from simulator.errors import InputError
from simulator.fp8_cost import RECIPES
from simulator.limits import check_extent

__all__ = ["OPTIMIZERS", "RECOMPUTE", "ZERO_STAGES", "TrainingSetup"]

OPTIMIZERS = ("adam", "sgd")
"""Mixed-precision Adam (the default) or SGD with momentum (``simulator.memory.states`` says what each keeps)."""
ZERO_STAGES = (0, 1, 2, 3)
"""ZeRO stages (Rajbhandari et al. 2019, arXiv 1910.02054, section 5): 1 shards the optimizer state over
the data-parallel group, 2 also the gradients, 3 also the parameters."""
RECOMPUTE = ("none", "selective", "selective-op", "full")
"""Activation recomputation (Korthikanti et al. 2022, arXiv 2205.05198, sections 4-5; ``selective-op`` is
torchtitan's per-op selective checkpointing, ``simulator.workloads.op_checkpoint``)."""


def _is_int(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


@dataclass(frozen=True)
class TrainingSetup:
    """The training choices that size memory per GPU; ``InputError`` naming the flag for a bad value."""

    optimizer: str = "adam"
    """``adam`` (mixed precision: 16 B per parameter before sharding) or ``sgd`` (12 B)."""
    zero: int = 0
    """ZeRO stage over the data-parallel group, 0 to 3."""
    recompute: str = "none"
    """``none``, ``selective`` (the attention core), ``selective-op`` (torchtitan's per-op policy) or ``full``
    (each layer from its input)."""
    dp: int = 1
    """Data-parallel degree: the group ZeRO shards over."""
    layers: int = 1
    """Transformer blocks this GPU holds (no pipeline parallelism: every layer of the model)."""
    vocab: int | None = None
    """Vocabulary size for the embedding and LM head; None: no embedding counted."""
    tied: bool = True
    """Whether the input embedding is the LM head's weight (GPT); False: two [V, h] weights (Llama)."""
    grad_bytes: int | None = None
    """Bytes per kept gradient element; None: the parameters' dtype. Megatron-LM keeps its main gradients
    in fp32 under bf16 (``simulator.training.main_grads.grad_bytes``)."""
    prefetch: bool = True
    """ZeRO-3: whether the next unit's parameters are gathered before the current unit's gradients are
    computed (PyTorch FSDP's default ``BackwardPrefetch.BACKWARD_PRE``: "at the peak, it holds the current set
    of parameters, next set of parameters, and current set of gradients", FSDP's documentation), so two units'
    gathered parameters are live; False (``BACKWARD_POST``, which frees the current parameters before
    gathering the next, or no prefetch): one."""
    fp8_recipe: str | None = None
    """``--dtype fp8``: Transformer Engine's recipe (``simulator.fp8_cost.RECIPES``), under which each linear's
    input is kept as one FP8 copy (``simulator.memory.activations``); None: the schedule's dtype."""

    def __post_init__(self) -> None:
        if self.optimizer not in OPTIMIZERS:
            raise InputError(f"--optimizer {self.optimizer}: optimizers are {', '.join(OPTIMIZERS)}")
        if not _is_int(self.zero) or self.zero not in ZERO_STAGES:
            raise InputError(f"--zero {self.zero}: ZeRO stages are {', '.join(map(str, ZERO_STAGES))}")
        if self.recompute not in RECOMPUTE:
            raise InputError(f"--recompute {self.recompute}: recomputation is one of {', '.join(RECOMPUTE)}")
        for flag, value in (("--dp", self.dp), ("--layers", self.layers)):
            if not _is_int(value) or value < 1:
                raise InputError(f"{flag} {value}: must be an integer >= 1")
            check_extent(value, f"{flag} {value}")
        if not isinstance(self.prefetch, bool):
            raise InputError(f"prefetch must be true or false, got {self.prefetch!r}")
        if self.fp8_recipe is not None and self.fp8_recipe not in RECIPES:
            raise InputError(f"fp8 recipe {self.fp8_recipe!r}: one of {', '.join(RECIPES)}, or unset")
        if self.grad_bytes is not None and self.grad_bytes not in (1, 2, 4, 8):
            raise InputError(f"gradient element size {self.grad_bytes!r}: must be 1, 2, 4 or 8 bytes")
        if self.vocab is not None:
            if not _is_int(self.vocab) or self.vocab < 1:
                raise InputError(f"vocabulary size {self.vocab}: must be an integer >= 1")
            check_extent(self.vocab, f"vocabulary size {self.vocab}")
