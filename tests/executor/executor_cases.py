"""Schedules the executor tests run: the issue's small grids, and one hand-made schedule that uses every op
kind the generators do not (all_gather, reduce_scatter, both axes, a group declared out of order).

Multi-process tests fork gloo ranks from the pytest process (``executor.launch.run_local``), which has
imported torch once, so a job of 8 ranks starts in well under a second.
"""

from __future__ import annotations

from simulator.algorithms.registry import build_schedule
from simulator.ir.builder import ScheduleBuilder
from simulator.ir.ops import (AllGather, AllReduce, Broadcast, Gemm, Local, Recv, Reduce, ReduceScatter, Send, Slice,
                              Wait)
from simulator.workloads.workload import Workload

GEMM = Workload.gemm(16, 8, 8)
MLP = Workload.mlp(16, 8)
WORKLOADS = {"gemm": GEMM, "mlp": MLP}
GRIDS = {"1d": {"gpus": 4}, "2d": {"grid": (2, 2, 1)}, "summa25d": {"grid": (2, 2, 2)},
         "cannon25d": {"grid": (2, 2, 2)}}
"""The issue's grids: 1d on 4; 2d [2,2,1]; summa25d [2,2,2]; cannon25d [2,2,2]."""
WORLD = {"1d": 4, "2d": 4, "summa25d": 8, "cannon25d": 8}
OVERLAP = ("2d", "summa25d")

TRANSFORMER = Workload.transformer(batch=4, seq=3, hidden=12, heads=6, ffn=18, dropout=0.1)
"""A transformer block every grid below divides: heads % 2 and % 3, batch % (d q) = 4 (summa25d), M % 2
(1d-sp); h/a = 2, and ffn != hidden so that a swapped dimension does not fit."""
TRANSFORMER_GRIDS = {"1d-2": ("1d", {"gpus": 2}), "1d-3": ("1d", {"gpus": 3}), "1d-sp": ("1d-sp", {"gpus": 2}),
                     "2d": ("2d", {"grid": (2, 2, 1)}), "summa25d": ("summa25d", {"grid": (2, 2, 2)}),
                     "cannon25d": ("cannon25d", {"grid": (2, 2, 2)})}
"""Case -> (algorithm, grid): every algorithm, 1d on an even and an odd number of ranks."""


def make_transformer(case: str, passes: str = "both", dtype: str = "float64"):
    """The transformer block's schedule of ``case`` (a ``TRANSFORMER_GRIDS`` key)."""
    algo, grid = TRANSFORMER_GRIDS[case]
    return build_schedule(algo, TRANSFORMER, passes, dtype, **grid)


def gpu_count() -> int:
    """CUDA GPUs visible, for skip conditions: counted in a forked probe (``executor.launch.visible_gpus``).

    Skip conditions run in the pytest process, which forks the ranks of every test after them; asking
    torch.cuda whether it is available there would initialise the CUDA driver in the parent of NCCL ranks.
    """
    from executor.launch import visible_gpus

    return visible_gpus()


def make(algo: str, workload: str = "gemm", passes: str = "both", dtype: str = "float32", overlap: bool = False):
    """The schedule of ``algo`` on its test grid."""
    return build_schedule(algo, WORKLOADS[workload], passes, dtype, overlap=overlap, **GRIDS[algo])


def every_variant(algo: str, dtype: str = "float32") -> list:
    """Every workload x pass (x --overlap where the algorithm has it) of ``algo``."""
    overlaps = (False, True) if algo in OVERLAP else (False,)
    return [make(algo, w, p, dtype, o) for w in WORKLOADS for p in ("fwd", "bwd", "both") for o in overlaps]


