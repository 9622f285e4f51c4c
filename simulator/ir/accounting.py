"""Communication and compute accounting read straight off the IR, per rank.

Payload: for every collective or send/recv a rank takes part in, the bytes of that rank's
own buffer in the op (for all_gather the output buffer, for reduce_scatter the input buffer), summed.
FLOPs: ``Schedule.flops``: 2mkn per gemm; a ``local`` op's from its function's ``work`` (its batched
products' 2mkn, the attention core's, plus its elementwise arithmetic). ``gemm_flops`` counts the
``gemm`` ops only, the linears' products, so for the transformer it leaves out the attention core's
score and value products (``flops`` has them).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from simulator.ir.ops import CommOp, Gemm, Recv, Send
from simulator.ir.schedule import Schedule


@dataclass
class RankAccount:
    """Totals for one rank; ``collectives_by_kind`` is keyed "kind/group size", e.g. "broadcast/4"."""

    rank: int
    collectives: int = 0
    collectives_by_kind: Counter = field(default_factory=Counter)
    p2p_messages: int = 0
    payload_bytes: int = 0
    flops: int = 0
    gemm_flops: int = 0

    def to_dict(self) -> dict:
        """The JSON form (`tpsim schedule --json` per_rank entries)."""
        return {"rank": self.rank, "collectives": self.collectives,
                "collectives_by_kind": dict(sorted(self.collectives_by_kind.items())),
                "p2p_messages": self.p2p_messages, "payload_bytes": self.payload_bytes,
                "flops": self.flops, "gemm_flops": self.gemm_flops}


def account(schedule: Schedule) -> list[RankAccount]:
    """One RankAccount per rank."""
    accounts = []
    for rank, program in enumerate(schedule.programs):
        acct = RankAccount(rank)
        for op in program:
            if isinstance(op, CommOp):
                acct.payload_bytes += schedule.payload_bytes(rank, op)
                if isinstance(op, (Send, Recv)):
                    acct.p2p_messages += 1
                else:
                    acct.collectives += 1
                    acct.collectives_by_kind[f"{op.kind}/{len(schedule.groups[op.group])}"] += 1
            else:
                flops = schedule.flops(rank, op)
                acct.flops += flops
                if isinstance(op, Gemm):
                    acct.gemm_flops += flops
        accounts.append(acct)
    return accounts
