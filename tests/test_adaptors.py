"""The heavy SDKs are behind tool/tqdeploy/adaptors/, one module each (SkyPilot's sky/adaptors): no module
outside it imports them, at the top, in a function or by name through importlib. The adaptors import the SDK
inside their functions, so importing an adaptor costs nothing and the product's modules import it at the top."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "tool" / "tqdeploy"
ADAPTORS = PACKAGE / "adaptors"

# SDK (top-level import name) -> the adaptor module that alone imports it
SDKS = {
    "pynvml": "nvml.py",
    "huggingface_hub": "hfhub.py",
    "httpx": "httplib.py",
    "httpx2": "httplib.py",
    "jinja2": "jinja.py",
    "matplotlib": "plot.py",
}
if (ADAPTORS / "docker.py").is_file():  # the Docker SDK's adaptor (issue 36, the runtime part)
    SDKS["docker"] = "docker.py"


def _sdk_imports(path: Path) -> list[tuple[int, str]]:
    """(line, SDK) of each import of an SDK in the file: import statements and importlib.import_module("...")."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [node.module or ""]
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
            "import_module",
            "__import__",
        ):
            names = [arg.value for arg in node.args[:1] if isinstance(arg, ast.Constant) and isinstance(arg.value, str)]
        found += [(node.lineno, name.split(".")[0]) for name in names if name.split(".")[0] in SDKS]
    return found


def test_no_module_outside_adaptors_imports_a_heavy_sdk():
    outside = [
        f"{path.relative_to(PACKAGE.parent)}:{line} imports {sdk} (use tqdeploy/adaptors/{SDKS[sdk]})"
        for path in sorted(PACKAGE.rglob("*.py"))
        if ADAPTORS not in path.parents
        for line, sdk in _sdk_imports(path)
    ]
    assert outside == []


def test_each_sdk_is_imported_by_its_own_adaptor_only():
    for path in sorted(ADAPTORS.glob("*.py")):
        for line, sdk in _sdk_imports(path):
            assert SDKS[sdk] == path.name, f"{path.name}:{line} imports {sdk}, which is {SDKS[sdk]}'s"
    for sdk, module in SDKS.items():
        assert sdk in {s for _, s in _sdk_imports(ADAPTORS / module)}, (module, sdk)


def test_the_finder_sees_each_form_of_import(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import jinja2\nfrom huggingface_hub.utils import get_session\nimport importlib\n"
        "def f():\n    import matplotlib.pyplot as plt\n    return importlib.import_module('httpx')\n"
        "import json\nfrom tqdeploy.adaptors import hfhub\n"
    )
    assert _sdk_imports(sample) == [(1, "jinja2"), (2, "huggingface_hub"), (5, "matplotlib"), (6, "httpx")]


@pytest.mark.parametrize("module", sorted(p.stem for p in ADAPTORS.glob("*.py") if p.stem != "__init__"))
def test_importing_an_adaptor_imports_no_sdk(module):
    code = f"import sys, tqdeploy.adaptors.{module}; print(','.join(m for m in {sorted(SDKS)!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == ""


def test_the_adaptors_hand_over_the_real_sdks():
    from tqdeploy.adaptors import hfhub, httplib, jinja, plot

    assert hfhub.errors().HfHubHTTPError.__module__.startswith("huggingface_hub")
    assert httplib.session_http_lib().__name__ in ("httpx", "httpx2")
    environment, loader, undefined = jinja.sandbox_classes()
    assert environment.__name__ == "SandboxedEnvironment" and undefined.__name__ == "StrictUndefined"
    assert plot.pyplot().get_backend().lower() == "agg"
    assert loader.__module__.startswith("jinja2")
