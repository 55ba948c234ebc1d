"""Writes "wide-qwen2": the tiny test model's Qwen2 layout (tests/support/make_tiny_model.py: its tokenizer is
copied) widened to hidden 2048, intermediate 8192, 16 heads, 4 KV heads, 60 layers: 7.3 GB of bf16 weights in
4 safetensors shards, so a CPU vLLM's weights phase reads real bytes from disk for seconds.

The values are one 8 MiB block of N(0, 0.02) bf16 numbers repeated (real, finite weights; nothing in the
start-up depends on them being distinct), streamed to disk so the script never holds more than that block.
Each shard is fsync'd and dropped from the page cache afterwards (posix_fadvise DONTNEED on these files only).

Usage: .venv-vllm/bin/python scripts/cpu/make_wide_model.py TINY_MODEL_DIR OUT_DIR   (needs torch)
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import sys
from pathlib import Path

HIDDEN, INTER, HEADS, KV_HEADS, LAYERS, SHARDS = 2048, 8192, 16, 4, 60, 4
HEAD_DIM = HIDDEN // HEADS
BLOCK = 8 << 20


def layer(i: int) -> dict[str, tuple[int, ...]]:
    p = f"model.layers.{i}."
    q, kv = HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM
    return {
        p + "self_attn.q_proj.weight": (q, HIDDEN),
        p + "self_attn.q_proj.bias": (q,),
        p + "self_attn.k_proj.weight": (kv, HIDDEN),
        p + "self_attn.k_proj.bias": (kv,),
        p + "self_attn.v_proj.weight": (kv, HIDDEN),
        p + "self_attn.v_proj.bias": (kv,),
        p + "self_attn.o_proj.weight": (HIDDEN, q),
        p + "mlp.gate_proj.weight": (INTER, HIDDEN),
        p + "mlp.up_proj.weight": (INTER, HIDDEN),
        p + "mlp.down_proj.weight": (HIDDEN, INTER),
        p + "input_layernorm.weight": (HIDDEN,),
        p + "post_attention_layernorm.weight": (HIDDEN,),
    }


def shard(s: int, vocab: int) -> dict[str, tuple[int, ...]]:
    per = LAYERS // SHARDS
    shapes: dict[str, tuple[int, ...]] = {}
    if s == 0:
        shapes["model.embed_tokens.weight"] = (vocab, HIDDEN)  # tied: no lm_head (tie_word_embeddings)
    for i in range(s * per, (s + 1) * per):
        shapes |= layer(i)
    if s == SHARDS - 1:
        shapes["model.norm.weight"] = (HIDDEN,)
    return shapes


def write_shard(path: Path, shapes: dict[str, tuple[int, ...]], block: bytes, ones: bytes) -> int:
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, shape in shapes.items():
        n = 2
        for d in shape:
            n *= d
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [offset, offset + n]}
        offset += n
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    with open(path, "wb") as fh:
        fh.write(struct.pack("<Q", len(raw)) + raw)
        for name in shapes:
            start, end = header[name]["data_offsets"]
            left, src = end - start, ones if name.endswith("norm.weight") else block
            while left:
                piece = src[: min(left, len(src))]
                fh.write(piece)
                left -= len(piece)
        fh.flush()
        os.fsync(fh.fileno())
        os.posix_fadvise(fh.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
    return offset


def main(tiny: str, out_dir: str) -> int:
    import torch

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name in ("tokenizer.json", "tokenizer_config.json", "generation_config.json", "chat_template.jinja"):
        if (Path(tiny) / name).exists():
            shutil.copy(Path(tiny) / name, out / name)
    config = json.loads((Path(tiny) / "config.json").read_text())
    config |= {
        "hidden_size": HIDDEN,
        "intermediate_size": INTER,
        "num_attention_heads": HEADS,
        "num_key_value_heads": KV_HEADS,
        "num_hidden_layers": LAYERS,
        "layer_types": ["full_attention"] * LAYERS,
    }
    (out / "config.json").write_text(json.dumps(config, indent=1))
    gen = torch.Generator().manual_seed(0)
    block = (torch.randn(BLOCK // 2, generator=gen) * 0.02).to(torch.bfloat16).view(torch.int16).numpy().tobytes()
    ones = torch.ones(HIDDEN, dtype=torch.bfloat16).view(torch.int16).numpy().tobytes()
    weight_map, total = {}, 0
    for s in range(SHARDS):
        name = f"model-{s + 1:05d}-of-{SHARDS:05d}.safetensors"
        shapes = shard(s, config["vocab_size"])
        total += write_shard(out / name, shapes, block, ones)
        weight_map |= dict.fromkeys(shapes, name)
    index = {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}
    (out / "model.safetensors.index.json").write_text(json.dumps(index, indent=1))
    print(f"wide-qwen2: {total} bytes of weights in {SHARDS} shards, dropped from the page cache")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1], sys.argv[2]))
