"""Which files of a model repository serving needs: the rule as data, and the one function applying it.

The rule follows what vLLM 0.32 itself reads from a model folder:
- weights: top-level ``*.safetensors`` only (DefaultModelLoader._prepare_weights globs the folder
  itself, not subfolders: vllm/model_executor/model_loader/default_loader.py), and when
  ``model.safetensors.index.json`` exists only the shards its ``weight_map`` names
  (filter_duplicate_safetensors_files and download_weights_from_hf in
  vllm/model_executor/model_loader/weight_utils.py). That drops duplicates such as a
  ``consolidated.safetensors`` next to sharded weights.
- ``original/`` is never needed (LoadConfig.ignore_patterns defaults to ``original/**/*``,
  vllm/config/load.py).
- config, generation config, tokenizer, chat template and processor files: file names as
  transformers 5.x defines them (utils/__init__.py CONFIG_NAME, GENERATION_CONFIG_NAME,
  PROCESSOR_NAME, IMAGE_PROCESSOR_NAME, VIDEO_PROCESSOR_NAME; tokenization_utils_base.py;
  utils/hub.py CHAT_TEMPLATE_FILE / CHAT_TEMPLATE_DIR).
``*.bin`` / ``*.pth`` / ``*.pt`` pickles are not downloaded: tqdeploy serves safetensors only.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass

WEIGHTS_INDEX = "model.safetensors.index.json"

# (pattern, why). Patterns match the whole repo path; "/" is never matched by "*" (see _match).
SERVING_FILES: tuple[tuple[str, str], ...] = (
    ("*.safetensors", "weights (top level; narrowed to the index's weight_map when an index exists)"),
    (WEIGHTS_INDEX, "maps each tensor to its shard"),
    ("config.json", "model architecture"),
    ("generation_config.json", "default sampling parameters"),
    ("tokenizer.json", "fast tokenizer"),
    ("tokenizer_config.json", "tokenizer settings and, often, the chat template"),
    ("special_tokens_map.json", "special tokens"),
    ("added_tokens.json", "added tokens"),
    ("vocab.json", "BPE vocabulary"),
    ("merges.txt", "BPE merges"),
    ("tokenizer.model", "SentencePiece model"),
    ("chat_template.jinja", "chat template"),
    ("chat_template.json", "chat template (legacy processor format)"),
    ("additional_chat_templates/*.jinja", "named chat templates"),
    ("preprocessor_config.json", "image processor of multimodal models"),
    ("processor_config.json", "processor of multimodal models"),
    ("video_preprocessor_config.json", "video processor of multimodal models"),
    ("*.py", "remote code, run only with --trust-remote-code"),
)

# Checked first: a path matching one of these is never downloaded.
NEVER: tuple[tuple[str, str], ...] = (
    ("original/*", "upstream-format copy (vLLM ignores original/**/*)"),
    ("*.bin", "pickle weights duplicate the safetensors"),
    ("*.pth", "pickle weights"),
    ("*.pt", "pickle weights"),
    ("*.gguf", "llama.cpp format"),
    ("*.onnx", "ONNX export"),
    ("*.msgpack", "Flax weights"),
    ("*.h5", "TensorFlow weights"),
)


def _match(path: str, pattern: str) -> bool:
    # fnmatch's "*" crosses "/"; a pattern only matches at its own folder depth.
    return path.count("/") == pattern.count("/") and fnmatch.fnmatchcase(path, pattern)


def _unsafe(path: str) -> bool:
    # A listing comes from the network: a path that could leave the target folder is never taken.
    parts = path.split("/")
    return path.startswith("/") or "\\" in path or any(p in ("", ".", "..") for p in parts)


def is_unsafe_path(path: str) -> bool:
    """A repo path that would leave the model folder (absolute, .., backslashes, empty parts)."""
    return _unsafe(path)


def _never(path: str) -> bool:
    return _unsafe(path) or any(path.startswith(p[:-1]) if p.endswith("/*") else _match(path, p) for p, _ in NEVER)


def is_weight(path: str) -> bool:
    return _match(path, "*.safetensors")


@dataclass(frozen=True)
class Selection:
    files: tuple[str, ...]  # repo paths to download, sorted
    skipped: tuple[str, ...]  # repo paths left out, sorted


def select_serving_files(repo_paths: list[str], weight_map_files: set[str] | None = None) -> Selection:
    """Apply the rule. ``weight_map_files``: the shard names of the index, when the repo has one."""
    keep: list[str] = []
    skip: list[str] = []
    for path in repo_paths:
        wanted = not _never(path) and any(_match(path, pattern) for pattern, _ in SERVING_FILES)
        if wanted and is_weight(path) and weight_map_files:
            wanted = path in weight_map_files
        (keep if wanted else skip).append(path)
    return Selection(tuple(sorted(keep)), tuple(sorted(skip)))
