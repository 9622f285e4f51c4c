"""The training arguments that size memory per GPU: ``--optimizer --zero --recompute --dp``.

``add_training_arguments(parser)`` adds them; ``setup_from_args(args, layers, vocab)`` reads them back
as a ``simulator.memory.TrainingSetup`` (an ``InputError`` naming the flag for a bad value, which the
command line prints as one line with exit status 2). ``layers`` and ``vocab`` come from the command's
own ``--layers`` and ``--model`` (``simulator.commands.schedule_args``).
"""

from __future__ import annotations

import argparse

from simulator.memory.setup import OPTIMIZERS, RECOMPUTE, ZERO_STAGES, TrainingSetup

__all__ = ["add_model_state_arguments", "add_training_arguments", "setup_from_args"]


def add_model_state_arguments(group: argparse._ArgumentGroup, searched: bool = False) -> None:
    """Add ``--optimizer --zero --recompute`` to ``group`` (`simulate` and `predict --global-batch` share them);
    ``searched``: their default is None, the plan searches them (``simulator.training.settings``)."""
    group.add_argument("--optimizer", default="adam", metavar="|".join(OPTIMIZERS),
                       help="mixed-precision Adam (default: 16 B per parameter before sharding) or SGD with "
                            "momentum (12 B)")
    default = "searched per row: the lightest that fits, the fastest of those" if searched else None
    group.add_argument("--zero", type=int, default=None if searched else 0, metavar="|".join(map(str, ZERO_STAGES)),
                       help="ZeRO stage over the data-parallel group: 1 shards the optimizer state, 2 also the "
                            f"gradients, 3 also the parameters (default {default or 0})")
    group.add_argument("--recompute", default=None if searched else "none", metavar="|".join(RECOMPUTE),
                       help="activation recomputation: none, selective (the attention core), selective-op "
                            "(torchtitan's per-op policy: every second matmul, the norms and elementwise ops), full "
                            f"(each layer from its input) (default {default or 'none'})")


def add_training_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the training-memory options to ``parser``, in a group of their own."""
    group = parser.add_argument_group("training memory (a transformer's memory per GPU)")
    add_model_state_arguments(group)
    group.add_argument("--dp", type=int, default=1, metavar="D",
                       help="data-parallel degree ZeRO shards over (default 1)")


def setup_from_args(args: argparse.Namespace, layers: int, vocab: int | None, tied: bool = True) -> TrainingSetup:
    """The ``TrainingSetup`` of the parsed arguments, for ``layers`` blocks and a vocabulary (or None), its
    embedding ``tied`` to the LM head or not."""
    return TrainingSetup(optimizer=args.optimizer, zero=args.zero, recompute=args.recompute, dp=args.dp,
                         layers=layers, vocab=vocab, tied=tied)
