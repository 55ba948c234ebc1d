"""Which server a check talks to and what is known of it locally: from a build folder (its address, key file,
model folder, dtype and the flags that change answers) or from --url alone (then the model files are read only
when the server's model path exists on this host, and dtype and flags are unknown: no reference can be proven)."""

from __future__ import annotations

from pathlib import Path

from tqdeploy.answers.run import Target
from tqdeploy.buildfolder import folder
from tqdeploy.connect.endpoint import resolve_endpoint
from tqdeploy.errors import TQError
from tqdeploy.net import Client, check_url, model_ids
from tqdeploy.runtime.deployment import load_deployment
from tqdeploy.safeio import read_key_file

# vLLM flags that change what a model answers (besides the KV dtype the check is about): another weight
# quantization, tokenizer, generation defaults or speculative decoding (vllm/engine/arg_utils.py, 0.32.0).
ANSWER_FLAGS = (
    "--quantization",
    "--tokenizer",
    "--revision",
    "--hf-overrides",
    "--generation-config",
    "--override-generation-config",
    "--speculative-config",
)


def answer_flags(extra_args: list[str]) -> dict[str, str]:
    """The answer-changing flags among a spec's extra_args, as {flag: value}, both spellings (--x v, --x=v)."""
    found: dict[str, str] = {}
    for i, arg in enumerate(extra_args):
        name, eq, value = str(arg).partition("=")
        if name in ANSWER_FLAGS:
            if not eq:
                nxt = extra_args[i + 1] if i + 1 < len(extra_args) else ""
                value = "" if str(nxt).startswith("--") else str(nxt)
            found[name.lstrip("-")] = value[:512]
    return found


def for_build(build: Path, url: str | None, key_file: Path | None, model: str | None) -> Target:
    dep = load_deployment(build)
    ep = resolve_endpoint(dep.build_dir, base_url=url, api_key_file=key_file, model=model)
    v = dep.spec.vllm
    return Target(
        ep.root_url,
        ep.served_name,
        ep.read_key(),
        str(ep.api_key_file) if ep.api_key_file else None,
        dep.model_dir,
        str(v.dtype or "auto"),
        answer_flags(list(v.extra_args)),
        folder(dep.build_dir).state_dir / "answers-reference.json",
    )


def for_url(url: str, key_file: Path | None, model: str | None) -> Target:
    root = check_url(url, "--url")
    if root.endswith("/v1"):
        root = root[: -len("/v1")]
    key = read_key_file(key_file) if key_file else None
    if model is None:
        answer = Client(root, key, label="--url").get("/v1/models", timeout=10)
        ids = model_ids(answer) or []
        if len(ids) != 1:
            why = f"it lists {', '.join(ids)}" if ids else f"/v1/models gave no list ({answer.detail(120)})"
            raise TQError(f"--url {root}: cannot tell which model to check: {why}", "pass --served-model-name NAME")
        model = ids[0]
    return Target(root, model, key, str(key_file) if key_file else None)
