"""The loaded deployment spec as typed, frozen sections, and what is derived from it (hash, vLLM argv).

A spec is read once (deployspec.load_spec): the TOML is checked against the schema (load.py, validate.py) as
plain data, then turned into these sections. Past that boundary every reader uses attributes
(spec.vllm.kv_cache_dtype); nothing changes a loaded spec (a pinned digest is a new Spec, dataclasses.replace).
Field names are the schema's keys (schema.py), so to_data() gives back the same dict and the hash stays what the
locks and fingerprints of existing builds recorded.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
from dataclasses import asdict, dataclass, fields
from typing import Any, TypeVar

from tqdeploy.deployspec.flagtable import RENDERED_FLAGS

CONTAINER_MODELS = "/models"
CONTAINER_VLLM_CACHE = "/cache/vllm"
CONTAINER_HF_HOME = "/cache/huggingface"
CONTAINER_API_KEY = "/run/secrets/vllm-api-key"

# The TOML boundary: section name ("" for the top-level keys) -> key -> value, defaults filled (load.with_defaults).
SpecData = dict[str, dict[str, Any]]
FlagValue = str | int | float | bool


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class Section:
    """What every section has beside its fields: its keys and values as the schema names them."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ModelSection(Section):
    repo: str | None
    revision: str | None
    path: str | None
    served_name: str
    mirrors: tuple[str, ...]


@dataclass(frozen=True)
class VllmSection(Section):
    version: str
    kv_cache_dtype: str | None
    dtype: str | None
    tensor_parallel_size: int
    max_model_len: int | None
    max_num_seqs: int | None
    gpu_memory_utilization: float | None
    extra_args: tuple[str, ...]
    tool_calling: bool
    load_format: str | None
    startup_plan: bool | None

    def value(self, key: str) -> FlagValue | None:
        """The value of one rendered-flag key (flagtable.RENDERED_FLAGS names them as data)."""
        found: FlagValue | None = getattr(self, key)
        return found


@dataclass(frozen=True)
class ImageSection(Section):
    base: str
    digest: str | None


@dataclass(frozen=True)
class ServerSection(Section):
    host: str
    port: int
    api_key_file: str | None


@dataclass(frozen=True)
class ResourcesSection(Section):
    gpus: str | tuple[int, ...]  # "all", or GPU indices
    nodes: int
    replicas: int
    shm_size: str


@dataclass(frozen=True)
class StorageSection(Section):
    models_dir: str
    cache_dir: str
    models_size: str
    cache_size: str
    cache_artifact: str | None


S = TypeVar("S", bound=Section)

SECTIONS: dict[str, type[Section]] = {
    "model": ModelSection,
    "vllm": VllmSection,
    "image": ImageSection,
    "server": ServerSection,
    "resources": ResourcesSection,
    "storage": StorageSection,
}


def _frozen(value: Any) -> Any:
    """TOML lists as tuples: a loaded spec is not changed in place (json.dumps writes both as arrays)."""
    return tuple(value) if isinstance(value, list) else value


def _section(cls: type[S], values: dict[str, Any]) -> S:
    return cls(**{f.name: _frozen(values[f.name]) for f in fields(cls)})


@dataclass(frozen=True)
class Spec:
    schema: int
    name: str
    variant: str
    model: ModelSection
    vllm: VllmSection
    image: ImageSection
    server: ServerSection
    resources: ResourcesSection
    storage: StorageSection
    source: str  # file path, or "embedded:<name>"
    text: str = ""
    digest_source: str = ""  # where image.digest came from: spec, tqdeploy data, registry ("" = none)

    @classmethod
    def from_data(cls, data: SpecData, source: str, text: str = "") -> Spec:
        """The typed spec of schema-checked, value-checked data (load.parse_spec_text, validate.spec_problems)."""
        top = data[""]
        return cls(
            schema=top["schema"],
            name=top["name"],
            variant=top["variant"],
            model=_section(ModelSection, data["model"]),
            vllm=_section(VllmSection, data["vllm"]),
            image=_section(ImageSection, data["image"]),
            server=_section(ServerSection, data["server"]),
            resources=_section(ResourcesSection, data["resources"]),
            storage=_section(StorageSection, data["storage"]),
            source=source,
            text=text,
        )

    def to_data(self) -> dict[str, dict[str, Any]]:
        """Back to the schema's shape: {"": top-level keys, section: {key: value}}."""
        top = {"schema": self.schema, "name": self.name, "variant": self.variant}
        sections = (self.model, self.vllm, self.image, self.server, self.resources, self.storage)
        return {"": top} | {name: section.to_dict() for name, section in zip(SECTIONS, sections, strict=True)}

    @property
    def vllm_version(self) -> str:
        return self.vllm.version

    def canonical_json(self) -> str:
        return json.dumps(self.to_data(), sort_keys=True, separators=(",", ":"), ensure_ascii=True)

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
        if self.model.repo:
            return self.model.repo.replace("/", "--")
        return (self.model.path or "").rstrip("/").rsplit("/", 1)[-1]

    @property
    def container_model_path(self) -> str:
        return f"{CONTAINER_MODELS}/{self.model_dir_name}"

    @property
    def multi_node(self) -> bool:
        return self.resources.nodes > 1

    def vllm_flags(self) -> list[str]:
        """vLLM flags from the spec, in a fixed order (no model, host or port: serve.sh adds those)."""
        flags = ["--served-model-name", self.model.served_name]
        pairs: list[tuple[str, FlagValue | None]] = [(flag, self.vllm.value(key)) for flag, key in RENDERED_FLAGS]
        if self.multi_node:
            # One pipeline stage per node, vLLM's own multi-node mode across them (multinode.sh.j2 adds the
            # node flags; the CPU build cannot place Ray workers: vllm/platforms/cpu.py has no ray_device_key).
            pairs += [
                ("--pipeline-parallel-size", self.resources.nodes),
                ("--distributed-executor-backend", "mp"),
            ]
        for flag, value in pairs:
            if value is not None:
                flags += [flag, _fmt(value)]
        return flags + list(self.vllm.extra_args)

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "spec_sha256": self.spec_hash,
            "spec": {("top" if k == "" else k): v for k, v in self.to_data().items()},
        }


def _fmt(value: FlagValue) -> str:
    if isinstance(value, float):
        return repr(value)
    return str(value)
