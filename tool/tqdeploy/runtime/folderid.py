"""The deployment marker: which deployment a build folder is, as a name every one of its processes carries.

A hash of the folder's resolved path: the build's identity is where it lives, as every command names it. A `cp -a`
copy (same state.json, another path) is another deployment. A folder removed and built again at the same path while
its server runs is the same deployment: its old processes still carry the marker, so `down --force` there finds
and stops them, and `up` refuses to start beside them (it once hashed the inode too, and such a server could only
be killed by hand, issue 35). The bottom of runtime/ (the standard library only): state.py records it,
statefields.py tells a copied state by it, marker.py decides from it what of a state may be trusted.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

# The environment variable every process of a deployment inherits; `down --force` finds them by it.
MARKER_ENV = "TQDEPLOY_DEPLOYMENT"


def deployment_marker(build_dir: Path) -> str:
    """Id of a deployment: the build folder's resolved path (every symlink on the way followed)."""
    path = Path(os.path.realpath(build_dir))
    return hashlib.sha256(f"tqdeploy-build\0{path}".encode()).hexdigest()[:16]
