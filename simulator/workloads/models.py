"""Published transformer models as presets: the shapes a plan is made for, each with its source.

``MODELS`` maps a name to a ``ModelPreset``; ``preset(name)`` looks one up (a misspelt name is an
``InputError`` naming the closest ones). ``tpsim model list`` prints them all.

=================  ==============================================================  ====  ======
family             source                                                          seq   vocab
=================  ==============================================================  ====  ======
``gpt3-*``         Brown et al. 2020, "Language Models are Few-Shot Learners",     2048  50257
                   Table 2.1 (arXiv 2005.14165)
``megatron-22b``   Korthikanti et al. 2022, "Reducing Activation Recomputation     2048  51200
.. ``-1t``         in Large Transformer Models", Table 3 (arXiv 2205.05198)
``megatron-1.2b``  Shoeybi et al. 2019, "Megatron-LM", Table 1, the GPT-2 models   1024  51200
.. ``-8.3b``       of the scaling study (arXiv 1909.08053)
=================  ==============================================================  ====  ======

Every model is a GPT: pre-LayerNorm decoder layers with an MLP of 4*hidden, learned position
embeddings, and the input embedding tied to the output layer. ``parameter_count()`` counts those
weights; it lands within 2% of every published count (the tests hold it to 5%).

Example::

    >>> m = preset("gpt3-13b")
    >>> m.hidden, m.heads, m.hidden // m.heads, f"{m.parameter_count():.3e}"
    (5120, 40, 128, '1.285e+10')
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from simulator.errors import InputError

__all__ = ["MODELS", "ModelPreset", "preset"]


@dataclass(frozen=True)
class ModelPreset:
    """One published model's shape: sizes, sequence length, dropout, and where they come from."""

    name: str
    """The name on the command line, e.g. ``"gpt3-13b"``."""
    hidden: int
    """Model width (d_model); a multiple of ``heads``."""
    heads: int
    """Attention heads per layer; the head width is hidden / heads."""
    ffn: int
    """MLP width (d_ff); 4 * hidden for every preset here."""
    layers: int
    """Transformer layers."""
    seq: int
    """Sequence length (context) in tokens."""
    dropout: float
    """Dropout probability (hidden and attention)."""
    vocab: int
    """Vocabulary size the parameter count uses (the embedding's rows)."""
    published_params: float
    """The parameter count the source states, e.g. 13.0e9."""
    source: str
    """Paper, year and table the sizes come from."""

    def __post_init__(self) -> None:
        for label in ("hidden", "heads", "ffn", "layers", "seq", "vocab"):
            value = getattr(self, label)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"model {self.name}: {label} must be an integer >= 1, got {value!r}")
        if self.hidden % self.heads:
            raise ValueError(f"model {self.name}: hidden {self.hidden} is not divisible by heads {self.heads}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"model {self.name}: dropout must be in [0, 1), got {self.dropout!r}")
        if not self.published_params > 0:
            raise ValueError(f"model {self.name}: published_params must be > 0, got {self.published_params!r}")

    def parameter_count(self) -> int:
        """The trainable weights of this GPT: L*(4h^2 + 2hf + f + 9h) + vocab*h + seq*h + 2h.

        One layer, with h = hidden and f = ffn:

        - attention: QKV projection h x 3h plus bias, 3h^2 + 3h; output projection h^2 + h;
        - MLP: FC1 h x f plus bias, h*f + f; FC2 f x h plus bias, f*h + h;
        - two LayerNorms (scale and shift each), 4h;

        together 4h^2 + 2hf + f + 9h, which for f = 4h is the familiar 12h^2 + 13h. Outside the layers:
        the token embedding vocab*h (tied: the output layer reuses it, so it counts once), learned
        position embeddings seq*h, and the final LayerNorm 2h. For megatron-175b:
        96*(12*12288^2 + 13*12288) + 51200*12288 + 2048*12288 + 2*12288 = 174.6e9.
        """
        h, f = self.hidden, self.ffn
        per_layer = 4 * h * h + 2 * h * f + f + 9 * h
        return self.layers * per_layer + self.vocab * h + self.seq * h + 2 * h


# GPT-3 (Brown et al. 2020, Table 2.1): context 2048 and the GPT-2 tokenizer's 50257 tokens for all
# eight. The paper gives no dropout; 0.1 is GPT-2's and Megatron-LM's default.
_GPT3 = "Brown et al. 2020, Table 2.1"
# Megatron-LM GPT models of Korthikanti et al. 2022, Table 3: s = 2048 and v = 51200 for all four (the
# paper's text; 51200 is GPT-2's 50257 padded). Dropout is not in the table: Megatron-LM's default 0.1.
_KORTHIKANTI = "Korthikanti et al. 2022, Table 3"
# Shoeybi et al. 2019, Table 1: the GPT-2 models of the weak-scaling study, 96 channels per head
# throughout; sequence 1024, vocabulary 50257 padded to 51200 (a multiple of 1024, for the logit GEMM),
# dropout 0.1, all from the paper's text.
_SHOEYBI = "Shoeybi et al. 2019, Table 1"


def _gpt(name: str, layers: int, hidden: int, heads: int, params: float, source: str, seq: int, vocab: int,
         dropout: float = 0.1) -> ModelPreset:
    return ModelPreset(name=name, hidden=hidden, heads=heads, ffn=4 * hidden, layers=layers, seq=seq,
                       dropout=dropout, vocab=vocab, published_params=params, source=source)


_PRESETS = (
    #    name             layers  hidden  heads  published
    _gpt("gpt3-125m",     12,     768,    12,    125e6,   _GPT3, 2048, 50257),
    _gpt("gpt3-350m",     24,     1024,   16,    350e6,   _GPT3, 2048, 50257),
    _gpt("gpt3-760m",     24,     1536,   16,    760e6,   _GPT3, 2048, 50257),
    # Table 2.1 prints 24 heads of d_head 128 for d_model 2048, and 24 x 128 = 3072 != 2048. Kept:
    # d_model 2048 (it gives the published 1.3B) and d_head 128; so 16 heads, as GPT-Neo 1.3B and
    # Megatron-DeepSpeed's GPT-3 XL configuration use.
    _gpt("gpt3-1.3b",     24,     2048,   16,    1.3e9,   _GPT3 + " (24 -> 16 heads)", 2048, 50257),
    _gpt("gpt3-2.7b",     32,     2560,   32,    2.7e9,   _GPT3, 2048, 50257),  # d_head 80, as printed
    _gpt("gpt3-6.7b",     32,     4096,   32,    6.7e9,   _GPT3, 2048, 50257),
    # Table 2.1 prints d_model 5140 with 40 heads of 128, and 40 x 128 = 5120; 5140 is not divisible by
    # 40. Kept: the heads and d_head, so hidden 5120 = 40 x 128 (as Megatron-DeepSpeed's GPT-3 13B
    # configuration and OPT-13B use); 5140 is taken for a typo.
    _gpt("gpt3-13b",      40,     5120,   40,    13.0e9,  _GPT3 + " (hidden 5140 -> 5120)", 2048, 50257),
    _gpt("gpt3-175b",     96,     12288,  96,    175.0e9, _GPT3, 2048, 50257),

    _gpt("megatron-22b",  48,     6144,   64,    22e9,    _KORTHIKANTI, 2048, 51200),
    _gpt("megatron-175b", 96,     12288,  96,    175e9,   _KORTHIKANTI, 2048, 51200),
    _gpt("megatron-530b", 105,    20480,  128,   530e9,   _KORTHIKANTI, 2048, 51200),
    _gpt("megatron-1t",   128,    25600,  160,   1e12,    _KORTHIKANTI, 2048, 51200),

    _gpt("megatron-1.2b", 40,     1536,   16,    1.2e9,   _SHOEYBI, 1024, 51200),
    _gpt("megatron-2.5b", 54,     1920,   20,    2.5e9,   _SHOEYBI, 1024, 51200),
    _gpt("megatron-4.2b", 64,     2304,   24,    4.2e9,   _SHOEYBI, 1024, 51200),
    _gpt("megatron-8.3b", 72,     3072,   32,    8.3e9,   _SHOEYBI, 1024, 51200),
)

MODELS: dict[str, ModelPreset] = {m.name: m for m in _PRESETS}
"""Every preset by name, in the order ``tpsim model list`` prints them."""


def preset(name: str) -> ModelPreset:
    """The preset called ``name``; an ``InputError`` naming the closest valid names if there is none."""
    try:
        return MODELS[name]
    except KeyError:
        closest = difflib.get_close_matches(name, MODELS, n=3, cutoff=0.0)
        raise InputError(f"unknown model {name!r}; closest: {', '.join(closest)} "
                         f"(`tpsim model list` prints them all)") from None
