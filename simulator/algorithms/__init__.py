"""The schedule generators: one module per tensor-parallel algorithm, the registry, the grid, compose.

==================  ===============================================================================
module              what it holds
==================  ===============================================================================
``base``            ``Algorithm``: what every algorithm provides (grids, checks, layouts, products)
``registry``        every algorithm class by name, and ``build_schedule`` over them
``arrangement``     ``Arrangement``: one algorithm on one grid with a placement; every one of P GPUs
``grid``            ``ProcessGrid``: [q, q, d] coordinates and row, column and depth groups
``compose``         lowers a workload's layer list onto one algorithm (the only code that does)
``megatron_1d``     1-D Megatron-LM (column- then row-parallel)
``megatron_1d_sp``  1-D Megatron-LM with sequence parallelism (all-gather / reduce-scatter)
``tp_comm_overlap`` 1d-sp's gathers and scatters in chunks beside chunked GEMMs (Transformer Engine's userbuffers)
``ub_configs``      the SMs TE's userbuffers kernels hold (``num_sm``): TE's default and published tuned configs
``summa_steps``     the SUMMA steps of one linear, shared by 2-D SUMMA and SUMMA2.5
``summa2d``         2-D SUMMA / Optimus on [q, q, 1]
``summa25d``        SUMMA2.5 / Tesseract on [q, q, d]
``cannon_steps``    Cannon's broadcast, skew, multiply-and-shift and reduce for one block product
``cannon25d``       Cannon 2.5-D (Solomonik & Demmel) on [q, q, c], c | q
``cube``            ``ProcessCube``: [q, q, q] coordinates and the three families of lines
``tensor3d``        3-D tensor parallelism (Bian et al.; Colossal-AI 3-D) on [q, q, q]
==================  ===============================================================================
"""

__all__ = ["arrangement", "base", "cannon25d", "cannon_steps", "compose", "cube", "grid", "megatron_1d", "megatron_1d_sp", "registry",
           "summa25d", "summa2d", "summa_steps", "tensor3d", "tp_comm_overlap", "ub_configs"]
