"""The loaded, defaults-filled deployment spec and what is derived from it (hash, vLLM argv)."""

from __future__ import annotations

import hashlib
import ipaddress
import json
from dataclasses import dataclass
from typing import Any

from tqdeploy.deployspec.flagtable import RENDERED_FLAGS

CONTAINER_MODELS = "/models"
CONTAINER_VLLM_CACHE = "/cache/vllm"
CONTAINER_HF_HOME = "/cache/huggingface"
CONTAINER_API_KEY = "/run/secrets/vllm-api-key"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass
class Spec:
    data: dict[str, dict[str, Any]]
    source: str  # file path, or "embedded:<name>"
    text: str = ""
    flag_check: Any = None  # tqdeploy.lint.specflags.FlagCheck once the vLLM flags were linted (render.build)
    digest_source: str = ""  # where image.digest came from: spec, tqdeploy data, registry ("" = none)

    def __getitem__(self, section: str) -> dict[str, Any]:
        return self.data[section]

    @property
    def name(self) -> str:
        return self.data[""]["name"]

    @property
    def variant(self) -> str:
        return self.data[""]["variant"]

    @property
    def vllm_version(self) -> str:
        return self.data["vllm"]["version"]

    def canonical_json(self) -> str:
        return json.dumps(self.data, sort_keys=True, separators=(",", ":"), ensure_ascii=True)

    @property
    def spec_hash(self) -> str:
        """sha256 of the normalized spec: same settings, same hash, whatever the comments or key order."""
        return hashlib.sha256(self.canonical_json().encode("ascii")).hexdigest()

    @property
    def short_hash(self) -> str:
        return self.spec_hash[:12]

    @property
    def model_dir_name(self) -> str:
        """Folder under the models dir: the repo id with '/' -> '--' (as in the HF cache), or the path's name."""
        m = self.data["model"]
        if m["repo"]:
            return m["repo"].replace("/", "--")
        return m["path"].rstrip("/").rsplit("/", 1)[-1]

    @property
    def container_model_path(self) -> str:
        return f"{CONTAINER_MODELS}/{self.model_dir_name}"

    @property
    def multi_node(self) -> bool:
        return self.data["resources"]["nodes"] > 1

    def vllm_flags(self) -> list[str]:
        """vLLM flags from the spec, in a fixed order (no model, host or port: serve.sh adds those)."""
        flags = ["--served-model-name", self.data["model"]["served_name"]]
        pairs = [(flag, self.data[section][key]) for flag, (section, key) in RENDERED_FLAGS]
        if self.multi_node:
            # One pipeline stage per node, vLLM's own multi-node mode across them (multinode.sh.j2 adds the
            # node flags; the CPU build cannot place Ray workers: vllm/platforms/cpu.py has no ray_device_key).
            pairs += [
                ("--pipeline-parallel-size", self.data["resources"]["nodes"]),
                ("--distributed-executor-backend", "mp"),
            ]
        for flag, value in pairs:
            if value is not None:
                flags += [flag, _fmt(value)]
        return flags + [str(a) for a in self.data["vllm"]["extra_args"]]

    def lint_argv(self) -> list[str]:
        """The full command serve.sh runs, as argv for `tqdeploy lint` (host/port as the spec says).

        With an API key file, serve.sh runs the rendered launch_vllm.py, which reads the key from the file into
        the API server's arguments in-process (never VLLM_API_KEY, never argv): lint sees that launcher, as it
        does in serve.sh itself. An exported VLLM_API_KEY here would make the build warn about its own
        serve.sh (TQ344 on releases that hash it into the compile cache).
        """
        if self.data["server"]["api_key_file"]:
            launcher = ["python3", "launch_vllm.py", self.container_model_path]
        elif self.variant == "cpu":
            launcher = ["python3", "-m", "vllm.entrypoints.openai.api_server", "--model", self.container_model_path]
        else:
            launcher = ["vllm", "serve", self.container_model_path]
        return [
            *launcher,
            *self.vllm_flags(),
            "--host",
            self.data["server"]["host"],
            "--port",
            str(self.data["server"]["port"]),
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "spec_sha256": self.spec_hash,
            "spec": {("top" if k == "" else k): v for k, v in self.data.items()},
        }


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return repr(value)
    return str(value)
