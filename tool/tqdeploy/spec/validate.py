"""Value rules for a loaded spec. Flag-level rules (choices, known flags, false claims) come from
`tqdeploy lint` against the pinned vLLM's own argument schema; the rules here are the spec's own.
"""

from __future__ import annotations

import re
from typing import Any

from tqdeploy.spec.load import Problem
from tqdeploy.spec.model import MANAGED_FLAGS, Spec, is_loopback

NAME_RE = re.compile(r"^[a-z0-9]([a-z0-9-]{0,51}[a-z0-9])?$")  # DNS label, room for k8s suffixes
DIGEST_RE = re.compile(r"^sha256:[0-9a-f]{64}$")
REVISION_SHA_RE = re.compile(r"^[0-9a-f]{40}$")
REPO_RE = re.compile(r"^[A-Za-z0-9][\w.\-]*/[\w.\-]+$")
SIZE_RE = re.compile(r"^\d+(\.\d+)?[kmgKMG]?$")
# Image reference with an explicit tag (no digest here; digests go in image.digest).
IMAGE_RE = re.compile(r"^[a-z0-9]+([._\-/:][a-z0-9]+)*(/[a-z0-9._\-]+)*:[\w][\w.\-]{0,127}$")
HF_TOKEN_RE = re.compile(r"\bhf_[A-Za-z0-9]{20,}")  # the shape of Hugging Face user access tokens
# Flags whose value is a secret: refused in extra_args, with where the secret goes instead.
SECRET_FLAGS = {
    "--api-key": "set server.api_key_file: serve.sh reads the key from that file into VLLM_API_KEY",
    "--hf-token": "remove it: serve.sh serves the downloaded model offline (HF_HUB_OFFLINE=1), and "
    "download.sh reads HF_TOKEN from the environment",
}
SAFE_ARG_RE = re.compile(r"^[\w@%+=:,./\-\[\]{}\"' ]*$")


def revision_is_commit(revision: str | None) -> bool:
    return bool(revision and REVISION_SHA_RE.match(revision))


def is_exact_release(version: str | None) -> bool:
    """X.Y.Z (optionally rcN/postN), written canonically (PEP 440, via packaging): what pip and image tags pin."""
    from packaging.version import InvalidVersion, Version

    try:
        parsed = Version(version or "")
    except InvalidVersion:
        return False
    return (
        str(parsed) == version
        and len(parsed.release) == 3
        and parsed.local is None
        and parsed.dev is None
        and parsed.epoch == 0
    )


def official_vllm_tag(base: str | None) -> str | None:
    """The tag of vLLM's official image vllm/vllm-openai (from Docker Hub or a mirror registry), else None.

    Its tags are the release with a v prefix, vX.Y.Z, plus suffixed variants such as -cu129
    (unsuffixed tags are CUDA 13.0 since v0.20).
    """
    if not base or ":" not in base.rsplit("/", 1)[-1]:
        return None
    name, tag = base.rsplit(":", 1)
    return tag if name.split("/")[-2:] == ["vllm", "vllm-openai"] else None


def _has_credentials(url: str) -> bool:
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        return bool(parts.username or parts.password)
    except ValueError:
        return False


