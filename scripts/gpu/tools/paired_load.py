"""Tokens/s of two ready servers on this machine, interleaved (tqdeploy.profile.paired): startup.sh's `ab` phase
runs it against tqdeploy's server and plain vLLM's, both up at once on one GPU, for issue 18's "within 2%".

Usage: paired_load.py A_URL B_URL --out FILE [--labels A,B] [--api-key-file F] [--concurrency 1,8,64]
       [--duration 5] [--warmup 1] [--rounds 6] [--prompt-tokens 256] [--output-tokens 128] [--tolerance 0.02]
       [--started-first LABEL] [--max-seconds S]
Prints one line per concurrency (geometric mean of the per-step ratios A/B, its 95% interval, the verdict; then
the same with the order as a factor, and the margin reading: A no slower than B by more than the tolerance).
The result file is rewritten after each round ("complete": false until the last). --started-first names the
server whose start came first (recorded: startup.sh alternates it between runs). --max-seconds bounds the load:
it stops after an even number of rounds once two more would not fit (startup.sh fits the run in a device call).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tool"))

from tqdeploy.errors import TQError, report_error  # noqa: E402
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
    p.add_argument("--started-first")
    p.add_argument("--max-seconds", type=float)
    args = p.parse_args(argv)
    try:
        labels = args.labels.split(",")
        if len(labels) != 2 or len(set(labels)) != 2 or not all(labels):
            raise TQError(f"--labels {args.labels!r} is not two different names", "e.g. --labels tqdeploy,plain")
        if not 0 < args.tolerance < 1:
            raise TQError(f"--tolerance {args.tolerance} is outside 0..1", "e.g. --tolerance 0.02")
        if args.started_first is not None and args.started_first not in labels:
            raise TQError(f"--started-first {args.started_first!r} is not one of --labels", f"e.g. {labels[0]}")
        if args.max_seconds is not None and not 0 < args.max_seconds <= 86400:
            raise TQError(f"--max-seconds {args.max_seconds} is outside 0..86400", "e.g. --max-seconds 420")
        extra = {"started_first": args.started_first}
        spec = load_spec(args.concurrency, args.prompt_tokens, args.output_tokens, args.requests, args.duration,
                         1.0, args.warmup)  # fmt: skip
        a = side(labels[0], args.a_url, args.api_key_file, spec)
        b = side(labels[1], args.b_url, args.api_key_file, spec)
        result = compare(a, b, spec, args.rounds, args.tolerance, lambda part: _write(args.out, part, extra),
                         args.max_seconds)  # fmt: skip
    except TQError as exc:
        return report_error(exc, "paired_load")
    _write(args.out, result, extra)
    for conc, c in result["by_concurrency"].items():
        adjusted = c.get("adjusted") or {}
        print(f"concurrency {conc}: {labels[0]}/{labels[1]} {_shown(c)} over {len(c['ratios'])} interleaved steps; "
              f"order as a factor {_shown(adjusted)} (+-{args.tolerance:.0%})")  # fmt: skip
    return 0


def _write(path: Path, result: dict, extra: dict) -> None:
    tmp = path.with_name(path.name + ".part")
    tmp.write_text(json.dumps({**result, **extra}, indent=1) + "\n")
    tmp.replace(path)


def _shown(c: dict) -> str:
    ci = c.get("ci95") or [None, None]
    shown = "no interval" if ci[1] is None else f"95% {ci[0]:.3f}..{ci[1]:.3f}"
    return f"{c.get('geomean', float('nan')):.3f} ({shown}: {c.get('verdict')}, {c.get('margin')})"


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
