"""startcache.pyz: tqdeploy's own package as a zip application the build's image runs (startcache/container.py).

The image has no tqdeploy; the import it runs before the server needs the same checks `cache import` makes, so
the package travels whole (pure Python, and the modules the import loads use the standard library only) rather
than as a second copy of those checks. Deterministic: the package's .py files in sorted order, a fixed timestamp
and mode, so the same tqdeploy renders the same bytes (the lock records their sha256).
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

MAIN = b"import sys\nfrom tqdeploy.startcache.container import main\nsys.exit(main())\n"
_EPOCH = (1980, 1, 1, 0, 0, 0)


def _add(zf: zipfile.ZipFile, name: str, data: bytes) -> None:
    info = zipfile.ZipInfo(name, _EPOCH)
    info.external_attr = 0o644 << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    zf.writestr(info, data)


def build_pyz() -> bytes:
    root = Path(__file__).resolve().parents[1]  # the tqdeploy package
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        _add(zf, "__main__.py", MAIN)
        for path in sorted(root.rglob("*.py")):
            if "__pycache__" not in path.parts:
                _add(zf, "tqdeploy/" + path.relative_to(root).as_posix(), path.read_bytes())
    return buf.getvalue()