def mixed_schedule():
    """C = A B on 3 ranks through every collective kind, both axes, one send/recv pair, and every local
    function (``function_chain``).

    Group ``ring`` is declared (2, 0, 1): IR index g is global rank ring[g], so torch's sorted group
    order differs from the IR's and every order mapping is exercised. Group ``all`` = (0, 1, 2) takes
    the single-tensor fast paths. Rank with ring index g starts with A's row block g and B's column
    block g; every output block below must equal the matching block of A B.
    """
    w = Workload.gemm(6, 6, 6)
    ring, everyone = (2, 0, 1), (0, 1, 2)
    b = ScheduleBuilder("mixed", (3,), w, "fwd", "float32", 3, {"ring": ring, "all": everyone})
    for rank in range(3):
        g = ring.index(rank)
        rows = (2 * g, 2 * g + 2)
        b.block("input", rank, "A_blk", "A", rows, (0, 6))
        b.block("input", rank, "B_blk", "B", (0, 6), (2 * g, 2 * g + 2))
        for name, shape in (("A_full", (6, 6)), ("B_full", (6, 6)), ("A_cols", (6, 2)), ("B_rows", (2, 6)),
                            ("P", (6, 6)), ("C_red", (6, 6)), ("C_bc", (6, 6)), ("C_own", (2, 6))):
            b.buffer(rank, name, shape)
        b.emit(rank, AllGather(group="ring", inp="A_blk", out="A_full", axis=0))
        b.emit(rank, AllGather(group="ring", inp="B_blk", out="B_full", axis=1, handle="bg"))
        b.emit(rank, Wait(handle="bg"))
        b.emit(rank, Slice(out="A_cols", src="A_full", src_cols=(2 * g, 2 * g + 2)))
        b.emit(rank, Slice(out="B_rows", src="B_full", src_rows=(2 * g, 2 * g + 2)))
        b.emit(rank, Gemm(out="P", a="A_cols", b="B_rows"))  # this rank's partial sum of C
        b.block("output", rank, "C_rows", "C", rows, (0, 6))
        b.emit(rank, ReduceScatter(group="ring", inp="P", out="C_rows", axis=0))
        function_chain(b, rank, g)
        b.block("output", rank, "C_cols", "C", (0, 6), (2 * g, 2 * g + 2))
        b.emit(rank, ReduceScatter(group="ring", inp="P", out="C_cols", axis=1, handle="rs"))
        b.emit(rank, Wait(handle="rs"))
        b.block("output", rank, "C_rs", "C", (2 * rank, 2 * rank + 2), (0, 6))
        b.emit(rank, ReduceScatter(group="all", inp="P", out="C_rs", axis=0))
        # gloo overwrites a non-root's reduce input; P is read again below, so the executor must protect it
        b.emit(rank, Reduce(group="ring", root=1, buf="P", out="C_red"))
        b.emit(rank, AllReduce(group="ring", buf="P", handle="ar"))
        b.emit(rank, Wait(handle="ar"))
        b.block("output", rank, "P", "C", (0, 6), (0, 6))
        if rank == ring[0]:
            b.emit(rank, Local(fn="copy", out="C_bc", inputs=("P",)))
        b.emit(rank, Broadcast(group="ring", root=0, buf="C_bc"))
        b.block("output", rank, "C_bc", "C", (0, 6), (0, 6))
        b.emit(rank, Slice(out="C_own", src="P", src_rows=(2 * rank, 2 * rank + 2)))
        b.block("output", rank, "C_ag", "C", (0, 6), (0, 6))
        b.emit(rank, AllGather(group="all", inp="C_own", out="C_ag", axis=0))
    b.block("output", ring[1], "C_red", "C", (0, 6), (0, 6))  # the reduce's root: ring index 1 = rank 0
    b.block("output", 1, "C_peer", "C", (0, 2), (0, 6))
    b.emit(0, Send(peer=1, buf="C_ag"))  # rank 0 sends its gathered C; rank 1 keeps rows 0..1 of it
    b.buffer(1, "C_recv", (6, 6))
    b.emit(1, Recv(peer=0, buf="C_recv"))
    b.emit(1, Slice(out="C_peer", src="C_recv", src_rows=(0, 2)))
    return b.build()


