"""Scripts that reproduce tables of measurements and predictions: ``python -m experiments.NAME``.

=========================  ==========================================================================
module                     what it holds
=========================  ==========================================================================
``paper_25d_claim``        the SUMMA2.5 paper's [4,4,4] vs [8,8,1] claim on 64 GPUs, as tpsim predicts it
``nccl_realism``           the uncalibrated dgx-a100 preset against real nccl-tests logs, per size
``calibration_holdout``    calibration on the nccl-tests logs: the error on held-out sets
``nccl_fidelity``          every published nccl-tests log: presets and carried calibrations, error tables
``cpu_loop``               bench -> calibrate -> run -> compare on gloo ranks, repeated
``gpu_check``              on a GPU machine: gemm throughput over shapes, its compute fit, NCCL at world size 1
``sustained_gemm``         one GEMM shape back to back for seconds: the rate a GPU sustains against its first second
``bench_scale``            issue 14's scale cases end to end, each beside the code before it
``bench_simulator``        the whole simulator's speed on the largest grids
``bench_network``          the flow network's speed on a few traffic patterns
``bench_plan``             whole training steps' speed, 1,024 to 16,384 GPUs (`predict --global-batch`), Llama 3 405B
``pp_dp_overlap``          bounds on what pipeline sends and the DP reduction would add sharing one network
``guard_costs``            the guards' time and memory estimates beside what each command really costs
``bench_cli_start``        how fast `tpsim` starts: --version, --help, the main job; which heavy imports each pays
``quiet_host``             waiting for an idle host, and telling a disturbed run
``published``              published figure vs prediction: the rows, CSV and PNG of every paper reproduction
``outputs``                where a run writes by default: experiments/out/, or a temporary folder under --quick
``block_time``             one transformer block's simulated time under one arrangement, and its command
``step_time``              one arrangement's whole training step of a published model, and its command
``paper_code``             a schedule as a paper's own code ran it (Tesseract without the depth all-reduce)
``repro_tesseract``        the Tesseract (SUMMA2.5) paper's seven speedups, published vs predicted
``speedup``                a published speedup at one configuration, with the ratio at other sizes
``repro_optimus``          Optimus's 2-D over 1-D speedups on 64 Frontera GPUs, published vs predicted
``repro_3d``               the 3-D TP paper's speedups over 1-D and 2-D on 64 V100s, published vs predicted
``repro_megatron``         Megatron-LM's weak-scaling efficiencies on DGX-2H, 1 to 512 GPUs, published vs predicted
``repro_training``         Korthikanti et al. 2022's 22B per-layer and per-iteration times, published vs predicted
``pipeline_tables``        Narayanan et al. 2021 Table 1 and Korthikanti et al. 2022 Table 5, as published
``repro_pipeline``         pipelined Megatron-LM runs (those two tables), published vs predicted, and the sensitivity
``fsdp_tables``            llm-foundry's MPT and torchtitan's Llama 3.1 8B FSDP throughput rows, as published
``repro_fsdp``             those FSDP rows, published vs predicted, with the GEMM cap and communication share varied
``fsdp_share_plot``        repro_fsdp's second PNG: each row's error against its communication share
``gemm_cap_sweep``         the three training reproductions at once with every GEMM capped at one flat rate
``gemm_cap``               preset clusters with every GEMM capped at a flat fraction of peak
``nemo_tables``            NVIDIA's NeMo / Megatron-Bridge pre-training rows on H100, B200, GB200, as published
``repro_nemo``             those rows, published vs predicted, with the FP8 GEMM rate and TP overlap varied
``step_calibration``       calibrate --from-steps on the published tables: one row fitted, the rest of its GPU predicted
``published_table``        docs/published.md's table of every published figure, from the committed CSVs (--check, --write)
=========================  ==========================================================================

Their results and the lab notes behind them are in experiments/README.md; ``models/`` holds the model files
(MPT, NeMo's GPT3-5B and 20B) the reproductions name.
"""

__all__ = ["bench_cli_start", "bench_network", "bench_plan", "bench_scale", "bench_simulator", "block_time",
           "calibration_holdout",
           "cpu_loop", "fsdp_share_plot", "fsdp_tables", "gemm_cap", "gemm_cap_sweep", "gpu_check", "guard_costs",
           "nccl_fidelity", "nccl_realism", "nemo_tables", "outputs", "paper_25d_claim", "paper_code", "pipeline_tables", "pp_dp_overlap",
           "published", "published_table", "quiet_host",
           "repro_3d", "repro_fsdp", "repro_megatron", "repro_nemo", "repro_pipeline", "repro_training", "repro_optimus", "repro_tesseract", "speedup", "step_calibration", "step_time",
           "sustained_gemm"]
