"""`tqdeploy init`: a commented spec from the embedded default, the model's own config and this host.

What is chosen and why is written next to each value ("# chosen: ..."), so the operator can see which
numbers came from the checkpoint, which from the host and which are plain defaults.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tqdeploy.deployspec.load import DEFAULT_SPEC_NAME, embedded_spec_path, parse_spec_text, raise_problems
from tqdeploy.deployspec.validate import NAME_RE, spec_problems
from tqdeploy.deployspec.write import spec_to_toml
from tqdeploy.errors import TQError
from tqdeploy.findings import Severity
from tqdeploy.fsutil import atomic_write_text
from tqdeploy.model import load_model_facts
from tqdeploy.plan import make_plan

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


def apply_mirror(data: dict[str, Any], snapshot: Any, notes: dict[str, str]) -> None:
    """The host's HF_ENDPOINT first in model.mirrors: download.sh passes the spec's mirrors explicitly,
    so an HF_ENDPOINT left out of the spec would not be used at download time."""
    endpoint = ((getattr(snapshot, "env", None) or {}).get("hf_endpoint") or "").rstrip("/")
    if not endpoint:
        return
    parts = urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.username or parts.password:
        notes["model.mirrors"] = (
            "this host's HF_ENDPOINT was not copied (it carries credentials or is not an "
            "http(s) URL); add your mirror by hand"
        )
        return
    rest = [u for u in data["model"]["mirrors"] if u.rstrip("/") != endpoint]
    data["model"]["mirrors"] = [endpoint, *rest]
    notes["model.mirrors"] = "this host's HF_ENDPOINT first, then the embedded spec's mirrors"


def apply_host(data: dict[str, Any], snapshot: Any, facts: Any, notes: dict[str, str]) -> None:
    """GPUs from the snapshot; tensor-parallel size and KV dtype from `tqdeploy plan` when the model is known."""
    apply_mirror(data, snapshot, notes)
    gpus = list(getattr(snapshot, "gpus", []) or [])
    if data[""]["variant"] == "cpu":
        notes["resources.gpus"] = "the cpu variant (vLLM's CPU build) uses no GPU, whatever this host has"
        return
    if not gpus:
        notes["resources.gpus"] = "no GPU seen on this host; the spec targets the serving host"
        return
    data["resources"]["gpus"] = "all"
    notes["resources.gpus"] = f"{len(gpus)} GPU(s) seen: {gpus[0].name}"
    mem = min((g.memory_total or 0) for g in gpus)
    if facts is None or not mem:
        return

    v = data["vllm"]
    mml = v["max_model_len"] or facts.max_position_embeddings
    cc = tuple(gpus[0].compute_capability) if gpus[0].compute_capability else None
    for tp in TP_SIZES:
        if tp > len(gpus):
            break
        try:
            plan = make_plan(
                facts,
                gpu_memory_bytes=mem,
                max_model_len=mml,
                num_gpus=len(gpus),
                tp=tp,
                gpu_memory_utilization=v["gpu_memory_utilization"],
                vllm_version=v["version"],
                compute_capability=cc,
                gpu_name=gpus[0].name,
            )
        except TQError as err:
            notes["vllm.tensor_parallel_size"] = f"tqdeploy plan could not size this model: {err.message}"
            return
        if plan.recommended and not any(p.severity is Severity.ERROR for p in plan.problems):
            v["tensor_parallel_size"] = tp
            notes["vllm.tensor_parallel_size"] = (
                f"smallest size tqdeploy plan finds workable on {len(gpus)} x {gpus[0].name}"
            )
            v["kv_cache_dtype"] = plan.recommended
            notes["vllm.kv_cache_dtype"] = f"tqdeploy plan: {plan.recommendation_reason}"
            return
    notes["vllm.tensor_parallel_size"] = (
        "tqdeploy plan finds no workable size on this host's GPUs "
        "(`tqdeploy plan` shows why); kept the embedded default"
    )


def make_init_text(
    *, model: str | None = None, snapshot: Any = None, name: str | None = None, embedded: str = DEFAULT_SPEC_NAME
) -> tuple[str, dict[str, str]]:
    """(commented TOML, notes) for a new spec; validated before it is returned."""
    if name is not None and not NAME_RE.match(name):
        raise TQError(
            f"--name {name!r} is not a lowercase DNS label (a-z, 0-9, '-', at most 53 chars)",
            "pass e.g. --name qwen36-27b (it names the image, compose service and k8s objects)",
        )
    base = embedded_spec_path(embedded)
    data = parse_spec_text(base.read_text(encoding="utf-8"), f"embedded:{embedded}")
    notes: dict[str, str] = {}
    facts = None
    if model:
        facts = load_model_facts(model)
        apply_model(data, model, facts, notes)
    if snapshot is not None:
        apply_host(data, snapshot, facts, notes)
    if name is not None:
        data[""]["name"] = name
    header = [
        f"tqdeploy deployment spec, written by `tqdeploy init` from the embedded {embedded} spec",
        f"{'and model ' + model if model else 'without a model (the default model)'}. Each key's meaning is above it.",
        "Then: `tqdeploy build` renders the deployment files from it.",
    ]
    text = spec_to_toml(data, header, notes)
    raise_problems(spec_problems(parse_spec_text(text, "tqdeploy init output")), "generated spec", text)
    return text, notes


def write_init(out: Path, text: str, force: bool) -> None:
    if out.is_dir():
        raise TQError(f"{out} is a directory", f"pass a file name, e.g. --out {out / 'tqdeploy.toml'}")
    if out.exists() and not force:
        raise TQError(f"{out} already exists", "pass --force to overwrite it, or --out another file")
    try:
        atomic_write_text(out, text)
    except OSError as err:
        raise TQError(f"cannot write {out}: {err.strerror or err}", "choose a writable --out path") from None
