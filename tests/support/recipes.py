"""Follow a recipe of docs/architecture.md on a copy of the package, so that a recipe that rots fails the suite.

A recipe is the text between `<!-- recipe:NAME -->` and `<!-- /recipe:NAME -->`. Its fenced blocks whose info
string carries `file=PATH` are new files (PATH relative to the repository root, under tool/ or tests/); blocks
with `append=PATH` are appended to an existing file. Other blocks (shell lines, output) are prose to read.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ARCHITECTURE = REPO / "docs" / "architecture.md"
_FENCE = re.compile(r"^```(?P<info>[^\n]*)\n(?P<body>.*?)^```[ \t]*$", re.S | re.M)
_TARGET = re.compile(r"\b(?P<how>file|append)=(?P<path>[\w./-]+)")


@dataclass(frozen=True)
class RecipeBlock:
    how: str  # "file" (a new file) or "append" (added to the end of an existing one)
    path: str  # relative to the repository root
    text: str


def recipe_text(name: str) -> str:
    doc = ARCHITECTURE.read_text(encoding="utf-8")
    start, end = f"<!-- recipe:{name} -->", f"<!-- /recipe:{name} -->"
    if start not in doc or end not in doc:
        raise AssertionError(f"docs/architecture.md has no recipe {name!r}")
    return doc.split(start, 1)[1].split(end, 1)[0]


def recipe_blocks(name: str) -> list[RecipeBlock]:
    blocks = []
    for fence in _FENCE.finditer(recipe_text(name)):
        target = _TARGET.search(fence["info"])
        if target:
            blocks.append(RecipeBlock(target["how"], target["path"], fence["body"]))
    if not blocks:
        raise AssertionError(f"recipe {name!r} in docs/architecture.md has no file= or append= block")
    return blocks


def apply_recipe(name: str, root: Path) -> Path:
    """Copy tool/ and the data folders the package reads into ROOT, follow recipe NAME there, and return the
    copy's tool/ folder (put it first on PYTHONPATH to run the package with the recipe applied)."""
    for folder in ("tool", "checks", "templates", "dockerfiles"):
        if (REPO / folder).is_dir():
            shutil.copytree(REPO / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__"))
    for block in recipe_blocks(name):
        target = (root / block.path).resolve()
        if root.resolve() not in target.parents:
            raise AssertionError(f"recipe {name!r} writes outside the copy: {block.path}")
        target.parent.mkdir(parents=True, exist_ok=True)
        if block.how == "file":
            if target.exists():
                raise AssertionError(f"recipe {name!r}: {block.path} exists already; a new file was meant")
            target.write_text(block.text, encoding="utf-8")
        else:
            if not target.exists():
                raise AssertionError(f"recipe {name!r}: {block.path} does not exist to append to")
            with target.open("a", encoding="utf-8") as out:
                out.write(block.text)
    return root / "tool"
