"""The package graph of tool/tqdeploy, computed from the source: no circle between packages, and every import
(at module top, inside a function, under TYPE_CHECKING) runs down the layer order below.

A room is a top-level module (tqdeploy/errors.py) or a package (tqdeploy/lint/, all of it). An import inside one
room is free; an import from one room to another must go to a lower layer. A new module or package must be
placed in LAYERS (the test names it); an import that runs up or sideways is named with its file and line.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parent.parent / "tool"

# Bottom first. A room may import only rooms of lower layers.
LAYERS: list[set[str]] = [
    # plain data and the one error/result types; the heavy SDKs' adaptors (each imports its SDK in its functions)
    {
        "errors",
        "findings",
        "filenames",
        "fsutil",
        "pins",
        "units",
        "suggest",
        "snapshot_types",
        "cliexamples",
        "adaptors",
    },
    # the build folder's contract (paths, the lock's reader and verifier), bounded reads, URL handling (net)
    {"idents", "resources", "safeio", "output", "clihelp", "buildfolder", "net", "jsonin"},
    # facts: a checkpoint's (model), vLLM's per release (vllmfacts), a host's (snapshot), a multi-node build's
    # record (nodefile); the redaction engine and its rules (one package: patterns, names, encoded keys)
    {"redact", "nodefile", "model", "vllmfacts", "snapshot", "keyfile"},
    {"deployspec", "probe"},
    {"lint", "plan", "startcache"},
    # runtime stands beside doctor and render: the command layer passes the doctor's verdict into `up`
    {"doctor", "render", "runtime", "checkids"},
    {"bundle", "connect", "download", "profile"},
    # a running server's answers (check) and the real demo model; tune drives builds, loads and checks
    {"answers", "demomodel"},
    {"tune"},
    {"commands", "bench"},
    {"cli"},
    {"__main__"},
]


def _room(root: Path, dotted: str) -> str | None:
    """The room a tqdeploy.* module name lies in, None for a name that is no module of the tree."""
    parts = dotted.split(".")
    if parts[0] != "tqdeploy" or len(parts) < 2:
        return None
    head = root / "tqdeploy" / parts[1]
    return parts[1] if head.is_dir() or head.with_suffix(".py").is_file() else None


def _module_name(root: Path, path: Path) -> tuple[list[str], bool]:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        return parts[:-1], True
    return parts, False


def _targets(node: ast.Import | ast.ImportFrom, parts: list[str], is_package: bool) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:  # from . import x / from ..y import z
        base = parts if is_package else parts[:-1]
        base = base[: len(base) - (node.level - 1)]
        module = ".".join([*base, *([node.module] if node.module else [])])
    else:
        module = node.module or ""
    # `from tqdeploy import redact_rules` names a module: its room, not tqdeploy/__init__.py
    return [module] + [f"{module}.{alias.name}" for alias in node.names]


def import_edges(root: Path) -> dict[tuple[str, str], list[str]]:
    """(from room, to room) -> ["tqdeploy/x.py:12", ...] for every import of another room, wherever it stands."""
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in sorted((root / "tqdeploy").rglob("*.py")):
        parts, is_package = _module_name(root, path)
        if len(parts) < 2:
            continue  # tqdeploy/__init__.py: a package's face, it imports nothing
        source = parts[1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            rooms = {_room(root, t) for t in _targets(node, parts, is_package)} - {None, source}
            for target in rooms:
                edges[(source, str(target))].append(f"{path.relative_to(root)}:{node.lineno}")
    return edges


def rooms(root: Path) -> set[str]:
    package = root / "tqdeploy"
    return {p.stem for p in package.glob("*.py") if p.stem != "__init__"} | {
        p.name for p in package.iterdir() if p.is_dir() and (p / "__init__.py").is_file()
    }


def cycles(edges: dict[tuple[str, str], list[str]]) -> list[list[str]]:
    """The strongly connected components of more than one room (Tarjan)."""
    graph: dict[str, set[str]] = defaultdict(set)
    for a, b in edges:
        graph[a].add(b)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def violations(edges: dict[tuple[str, str], list[str]], layers: list[set[str]]) -> list[str]:
    level = {room: n for n, layer in enumerate(layers) for room in layer}
    return [
        f"{a} (layer {level[a]}) imports {b} (layer {level[b]}): {', '.join(where[:3])}"
        for (a, b), where in sorted(edges.items())
        if a in level and b in level and level[b] >= level[a]
    ]


def test_every_room_has_one_layer():
    placed = [room for layer in LAYERS for room in layer]
    assert len(placed) == len(set(placed)), "a room stands in two layers"
    missing = rooms(TOOL) - set(placed)
    assert not missing, f"place these in LAYERS (tests/test_layers.py): {sorted(missing)}"
    gone = set(placed) - rooms(TOOL)
    assert not gone, f"LAYERS names rooms that no longer exist: {sorted(gone)}"


def test_no_circle_between_packages():
    assert cycles(import_edges(TOOL)) == []


def test_every_import_runs_down_the_layers():
    edges = import_edges(TOOL)
    assert len(edges) > 100  # the graph was read: today about 170 arrows between rooms
    assert violations(edges, LAYERS) == []


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / "tqdeploy" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize("where", ["top", "function", "relative"])
def test_an_import_back_up_is_caught(tmp_path, where):
    """The checks see an upward import wherever it stands: at the top, inside a function, relative."""
    upward = {
        "top": "from tqdeploy.high.mod import x\n",
        "function": "def f():\n    from tqdeploy.high import mod\n    return mod\n",
        "relative": "from ..high.mod import x\n",
    }[where]
    root = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "low/__init__.py": "",
            "low/base.py": upward,
            "high/__init__.py": "",
            "high/mod.py": "from tqdeploy.low.base import y\nx = 1\n",
            "errors.py": "",
        },
    )
    edges = import_edges(root)
    assert set(edges) == {("low", "high"), ("high", "low")}
    assert cycles(edges) == [["high", "low"]]
    assert violations(edges, [{"errors"}, {"low"}, {"high"}]) == [
        f"low (layer 1) imports high (layer 2): tqdeploy/low/base.py:{2 if where == 'function' else 1}"
    ]
    assert rooms(root) == {"low", "high", "errors"}


def floors(edges: dict[tuple[str, str], list[str]]) -> dict[str, int]:
    """Each room's floor: 1 for a room that imports no other, else one above the highest room it imports."""
    graph: dict[str, set[str]] = defaultdict(set)
    for a, b in edges:
        graph[a].add(b)
    floor: dict[str, int] = {}

    def height(room: str) -> int:
        if room not in floor:
            floor[room] = 1 + max((height(b) for b in graph[room]), default=0)
        return floor[room]

    for room in list(graph):
        height(room)
    return floor


