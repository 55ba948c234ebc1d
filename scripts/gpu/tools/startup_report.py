"""The start-up figures of scripts/gpu/tools/startup.sh's records: OUT/startup.json and OUT/startup.md.

Usage: startup_report.py RECORDS.jsonl OUT_DIR, or startup_report.py --pool AB.json... (interleaved runs of
several sittings, pooled). Ratios are of medians within one sitting: the recreated start
against the warm ones (goal <= 1.1x), tqdeploy's warm start against plain vLLM's over alternated pairs (goal:
at least 25% faster), tokens/s per concurrency against plain vLLM's (goal: within 2%), and the fork lever
(tqdeploy warm with TQ_ENGINE_START=spawn against the forkserver).
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tool"))

from tqdeploy.errors import TQError, report_error  # noqa: E402


def seconds(rows: list[dict], phase: str) -> list[float]:
    return [r["seconds_to_ready"] for r in rows if r["phase"] == phase and r.get("seconds_to_ready")]


def tok_s(rows: list[dict], phase: str) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for r in rows:
        if r["phase"] == phase:
            for conc, value in (r.get("tok_s") or {}).items():
                out.setdefault(conc, []).append(value)
    return out


def tok_s_comparison(ours: list[float], theirs: list[float]) -> dict:
    """Tokens/s of one concurrency: the ratio of medians, each pair's own ratio (pairs in the records' order) and
    their geometric mean, and the spread of plain vLLM's own starts (max / min - 1): a difference smaller than
    that spread is not shown by this many pairs."""
    pairwise = [t / p for t, p in zip(ours, theirs, strict=False)]
    return {
        "tqdeploy": ours,
        "plain": theirs,
        "ratio": statistics.median(ours) / statistics.median(theirs),
        "pair_ratios": pairwise,
        "pair_ratio_geomean": statistics.geometric_mean(pairwise),
        "plain_spread": max(theirs) / min(theirs) - 1,
    }


def recreated_warm_pairs(rows: list[dict]) -> list[float]:
    """recreated / warm for each recreated start and the warm start right after it (startup.sh recreated-pair)."""
    ratios = []
    for i, r in enumerate(rows):
        nxt = rows[i + 1] if i + 1 < len(rows) else None
        if r["phase"] == "recreated" and nxt and nxt["phase"] == "warm":
            if r.get("seconds_to_ready") and nxt.get("seconds_to_ready"):
                ratios.append(r["seconds_to_ready"] / nxt["seconds_to_ready"])
    return ratios


def comparisons(rows: list[dict]) -> dict:
    med = statistics.median
    warm = seconds(rows, "warm") + seconds(rows, "pair-tqdeploy")
    rec, plain, tqd, spawn = (seconds(rows, p) for p in ("recreated", "pair-plain", "pair-tqdeploy", "spawn"))
    out: dict = {}
    if rec and warm:
        out["recreated_over_warm"] = {
            "recreated_s": rec,
            "warm_median_s": med(warm),
            "ratio": med(rec) / med(warm),
            "pair_ratios": recreated_warm_pairs(rows),
        }
    if plain and tqd:
        out["tqdeploy_vs_plain_warm"] = {
            "plain_s": plain,
            "tqdeploy_s": tqd,
            "pairs": min(len(plain), len(tqd)),
            "faster_by": 1 - med(tqd) / med(plain),
        }
        tq_tok, plain_tok = tok_s(rows, "pair-tqdeploy"), tok_s(rows, "pair-plain")
        out["tok_s_ratio"] = {
            c: tok_s_comparison(tq_tok[c], plain_tok[c]) for c in sorted(set(tq_tok) & set(plain_tok), key=int)
        }
    if spawn and tqd:
        out["fork_lever"] = {"spawn_s": spawn, "fork_median_s": med(tqd), "saved_s": med(spawn) - med(tqd)}
    return out


def markdown(rows: list[dict], cmp: dict) -> str:
    lines = [
        "# Start-up on the GPU host (scripts/gpu/tools/startup.sh)",
        "",
        "| phase | runner | to ready (s) | tok/s c=1 / 8 / 64 | key files on volume | compile-cache hit lines |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        ready = f"{r['seconds_to_ready']:.1f}" if r.get("seconds_to_ready") else "not ready"
        tok = " / ".join(f"{v:,.1f}" for _, v in sorted((r.get("tok_s") or {}).items(), key=lambda kv: int(kv[0])))
        lines.append(
            f"| {r['phase']} | {r['runner']} | {ready} | {tok or '-'} | {r['files_with_key_on_volume']} | "
            f"{r.get('compile_cache_hit_lines', '')} |"
        )
    lines.append("")
    if "recreated_over_warm" in cmp:
        c = cmp["recreated_over_warm"]
        lines.append(f"- recreated / warm: {c['ratio']:.2f}x (goal <= 1.1x; warm median {c['warm_median_s']:.1f} s)")
        if c["pair_ratios"]:
            pairs = ", ".join(f"{r:.2f}" for r in c["pair_ratios"])
            lines.append(f"- recreated / the warm start right after it, per pair: {pairs}")
    if "tqdeploy_vs_plain_warm" in cmp:
        c = cmp["tqdeploy_vs_plain_warm"]
        lines.append(
            f"- tqdeploy warm median {statistics.median(c['tqdeploy_s']):.1f} s vs plain vLLM warm median "
            f"{statistics.median(c['plain_s']):.1f} s over {c['pairs']} alternated pairs: "
            f"{c['faster_by'] * 100:.1f}% faster (goal >= 25%)"
        )
        for conc, t in cmp["tok_s_ratio"].items():
            pairs = ", ".join(f"{r:.3f}" for r in t["pair_ratios"])
            lines.append(
                f"- tokens/s at concurrency {conc}: tqdeploy / plain {t['ratio']:.3f} (medians; goal within 2%), "
                f"per pair {pairs} (geometric mean {t['pair_ratio_geomean']:.3f}); plain's own starts spread "
                f"{t['plain_spread'] * 100:.1f}%"
            )
    if "fork_lever" in cmp:
        c = cmp["fork_lever"]
        spawned = statistics.median(c["spawn_s"])
        lines.append(f"- forkserver lever: spawn {spawned:.1f} s vs forkserver {c['fork_median_s']:.1f} s")
    return "\n".join(lines) + "\n"


def interleaved(ab: dict, name: str) -> list[str]:
    """startup.sh ab's lines: per concurrency the geometric mean of the interleaved steps' ratios, its interval and
    both readings (equivalence within +-tolerance; margin: no slower by more than it), then the same with the order
    (and, pooled, the run) as a factor."""
    lines = []
    for conc, c in ab.get("by_concurrency", {}).items():
        order = c.get("by_order") or {}
        firsts = ", ".join(f"{k.replace('_', ' ')} {v:.3f}" for k, v in order.items() if v is not None)
        adjusted = c.get("adjusted")
        tol = ab["tolerance"]
        lines.append(
            f"- interleaved tokens/s ({name}) at concurrency {conc}: {ab['a']} / {ab['b']} over {len(c['ratios'])} "
            f"steps {_reading(c, tol)}"
            + (f"; by order: {firsts}" if firsts else "")
            + (f"; order as a factor ({adjusted['cells']} cells): {_reading(adjusted, tol)}" if adjusted else "")
        )
    return lines


def _reading(c: dict, tolerance: float) -> str:
    low, high = c.get("ci95") or (None, None)
    shown = "no interval" if high is None else f"95% interval {low:.3f}..{high:.3f}"
    return (
        f"{c.get('geomean', float('nan')):.3f}, {shown}: +-{tolerance * 100:g}% {c['verdict']}; "
        f"-{tolerance * 100:g}% margin: {c.get('margin', 'unresolved')}"
    )


def ab_runs(out: str) -> dict[str, dict]:
    """Each ab run's result by name (ab-1, ab-2, ...; ab for a single run recorded before the runs were numbered),
    summarized again from its steps (files written by an older paired.py get today's readings), and when there
    are several, "pooled": every run's steps together, the run a factor beside the order. Each run is a pair of
    fresh starts, so a run's own verdict shows whether one start's placement moved the figure; pooled has more
    steps."""

    def number(path: Path) -> int:
        tail = path.stem.rpartition("-")[2]
        return int(tail) if tail.isdigit() else 0

    files = [
        p
        for p in sorted(Path(out).glob("ab*.json"), key=number)
        if p.stem == "ab" or p.stem.rpartition("-")[2].isdigit()
    ]
    return pooled_runs({p.stem: json.loads(p.read_text()) for p in files})


def pooled_runs(results: dict[str, dict]) -> dict[str, dict]:
    from tqdeploy.profile.paired import pool

    runs = {name: {**r, **pool([r])} for name, r in results.items() if "steps" in r}
    if len(runs) > 1:
        runs["pooled"] = pool(list(runs.values()))
    return runs


def pool_files(paths: list[str]) -> str:
    """`--pool FILE...`: ab result files of several sittings (e.g. two leases' runs), each summarized and all
    pooled, as the report's lines; each run is named by its path as given (two leases both have an ab-1.json) and
    by the server started first where the run recorded it."""
    if not paths or len(set(paths)) != len(paths):
        raise TQError("--pool needs ab result files, each once", "e.g. --pool lease6/ab-1.json lease7/ab-1.json")
    results = {}
    for p in paths:
        try:
            results[p] = json.loads(Path(p).read_text())
        except (OSError, ValueError) as err:
            raise TQError(f"{p}: not a readable ab result ({err})", "give the ab-N.json files of startup.sh") from err
    runs = pooled_runs(results)
    lines = []
    for name, r in runs.items():
        first = r.get("started_first")
        lines += interleaved(r, name + (f", {first} started first" if first else ""))
    return "\n".join(lines) + "\n"


def main(records: str, out: str) -> None:
    if not Path(out).is_dir():
        raise TQError(f"{out}: not a folder", "give startup.sh's OUT_DIR, the folder that holds records.jsonl")
    try:
        rows = [json.loads(line) for line in Path(records).read_text().splitlines() if line.strip()]
    except (OSError, ValueError) as err:
        raise TQError(f"{records}: not readable records ({err})", "give startup.sh's OUT_DIR/records.jsonl") from err
    cmp = comparisons(rows)
    runs = ab_runs(out)
    if runs:
        cmp["interleaved"] = {name: r["by_concurrency"] for name, r in runs.items()}
    Path(out, "startup.json").write_text(
        json.dumps({"schema": "tqdeploy.gpu-startup/2", "runs": rows, "comparisons": cmp}, indent=2) + "\n"
    )
    text = markdown(rows, cmp)
    for name, r in runs.items():
        text += "\n".join(interleaved(r, name)) + "\n"
    Path(out, "startup.md").write_text(text)
    print(text, end="")


def cli(argv: list[str]) -> int:
    """Exit 0 done (or --help), 2 bad input: one line naming the input and the fix, never a traceback."""
    if argv[:1] in (["-h"], ["--help"]):
        print(__doc__)
        return 0
    try:
        if argv[:1] == ["--pool"]:
            print(pool_files(argv[1:]), end="")
        elif len(argv) == 2:
            main(*argv)
        else:
            raise TQError(
                f"{len(argv)} argument(s) given", "startup_report.py RECORDS.jsonl OUT_DIR, or --pool AB.json..."
            )
    except TQError as exc:
        return report_error(exc, "startup_report")
    return 0


if __name__ == "__main__":
    sys.exit(cli(sys.argv[1:]))
