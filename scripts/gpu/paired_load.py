"""Tokens/s of two ready servers on this machine, interleaved (tqdeploy.profile.paired): startup.sh's `ab` phase
runs it against tqdeploy's server and plain vLLM's, both up at once on one GPU, for issue 18's "within 2%".

Usage: paired_load.py A_URL B_URL --out FILE [--labels A,B] [--api-key-file F] [--concurrency 1,8,64]
       [--duration 5] [--warmup 1] [--rounds 6] [--prompt-tokens 256] [--output-tokens 128] [--tolerance 0.02]
Prints one line per concurrency (geometric mean of the per-step ratios A/B, its 95% interval, the verdict).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tool"))

from tqdeploy.errors import TQError  # noqa: E402
from tqdeploy.profile.load import load_spec  # noqa: E402
from tqdeploy.profile.paired import compare, side  # noqa: E402


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("a_url")
    p.add_argument("b_url")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--labels", default="a,b")
    p.add_argument("--api-key-file", type=Path)
    p.add_argument("--concurrency", default="1,8,64")
    p.add_argument("--duration", type=float, default=5.0)
    p.add_argument("--warmup", type=float, default=1.0)
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--prompt-tokens", type=int, default=256)
    p.add_argument("--output-tokens", type=int, default=128)
    p.add_argument("--requests", type=int, default=4096)
    p.add_argument("--tolerance", type=float, default=0.02)
    args = p.parse_args(argv)
    try:
        labels = args.labels.split(",")
        if len(labels) != 2 or len(set(labels)) != 2 or not all(labels):
            raise TQError(f"--labels {args.labels!r} is not two different names", "e.g. --labels tqdeploy,plain")
        if not 0 < args.tolerance < 1:
            raise TQError(f"--tolerance {args.tolerance} is outside 0..1", "e.g. --tolerance 0.02")
        spec = load_spec(args.concurrency, args.prompt_tokens, args.output_tokens, args.requests, args.duration,
                         1.0, args.warmup)  # fmt: skip
        a = side(labels[0], args.a_url, args.api_key_file, spec)
        b = side(labels[1], args.b_url, args.api_key_file, spec)
        result = compare(a, b, spec, args.rounds, args.tolerance)
    except TQError as exc:
        print(f"paired_load: error: {exc.message}\n  fix: {exc.remediation}", file=sys.stderr)
        return 2
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    for conc, c in result["by_concurrency"].items():
        ci = c.get("ci95") or [None, None]
        shown = "-" if ci[1] is None else f"{ci[0]:.3f}..{ci[1]:.3f}"
        print(f"concurrency {conc}: {labels[0]}/{labels[1]} {c.get('geomean', float('nan')):.3f} over "
              f"{len(c['ratios'])} interleaved steps, 95% interval {shown}: {c['verdict']} "
              f"(+-{args.tolerance:.0%})")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