def spec_problems(spec: Spec) -> list[Problem]:
    """Every value problem of a spec, in file order; empty when it is valid."""
    p: list[Problem] = []
    top, m, v, img, srv, res, sto = (spec[s] for s in ("", "model", "vllm", "image", "server", "resources", "storage"))

    def need(cond: bool, key: str, message: str, fix: str = "") -> None:
        if not cond:
            p.append(Problem(key, message, fix))

    need(top["schema"] == 1, "schema", f"unsupported spec schema {top['schema']}", "set schema = 1")
    need(
        bool(top["name"]) and bool(NAME_RE.match(top["name"] or "")),
        "name",
        "name is required: a lowercase DNS label (a-z, 0-9, '-', at most 53 chars)"
        if top["name"] is None
        else f"name {top['name']!r} must be a lowercase DNS label (a-z, 0-9, '-', at most 53 chars)",
        'set name = "my-model", e.g.',
    )
    need(
        top["variant"] in ("gpu", "cpu"),
        "variant",
        f"variant {top['variant']!r} is not gpu or cpu",
        'set variant = "gpu" (CUDA image) or "cpu" (vLLM CPU build)',
    )

    if bool(m["repo"]) == bool(m["path"]):
        p.append(
            Problem(
                "model.repo",
                "set exactly one of model.repo and model.path",
                "a Hugging Face repo id with a revision, or a local model directory",
            )
        )
    if m["repo"]:
        need(bool(REPO_RE.match(m["repo"])), "model.repo", f"model.repo {m['repo']!r} is not an owner/name repo id")
        need(
            bool(m["revision"]),
            "model.revision",
            "model.revision is required with model.repo",
            "set it to the commit sha you tested (a branch name like main is accepted but not pinned)",
        )
    need(
        bool(m["served_name"]),
        "model.served_name",
        "model.served_name is required",
        'the model name clients send, e.g. served_name = "qwen3.6-27b"',
    )
    need(
        bool(m["mirrors"]) and all(isinstance(u, str) and re.match(r"^https?://[^\s\"'`$]+$", u) for u in m["mirrors"]),
        "model.mirrors",
        "model.mirrors must be a non-empty list of http(s) URLs",
    )
    # download.sh and the spec copy carry the URLs verbatim: a password in one would land in the build.
    need(
        not any(isinstance(u, str) and _has_credentials(u) for u in m["mirrors"]),
        "model.mirrors",
        "a model.mirrors URL carries credentials (user:password@host), which would be written into download.sh",
        "drop them from the URL; a token for the mirror goes in HF_TOKEN when download.sh runs",
    )

    need(
        is_exact_release(v["version"]),
        "vllm.version",
        f"vllm.version {v['version']!r} is not an exact release like 0.32.0",
        "pin the exact vLLM release",
    )
    need(v["tensor_parallel_size"] >= 1, "vllm.tensor_parallel_size", "vllm.tensor_parallel_size must be >= 1")
    for key in ("max_model_len", "max_num_seqs"):
        need(v[key] is None or v[key] >= 1, f"vllm.{key}", f"vllm.{key} must be >= 1 (or left out)")
    gmu = v["gpu_memory_utilization"]
    need(
        gmu is None or 0 < gmu <= 1,
        "vllm.gpu_memory_utilization",
        f"vllm.gpu_memory_utilization {gmu} must be in (0, 1]",
        "e.g. 0.92 (vLLM's default)",
    )
    p += _extra_args_problems(v["extra_args"])

    need(
        bool(img["base"] and IMAGE_RE.match(img["base"])) and not str(img["base"]).endswith(":latest"),
        "image.base",
        f"image.base {img['base']!r} must be an image with an explicit version tag (not latest)",
        'e.g. base = "vllm/vllm-openai:v0.32.0"',
    )
    tag = official_vllm_tag(img["base"])
    if spec.variant == "gpu" and tag is not None and v["version"]:
        need(
            bool(re.match(rf"^v{re.escape(v['version'])}(-[\w.]+)?$", tag)),
            "image.base",
            f"image.base {img['base']} is not the vLLM {v['version']} image that vllm.version pins "
            "(the flags are checked against vllm.version)",
            f'use base = "vllm/vllm-openai:v{v["version"]}" (or a -cuXXX variant of it), or set vllm.version '
            "to the image's release",
        )
    need(
        img["digest"] is None or bool(DIGEST_RE.match(img["digest"])),
        "image.digest",
        "image.digest must be sha256:<64 hex> as read from a registry",
        "remove it, or run `tqdeploy build --resolve-digests` where a registry is reachable",
    )

    need(1 <= srv["port"] <= 65535, "server.port", f"server.port {srv['port']} is not a TCP port")
    need(
        bool(re.match(r"^[0-9A-Za-z.:\-]+$", srv["host"])),
        "server.host",
        f"server.host {srv['host']!r} is not an address",
    )
    if not is_loopback(srv["host"]) and not srv["api_key_file"]:
        p.append(
            Problem(
                "server.host",
                f"server.host {srv['host']} publishes the API beyond this machine without an API key",
                'set server.api_key_file, or host = "127.0.0.1"',
            )
        )
    need(
        srv["api_key_file"] is None or _plain_path(srv["api_key_file"]),
        "server.api_key_file",
        "server.api_key_file must be a plain path (no quotes, $ or spaces)",
    )

    gpus = res["gpus"]
    if isinstance(gpus, str):
        need(gpus == "all", "resources.gpus", f'resources.gpus {gpus!r}: use "all" or a list like [0, 1]')
    else:
        ok = all(isinstance(g, int) and not isinstance(g, bool) and g >= 0 for g in gpus) and len(set(gpus)) == len(
            gpus
        )
        need(ok, "resources.gpus", "resources.gpus must list distinct GPU indices, e.g. [0, 1]")
        if ok and spec.variant == "gpu":
            need(
                len(gpus) >= v["tensor_parallel_size"],
                "resources.gpus",
                f"{len(gpus)} GPU(s) listed but tensor_parallel_size is {v['tensor_parallel_size']}",
                "list at least tensor_parallel_size GPUs per node",
            )
    need(res["nodes"] >= 1, "resources.nodes", "resources.nodes must be >= 1")
    need(res["replicas"] >= 1, "resources.replicas", "resources.replicas must be >= 1")
    need(
        bool(SIZE_RE.match(res["shm_size"])),
        "resources.shm_size",
        f"resources.shm_size {res['shm_size']!r} is not a size like 16g",
    )
    if spec.variant == "cpu":
        need(res["nodes"] == 1, "resources.nodes", "the cpu variant serves on one node")
    for key in ("models_dir", "cache_dir"):
        need(_plain_path(sto[key]), f"storage.{key}", f"storage.{key} must be a plain path (no quotes, $ or spaces)")
    for key in ("models_size", "cache_size"):
        need(
            bool(re.match(r"^\d+(Mi|Gi|Ti)$", sto[key])),
            f"storage.{key}",
            f"storage.{key} {sto[key]!r} is not a size like 200Gi",
        )
    if m["path"]:
        need(_plain_path(m["path"]), "model.path", "model.path must be a plain path (no quotes, $ or spaces)")
    return p


