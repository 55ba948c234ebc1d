"""Value rules for a loaded spec. Flag-level rules (choices, known flags, false claims) come from
`tqdeploy lint` against the pinned vLLM's own argument schema; the rules here are the spec's own.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from packaging.version import InvalidVersion, Version

from tqdeploy.deployspec.flagtable import MANAGED_FLAGS
from tqdeploy.deployspec.load import Problem
from tqdeploy.deployspec.model import SpecData, is_loopback
from tqdeploy.errors import TQError
from tqdeploy.idents import REVISION_RE
from tqdeploy.net.urls import check_endpoint, has_credentials, shown_url
from tqdeploy.redact.rules import secret_flag

NAME_RE = re.compile(r"^[a-z0-9]([a-z0-9-]{0,51}[a-z0-9])?\Z")  # DNS label, room for k8s suffixes
DIGEST_RE = re.compile(r"^sha256:[0-9a-f]{64}\Z")
REVISION_SHA_RE = re.compile(r"^[0-9a-f]{40}\Z")
REPO_RE = re.compile(r"^[A-Za-z0-9][\w.\-]*/[\w.\-]+\Z")
SIZE_RE = re.compile(r"^\d+(\.\d+)?[kmgKMG]?\Z")
# Image reference with an explicit tag (no digest here; digests go in image.digest).
IMAGE_RE = re.compile(r"^[a-z0-9]+([._\-/:][a-z0-9]+)*(/[a-z0-9._\-]+)*:[\w][\w.\-]{0,127}\Z")
HF_TOKEN_RE = re.compile(r"\bhf_[A-Za-z0-9]{20,}")  # the shape of Hugging Face user access tokens
# Flags whose value is a secret: refused in extra_args, with where the secret goes instead.
SECRET_FLAGS = {
    "--api-key": "set server.api_key_file: launch_vllm.py reads the key from that file in-process",
    "--hf-token": "remove it: serve.sh serves the downloaded model offline (HF_HUB_OFFLINE=1), and "
    "download.sh reads HF_TOKEN from the environment",
}
# Every number the spec renders, bounded by what vLLM and hardware accept, so a typo (or 2**63-1) is refused
# instead of rendered into serve.sh and the manifests.
NUMBER_BOUNDS = {
    "vllm.tensor_parallel_size": (1, 64),
    "vllm.max_model_len": (1, 2**31 - 1),
    "vllm.max_num_seqs": (1, 1 << 20),
    "resources.nodes": (1, 256),
    "resources.replicas": (1, 10_000),
}
OPTIONAL_NUMBERS = ("vllm.max_model_len", "vllm.max_num_seqs")
BOUND_WHY = {
    "vllm.tensor_parallel_size": "tensor parallelism spans the GPUs of one node; no host holds more than 64",
    # vllm/v1/worker/gpu_model_runner.py keeps sequence lengths in torch.int32 buffers (vLLM 0.32.0).
    "vllm.max_model_len": "vLLM keeps sequence lengths in int32; real contexts are at most a few million tokens",
    # vllm/config/scheduler.py: max_num_seqs sizes the model runner's per-request buffers.
    "vllm.max_num_seqs": "vLLM sizes its per-request buffers by max_num_seqs; leave it out for vLLM's default",
    "resources.nodes": "one node per pipeline stage; set it to the nodes you have",
    "resources.replicas": "set the number of copies you run",
}
SERVED_NAME_RE = re.compile(r"^[A-Za-z0-9][\w.\-/:@+]{0,127}\Z")
SAFE_ARG_RE = re.compile(r"^[\w@%+=:,./\-\[\]{}\"' ]*\Z")


def revision_is_commit(revision: str | None) -> bool:
    return bool(revision and REVISION_SHA_RE.match(revision))


def is_exact_release(version: str | None) -> bool:
    """X.Y.Z (optionally rcN/postN), written canonically (PEP 440, via packaging): what pip and image tags pin."""
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


def _mirror_problems(mirrors: list[Any]) -> list[Problem]:
    """Each mirror must be a plain http(s) endpoint: download.sh and the spec copy carry the URLs verbatim,
    so one with user:password@ or a ?token= query would put the secret in the build. Messages show the URL
    with those parts cut (tqdeploy.net.urls.shown_url), even when it does not parse."""
    if not mirrors or not all(isinstance(u, str) for u in mirrors):
        return [Problem("model.mirrors", "model.mirrors must be a non-empty list of http(s) URLs")]
    for url in mirrors:
        if has_credentials(url):
            return [
                Problem(
                    "model.mirrors",
                    f"a model.mirrors URL carries credentials (user:password@host: {shown_url(url)!r}), which would "
                    "be written into download.sh",
                    "drop them from the URL; a token for the mirror goes in HF_TOKEN when download.sh runs",
                )
            ]
        if re.search(r"[\s\"'`$\\]", url):
            return [Problem("model.mirrors", f"model.mirrors URL {shown_url(url)!r} holds quotes, $ or spaces")]
        try:
            check_endpoint(url, "model.mirrors URL")
        except TQError as err:
            return [Problem("model.mirrors", err.message, "a plain https://host[:port][/path]; tokens go in HF_TOKEN")]
    return []


def need(cond: bool, key: str, message: str, fix: str = "") -> list[Problem]:
    """One rule: no problem where cond holds, else the problem at `key`."""
    return [] if cond else [Problem(key, message, fix)]


def _top_problems(data: SpecData) -> list[Problem]:
    top = data[""]
    name = top["name"]
    return [
        *need(top["schema"] == 1, "schema", f"unsupported spec schema {top['schema']}", "set schema = 1"),
        *need(
            bool(name) and bool(NAME_RE.match(name or "")),
            "name",
            "name is required: a lowercase DNS label (a-z, 0-9, '-', at most 53 chars)"
            if name is None
            else f"name {name!r} must be a lowercase DNS label (a-z, 0-9, '-', at most 53 chars)",
            'set name = "my-model", e.g.',
        ),
        *need(
            top["variant"] in ("gpu", "cpu"),
            "variant",
            f"variant {top['variant']!r} is not gpu or cpu",
            'set variant = "gpu" (CUDA image) or "cpu" (vLLM CPU build)',
        ),
    ]


def _model_problems(data: SpecData) -> list[Problem]:
    m = data["model"]
    p = need(
        bool(m["repo"]) != bool(m["path"]),
        "model.repo",
        "set exactly one of model.repo and model.path",
        "a Hugging Face repo id with a revision, or a local model directory",
    )
    if m["repo"]:
        p += need(
            bool(REPO_RE.match(m["repo"])), "model.repo", f"model.repo {m['repo']!r} is not an owner/name repo id"
        )
        p += need(
            bool(m["revision"]),
            "model.revision",
            "model.revision is required with model.repo",
            "set it to the commit sha you tested (a branch name like main is accepted but not pinned)",
        )
    if m["revision"]:
        p += need(
            bool(REVISION_RE.match(str(m["revision"]))),
            "model.revision",
            f"model.revision {str(m['revision'])[:60]!r} is not a branch, tag or commit",
            "a commit sha, tag or branch: 1-255 characters, no spaces, '@' or control characters",
        )
    p += need(
        bool(m["served_name"]) and bool(SERVED_NAME_RE.match(m["served_name"] or "")),
        "model.served_name",
        "model.served_name is required"
        if not m["served_name"]
        else f"model.served_name {m['served_name'][:60]!r} must be 1-128 of A-Z a-z 0-9 . _ - / : @ +",
        'the model name clients send, e.g. served_name = "qwen3.6-27b" (no spaces, quotes or control characters)',
    )
    return p + _mirror_problems(m["mirrors"])


def _bounded(key: str, value: int | None) -> list[Problem]:
    """One number of NUMBER_BOUNDS inside its range (an optional one may be left out)."""
    low, high = NUMBER_BOUNDS[key]
    if value is None or low <= value <= high:
        return []
    if value < low:
        return [
            Problem(
                key, f"{key} must be >= {low}" + (" (or left out)" if key in OPTIONAL_NUMBERS else ""), BOUND_WHY[key]
            )
        ]
    return [Problem(key, f"{key} {value} is more than {high}, more than vLLM or the hardware accept", BOUND_WHY[key])]


def _number_problems(data: SpecData) -> list[Problem]:
    """Every bounded number of NUMBER_BOUNDS, and the (0, 1] share of vllm.gpu_memory_utilization."""
    gmu = data["vllm"]["gpu_memory_utilization"]
    share = need(
        gmu is None or 0 < gmu <= 1,
        "vllm.gpu_memory_utilization",
        f"vllm.gpu_memory_utilization {gmu} must be in (0, 1]",
        "e.g. 0.92 (vLLM's default)",
    )
    sections = (key.split(".") for key in NUMBER_BOUNDS)
    return [p for section, name in sections for p in _bounded(f"{section}.{name}", data[section][name])] + share


def _vllm_problems(data: SpecData) -> list[Problem]:
    v = data["vllm"]
    p = need(
        is_exact_release(v["version"]),
        "vllm.version",
        f"vllm.version {v['version']!r} is not an exact release like 0.32.0",
        "pin the exact vLLM release",
    )
    return p + _number_problems(data) + _extra_args_problems(v["extra_args"])


def _image_problems(data: SpecData) -> list[Problem]:
    img, version = data["image"], data["vllm"]["version"]
    p = need(
        bool(img["base"] and IMAGE_RE.match(img["base"])) and not str(img["base"]).endswith(":latest"),
        "image.base",
        f"image.base {img['base']!r} must be an image with an explicit version tag (not latest)",
        'e.g. base = "vllm/vllm-openai:v0.32.0"',
    )
    tag = official_vllm_tag(img["base"])
    if data[""]["variant"] == "gpu" and tag is not None and version:
        p += need(
            bool(re.match(rf"^v{re.escape(version)}(-[\w.]+)?$", tag)),
            "image.base",
            f"image.base {img['base']} is not the vLLM {version} image that vllm.version pins "
            "(the flags are checked against vllm.version)",
            f'use base = "vllm/vllm-openai:v{version}" (or a -cuXXX variant of it), or set vllm.version '
            "to the image's release",
        )
    return p + need(
        img["digest"] is None or bool(DIGEST_RE.match(img["digest"])),
        "image.digest",
        "image.digest must be sha256:<64 hex> as read from a registry",
        "remove it, or run `tqdeploy build --resolve-digests` where a registry is reachable",
    )


def _server_problems(data: SpecData) -> list[Problem]:
    srv = data["server"]
    host, key_file = srv["host"], srv["api_key_file"]
    return [
        *need(1 <= srv["port"] <= 65535, "server.port", f"server.port {srv['port']} is not a TCP port (1-65535)"),
        *need(bool(re.match(r"^[0-9A-Za-z.:\-]+$", host)), "server.host", f"server.host {host!r} is not an address"),
        *need(
            is_loopback(host) or bool(key_file),
            "server.host",
            f"server.host {host} publishes the API beyond this machine without an API key",
            'set server.api_key_file, or host = "127.0.0.1"',
        ),
        *need(
            key_file is None or _plain_path(key_file),
            "server.api_key_file",
            "server.api_key_file must be a plain path (no quotes, $ or spaces)",
        ),
    ]


def _gpu_problems(data: SpecData) -> list[Problem]:
    gpus, tp = data["resources"]["gpus"], data["vllm"]["tensor_parallel_size"]
    if isinstance(gpus, str):
        return need(gpus == "all", "resources.gpus", f'resources.gpus {gpus!r}: use "all" or a list like [0, 1]')
    indices = all(isinstance(g, int) and not isinstance(g, bool) and g >= 0 for g in gpus)
    ok = indices and len(set(gpus)) == len(gpus)
    p = need(ok, "resources.gpus", "resources.gpus must list distinct GPU indices, e.g. [0, 1]")
    if ok and data[""]["variant"] == "gpu":
        p += need(
            len(gpus) >= tp,
            "resources.gpus",
            f"{len(gpus)} GPU(s) listed but tensor_parallel_size is {tp}",
            "list at least tensor_parallel_size GPUs per node",
        )
    return p


def _storage_problems(data: SpecData) -> list[Problem]:
    """[resources] shm_size, [storage] and model.path: sizes and plain paths."""
    sto, shm, model_path = data["storage"], data["resources"]["shm_size"], data["model"]["path"]
    p = need(bool(SIZE_RE.match(shm)), "resources.shm_size", f"resources.shm_size {shm!r} is not a size like 16g")
    for key in ("models_dir", "cache_dir"):
        p += need(
            _plain_path(sto[key]), f"storage.{key}", f"storage.{key} must be a plain path (no quotes, $ or spaces)"
        )
    for key in ("models_size", "cache_size"):
        p += need(
            bool(re.match(r"^\d+(Mi|Gi|Ti)$", sto[key])),
            f"storage.{key}",
            f"storage.{key} {sto[key]!r} is not a size like 200Gi",
        )
    if model_path:
        p += need(_plain_path(model_path), "model.path", "model.path must be a plain path (no quotes, $ or spaces)")
    if sto["cache_artifact"] is not None:
        p += need(
            _plain_path(sto["cache_artifact"]) and str(sto["cache_artifact"]).endswith(".tar.xz"),
            "storage.cache_artifact",
            "storage.cache_artifact must be a plain path to a .tar.xz (no quotes, $ or spaces)",
            "give the file `tqdeploy cache export` wrote, e.g. ./startcache.tar.xz",
        )
    return p


# The spec's value rules, one unit per concern, in file order (the first problem is the one reported).
RULES: tuple[Callable[[SpecData], list[Problem]], ...] = (
    _top_problems,
    _model_problems,
    _vllm_problems,
    _image_problems,
    _server_problems,
    _gpu_problems,
    _storage_problems,
)


def spec_problems(data: SpecData) -> list[Problem]:
    """Every value problem of schema-checked spec data (load.parse_spec_text), in file order; empty when valid.

    The rules read the TOML's values, before the typed Spec exists: a Spec is only made of data that passed.
    """
    return [problem for rule in RULES for problem in rule(data)]


def _plain_path(value: Any) -> bool:
    return isinstance(value, str) and bool(re.match(r"^[\w./~\-]+$", value))


def vllm_flag_name(arg: str) -> str:
    """The long option an argv item names, spelled the way vLLM 0.32.0 reads it: FlexibleArgumentParser.parse_args
    (vllm/utils/argparse_utils.py) turns '_' into '-' between the leading -- and the first '.'."""
    flag = arg.split("=", 1)[0]
    if not flag.startswith("--"):
        return flag
    head, dot, rest = flag[2:].partition(".")
    return "--" + head.replace("_", "-") + dot + rest


def names_flag(flag: str, known: str) -> bool:
    """Whether argparse would read `flag` as `known`: the same option, a dotted JSON sub-key of it, or a
    prefix of it (FlexibleArgumentParser keeps argparse's default allow_abbrev=True: vLLM 0.32.0 passes no
    allow_abbrev anywhere), so --api, --api_k and --api-key.x all reach --api-key. Prefixes shorter than
    "--" plus two characters are not counted (argparse refuses them as ambiguous in practice)."""
    if not flag.startswith("--"):
        return flag == known
    base = flag.split(".", 1)[0]
    return base == known or (len(base) >= 4 and known.startswith(base)) or flag.startswith(known + "s")


MAX_EXTRA_ARGS = 1000  # far more than any vLLM launch line; keeps every check on them linear and small
MAX_EXTRA_ARG_CHARS = 4096


def _extra_arg_problem(arg: Any) -> Problem | None:
    if not isinstance(arg, str):
        return Problem("vllm.extra_args", f"vllm.extra_args holds {type(arg).__name__}; every item must be a string")
    if len(arg) > MAX_EXTRA_ARG_CHARS:
        return Problem("vllm.extra_args", f"a vllm.extra_args item is {len(arg)} characters long (at most 4096)")

    flag = vllm_flag_name(arg)
    secret = next((known for known in SECRET_FLAGS if names_flag(flag, known)), None)
    if secret is None and (found := secret_flag(arg)) is not None:
        secret = f"--{found}" if f"--{found}" in SECRET_FLAGS else f"{flag[:40]} (a secret by its name)"
    if secret or HF_TOKEN_RE.search(arg):
        # The value is not repeated: the message itself must not spread the secret.
        what = secret or "a Hugging Face token"
        if secret and flag != secret and "(a secret" not in secret:
            what = f"{flag[:40]} is read as {secret}"
        return Problem(
            "vllm.extra_args",
            f"vllm.extra_args puts a secret on vLLM's command line ({what}), "
            "where it would be written into serve.sh and the image and show in `ps`",
            SECRET_FLAGS.get(secret or "", "remove it from the spec"),
        )
    managed = next((known for known in MANAGED_FLAGS if names_flag(flag, known)), None)
    if managed:
        return Problem(
            "vllm.extra_args",
            f"vllm.extra_args sets {managed}, which the spec owns",
            f"use {MANAGED_FLAGS[managed]} instead",
        )
    if not SAFE_ARG_RE.match(arg):
        return Problem(
            "vllm.extra_args",
            f"vllm.extra_args item {arg[:80]!r} holds shell metacharacters",
            "pass plain flag values only",
        )
    return None


def _extra_args_problems(args: list[Any]) -> list[Problem]:
    if len(args) > MAX_EXTRA_ARGS:
        return [Problem("vllm.extra_args", f"vllm.extra_args has {len(args)} items (at most {MAX_EXTRA_ARGS})")]
    return [problem for problem in map(_extra_arg_problem, args) if problem is not None]