LN = {"n": 6, "eps": 1e-5}
RMS = {"n": 8, "eps": 1e-5}
ROPE = {"seq": 2, "group": 2, "head_dim": 2}
"""The Llama chain's block: one sequence of 2 tokens, one key/value group of 2 query heads of width 2, so
its [2, 8] columns are Q0 Q1 K V (``kernels.attention``'s grouped layout). A group above 1 makes an
executor that dropped the ``group`` parameter (the kernels' default is 1) differ from the interpreter."""


def function_chain(b: ScheduleBuilder, rank: int, g: int) -> None:
    """Every function of ``FUNCTIONS`` on ``rank`` in two chains, each feeding the next, parameterised and
    seeded ones with their parameters, ending in output ``C_fn`` = C_rows + gelu_backward(0, ...) = C_rows.

    Two chains start from the input A_blk [2, 6] (ring index ``g``, rows 2g .. 2g+1 of A). The GPT one
    (``_gpt_steps``): LayerNorm's pieces over its 6 columns, dropout of its global elements, attention with
    it as one sequence of 2 tokens and one head of width 2 (Q, K, V side by side), and back, then the fused
    LayerNorm and Megatron-LM's fused bias-GeLU and bias-dropout-add with their backwards. The Llama one
    (``_llama_steps``) takes A_blk widened by two slices to [2, 8] (no local function widens a block; A_blk
    itself rather than the GPT chain's end keeps its values O(1), where SwiGLU's sigmoid does not
    saturate): RMSNorm over its 8 columns, rotary embeddings and grouped-query attention on it as one
    key/value group (``ROPE``), unfused and FlashAttention-2, each one's backward taking the other's
    context as its gradient, and the Triton kernel's pair (its own context as the gradient), SwiGLU on the rotated-back gradient as 4 interleaved gate/up pairs, and
    RMSNorm's backward, and the fused RMSNorm both ways. The two meet in a row statistic: the Llama chain's end's row sum of squares
    normalises the GPT chain's end, so every column either wrote reaches the output.

    Its values reach C only through a product with zero, so every output still equals A B; but every
    buffer starts as NaN, so a function that is skipped, or leaves part of its output unwritten, makes
    C_fn NaN and fails the check. ``test_op_kinds`` compares each step's value with the interpreter's,
    seed included.
    """
    def run(steps) -> None:
        for out, shape, fn, inputs, params in steps:
            b.buffer(rank, out, shape)
            b.emit(rank, Local(fn=fn, out=out, inputs=inputs, params=tuple(params.items())))

    run(_gpt_steps(g))
    b.buffer(rank, "L_in", (2, 8))
    b.emit(rank, Slice(out="L_in", src="A_blk", out_cols=(0, 6)))
    b.emit(rank, Slice(out="L_in", src="A_blk", src_cols=(0, 2), out_cols=(6, 8)))
    run(_llama_steps(g))
    run((("F_z", (2, 6), "gelu", ("L_y",), {}),
         ("F_0", (2, 6), "zero", (), {}),
         ("F_nil", (2, 6), "gelu_backward", ("F_0", "F_z"), {})))
    b.block("output", rank, "C_fn", "C", (2 * g, 2 * g + 2), (0, 6))
    b.emit(rank, Local(fn="add", out="C_fn", inputs=("C_rows", "F_nil")))


