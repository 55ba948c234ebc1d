"""A module's header says what it uses (issue 36): no import of tqdeploy's own modules inside a function, in any
module of the package (477 such imports in 122 modules before issue 36). cli.py can afford it because it imports no
command module until dispatch (its command table); the SDKs stay lazy inside tool/tqdeploy/adaptors/ only."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "tool" / "tqdeploy"

# (module, function) -> why its import must wait for the call
ALLOWED = {
    ("cli.py", "load_command"): "the command table's dispatch: only the chosen command's module is imported",
    ("__main__.py", "main"): "Ctrl-C while the CLI imports is caught there (test_cli.py's interrupted import)",
}


def _imports_tqdeploy(node: ast.AST) -> bool:
    if isinstance(node, ast.ImportFrom):
        return node.level > 0 or (node.module or "").split(".")[0] == "tqdeploy"
    if isinstance(node, ast.Import):
        return any(alias.name.split(".")[0] == "tqdeploy" for alias in node.names)
    if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
        "import_module",
        "__import__",
    ):
        first = node.args[0] if node.args else None
        if isinstance(first, ast.JoinedStr):  # f"{PACKAGE}.{name}": a name built at run time
            return True
        return isinstance(first, ast.Constant) and str(first.value).split(".")[0] == "tqdeploy"
    return False


def in_function_imports(path: Path) -> list[tuple[str, int]]:
    """(function, line) of each import of a tqdeploy module inside a function body of the file."""
    found = []
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    for function in ast.walk(tree):
        if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            for statement in function.body:
                found += [(function.name, n.lineno) for n in ast.walk(statement) if _imports_tqdeploy(n)]
    return sorted(set(found), key=lambda item: item[1])


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_tqdeploy_import_inside_a_function(path):
    relative = str(path.relative_to(PACKAGE))
    late = [
        f"{relative}:{line} in {function}()"
        for function, line in in_function_imports(path)
        if (relative, function) not in ALLOWED
    ]
    assert late == [], "import these at the top of the module: " + ", ".join(late)


def test_every_listed_room_exists_and_the_finder_sees_each_form(tmp_path):
    assert len(_modules()) > 200  # the whole package, not a part of it
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import json\nfrom tqdeploy.errors import TQError\n"
        "def f(name):\n    import os\n    from tqdeploy import pins\n    if name:\n        import tqdeploy.units\n"
        "    return importlib.import_module(f'tqdeploy.commands.{name}')\n"
        "def g():\n    from . import sibling\n    return __import__('tqdeploy.output')\n"
    )
    assert in_function_imports(sample) == [("f", 5), ("f", 7), ("f", 8), ("g", 10), ("g", 11)]
    for (module, function), _why in ALLOWED.items():  # each allowance names an import that is there
        assert function in [f for f, _ in in_function_imports(PACKAGE / module)], (module, function)
