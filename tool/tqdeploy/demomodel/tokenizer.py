"""A transformers tokenizer (tokenizer.json, tokenizer_config.json) from a GGUF's tokenizer.ggml.* metadata.

Only llama.cpp's "gpt2" model is built: byte-level BPE (the tokens are already spelled in GPT-2's byte
alphabet, the merges are "left right" strings). The result is what transformers' own GGUF loading builds for
this file (transformers/integrations/gguf/gguf_tokenizer_mapping.py, byte_level_tokenizer and
add_gguf_special_tokens, 5.19.0): the GPT-2 ByteLevel pre-tokenizer and decoder, no normalizer, no template
around a text (add_bos_token is false in the file), the CONTROL tokens (token type 3) added as special
tokens that are never split. tests/test_demomodel_convert.py checks the ids equal transformers' own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tqdeploy.demomodel.ggufllama import field
from tqdeploy.errors import TQError

if TYPE_CHECKING:
    from gguf import GGUFReader

CONTROL = 3  # llama.cpp's LLAMA_TOKEN_TYPE_CONTROL
USER_DEFINED = 4
PINNED = "use the pinned GGUF (tqdeploy demo-model)"
# the role -> the id's key in the GGUF (tokenizer.ggml.<key>)
SPECIAL_KEYS = (
    ("bos", "bos_token_id"),
    ("eos", "eos_token_id"),
    ("unk", "unknown_token_id"),
    ("pad", "padding_token_id"),
)


def byte_alphabet() -> set[str]:
    """The 256 characters GPT-2's byte-level BPE spells bytes with (printable Latin-1 as is, the rest from U+0100)."""
    kept = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    moved = [b for b in range(256) if b not in kept]
    return {chr(b) for b in kept} | {chr(256 + n) for n in range(len(moved))}


def _byte_level(flag: bool) -> dict[str, Any]:
    return {"type": "ByteLevel", "add_prefix_space": flag, "trim_offsets": True, "use_regex": True}


def _added(token_id: int, content: str, special: bool) -> dict[str, Any]:
    return {
        "id": token_id,
        "content": content,
        "single_word": False,
        "lstrip": False,
        "rstrip": False,
        "normalized": False,  # matched as written, before any normalizer
        "special": special,
    }


def tokenizer_json(reader: GGUFReader) -> dict[str, Any]:
    model = field(reader, "tokenizer.ggml.model", str)
    if model != "gpt2":
        raise TQError(
            f"the GGUF's tokenizer is {model!r}; only byte-level BPE ('gpt2') is built", "use the pinned GGUF"
        )
    tokens = field(reader, "tokenizer.ggml.tokens", list)
    types = field(reader, "tokenizer.ggml.token_type", list)
    merges = field(reader, "tokenizer.ggml.merges", list)
    if len(types) != len(tokens) or len(set(tokens)) != len(tokens):
        raise TQError("the GGUF's tokens and token types do not match one to one", "use the pinned GGUF")
    alphabet = byte_alphabet()
    pairs = [m.split(" ") for m in merges]
    if any(len(p) != 2 for p in pairs):
        raise TQError("a merge in the GGUF is not two tokens", "use the pinned GGUF")
    added = []
    for index, (token, kind) in enumerate(zip(tokens, types, strict=True)):
        if not set(token) <= alphabet:  # transformers re-spells these in bytes; the pinned file has none
            raise TQError(f"token {index} is not spelled in the byte alphabet", "use the pinned GGUF")
        if kind in (CONTROL, USER_DEFINED):
            added.append(_added(index, token, special=kind == CONTROL))
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": _byte_level(False),
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {},
        },
        "decoder": _byte_level(True),
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": "",
            "end_of_word_suffix": "",
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": False,
            "vocab": {token: index for index, token in enumerate(tokens)},
            "merges": pairs,
        },
    }


def special_ids(reader: GGUFReader) -> dict[str, int]:
    ids = {}
    count = len(field(reader, "tokenizer.ggml.tokens", list))
    for name, key in (
        ("bos", "bos_token_id"),
        ("eos", "eos_token_id"),
        ("unk", "unknown_token_id"),
        ("pad", "padding_token_id"),
    ):
        value = field(reader, f"tokenizer.ggml.{key}", int)
        if not 0 <= value < count:
            raise TQError(f"the GGUF's tokenizer.ggml.{key} = {value} is not a token", "use the pinned GGUF")
        ids[name] = value
    return ids


def tokenizer_config(reader: GGUFReader) -> dict[str, Any]:
    tokens = field(reader, "tokenizer.ggml.tokens", list)
    ids = special_ids(reader)
    return {
        # PreTrainedTokenizerFast reads tokenizer.json as it is, in transformers 4 and 5 alike.
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": tokens[ids["bos"]],
        "eos_token": tokens[ids["eos"]],
        "unk_token": tokens[ids["unk"]],
        "pad_token": tokens[ids["pad"]],
        "add_bos_token": field(reader, "tokenizer.ggml.add_bos_token", bool),
        "add_eos_token": False,
        "clean_up_tokenization_spaces": False,
        "model_max_length": int(field(reader, "llama.context_length", int)),
        "chat_template": field(reader, "tokenizer.chat_template", str),
    }
