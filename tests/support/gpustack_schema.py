"""GPUStack's own rules for a custom inference backend, read from its PyPI wheel without installing it.

The gpustack wheel (make test-deps downloads it into .cache/gpustack/) pulls ~70 server dependencies
(SQLAlchemy, Kubernetes, ...), so it is not installed. Its source is read instead and the parts that
decide whether a backend YAML is accepted are executed as GPUStack wrote them:
- gpustack/schemas/inference_backend.py: the pydantic models VersionConfig / ParameterFormatEnum (exec'd
  verbatim) and the field annotations of InferenceBackendBase (an SQLModel; rebuilt as a pydantic model
  from the same annotations);
- gpustack/routes/inference_backend.py: `allowed_keys` of the from-yaml route (other keys are dropped) and
  validate_custom_suffix (exec'd verbatim);
- gpustack/utils/template.py: the placeholder names deployment_variables always defines.
"""

from __future__ import annotations

import ast
import enum
import sys
import types
import zipfile
from pathlib import Path
from typing import Any, Optional

REPO = Path(__file__).resolve().parents[2]
WHEEL_DIR = REPO / ".cache" / "gpustack"
GPUSTACK_VERSION = "2.3.0"
WHEEL = WHEEL_DIR / f"gpustack-{GPUSTACK_VERSION}-py3-none-any.whl"


class BadRequest(Exception):
    """Stands in for gpustack.api.exceptions.BadRequestException (message= keyword)."""

    def __init__(self, message: str):
        super().__init__(message)


def _source(path: str) -> str:
    with zipfile.ZipFile(WHEEL) as whl:
        return whl.read(path).decode("utf-8")


def _node(tree: ast.Module, name: str) -> ast.stmt:
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return node
    raise LookupError(f"{name} not found in the gpustack source")


class GpustackRules:
    def __init__(self) -> None:
        import pydantic

        schemas = _source("gpustack/schemas/inference_backend.py")
        routes = _source("gpustack/routes/inference_backend.py")
        source_enum = _source("gpustack/schemas/source.py")
        # A real module to exec into: pydantic resolves the annotations through the class's module.
        module = types.ModuleType("gpustack_rules_from_wheel")
        sys.modules[module.__name__] = module
        self.ns: dict[str, Any] = module.__dict__
        self.ns.update(
            {
                "BaseModel": pydantic.BaseModel,
                "Field": pydantic.Field,
                "RootModel": pydantic.RootModel,
                "Enum": enum.Enum,
                "enum": enum,
                "Optional": Optional,
                "List": list,
                "Dict": dict,
                "BadRequestException": BadRequest,
            }
        )
        s_tree, r_tree, e_tree = ast.parse(schemas), ast.parse(routes), ast.parse(source_enum)
        exec(ast.get_source_segment(source_enum, _node(e_tree, "SourceTypeEnum")), self.ns)
        models = _source("gpustack/schemas/models.py")
        exec(ast.get_source_segment(models, _node(ast.parse(models), "BackendSourceEnum")), self.ns)
        for name in ("ParameterFormatEnum", "ContainerEnvConfig", "VersionConfig", "VersionConfigDict"):
            exec(ast.get_source_segment(schemas, _node(s_tree, name)), self.ns)
        exec(ast.get_source_segment(routes, _node(r_tree, "validate_custom_suffix")), self.ns)
        self.backend_fields = self._backend_fields(schemas, s_tree)
        self.allowed_keys = self._allowed_keys(routes, r_tree)
        self.placeholders = self._placeholders()

    def _backend_fields(self, text: str, tree: ast.Module) -> dict[str, Any]:
        cls = _node(tree, "InferenceBackendBase")
        assert isinstance(cls, ast.ClassDef)
        fields = {}
        for stmt in cls.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                fields[stmt.target.id] = eval(ast.get_source_segment(text, stmt.annotation), self.ns)
        return fields

    @staticmethod
    def _allowed_keys(text: str, tree: ast.Module) -> list[str]:
        route = _node(tree, "create_inference_backend_from_yaml")
        for node in ast.walk(route):
            if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "allowed_keys":
                return ast.literal_eval(node.value)
        raise LookupError("allowed_keys not found in the from-yaml route")

    @staticmethod
    def _placeholders() -> set[str]:
        text = _source("gpustack/utils/template.py")
        fn = _node(ast.parse(text), "deployment_variables")
        for node in ast.walk(fn):
            if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "variables":
                return {k.value for k in node.value.keys if isinstance(k, ast.Constant)}
        raise LookupError("variables not found in deployment_variables")

    def validate(self, data: dict[str, Any]) -> None:
        """Raise (pydantic.ValidationError, BadRequest, AssertionError) where GPUStack would refuse or drop."""
        import pydantic

        dropped = set(data) - set(self.allowed_keys)
        assert not dropped, f"GPUStack's from-yaml route drops {sorted(dropped)}"
        assert data.get("backend_name"), "backend_name is required in YAML"
        configs = {v: self.ns["VersionConfig"](**c) for v, c in data.get("version_configs", {}).items()}
        for version, raw in data.get("version_configs", {}).items():
            unknown = set(raw) - set(self.ns["VersionConfig"].model_fields)
            assert not unknown, f"version {version}: VersionConfig has no {sorted(unknown)}"
        wrapped = self.ns["VersionConfigDict"](root=configs)
        self.ns["validate_custom_suffix"](data["backend_name"], None)
        self.ns["validate_custom_suffix"](None, wrapped)
        fields = {k: (t, ...) if k == "backend_name" else (t, None) for k, t in self.backend_fields.items()}
        fields["version_configs"] = (self.ns["VersionConfigDict"], None)
        model = pydantic.create_model("InferenceBackendCreate", **fields)
        model.model_validate({**data, "version_configs": wrapped})
