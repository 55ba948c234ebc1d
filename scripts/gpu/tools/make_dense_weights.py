"""Writes a "dense8w" checkpoint for the GPU recordings of the weight load: the dense8 layout of
make_dense8.py widened to Llama-3-8B-sized layers (hidden 4096, intermediate 14336, 32 heads, 8 KV heads,
head_dim 128), 8 layers, with real random bf16 weights (about 3.5 GB) in 4 safetensors shards, so vLLM's
weights phase reads real bytes from disk (`--load-format dummy` reads none). --layers 32 writes "dense32w", a
Llama-3-8B-sized checkpoint (about 14 GB): each decode step reads 4.0x dense8w's bytes, so the host CPU's per-step
work is a smaller share of the step, as with a 27B model (startup.sh's DENSE_LAYERS; docs/startup.md, lease 8).

After writing, each shard is fsync'd and dropped from the page cache (posix_fadvise DONTNEED on the files this
script wrote, nothing else), so the next start's load is a cold read from the disk.

Usage: python3 scripts/gpu/tools/make_dense_weights.py OUT_DIR [--layers N]   (N a multiple of 4, default 8;
       needs torch with CUDA, safetensors, tokenizers)
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "scripts" / "gpu" / "tools"))
sys.path.insert(0, str(REPO / "tool"))
from make_dense8 import CONFIG as DENSE8  # noqa: E402
from make_dense8 import write_config_and_tokenizer  # noqa: E402

from tqdeploy.profile.diskread import drop_own_file_from_page_cache  # noqa: E402

HIDDEN, INTER, HEADS, KV_HEADS, HEAD_DIM, LAYERS, SHARDS = 4096, 14336, 32, 8, 128, 8, 4
MAX_LAYERS = 64  # about 28 GB of weights, under half of an H200's memory


def config(layers: int) -> dict:
    return DENSE8 | {
        "hidden_size": HIDDEN,
        "intermediate_size": INTER,
        "num_attention_heads": HEADS,
        "num_key_value_heads": KV_HEADS,
        "head_dim": HEAD_DIM,
        "num_hidden_layers": layers,
    }


CONFIG = config(LAYERS)


def layer_shapes(i: int) -> dict[str, tuple[int, ...]]:
    p = f"model.layers.{i}."
    return {
        p + "self_attn.q_proj.weight": (HEADS * HEAD_DIM, HIDDEN),
        p + "self_attn.k_proj.weight": (KV_HEADS * HEAD_DIM, HIDDEN),
        p + "self_attn.v_proj.weight": (KV_HEADS * HEAD_DIM, HIDDEN),
        p + "self_attn.o_proj.weight": (HIDDEN, HEADS * HEAD_DIM),
        p + "mlp.gate_proj.weight": (INTER, HIDDEN),
        p + "mlp.up_proj.weight": (INTER, HIDDEN),
        p + "mlp.down_proj.weight": (HIDDEN, INTER),
        p + "input_layernorm.weight": (HIDDEN,),
        p + "post_attention_layernorm.weight": (HIDDEN,),
    }


def shard_tensors(shard: int, vocab: int, layers: int = LAYERS) -> dict[str, tuple[int, ...]]:
    per = layers // SHARDS
    shapes: dict[str, tuple[int, ...]] = {}
    for i in range(shard * per, (shard + 1) * per):
        shapes |= layer_shapes(i)
    if shard == 0:
        shapes["model.embed_tokens.weight"] = (vocab, HIDDEN)
    if shard == SHARDS - 1:
        shapes |= {"model.norm.weight": (HIDDEN,), "lm_head.weight": (vocab, HIDDEN)}
    return shapes


def parse_layers(argv: list[str]) -> int:
    """--layers N from argv (default LAYERS); exits (status 1) with one line when N is out of range."""
    if not argv:
        return LAYERS
    if len(argv) != 2 or argv[0] != "--layers" or not argv[1].isdigit():
        raise SystemExit(f"make_dense_weights: error: arguments {argv!r}: give OUT_DIR [--layers N]")
    layers = int(argv[1])
    if not SHARDS <= layers <= MAX_LAYERS or layers % SHARDS:
        raise SystemExit(
            f"make_dense_weights: error: --layers {layers}: give a multiple of {SHARDS} up to {MAX_LAYERS}"
        )
    return layers


def main(out_dir: str, layers: int = LAYERS) -> int:
    import torch
    from safetensors.torch import save_file

    cfg = config(layers)
    out = write_config_and_tokenizer(out_dir, cfg)
    gen = torch.Generator(device="cuda").manual_seed(0)
    weight_map, total = {}, 0
    for s in range(SHARDS):
        name = f"model-{s + 1:05d}-of-{SHARDS:05d}.safetensors"
        tensors = {}
        for key, shape in shard_tensors(s, cfg["vocab_size"], layers).items():
            if len(shape) == 1:
                t = torch.ones(shape, dtype=torch.bfloat16)
            else:
                t = (torch.randn(shape, generator=gen, device="cuda", dtype=torch.float32) * 0.02).bfloat16().cpu()
            tensors[key], weight_map[key] = t, name
            total += t.numel() * t.element_size()
        save_file(tensors, str(out / name), metadata={"format": "pt"})
        os.sync()  # written back first: DONTNEED drops clean pages only
        drop_own_file_from_page_cache(out / name)
    index = {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}
    (out / "model.safetensors.index.json").write_text(json.dumps(index, indent=1))
    print(f"dense{layers}w: {total} bytes of weights in {SHARDS} shards, dropped from the page cache")
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        raise SystemExit("make_dense_weights: error: no OUT_DIR: give OUT_DIR [--layers N]")
    raise SystemExit(main(sys.argv[1], parse_layers(sys.argv[2:])))