def _gpt_steps(g: int) -> tuple:
    """The GPT block's functions from A_blk to F_hb [2, 6]: (out, shape, function, inputs, params)."""
    attention = {"p": 0.5, "stream": 1, "seq": 2, "heads": 1, "head_dim": 2, "batch0": g, "head0": 0,
                 "heads_total": 1}
    dropout = {"p": 0.5, "stream": 0, "row0": 2 * g, "col0": 0, "width": 6}
    return (("F_mom", (2, 2), "row_moments", ("A_blk",), {}),
            ("F_g", (1, 6), "col_sum", ("A_blk",), {}),
            ("F_b", (1, 6), "copy", ("F_g",), {}),
            ("F_ln", (2, 6), "layernorm", ("A_blk", "F_mom", "F_g", "F_b"), LN),
            ("F_drop", (2, 6), "dropout", ("F_ln",), dropout),
            ("F_qkv", (2, 6), "bias_add", ("F_drop", "F_b"), {}),
            ("F_ctx", (2, 2), "attention", ("F_qkv",), attention),
            ("F_dqkv", (2, 6), "attention_backward", ("F_ctx", "F_qkv"), attention),
            ("F_sums", (2, 2), "layernorm_backward_moments", ("F_dqkv", "A_blk", "F_mom", "F_g"), LN),
            ("F_dx", (2, 6), "layernorm_backward", ("F_dqkv", "A_blk", "F_mom", "F_g", "F_sums"), LN),
            ("F_dg", (1, 6), "layernorm_gamma_grad", ("F_dx", "A_blk", "F_mom"), LN),
            ("F_h", (2, 6), "add", ("F_dx", "F_qkv"), {}),
            ("F_hb", (2, 6), "bias_add", ("F_h", "F_dg"), {}),
            # the fused LayerNorm (whole rows) and Megatron-LM's fused bias kernels on what the pieces left
            ("F_fm", (2, 2), "layernorm_fused_stats", ("F_hb",), {}),
            ("F_fln", (2, 6), "layernorm_fused", ("F_hb", "F_fm", "F_g", "F_b"), LN),
            ("F_fdx", (2, 6), "layernorm_fused_backward", ("F_fln", "F_hb", "F_fm", "F_g"), LN),
            ("F_fdg", (1, 6), "layernorm_fused_gamma_grad", ("F_fdx", "F_hb", "F_fm"), LN),
            ("F_fdb", (1, 6), "layernorm_fused_beta_grad", ("F_fdx",), {}),
            ("F_tdg", (1, 6), "layernorm_te_gamma_grad", ("F_fdx", "F_hb", "F_fm"), LN),  # TE's dgamma
            ("F_fdg2", (1, 6), "add", ("F_fdg", "F_tdg"), {}),
            ("F_bg", (2, 6), "bias_gelu", ("F_fdx", "F_fdg2"), {}),
            ("F_bgb", (2, 6), "bias_gelu_backward", ("F_bg", "F_fdx", "F_fdb"), {}),
            ("F_bda", (2, 6), "bias_dropout_add", ("F_bgb", "F_fdb", "F_fln"), {**dropout, "stream": 6}),
            ("F_end", (2, 6), "dropout_backward", ("F_bda",), {**dropout, "stream": 6}))


