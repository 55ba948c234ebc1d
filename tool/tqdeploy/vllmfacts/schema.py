"""The argument schema of `vllm serve` for one vLLM release, read from checks/vllm-schema/<version>.json.

The files are written by scripts/extract_vllm_schema.py from vLLM's own parser; nothing here is
typed in by hand. Lookups follow vLLM's FlexibleArgumentParser: underscores and dashes are the
same inside an option name, `--no-X` belongs to BooleanOptionalAction options, and argparse's
allow_abbrev accepts a unique prefix of a long option.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from packaging.version import Version

from tqdeploy.errors import TQError
from tqdeploy.resources import REINSTALL_HINT, data_dir

SCHEMA_ID = "tqdeploy.vllm-schema/1"


@dataclass(frozen=True)
class Option:
    dest: str
    names: tuple[str, ...]
    type: str  # str, int, float, bool, json, json_object, json_or_str, human_int, human_int_or_auto, ...
    nullable: bool = False
    choices: tuple[Any, ...] | None = None
    nargs: Any = None
    action: str = "StoreAction"
    help: str = ""
    deprecated: bool = False
    has_default: bool = False
    default: Any = None
    default_omitted: str = ""
    platform_dependent: tuple[str, ...] = ()
    engine_values: dict[str, Any] | None = None

    @property
    def is_bool(self) -> bool:
        return self.type == "bool"

    @property
    def long_name(self) -> str:
        longs = [n for n in self.names if n.startswith("--") and not n.startswith("--no-")]
        return longs[0] if longs else (self.names[0] if self.names else self.dest)


def normalize(name: str) -> str:
    """vLLM treats `--max_model_len` as `--max-model-len` (FlexibleArgumentParser.parse_args)."""
    if name.startswith("--"):
        return "--" + name[2:].replace("_", "-")
    return name


@dataclass
class VllmSchema:
    version: str
    options: dict[str, Option]  # by dest
    allow_abbrev: bool = True
    source: str = ""
    env_vars: frozenset[str] = frozenset()  # the variables vllm/envs.py reads (empty in files made before it)
    _by_name: dict[str, Option] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        for opt in self.options.values():
            for name in opt.names:
                self._by_name[name] = opt

    @property
    def names(self) -> list[str]:
        return sorted(self._by_name)

    def lookup(self, name: str) -> Option | None:
        """The option an exact (underscore-normalised) name belongs to."""
        return self._by_name.get(normalize(name))

    def prefix_matches(self, name: str) -> list[str]:
        """Long names a prefix would select under argparse's allow_abbrev."""
        name = normalize(name)
        if not self.allow_abbrev or not name.startswith("--"):
            return []
        return sorted(n for n in self._by_name if n.startswith(name))

    def default(self, dest: str) -> Any:
        """The parser default of an option; TQError when vLLM's parser has none we can state."""
        opt = self.options.get(dest)
        if opt is None:
            raise TQError(
                f"vLLM {self.version} has no option with dest {dest!r}",
                "use a dest from checks/vllm-schema/<version>.json",
            )
        if not opt.has_default:
            raise TQError(
                f"vLLM {self.version} --{dest.replace('_', '-')} has no fixed parser default ({opt.default_omitted})",
                "set the value explicitly",
            )
        return opt.default


def _option(data: dict[str, Any]) -> Option:
    choices = data.get("choices")
    return Option(
        dest=data["dest"],
        names=tuple(data.get("names") or ()),
        type=data.get("type", "str"),
        nullable=bool(data.get("nullable")),
        choices=tuple(choices) if choices is not None else None,
        nargs=data.get("nargs"),
        action=data.get("action", "StoreAction"),
        help=data.get("help", ""),
        deprecated=bool(data.get("deprecated")),
        has_default="default" in data,
        default=data.get("default"),
        default_omitted=data.get("default_omitted", ""),
        platform_dependent=tuple(data.get("platform_dependent") or ()),
        engine_values=data.get("engine_values"),
    )


def available_versions() -> list[str]:
    folder = data_dir("checks") / "vllm-schema"
    if not folder.is_dir():
        return []
    return sorted((p.stem for p in folder.glob("*.json")), key=Version)


@lru_cache(maxsize=8)
def load_schema(version: str) -> VllmSchema:
    """The schema of `vllm serve` for a vLLM release; TQError when tqdeploy has none for it."""
    version = version.strip().lstrip("v")
    path = data_dir("checks") / "vllm-schema" / f"{version}.json"
    if not path.is_file():
        known = ", ".join(available_versions()) or "(none)"
        raise TQError(
            f"no vLLM argument schema for version {version!r}",
            f"use one of: {known} (a newer tqdeploy release may know more; `tqdeploy --version` shows this one)",
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise TQError(f"{path} is not valid JSON ({exc.msg} at line {exc.lineno})", REINSTALL_HINT) from exc
    if data.get("schema") != SCHEMA_ID:
        raise TQError(f"{path} is not a {SCHEMA_ID} document", REINSTALL_HINT)
    options = {dest: _option(o) for dest, o in data["options"].items()}
    return VllmSchema(
        version=data["vllm_version"],
        options=options,
        allow_abbrev=bool(data.get("parser", {}).get("allow_abbrev", True)),
        source=data.get("source", ""),
        env_vars=frozenset(data.get("env_vars") or ()),
    )
