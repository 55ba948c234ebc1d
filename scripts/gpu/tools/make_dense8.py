"""Writes the "dense8" checkpoint folder for the GPU recordings: config.json and a tokenizer, no weights
(the runs use --load-format dummy). Llama-style, 8 layers, 8 heads, 2 KV heads, head_dim 128, bf16: the shape
of tests/fixtures/gpu-runs/h200-vllm-0.25.0/dense8/config.json and the dense-*.log fixtures.

Usage: python3 scripts/gpu/tools/make_dense8.py OUT_DIR   (needs transformers + tokenizers)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 1024,
    "intermediate_size": 4096,
    "num_hidden_layers": 8,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "head_dim": 128,
    "max_position_embeddings": 32768,
    "vocab_size": 512,
    "rms_norm_eps": 1e-5,
    "rope_theta": 500000.0,
    "torch_dtype": "bfloat16",
    "bos_token_id": 0,
    "eos_token_id": 0,
    "tie_word_embeddings": False,
}


def write_config_and_tokenizer(out_dir: str, config: dict) -> Path:
    """The checkpoint folder without weights: config.json and the tokenizer (make_dense_weights.py adds shards)."""
    sys.path.insert(0, str(REPO / "tests" / "support"))
    from make_tiny_model import train_tokenizer  # a locally trained BPE tokenizer (vocab 512)

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    train_tokenizer(out)
    (out / "config.json").write_text(json.dumps(config, indent=1))
    return out


def main(out_dir: str) -> int:
    write_config_and_tokenizer(out_dir, CONFIG)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
