"""Model files: any dense decoder described in YAML or JSON, read into a ``ModelPreset``.

Keys (one model per file)::

    name: my-llama          # optional; default: the file's name without its extension
    layers: 32              # transformer layers
    hidden: 4096            # model width; divisible by heads
    heads: 32               # attention (query) heads
    kv_heads: 8             # key/value heads; divides heads (1: multi-query; default: heads)
    ffn: 14336              # MLP width (SwiGLU: the width of gate, up and down)
    vocab: 128256           # vocabulary (any size; padded as Megatron-LM pads it where it is split)
    seq: 8192               # sequence length in tokens
    norm: rmsnorm           # layernorm | rmsnorm (default layernorm)
    activation: swiglu      # gelu | swiglu (default gelu)
    position: rotary        # learned | rotary (default learned)
    tied: false             # true: the input embedding is the output layer's weight (default true)
    bias: false             # linears with biases (default: true with layernorm, false with rmsnorm)
    dropout: 0.0            # default 0

``layers hidden heads ffn vocab seq`` are required. A file that cannot be read, is not a mapping, has an
unknown, missing, ill-typed, negative or inconsistent field (hidden not divisible by heads, heads not
divisible by kv_heads, rotary with an odd head width) is one ``InputError`` line naming the field and
what is valid. YAML is read with ``yaml.safe_load``, and anchors and aliases are refused (a model is a
dozen scalars; an alias is how a small file becomes a huge document).

Example::

    >>> m = model_from_mapping({"layers": 2, "hidden": 64, "heads": 4, "kv_heads": 2, "ffn": 96,
    ...                         "vocab": 1000, "seq": 128, "norm": "rmsnorm", "activation": "swiglu"}, "tiny")
    >>> m.kv_heads, m.bias, m.parameter_count()
    (2, False, 133952)
"""

from __future__ import annotations

import json
import numbers
import os

import yaml

from simulator.errors import InputError
from simulator.files import read_text
from simulator.limits import check_extent
from simulator.workloads.models import ModelPreset
from simulator.workloads.workload import CHOICES

__all__ = ["KEYS", "REQUIRED", "is_model_file", "load_model_file", "model_from_mapping"]

REQUIRED = ("layers", "hidden", "heads", "ffn", "vocab", "seq")
KEYS = ("name", *REQUIRED[:3], "kv_heads", *REQUIRED[3:], "norm", "activation", "position", "tied", "bias",
        "dropout")
"""Every key a model file may have, in the order ``tpsim model show`` lists them."""
SUFFIXES = (".yaml", ".yml", ".json")


def is_model_file(text: str) -> bool:
    """Whether ``--model TEXT`` names a file rather than a preset: a YAML or JSON suffix, or a path."""
    return text.lower().endswith(SUFFIXES) or os.sep in text


def _load(path: str):
    text = read_text(path, "model file")
    if path.lower().endswith(".json"):
        try:
            return json.loads(text)
        except json.JSONDecodeError as error:
            raise InputError(f"model file {path}: not valid JSON ({error.msg} at line {error.lineno})") from None
    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
                raise InputError(f"model file {path}: YAML anchors and aliases are not accepted; write each "
                                 f"value out")
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise InputError(f"model file {path}: not valid YAML{where}") from None


def load_model_file(path: str) -> ModelPreset:
    """The model the YAML or JSON file at ``path`` describes (module doc); InputError for a bad file."""
    stem = os.path.splitext(os.path.basename(path))[0]
    return model_from_mapping(_load(path), stem, path)


def _integer(where: str, key: str, value) -> int:
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 1:
        raise InputError(f"{where}: {key} must be an integer >= 1, got {value!r}")
    check_extent(int(value), f"{where}: {key}")
    return int(value)


def model_from_mapping(data, name: str, where: str | None = None) -> ModelPreset:
    """The model of a parsed file's mapping ``data`` (``name`` when it has none; ``where`` for messages)."""
    where = f"model file {where or name}"
    if not isinstance(data, dict):
        raise InputError(f"{where}: expected a mapping of keys ({', '.join(KEYS)}), got {type(data).__name__}")
    unknown = [key for key in data if key not in KEYS]
    if unknown:
        raise InputError(f"{where}: unknown key {unknown[0]!r}; valid keys: {', '.join(KEYS)}")
    missing = [key for key in REQUIRED if key not in data]
    if missing:
        raise InputError(f"{where}: missing {', '.join(missing)} (required: {', '.join(REQUIRED)})")
    sizes = {key: _integer(where, key, data[key]) for key in REQUIRED}
    heads = sizes["heads"]
    kv = _integer(where, "kv_heads", data["kv_heads"]) if "kv_heads" in data else heads
    if sizes["hidden"] % heads:
        raise InputError(f"{where}: hidden {sizes['hidden']} must be divisible by heads {heads}")
    if heads % kv:
        raise InputError(f"{where}: heads {heads} must be divisible by kv_heads {kv} (valid kv_heads: "
                         f"{', '.join(str(k) for k in range(1, heads + 1) if heads % k == 0)})")
    choice = {}
    for key in ("norm", "activation", "position"):
        valid = CHOICES[key]
        value = data.get(key, valid[0])
        if value not in valid:
            raise InputError(f"{where}: {key} must be one of {', '.join(valid)}, got {value!r}")
        choice[key] = value
    if choice["position"] == "rotary" and (sizes["hidden"] // heads) % 2:
        raise InputError(f"{where}: position rotary needs an even head width, got hidden/heads = "
                         f"{sizes['hidden'] // heads}")
    flags = {}
    for key, default in (("tied", True), ("bias", choice["norm"] == "layernorm")):
        value = data.get(key, default)
        if not isinstance(value, bool):
            raise InputError(f"{where}: {key} must be true or false, got {value!r}")
        flags[key] = value
    dropout = data.get("dropout", 0.0)
    if not isinstance(dropout, numbers.Real) or isinstance(dropout, bool) or not 0 <= dropout < 1:
        raise InputError(f"{where}: dropout must be a number in [0, 1), got {dropout!r}")
    label = data.get("name", name)
    if not isinstance(label, str) or not label.strip():
        raise InputError(f"{where}: name must be a non-empty string, got {label!r}")
    return ModelPreset(name=label, dropout=float(dropout), published_params=None, source=where.split(" ", 2)[2],
                       kv_heads=kv, **sizes, **choice, **flags)
