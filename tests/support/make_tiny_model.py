"""Writes a tiny Qwen2 checkpoint (random weights, locally trained BPE tokenizer) for the real CPU vLLM.

Run with the vLLM venv's interpreter (it has torch, transformers and tokenizers):
    .venv-vllm/bin/python tests/support/make_tiny_model.py OUT_DIR
Shape: hidden 256, 4 attention heads, 2 KV heads (head_dim 64; the CPU attention kernels need >= 32),
2 layers, vocab 512, bfloat16. Seeded, so the same files come out each time.
"""

from __future__ import annotations

import sys
from pathlib import Path

HIDDEN = 256
HEADS = 4
KV_HEADS = 2
LAYERS = 2
VOCAB = 512


def train_tokenizer(out: Path) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    corpus = [
        "The quick brown fox jumps over the lazy dog.",
        "vLLM serves large language models with paged attention.",
        "TurboQuant compresses the key value cache to a few bits per coordinate.",
        "Hello world! How are you today? I am fine, thank you.",
    ] * 50
    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB - 3,
        special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus, trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|endoftext|>",
        pad_token="<|endoftext|>",
        bos_token=None,
    )
    fast.chat_template = (
        "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )
    fast.save_pretrained(out)


def make_model(out: Path) -> None:
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    cfg = Qwen2Config(
        vocab_size=VOCAB,
        hidden_size=HIDDEN,
        intermediate_size=512,
        num_hidden_layers=LAYERS,
        num_attention_heads=HEADS,
        num_key_value_heads=KV_HEADS,
        max_position_embeddings=2048,
        tie_word_embeddings=True,
        eos_token_id=0,
        bos_token_id=0,
    )
    model = Qwen2ForCausalLM(cfg).to(torch.bfloat16)
    model.save_pretrained(out, safe_serialization=True)


def main(out_dir: str) -> int:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    train_tokenizer(out)
    make_model(out)
    (out / ".complete").write_text("ok\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