def _plain_path(value: Any) -> bool:
    return isinstance(value, str) and bool(re.match(r"^[\w./~\-]+$", value))


def _extra_args_problems(args: list[Any]) -> list[Problem]:
    out: list[Problem] = []
    for arg in args:
        if not isinstance(arg, str):
            out.append(Problem("vllm.extra_args", f"vllm.extra_args holds {arg!r}; every item must be a string"))
            continue
        flag = arg.split("=", 1)[0]
        if flag in SECRET_FLAGS or HF_TOKEN_RE.search(arg):
            # The value is not repeated: the message itself must not spread the secret.
            out.append(
                Problem(
                    "vllm.extra_args",
                    f"vllm.extra_args puts a secret on vLLM's command line "
                    f"({flag if flag in SECRET_FLAGS else 'a Hugging Face token'}), where it would "
                    "be written into serve.sh and the image and show in `ps`",
                    SECRET_FLAGS.get(flag, "remove it from the spec"),
                )
            )
        elif flag in MANAGED_FLAGS:
            out.append(
                Problem(
                    "vllm.extra_args",
                    f"vllm.extra_args sets {flag}, which the spec owns",
                    f"use {MANAGED_FLAGS[flag]} instead",
                )
            )
        elif not SAFE_ARG_RE.match(arg):
            out.append(
                Problem(
                    "vllm.extra_args",
                    f"vllm.extra_args item {arg!r} holds shell metacharacters",
                    "pass plain flag values only",
                )
            )
    return out
