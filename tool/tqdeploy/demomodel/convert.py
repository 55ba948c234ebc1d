"""GGUF -> a bf16 transformers checkpoint folder that vLLM serves (config, weights, tokenizer, manifest).

Everything is written into the folder given (the caller's temp folder) and fsync'd; the manifest comes last
and lists every file with its sha256, so a folder without a manifest that verifies is incomplete.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tqdeploy.demomodel import ggufllama, safetensors_bf16, tokenizer
from tqdeploy.demomodel.manifest import MANIFEST, write_manifest

if TYPE_CHECKING:
    from gguf import GGUFReader

WEIGHTS = "model.safetensors"


def model_config(reader: GGUFReader, shape: ggufllama.LlamaShape, tied: bool) -> dict[str, Any]:
    ids = tokenizer.special_ids(reader)
    return {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": shape.hidden,
        "intermediate_size": shape.intermediate,
        "num_hidden_layers": shape.layers,
        "num_attention_heads": shape.heads,
        "num_key_value_heads": shape.kv_heads,
        "head_dim": shape.head_dim,
        "hidden_act": "silu",  # Llama's; llama.cpp's llama graph hard-codes SiLU too
        "max_position_embeddings": shape.context,
        "rms_norm_eps": shape.rms_eps,
        "rope_theta": shape.rope_theta,
        "vocab_size": shape.vocab,
        "tie_word_embeddings": tied,
        "attention_bias": False,
        "mlp_bias": False,
        "bos_token_id": ids["bos"],
        "eos_token_id": ids["eos"],
        "pad_token_id": ids["pad"],
        "torch_dtype": "bfloat16",
    }


def _write_json(folder: Path, name: str, data: dict[str, Any]) -> None:
    with open(folder / name, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=2, ensure_ascii=False)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())


def write_weights(reader: GGUFReader, shape: ggufllama.LlamaShape, path: Path) -> None:
    infos = ggufllama.tensor_infos(reader, shape)
    head = safetensors_bf16.header(((t.name, t.shape) for t in infos), {"format": "pt"})
    with open(path, "wb") as out:
        out.write(head)
        for _name, values in ggufllama.tensors(reader, shape):  # in the header's order
            safetensors_bf16.write_tensor(out, values)
        out.flush()
        os.fsync(out.fileno())


def convert(gguf_path: Path, folder: Path) -> None:
    """Write the checkpoint into folder (existing and empty); the manifest is written last."""
    reader = ggufllama.open_reader(gguf_path)
    shape = ggufllama.read_shape(reader)
    tied = not any(t.name == "output.weight" for t in reader.tensors)
    write_weights(reader, shape, folder / WEIGHTS)
    _write_json(folder, "config.json", model_config(reader, shape, tied))
    ids = tokenizer.special_ids(reader)
    generation = {"bos_token_id": ids["bos"], "eos_token_id": ids["eos"], "pad_token_id": ids["pad"]}
    _write_json(folder, "generation_config.json", generation)
    _write_json(folder, "tokenizer.json", tokenizer.tokenizer_json(reader))
    _write_json(folder, "tokenizer_config.json", tokenizer.tokenizer_config(reader))
    names = sorted(p.name for p in folder.iterdir() if p.name != MANIFEST)
    write_manifest(folder, names)
    del reader  # the memory map of the GGUF
