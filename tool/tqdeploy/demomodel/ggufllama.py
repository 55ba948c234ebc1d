"""Read a Llama GGUF (llama.cpp's format) into what a transformers checkpoint holds: the config values and
float32 tensors under transformers' names, with llama.cpp's changes to the layout undone.

Reads with the `gguf` package (llama.cpp's own reader, gguf-py) and numpy. Two things llama.cpp's writer does
that a transformers checkpoint does not:
- names: `blk.N.attn_q.weight` for `model.layers.N.self_attn.q_proj.weight` and so on (TENSOR_NAMES below);
- attn_q / attn_k rows permuted per head (llama.cpp's convert_hf_to_gguf.py LlamaModel.permute: rotary pairs
  interleaved). `unpermute` is the inverse; transformers does the same in
  transformers/modeling_gguf_pytorch_utils.py (LlamaTensorProcessor._reverse_permute_weights, 5.19.0 in .venv-vllm),
  with the KV head count for attn_k.
The file was digest-checked before it gets here; the values are still type-checked, so that a wrong file is
an error naming the key, not a broken checkpoint.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from tqdeploy.errors import TQError

if TYPE_CHECKING:  # gguf is imported where a file is read (the demo model only)
    from gguf import GGUFReader

# GGUF leaf name -> transformers name, for `blk.N.<leaf>` (per layer) and the top level.
LAYER_NAMES = {
    "attn_norm.weight": "input_layernorm.weight",
    "ffn_norm.weight": "post_attention_layernorm.weight",
    "attn_q.weight": "self_attn.q_proj.weight",
    "attn_k.weight": "self_attn.k_proj.weight",
    "attn_v.weight": "self_attn.v_proj.weight",
    "attn_output.weight": "self_attn.o_proj.weight",
    "ffn_gate.weight": "mlp.gate_proj.weight",
    "ffn_up.weight": "mlp.up_proj.weight",
    "ffn_down.weight": "mlp.down_proj.weight",
}
TOP_NAMES = {
    "token_embd.weight": "model.embed_tokens.weight",
    "output_norm.weight": "model.norm.weight",
    "output.weight": "lm_head.weight",  # absent when the embeddings are tied
}
_LAYER = re.compile(r"blk\.(\d{1,4})\.(.+)")


@dataclass(frozen=True)
class LlamaShape:
    layers: int
    hidden: int
    intermediate: int
    heads: int
    kv_heads: int
    head_dim: int
    context: int
    rope_theta: float
    rms_eps: float
    vocab: int


def open_reader(path: Path) -> GGUFReader:
    import gguf

    try:
        return gguf.GGUFReader(path)
    except (ValueError, OSError) as err:
        raise TQError(f"{path} is not a readable GGUF file: {err}", "download the model again") from None


def field(reader: GGUFReader, key: str, kind: type | tuple[type, ...]) -> Any:
    """One metadata value, of the type the format promises (bool is not an int here)."""
    f = reader.fields.get(key)
    if f is None:
        raise TQError(f"the GGUF has no {key}", "use the pinned GGUF (tqdeploy demo-model)")
    value = f.contents()
    if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
        value = None
    if not isinstance(value, kind):
        raise TQError(f"the GGUF's {key} is {type(value).__name__}, not {kind}", "use the pinned GGUF")
    return value


def f32_value(reader: GGUFReader, key: str) -> float:
    """A float32 field as the shortest decimal that reads back to the same float32 (1e-05, not 9.99e-06)."""
    return float(str(np.float32(field(reader, key, (float, int)))))


def read_shape(reader: GGUFReader) -> LlamaShape:
    arch = field(reader, "general.architecture", str)
    if arch != "llama":
        raise TQError(f"the GGUF's architecture is {arch!r}, not 'llama'", "use the pinned GGUF")

    def u(key: str) -> int:
        value: int = field(reader, f"llama.{key}", int)
        if not 0 < value < 1 << 24:
            raise TQError(f"the GGUF's llama.{key} = {value} is out of range", "use the pinned GGUF")
        return value

    hidden, heads = u("embedding_length"), u("attention.head_count")
    kv_heads = u("attention.head_count_kv")
    if hidden % heads or heads % kv_heads:
        raise TQError(f"the GGUF's heads ({heads}, {kv_heads} KV) do not divide hidden {hidden}", "use the pinned GGUF")
    return LlamaShape(
        layers=u("block_count"),
        hidden=hidden,
        intermediate=u("feed_forward_length"),
        heads=heads,
        kv_heads=kv_heads,
        head_dim=hidden // heads,
        context=u("context_length"),
        rope_theta=f32_value(reader, "llama.rope.freq_base"),
        rms_eps=f32_value(reader, "llama.attention.layer_norm_rms_epsilon"),
        vocab=len(field(reader, "tokenizer.ggml.tokens", list)),
    )


def hf_name(gguf_name: str, layers: int) -> str:
    if gguf_name in TOP_NAMES:
        return TOP_NAMES[gguf_name]
    m = _LAYER.fullmatch(gguf_name)
    if m and int(m.group(1)) < layers and m.group(2) in LAYER_NAMES:
        return f"model.layers.{int(m.group(1))}.{LAYER_NAMES[m.group(2)]}"
    raise TQError(f"the GGUF holds a tensor {gguf_name!r} this converter does not know", "use the pinned GGUF")


def unpermute(weight: np.ndarray, heads: int) -> np.ndarray:
    """Undo llama.cpp's per-head row interleave of attn_q/attn_k (rows: heads x 2 halves x head_dim/2).

    llama.cpp wrote rows in the order (head, pair index, half); transformers' rotary embedding expects
    (head, half, pair index): swap the two inner axes back.
    """
    rows = weight.shape[0]
    half = rows // heads // 2
    return weight.reshape(heads, half, 2, *weight.shape[1:]).swapaxes(1, 2).reshape(weight.shape)


@dataclass(frozen=True)
class TensorInfo:
    name: str  # transformers' name
    shape: tuple[int, ...]  # transformers' (row-major) shape


def tensor_infos(reader: GGUFReader, shape: LlamaShape) -> list[TensorInfo]:
    """Name and shape of every tensor, without reading the data (what the safetensors header needs)."""
    # GGUF lists dimensions innermost first; numpy (and transformers) outermost first.
    return [TensorInfo(hf_name(t.name, shape.layers), tuple(int(d) for d in reversed(t.shape))) for t in reader.tensors]


def tensors(reader: GGUFReader, shape: LlamaShape) -> Iterator[tuple[str, np.ndarray]]:
    """(transformers name, float32 array) for every tensor, dequantized and unpermuted, in file order."""
    from gguf.quants import dequantize

    for t in reader.tensors:
        name = hf_name(t.name, shape.layers)
        want = tuple(int(d) for d in reversed(t.shape))
        try:
            values = np.asarray(dequantize(t.data, t.tensor_type), dtype=np.float32).reshape(want)
        except (NotImplementedError, ValueError) as err:
            raise TQError(f"cannot dequantize {t.name} ({t.tensor_type.name}): {err}", "use the pinned GGUF") from None
        if t.name.endswith(".attn_q.weight"):
            values = unpermute(values, shape.heads)
        elif t.name.endswith(".attn_k.weight"):
            values = unpermute(values, shape.kv_heads)
        yield name, values
