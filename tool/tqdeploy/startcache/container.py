"""The containers' import (compose's one-shot service, the Kubernetes init container): `python3 startcache.pyz
import ARTIFACT --volume /cache/vllm --model-dir /models/NAME --fingerprint SHA --flags JSON [--key-file F]`.

The image has Python, torch and vLLM but not tqdeploy: `tqdeploy build` ships this package as startcache.pyz
(startcache/zipapp.py) and renders the arguments from the spec (render/cacheimport.py), so the container compares
the artifact with what it is (its own interpreter, GPU and driver) and the build (fingerprint, flags), as `up` does.
A refusal is printed (TQ442) and exits 0: the server then starts cold instead of never starting. Exit 2 only for
a command line tqdeploy did not render.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tqdeploy.errors import TQError, report_error
from tqdeploy.safeio import read_key_file
from tqdeploy.startcache.artifact import BuildContext, import_into


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="startcache.pyz", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="verb", required=True)
    imp = sub.add_parser("import")
    imp.add_argument("artifact", type=Path)
    imp.add_argument("--volume", type=Path, required=True)
    imp.add_argument("--model-dir", type=Path, required=True)
    imp.add_argument("--fingerprint", required=True)
    imp.add_argument("--flags", required=True)
    imp.add_argument("--key-file", type=Path)
    args = p.parse_args(argv)
    try:
        flags = json.loads(args.flags)
        if not isinstance(flags, list):
            raise TQError(f"--flags {args.flags[:80]!r} is not a JSON list", "render the build again")
        key = None
        if args.key_file and args.key_file.is_file():
            key = read_key_file(args.key_file)
        lock = {"cache_fingerprint": {"sha256": args.fingerprint, "factors": {"flags": flags}}}
        ctx = BuildContext(Path("/"), args.volume, sys.executable, key, lock, args.model_dir)
        found = import_into(ctx, args.artifact)
    except (TQError, ValueError) as exc:
        return report_error(exc if isinstance(exc, TQError) else TQError(str(exc)), "startcache.pyz")
    if found is None:
        print(f"startcache.pyz: {args.volume} already holds caches: nothing imported")
    else:
        print(f"startcache.pyz: {found.id} {found.severity.value}: {found.title}")
        if found.remediation:
            print(f"  fix: {found.remediation}")
    return 0
