"""Where the data that ships with tqdeploy lives (checks/, templates/, dockerfiles/).

A wheel carries the three top-level folders as tqdeploy/_data/NAME (pyproject.toml's force-include);
an editable install or a checkout on PYTHONPATH reads them from the repository root, two levels above
the package. Both go through importlib.resources, so a wheel and a checkout read the same bytes.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from tqdeploy.errors import TQError

DATA_FOLDERS = ("checks", "templates", "dockerfiles")


def _candidates(name: str) -> list[Path]:
    package = Path(str(resources.files("tqdeploy")))
    return [package / "_data" / name, package.parent.parent / name]


REINSTALL_HINT = "reinstall tqdeploy (`pip install --force-reinstall` the wheel or package you installed it from)"


def data_dir(name: str) -> Path:
    """checks/, templates/ or dockerfiles/, from the wheel or from the checkout."""
    candidates = _candidates(name)
    for path in candidates:
        if path.is_dir():
            return path

    raise TQError(
        f"tqdeploy data folder {name}/ is missing (looked in {', '.join(map(str, candidates))})",
        REINSTALL_HINT,
    )


def package_data(package: str, name: str) -> Path:
    """A data folder inside a subpackage (e.g. the embedded specs in tqdeploy.deployspec/defaults)."""
    return Path(str(resources.files(package))) / name


def doc_path(check_id: str) -> Path:
    return data_dir("checks") / "docs" / f"{check_id.upper()}.md"
