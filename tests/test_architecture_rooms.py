"""docs/architecture.md's rooms section stays true to the tree: every package of tool/tqdeploy is named there, and
its layer table agrees with tests/test_layers.py's LAYERS (the truth it cites) room by room.

The table may lag behind LAYERS only by a package that the prose names (a room added by a branch that the doc
describes in words); a top-level module must stand in the table at the layer LAYERS gives it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from test_layers import LAYERS, TOOL, rooms

ARCHITECTURE = Path(__file__).resolve().parent.parent / "docs" / "architecture.md"
_ROW = re.compile(r"^\|\s*(?P<layer>\d+)\s*\|(?P<rooms>[^|]*)\|", re.M)
_NAME = re.compile(r"`([\w.]+)`")


def rooms_section(doc: str) -> str:
    start, end = "<!-- rooms -->", "<!-- /rooms -->"
    assert start in doc and end in doc, "docs/architecture.md lost its <!-- rooms --> markers"
    return doc.split(start, 1)[1].split(end, 1)[0]


def layer_table(section: str) -> dict[str, int]:
    """room -> layer, from the rows `| N | `room`, `room` | ... |` of the section's table."""
    table: dict[str, int] = {}
    for row in _ROW.finditer(section):
        for name in _NAME.findall(row["rooms"]):
            assert name not in table, f"{name} stands in two rows of the rooms table"
            table[name] = int(row["layer"])
    return table


def packages(root: Path) -> set[str]:
    package = root / "tqdeploy"
    return {p.name for p in package.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}


def test_every_package_is_named_in_the_rooms_section():
    section = rooms_section(ARCHITECTURE.read_text(encoding="utf-8"))
    unnamed = sorted(p for p in packages(TOOL) if not re.search(rf"`{re.escape(p)}/?`", section))
    assert not unnamed, f"name these packages in docs/architecture.md's rooms section (what each owns): {unnamed}"


def test_the_layer_table_agrees_with_test_layers():
    table = layer_table(rooms_section(ARCHITECTURE.read_text(encoding="utf-8")))
    assert len(table) >= 40  # the table was read: today 42 rooms in 12 layers
    level = {room: n for n, layer in enumerate(LAYERS) for room in layer}
    wrong = {room: (n, level.get(room)) for room, n in table.items() if level.get(room) != n}
    assert not wrong, f"rooms table row (doc layer, LAYERS layer) differs from tests/test_layers.py: {wrong}"
    modules = rooms(TOOL) - packages(TOOL)
    missing = sorted(modules - set(table))
    assert not missing, f"add these modules to the rooms table at their LAYERS layer: {missing}"


def test_the_table_reader_sees_rows_and_refuses_a_room_twice():
    section = "| layer | rooms | what |\n|---|---|---|\n| 0 | `errors`, `units` | data |\n| 3 | `deployspec` | spec |\n"
    assert layer_table(section) == {"errors": 0, "units": 0, "deployspec": 3}
    with pytest.raises(AssertionError, match="units stands in two rows"):
        layer_table(section + "| 4 | `units` | again |\n")
