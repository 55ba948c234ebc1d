"""The demo model's conversion (tool/tqdeploy/demomodel): each step against an independent statement of it,
and the whole checkpoint against what transformers' own GGUF loading makes of the same file
(tests/fixtures/demomodel/transformers_reference.json, recorded by scripts/demomodel/record_transformers_reference.py).
"""

from __future__ import annotations

import hashlib
import json
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

from support.real_model import real_model_dir
from support.vllm_server import VLLM_PYTHON, vllm_available
from tqdeploy.demomodel import ggufllama, safetensors_bf16, tokenizer
from tqdeploy.errors import TQError

REFERENCE = Path(__file__).parent / "fixtures" / "demomodel" / "transformers_reference.json"


def _llama_cpp_permute(weights: np.ndarray, heads: int) -> np.ndarray:
    """What llama.cpp's convert_hf_to_gguf.py does to q/k rows: (head, half, pair) -> (head, pair, half)."""
    return (
        weights.reshape(heads, 2, weights.shape[0] // heads // 2, *weights.shape[1:])
        .swapaxes(1, 2)
        .reshape(weights.shape)
    )


@pytest.mark.parametrize("heads", [9, 3])
def test_unpermute_inverts_llama_cpp_permute(heads):
    original = np.arange(heads * 64 * 5, dtype=np.float32).reshape(heads * 64, 5)
    permuted = _llama_cpp_permute(original, heads)
    assert not np.array_equal(permuted, original)  # the permutation moves rows: the check below can fail
    assert np.array_equal(ggufllama.unpermute(permuted, heads), original)
    assert not np.array_equal(ggufllama.unpermute(permuted, 1 if heads != 1 else 2), original)


def test_bf16_rounds_to_nearest_even():
    values = np.array([1.0, 1 + 2**-8, 1 + 3 * 2**-8, -2.5, 0.0, 1 + 2**-8 + 2**-20], dtype=np.float32)
    assert safetensors_bf16.to_bf16(values).tolist() == [0x3F80, 0x3F80, 0x3F82, 0xC020, 0x0000, 0x3F81]


def test_bf16_refuses_non_finite():
    with pytest.raises(TQError, match="non-finite"):
        safetensors_bf16.to_bf16(np.array([1.0, np.nan], dtype=np.float32))


def test_byte_alphabet_is_gpt2s():
    alphabet = tokenizer.byte_alphabet()
    assert len(alphabet) == 256 and "Ġ" in alphabet and "!" in alphabet and " " not in alphabet


def _read_safetensors(path: Path) -> tuple[dict, int]:
    with open(path, "rb") as fh:
        (length,) = struct.unpack("<Q", fh.read(8))
        return json.loads(fh.read(length)), 8 + length


@pytest.mark.skipif(not vllm_available(), reason="needs .venv-vllm's safetensors and torch")
def test_our_safetensors_load_with_the_safetensors_package(tmp_path):
    path = tmp_path / "t.safetensors"
    a = np.array([[1.0, -2.0, 0.5]], dtype=np.float32)
    b = np.arange(4, dtype=np.float32) / 3
    with open(path, "wb") as out:
        out.write(safetensors_bf16.header([("a", a.shape), ("b", b.shape)], {"format": "pt"}))
        safetensors_bf16.write_tensor(out, a)
        safetensors_bf16.write_tensor(out, b)
    code = (
        "import sys, json; from safetensors.torch import load_file; t = load_file(sys.argv[1]);"
        "print(json.dumps({k: v.float().tolist() for k, v in t.items()}))"
    )
    out = subprocess.run([str(VLLM_PYTHON), "-c", code, str(path)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    loaded = json.loads(out.stdout)
    assert loaded["a"] == [[1.0, -2.0, 0.5]]
    assert loaded["b"] == pytest.approx([0.0, 1 / 3, 2 / 3, 1.0], rel=2**-8)


def test_every_weight_equals_transformers_gguf_loading():
    """Each bf16 tensor's bytes hash to what transformers' GGUF loader gives (tied lm_head not stored)."""
    reference = json.loads(REFERENCE.read_text())
    path = real_model_dir() / "model.safetensors"
    header, base = _read_safetensors(path)
    header.pop("__metadata__")
    assert set(header) == set(reference["tensor_bf16_sha256"])
    mismatched = []
    with open(path, "rb") as fh:
        for name, entry in header.items():
            begin, end = entry["data_offsets"]
            fh.seek(base + begin)
            if hashlib.sha256(fh.read(end - begin)).hexdigest() != reference["tensor_bf16_sha256"][name]:
                mismatched.append(name)
    assert mismatched == []
    q = header["model.layers.0.self_attn.q_proj.weight"]
    assert q["dtype"] == "BF16" and q["shape"] == [576, 576]


def test_config_is_read_from_the_gguf():
    config = json.loads((real_model_dir() / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLM"]
    want = {"num_hidden_layers": 30, "hidden_size": 576, "num_attention_heads": 9, "num_key_value_heads": 3}
    assert {k: config[k] for k in want} == want
    assert config["head_dim"] == 64 and config["vocab_size"] == 49152 and config["tie_word_embeddings"] is True
    assert config["max_position_embeddings"] == 8192 and config["rope_theta"] == 100000.0
    assert config["rms_norm_eps"] == 1e-05 and (config["bos_token_id"], config["eos_token_id"]) == (1, 2)


@pytest.mark.skipif(not vllm_available(), reason="needs .venv-vllm's transformers")
def test_tokenizer_gives_transformers_ids_and_chat_prompt():
    """Our tokenizer.json, loaded by transformers, encodes like transformers' loading of the GGUF itself."""
    reference = json.loads(REFERENCE.read_text())
    code = (
        "import sys, json; from transformers import AutoTokenizer; t = AutoTokenizer.from_pretrained(sys.argv[1]);"
        "texts = json.loads(sys.stdin.read());"
        "m = [{'role': 'user', 'content': 'What is the capital of France?'}];"
        "print(json.dumps({'ids': {s: t(s)['input_ids'] for s in texts},"
        " 'chat': t.apply_chat_template(m, tokenize=False, add_generation_prompt=True),"
        " 'eos': t.eos_token, 'decoded': t.decode(t(texts[2])['input_ids'])}))"
    )
    texts = list(reference["token_ids"])
    out = subprocess.run(
        [str(VLLM_PYTHON), "-c", code, str(real_model_dir())],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    ours = json.loads(out.stdout.strip().splitlines()[-1])
    assert ours["ids"] == reference["token_ids"]
    assert ours["chat"] == reference["chat_prompt"] and ours["eos"] == "<|im_end|>"
    assert ours["decoded"] == texts[2]  # byte-level: the text comes back exactly
