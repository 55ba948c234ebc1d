"""`tqdeploy init`: a commented spec from the embedded default, the model's own config and this host.

What is chosen and why is written next to each value ("# chosen: ..."), so the operator can see which
numbers came from the checkpoint, which from the host and which are plain defaults.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tqdeploy.errors import TQError
from tqdeploy.spec.load import DEFAULT_SPEC_NAME, embedded_spec_path, parse_spec_text, raise_problems
from tqdeploy.spec.model import Spec
from tqdeploy.spec.validate import spec_problems
from tqdeploy.spec.write import spec_to_toml

# Share of one GPU's memory the weights may take when picking a tensor-parallel size: the rest is KV
# cache, activations and CUDA graphs. A starting point for the operator; `tqdeploy plan` has the exact numbers.
WEIGHT_SHARE = 0.8
TP_SIZES = (1, 2, 4, 8)


def slug(text: str) -> str:
    s = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return s[:53].strip("-") or "model"


def apply_model(data: dict[str, Any], source: str, facts: Any, notes: dict[str, str]) -> None:
    m = data["model"]
    if Path(source).expanduser().is_dir():
        # Absolute: relative paths in a spec are relative to the build directory, not to here.
        m.update(repo=None, revision=None, path=str(Path(source).expanduser().resolve()))
        base = Path(source).name
    else:
        repo, _, rev = source.partition("@")
        m.update(repo=repo, revision=rev, path=None)
        base = repo.rsplit("/", 1)[-1]
    m["served_name"] = base.lower()
    data[""]["name"] = slug(base)
    notes["model.served_name"] = "the model folder/repo name"
    if facts is None:
        return
    if facts.max_position_embeddings:
        data["vllm"]["max_model_len"] = int(facts.max_position_embeddings)
        notes["vllm.max_model_len"] = "max_position_embeddings from the model's config.json"
    hint = facts.turbo_quant_config
    if hint and hint.get("kv_cache_dtype"):
        data["vllm"]["kv_cache_dtype"] = hint["kv_cache_dtype"]
        notes["vllm.kv_cache_dtype"] = "the checkpoint's turbo_quant_config hint (a tqdeploy field; vLLM ignores it)"


def apply_host(data: dict[str, Any], snapshot: Any, facts: Any, notes: dict[str, str]) -> None:
    gpus = list(getattr(snapshot, "gpus", []) or [])
    if not gpus:
        notes["resources.gpus"] = "no GPU seen on this host; the spec targets the serving host"
        return
    data["resources"]["gpus"] = "all"
    notes["resources.gpus"] = f"{len(gpus)} GPU(s) seen: {gpus[0].name}"
    mem = min((g.memory_total or 0) for g in gpus)
    weights = getattr(facts, "weight_bytes", None) if facts is not None else None
    heads = getattr(facts, "num_attention_heads", 0) if facts is not None else 0
    if not (mem and weights):
        return
    for tp in TP_SIZES:
        if tp > len(gpus) or (heads and heads % tp):
            continue
        if weights / tp <= WEIGHT_SHARE * mem:
            data["vllm"]["tensor_parallel_size"] = tp
            notes["vllm.tensor_parallel_size"] = (f"smallest size whose weight share ({weights / tp / 2**30:.1f} GiB) "
                                                  f"fits {int(WEIGHT_SHARE * 100)}% of one GPU ({mem / 2**30:.0f} GiB)")
            return
    notes["vllm.tensor_parallel_size"] = "the weights do not fit this host's GPUs at any tensor-parallel size"


def make_init_text(*, model: str | None = None, snapshot: Any = None, name: str | None = None,
                   embedded: str = DEFAULT_SPEC_NAME) -> tuple[str, dict[str, str]]:
    """(commented TOML, notes) for a new spec; validated before it is returned."""
    base = embedded_spec_path(embedded)
    data = parse_spec_text(base.read_text(encoding="utf-8"), f"embedded:{embedded}")
    notes: dict[str, str] = {}
    facts = None
    if model:
        from tqdeploy.model import load_model_facts

        facts = load_model_facts(model)
        apply_model(data, model, facts, notes)
    if snapshot is not None:
        apply_host(data, snapshot, facts, notes)
    if name:
        data[""]["name"] = name
    header = [f"tqdeploy deployment spec, written by `tqdeploy init` from the embedded {embedded} spec",
              f"{'and model ' + model if model else 'without a model (the default model)'}. "
              "Reference: docs/build.md.", "Then: `tqdeploy build` renders the deployment files from it."]
    text = spec_to_toml(data, header, notes)
    check = Spec(parse_spec_text(text, "tqdeploy init output"), "tqdeploy init output", text)
    raise_problems(spec_problems(check), "generated spec", text)
    return text, notes


def write_init(out: Path, text: str, force: bool) -> None:
    from tqdeploy.fsutil import atomic_write_text

    if out.exists() and not force:
        raise TQError(f"{out} already exists", "pass --force to overwrite it, or --out another file")
    atomic_write_text(out, text)
