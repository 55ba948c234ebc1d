"""Checkpoint facts: config.json (nested text_config included), safetensors headers, quantization and
the turbo_quant_config hint, from a local folder or a Hub repo at a pinned revision.

    facts = load_model_facts("/models/qwen3.6-27b")          # folder with config.json
    facts = load_model_facts("Qwen/Qwen3.6-27B@<sha>")        # config + headers over HTTP, no weights
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tqdeploy.errors import TQError
from tqdeploy.model.facts import ModelFacts
from tqdeploy.model.hub import fetch_config, fetch_weight_bytes, parse_repo_ref
from tqdeploy.model.jsonfile import read_json_file
from tqdeploy.model.reader import build_facts
from tqdeploy.model.safetensors_meta import local_weight_bytes
from tqdeploy.model.tqhint import parse_hint

__all__ = ["ModelFacts", "load_model_facts", "facts_from_config"]


def facts_from_config(config: dict[str, Any], source: str = "<config>", config_path: str = "config.json") -> ModelFacts:
    """ModelFacts from an already parsed config.json (no weights: weight_bytes stays None)."""
    facts = build_facts(config, source, config_path)
    raw = config.get("turbo_quant_config")
    if raw is None and isinstance(config.get("text_config"), dict):
        raw = config["text_config"].get("turbo_quant_config")
    facts.turbo_quant_config_raw = raw
    facts.turbo_quant_config, facts.turbo_quant_config_problems = parse_hint(raw, facts.num_hidden_layers)
    return facts


def _read_local_config(model_dir: Path) -> dict[str, Any]:
    path = model_dir / "config.json"
    if not path.exists():
        raise TQError(f"{model_dir} has no config.json", "point --model at a Hugging Face checkpoint folder")
    config: dict[str, Any] = read_json_file(path, fix="restore the checkpoint's original config.json")
    return config  # build_facts refuses what is not an object


def load_model_facts(source: str) -> ModelFacts:
    """Facts of a local checkpoint folder or of "REPO@REV" (config.json + safetensors headers only)."""
    source = str(source)
    path = Path(source).expanduser()
    if path.exists():
        if not path.is_dir():
            raise TQError(
                f"model path {path} is a file, not a checkpoint folder", "pass the folder that holds config.json"
            )
        facts = facts_from_config(_read_local_config(path), source, str(path / "config.json"))
        facts.weight_bytes, facts.weight_bytes_by_dtype, facts.weight_source = local_weight_bytes(path)
        return facts
    if "@" not in source:
        raise TQError(
            f"model {source!r} is neither an existing folder nor REPO@REV",
            "pass a checkpoint folder, or a Hub repo pinned to a revision: REPO@REV",
        )

    repo, rev = parse_repo_ref(source)
    facts = facts_from_config(fetch_config(repo, rev), source, f"{repo}@{rev}/config.json")
    facts.weight_bytes, facts.weight_bytes_by_dtype, facts.weight_source = fetch_weight_bytes(repo, rev)
    return facts