def test_the_package_graph_is_at_most_twelve_floors_high():
    """Issue 22 set 10 floors from __main__ down to errors (the longest chain of imports between rooms); issue 34's
    check (answers, over connect's endpoint and the runtime) and issue 37's tune (over answers and profile) stand on
    top of that stack and add two. A floor more than those is a room placed too high, or an arrow to cut."""
    floor = floors(import_edges(TOOL))
    assert floor["__main__"] == max(floor.values()) <= 12, sorted(floor.items(), key=lambda item: -item[1])
    assert floor["tune"] > floor["answers"] > floor["connect"]
    assert floor["runtime"] < floor["bundle"] and floor["net"] < floor["redact"]  # the moves of issue 22 hold
    assert floors({("a", "b"): [], ("b", "c"): [], ("a", "c"): []}) == {"a": 3, "b": 2, "c": 1}


def _module_file(root: Path, dotted: str) -> str | None:
    """The file a dotted name is (a module, or a package's __init__.py), relative to root; None if neither."""
    base = root.joinpath(*dotted.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return str(path.relative_to(root))
    return None


def module_edges(root: Path) -> dict[str, set[str]]:
    """file -> the files of tqdeploy it imports (a name imported from a package: its module, when it is one)."""
    edges: dict[str, set[str]] = defaultdict(set)
    for path in sorted((root / "tqdeploy").rglob("*.py")):
        parts, is_package = _module_name(root, path)
        source = str(path.relative_to(root))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            if isinstance(node, ast.Import):
                found = {_module_file(root, alias.name) for alias in node.names}
            else:
                module, *names = _targets(node, parts, is_package)
                found = {_module_file(root, name) for name in names}
                if None in found:  # a name that is no module of its own comes from the module itself
                    found.add(_module_file(root, module))
            edges[source] |= {f for f in found if f and f.startswith("tqdeploy/") and f != source}
    return edges


def test_no_circle_between_modules_either():
    """Issue 22: no circle inside a package (runtime/'s marker, state and statefields once imported each other)."""
    graph = module_edges(TOOL)
    assert "tqdeploy/runtime/folderid.py" in graph["tqdeploy/runtime/statefields.py"]  # the graph was read
    flat = {(a, b): [] for a, targets in graph.items() for b in targets}
    assert cycles(flat) == []
