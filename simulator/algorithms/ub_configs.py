"""The SMs Transformer Engine's userbuffers kernels hold under ``--tp-comm-overlap``: TE's default and published configs.

Transformer Engine's ``initialize_ub`` (transformer_engine/pytorch/module/base.py at d0067d0,
``get_default_config``) gives each communicator ``num_sm`` SMs: 16 for the ``bulk`` and ``pipeline``
methods, 1 for ``ring_exchange`` (whose sends the copy engine moves). A tuned config sets ``num_sm`` per
communicator. tpsim charges the SMs of the communicators it lowers as collectives that run beside a GEMM
(``simulator.algorithms.tp_comm_overlap``; ``simulator.timing.sm_sharing`` charges num_sm / the device's SMs
for the overlapped time):

- ``qkv_dgrad``, ``fc1_dgrad``: the bulk all-gather of X beside the column-parallel dX GEMM;
- ``qkv_wgrad``, ``fc1_wgrad``: the bulk reduce-scatter of dX beside the dW GEMM;
- ``proj_fprop``, ``fc2_fprop``: the forward's reduce-scatter (``pipelined_reduce_forward``'s reduces),
  whatever method the config names for it (Megatron-Bridge's FP8 configs run it as a ``ring_exchange`` of
  one SM; tpsim still lowers it as the pipeline's reduces, charged that one SM).

The forward's and ``proj_dgrad`` / ``fc2_dgrad``'s all-gather rings are p2p sends and hold none here.

The configs kept are the ones the ``experiments.repro_nemo`` rows' recipes name, each under its own name
in its source (every value read from the file at the commit named):

- ``ub_cfg_h100_h6144_tp2_mbs2_seqlen2048``, ``ub_cfg_h100_h12288_tp4_mbs1_seqlen2048``,
  ``ub_cfg_h100_h8192_tp4_mbs1_seqlen4096``: NVIDIA/NeMo-Framework-Launcher at tag 24.07 (8325688d83),
  ``launcher_scripts/conf/training/tp_overlap/<name>.yaml``, which ``conf/training/gpt3/20b.yaml``,
  ``gpt3/175b.yaml`` and ``llama/llama2_70b.yaml`` name (``tp_overlap@model.ub_tp_comm_overlap_cfg``): the
  launcher NeMo 24.07's table was run with (``experiments.nemo_tables``).
- ``userbuffers_fp8_h100_h8192_tp4_mbs1_seqlen8192``, ``userbuffers_fp8_b200_h8192_tp2_mbs1_seqlen8192``:
  NVIDIA-NeMo/Megatron-Bridge ``src/megatron/bridge/training/comm_overlap.py`` at 1804c076f and 17a381f95
  (the same values at both), which ``scripts/performance/configs/llama/llama3_llm_pretrain.py`` sets for
  Llama 3 70B on H100 and on B200 / GB200 in FP8 (``llama3_70b_pretrain_config_h100``, ``_gb200``). NeMo 2.0's
  config of the H100 name (nemo/collections/llm/recipes/tp_overlap_configs/userbuffers.py at 9c5c5e9709) has
  the same bulk values but a ``pipeline`` forward of 24 and 16 SMs.
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.errors import InputError

__all__ = ["TE_DEFAULT", "UB_CONFIGS", "UbConfig", "ub_config"]

TE_DEFAULT = "te-default"
"""The name of Transformer Engine's own defaults (``--tp-comm-overlap`` with no tuned config)."""


@dataclass(frozen=True)
class UbConfig:
    """The SMs (``num_sm``) of each userbuffers communicator tpsim charges, as one config sets them."""

    qkv_dgrad: int
    """Bulk all-gather of QKV's input beside its dX GEMM."""
    qkv_wgrad: int
    """Bulk reduce-scatter of QKV's dX beside its dW GEMM."""
    fc1_dgrad: int
    """Bulk all-gather of FC1's input beside its dX GEMM."""
    fc1_wgrad: int
    """Bulk reduce-scatter of FC1's dX beside its dW GEMM."""
    proj_fprop: int
    """The forward reduce-scatter of proj's output."""
    fc2_fprop: int
    """The forward reduce-scatter of FC2's output."""
    source: str
    """Where the numbers are read."""

    def __post_init__(self) -> None:
        for name in ("qkv_dgrad", "qkv_wgrad", "fc1_dgrad", "fc1_wgrad", "proj_fprop", "fc2_fprop"):
            if getattr(self, name) < 1:
                raise ValueError(f"UbConfig.{name}: num_sm must be at least 1, got {getattr(self, name)}")

    def forward_sms(self, index: int) -> int:
        """The SMs of a row-parallel linear's forward reduce-scatter; ``index``: its place in the block (1 proj,
        3 FC2; a two-linear MLP's row-parallel linear, index 1, takes proj's)."""
        return self.fc2_fprop if index % 4 == 3 else self.proj_fprop

    def backward_sms(self, index: int) -> tuple[int, int]:
        """(dgrad's all-gather, wgrad's reduce-scatter) SMs of a column-parallel linear (index 0 QKV, 2 FC1)."""
        return (self.fc1_dgrad, self.fc1_wgrad) if index % 4 == 2 else (self.qkv_dgrad, self.qkv_wgrad)


_LAUNCHER = ("NVIDIA/NeMo-Framework-Launcher tag 24.07 (8325688d83), launcher_scripts/conf/training/tp_overlap/"
             "{}.yaml")
_BRIDGE = ("NVIDIA-NeMo/Megatron-Bridge src/megatron/bridge/training/comm_overlap.py at 1804c076f and 17a381f95, "
           "{} (proj_fprop, fc2_fprop: RingExchangeOverlapCfg(num_sm=1))")

UB_CONFIGS = {
    TE_DEFAULT: UbConfig(16, 16, 16, 16, 16, 16, "Transformer Engine transformer_engine/pytorch/module/base.py at "
                         "d0067d0, initialize_ub's get_default_config: num_sm 16 for bulk and pipeline"),
    "ub_cfg_h100_h6144_tp2_mbs2_seqlen2048": UbConfig(8, 16, 4, 16, 16, 24, _LAUNCHER.format(
        "ub_cfg_h100_h6144_tp2_mbs2_seqlen2048")),
    "ub_cfg_h100_h12288_tp4_mbs1_seqlen2048": UbConfig(4, 8, 2, 4, 24, 20, _LAUNCHER.format(
        "ub_cfg_h100_h12288_tp4_mbs1_seqlen2048")),
    "ub_cfg_h100_h8192_tp4_mbs1_seqlen4096": UbConfig(8, 16, 2, 4, 24, 16, _LAUNCHER.format(
        "ub_cfg_h100_h8192_tp4_mbs1_seqlen4096")),
    "userbuffers_fp8_h100_h8192_tp4_mbs1_seqlen8192": UbConfig(4, 24, 2, 4, 1, 1, _BRIDGE.format(
        "userbuffers_fp8_h100_h8192_tp4_mbs1_seqlen8192")),
    "userbuffers_fp8_b200_h8192_tp2_mbs1_seqlen8192": UbConfig(4, 24, 2, 4, 1, 1, _BRIDGE.format(
        "userbuffers_fp8_b200_h8192_tp2_mbs1_seqlen8192")),
}
"""Name -> config: TE's default and the published configs (module docstring)."""


def ub_config(name: str) -> UbConfig:
    """The config called ``name``; InputError listing the names otherwise."""
    try:
        return UB_CONFIGS[name]
    except KeyError:
        raise InputError(f"unknown --tp-comm-overlap-cfg {name!r}; valid: {', '.join(UB_CONFIGS)}") from None
