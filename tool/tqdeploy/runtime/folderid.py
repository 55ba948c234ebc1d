"""The deployment marker: which deployment a build folder is, as a name every one of its processes carries.

A hash of the folder's resolved path with its st_dev and st_ino, so it names the folder itself, not its contents:
a `cp -a` copy (same state.json, other inode) is another deployment, and a folder moved back and forth keeps
none of its old processes. The bottom of runtime/ (the standard library only): state.py records it, statefields.py
tells a copied state by it, marker.py decides from it what of a state may be trusted.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

# The environment variable every process of a deployment inherits; `down --force` finds them by it.
MARKER_ENV = "TQDEPLOY_DEPLOYMENT"


def deployment_marker(build_dir: Path) -> str:
    """Id of a deployment: the build folder itself (resolved path, st_dev, st_ino)."""
    path = Path(build_dir).resolve()
    st = os.stat(path)
    return hashlib.sha256(f"{path}\0{st.st_dev}\0{st.st_ino}".encode()).hexdigest()[:16]