def _llama_steps(g: int) -> tuple:
    """The Llama block's functions from L_in [2, 8] (``ROPE``) to L_y [2, 6]: (out, shape, function,
    inputs, params)."""
    gqa = {"p": 0.5, "stream": 2, "seq": 2, "heads": 2, "head_dim": 2, "batch0": g, "head0": 0,
           "heads_total": 2, "group": 2}
    flash = {**gqa, "stream": 3}
    triton = {**gqa, "stream": 4}  # the functions take p; a triton workload refuses dropout before it gets here
    cudnn = {**gqa, "stream": 5}
    return (("L_ss", (2, 1), "row_sumsq", ("L_in",), {}),
            ("L_gamma", (1, 8), "col_sum", ("L_in",), {}),
            ("L_x", (2, 8), "rmsnorm", ("L_in", "L_ss", "L_gamma"), RMS),
            ("L_rot", (2, 8), "rotary", ("L_x",), ROPE),
            ("L_ctx", (2, 4), "attention_gqa", ("L_rot",), gqa),
            ("L_fctx", (2, 4), "flash_attention", ("L_rot",), flash),
            ("L_dqkv", (2, 8), "attention_gqa_backward", ("L_fctx", "L_rot"), gqa),
            ("L_fdqkv", (2, 8), "flash_attention_backward", ("L_ctx", "L_rot"), flash),
            ("L_tctx", (2, 4), "triton_attention", ("L_rot",), triton),
            ("L_tdqkv", (2, 8), "triton_attention_backward", ("L_tctx", "L_rot"), triton),
            ("L_dsum", (2, 8), "add", ("L_dqkv", "L_fdqkv"), {}),
            ("L_dall", (2, 8), "add", ("L_dsum", "L_tdqkv"), {}),
            ("L_cctx", (2, 4), "cudnn_attention", ("L_rot",), cudnn),
            ("L_cdqkv", (2, 8), "cudnn_attention_backward", ("L_cctx", "L_rot"), cudnn),
            ("L_dcud", (2, 8), "add", ("L_dall", "L_cdqkv"), {}),
            ("L_drot", (2, 8), "rotary_backward", ("L_dcud",), ROPE),
            ("L_z", (2, 4), "swiglu", ("L_drot",), {}),
            ("L_dh", (2, 8), "swiglu_backward", ("L_z", "L_drot"), {}),
            ("L_gs", (2, 1), "rmsnorm_backward_sum", ("L_dh", "L_in", "L_ss", "L_gamma"), RMS),
            ("L_dx", (2, 8), "rmsnorm_backward", ("L_dh", "L_in", "L_ss", "L_gamma", "L_gs"), RMS),
            ("L_dg", (1, 8), "rmsnorm_gamma_grad", ("L_dx", "L_in", "L_ss"), RMS),
            ("L_h", (2, 8), "bias_add", ("L_dx", "L_dg"), {}),
            ("L_fss", (2, 1), "rmsnorm_fused_stats", ("L_h",), {}),
            ("L_fx", (2, 8), "rmsnorm_fused", ("L_h", "L_fss", "L_dg"), RMS),
            ("L_fdx", (2, 8), "rmsnorm_fused_backward", ("L_fx", "L_h", "L_fss", "L_dg"), RMS),
            ("L_fdg", (1, 8), "rmsnorm_fused_gamma_grad", ("L_fdx", "L_h", "L_fss"), RMS),
            ("L_h2", (2, 8), "bias_add", ("L_fdx", "L_fdg"), {}),
            ("L_tdg", (1, 8), "rmsnorm_te_gamma_grad", ("L_fdx", "L_h", "L_fss"), RMS),  # TE's dgamma
            # torchtitan's eager RMSNorm (the fused values, eager passes) on what the fused one left
            ("L_ess", (2, 1), "rmsnorm_eager_stats", ("L_h2",), {}),
            ("L_ex", (2, 8), "rmsnorm_eager", ("L_h2", "L_ess", "L_tdg"), RMS),
            ("L_edx", (2, 8), "rmsnorm_eager_backward", ("L_ex", "L_h2", "L_ess", "L_tdg"), RMS),
            ("L_edg", (1, 8), "rmsnorm_eager_gamma_grad", ("L_edx", "L_h2", "L_ess"), RMS),
            ("L_h3", (2, 8), "bias_add", ("L_edx", "L_edg"), {}),
            # torchtitan's eager rotary and SwiGLU (the fused values, eager passes) on the normalised L_x
            ("L_erot", (2, 8), "rotary_eager", ("L_x",), ROPE),
            ("L_edrot", (2, 8), "rotary_eager_backward", ("L_erot",), ROPE),
            ("L_ez", (2, 4), "swiglu_eager", ("L_edrot",), {}),
            ("L_edh", (2, 8), "swiglu_eager_backward", ("L_ez", "L_edrot"), {}),
            ("L_h4", (2, 8), "add", ("L_h3", "L_edh"), {}),
            ("L_hss", (2, 1), "row_sumsq", ("L_h4",), {}),
            ("L_y", (2, 6), "rmsnorm", ("F_end", "L_hss", "F_g"), LN))
