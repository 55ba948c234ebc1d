from __future__ import annotations

import importlib
import pkgutil
import sys

import bench as pkg


def main(argv: list[str]) -> int:
    names = argv or sorted(m.name for m in pkgutil.iter_modules(pkg.__path__) if not m.name.startswith("_"))
    print(f"{'benchmark':44} {'tqdeploy':>12} {'other tool':>12} {'ratio':>7}  goal / other tool")
    for name in names:
        module = importlib.import_module(f"bench.{name}")
        for row in module.run():
            theirs = "n/a" if row.theirs is None else f"{row.theirs:.3f} {row.unit}"
            ratio = "" if row.ratio is None else f"{row.ratio:.2f}"
            print(f"{row.name:44} {row.ours:>9.3f} {row.unit:<2} {theirs:>12} {ratio:>7}  {row.goal} {row.theirs_name}")
    return 0


raise SystemExit(main(sys.argv[1:]))
