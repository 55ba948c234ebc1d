"""A multi-node build's multinode.json (render writes it): what every node must agree on, read as untrusted input.

Low in the package graph so that runtime (starting the nodes) and doctor (checking a node) read it the same way;
the names and exit codes every node agrees on are defined here, and render/multinode.py writes them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tqdeploy.errors import TQError
from tqdeploy.safeio import read_text

RECORD_LIMIT = 64 * 1024
RECORD_NAME = "multinode.json"
RECORD_SCHEMA = "tqdeploy.multinode/1"
EXIT_CONFIG = 78  # sysexits EX_CONFIG: this node's role, rank or leader address is wrong
EXIT_VERSION = 79  # this node's vLLM is not the build's


def build_record(build_dir: Path) -> dict[str, Any] | None:
    """The build's multinode.json (render/multinode.py), None for a one-node build; read as untrusted input."""
    path = Path(build_dir) / RECORD_NAME
    if not os.path.lexists(path):
        return None
    text = read_text(path, RECORD_LIMIT, "multinode record", within=Path(build_dir).resolve())
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as err:  # nested past json's recursion: not the file build writes
        fix = "run `tqdeploy build` again: it writes the file"
        raise TQError(f"{path} is not JSON ({str(err)[:120]})", fix) from None
    fields = data if isinstance(data, dict) else {}
    nodes, port = fields.get("nodes"), fields.get("master_port")
    if not (isinstance(nodes, int) and 2 <= nodes <= 256 and isinstance(port, int) and 1024 <= port <= 65535):
        raise TQError(f"{path} has no valid nodes / master_port", "run `tqdeploy build` again: it writes the file")
    return fields
