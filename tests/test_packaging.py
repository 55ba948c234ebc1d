"""The package list in pyproject.toml must name every package under tool/, or a wheel would miss it."""
import tomllib

from conftest import REPO


def test_every_package_under_tool_is_listed():
    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    on_disk = {
        "tqdeploy" + ("." + ".".join(p.parent.relative_to(REPO / "tool").parts) if p.parent != REPO / "tool" else "")
        for p in (REPO / "tool").rglob("__init__.py")
    }
    assert listed == on_disk
