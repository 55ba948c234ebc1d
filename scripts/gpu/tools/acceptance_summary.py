"""The summary of a GPU acceptance run (scripts/gpu/tools/acceptance.sh): each step's exit code and seconds, and the key
figures (ready time cold and warm, KV tokens real vs planned, output tokens/s and /metrics scrapes per load step,
GPU memory after down, leftover VLLM:: processes, the key nowhere in the bundle), as summary.json + summary.md.

    python3 scripts/gpu/tools/acceptance_summary.py WORK OUT          # from the run's work dir (or a copy of OUT)
    python3 scripts/gpu/tools/acceptance_summary.py --doc OUT docs/gpu-acceptance.md --commit SHA

Every file read is the run's own output; a missing or unreadable one is reported as missing, never a crash, so a
partial run (a phase that failed) still gets a summary that says where it stopped.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

STEPS = [
    "weights",
    "doctor",
    "build",
    "lint",
    "download",
    "up-cold",
    "status",
    "connect",
    "profile-url",
    "bundle",
    "bundle-key-check",
    "down",
    "profile-warm",
]
# exit 1 of these is findings on a host or a profile, not a broken step: shown, not counted as a failure
FINDINGS_OK = {"doctor"}
MAX_READ = 8 << 20


def _json(path: Path) -> Any:
    try:
        if path.is_file() and path.stat().st_size <= MAX_READ:
            return json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError):
        pass
    return None


def _text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")[:MAX_READ].strip() if path.is_file() else None
    except OSError:
        return None


def _mib(text: str | None) -> int | None:
    try:
        return int(text.split()[0]) if text else None
    except (ValueError, IndexError):
        return None


def _step_rows(work: Path) -> list[dict[str, Any]]:
    rows = []
    for name in STEPS:
        rec = _json(work / "steps" / f"{name}.json")
        if rec is None:
            rows.append({"step": name, "rc": None, "seconds": None, "note": "not run"})
            continue
        row = {"step": name, "rc": rec.get("rc"), "seconds": rec.get("seconds")}
        if rec.get("rc") not in (0, None):
            err = _text(work / "steps" / f"{name}.err") or ""
            lines = [ln for ln in err.splitlines() if ln.strip()]
            row["note"] = lines[-1][:300] if lines else ""
        rows.append(row)
    return rows


def _is_dict(v: Any) -> bool:
    return isinstance(v, dict)


def _load_steps(profile: Any) -> list[dict[str, Any]]:
    steps = ((profile or {}).get("load") or {}).get("steps") or []
    keep = ("concurrency", "completed", "errors", "seconds", "samples", "output_tokens_per_s")
    rows = []
    for s in steps:
        if isinstance(s, dict):
            ttft = s.get("ttft_p50_s")
            rows.append({k: s.get(k) for k in keep} | {"ttft_p50_ms": round(ttft * 1000, 1) if ttft else None})
    return rows


def _profile_figures(profile: Any) -> dict[str, Any]:
    if not isinstance(profile, dict):
        return {"present": False}
    kv = profile.get("kv") or {}
    real, planned = kv.get("real_tokens"), kv.get("planned_tokens")
    return {
        "present": True,
        "kv_cache_dtype": kv.get("cache_dtype"),
        "kv_tokens_real": real,
        "kv_tokens_planned": planned,
        "kv_real_vs_planned": round(real / planned - 1, 4) if real and planned else None,
        "load_steps": _load_steps(profile),
        "findings": [
            f"{f.get('id')} {f.get('severity')}" for f in profile.get("findings") or [] if isinstance(f, dict)
        ],
        "up_seconds_to_ready": (profile.get("context") or {}).get("up_seconds_to_ready"),
        "wall_seconds": profile.get("wall_seconds"),
    }


def summarize(work: Path) -> dict[str, Any]:
    up = _json(work / "up.json") or {}
    down = _json(work / "steps" / "down.out") or {}
    connect = _json(work / "steps" / "connect.out") or {}
    url, warm = _json(work / "profile-url" / "profile.json"), _json(work / "profile-warm" / "profile.json")
    rows = _step_rows(work)
    failed = [r["step"] for r in rows if r["rc"] not in (0, None) and not (r["step"] in FINDINGS_OK and r["rc"] == 1)]
    size = _text(work / "model-size.txt")
    return {
        "schema": "tqdeploy.gpu-acceptance/1",
        "meta": _json(work / "meta.json") or {},
        "steps": rows,
        "failed_steps": failed,
        "not_run": [r["step"] for r in rows if r["rc"] is None and r["step"] != "weights"],
        "model_bytes": int(size.split()[0]) if size and size.split()[0].isdigit() else None,
        "cold": {"status": up.get("status"), "seconds_to_ready": up.get("seconds_to_ready")},
        "connect_check": (connect.get("summary") or {}) if isinstance(connect, dict) else {},
        "profile_url": _profile_figures(url),
        "profile_warm": _profile_figures(warm),
        "down": {
            "status": down.get("status"),
            "left": down.get("left"),
            "gpu_used_mib": [g.get("used_mib") for g in down.get("gpus") or [] if isinstance(g, dict)],
        },
        "gpu_mib_after_down": _mib(_text(work / "gpu-mem-after-down.txt")),
        "gpu_mib_after_warm": _mib(_text(work / "gpu-mem-after-warm.txt")),
        "leftovers_after_down": _text(work / "leftovers-after-down.txt") or "",
        "leftovers_after_warm": _text(work / "leftovers-after-warm.txt") or "",
    }


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.2f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def _md_load(title: str, fig: dict[str, Any]) -> list[str]:
    if not fig.get("present"):
        return [f"{title}: no profile.json", ""]
    lines = [
        f"{title}: KV cache {_fmt(fig['kv_cache_dtype'])}, real {_fmt(fig['kv_tokens_real'])} vs planned "
        f"{_fmt(fig['kv_tokens_planned'])} tokens"
        + (f" ({fig['kv_real_vs_planned']:+.2%})" if fig["kv_real_vs_planned"] is not None else "")
        + (f"; up ready in {_fmt(fig['up_seconds_to_ready'])} s" if fig.get("up_seconds_to_ready") else "")
        + (f"; findings: {', '.join(fig['findings'])}" if fig["findings"] else ""),
        "",
        "| concurrency | completed | errors | seconds | /metrics scrapes | output tok/s | TTFT p50 ms |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in fig["load_steps"]:
        lines.append(
            f"| {_fmt(s['concurrency'])} | {_fmt(s['completed'])} | {_fmt(s['errors'])} | {_fmt(s['seconds'])} | "
            f"{_fmt(s['samples'])} | {_fmt(s['output_tokens_per_s'])} | {_fmt(s['ttft_p50_ms'])} |"
        )
    return [*lines, ""]


def to_markdown(s: dict[str, Any]) -> str:
    meta = s["meta"]
    lines = [
        f"Run {meta.get('date_utc', '?')} on {meta.get('gpu', '?')}, vLLM {meta.get('vllm', '?')}, "
        f"checkpoint {_fmt(s['model_bytes'])} bytes of real bf16 weights; "
        + ("all steps exit 0." if not s["failed_steps"] else f"FAILED: {', '.join(s['failed_steps'])}.")
        + (f" Not run: {', '.join(s['not_run'])}." if s["not_run"] else ""),
        "",
        "| step | exit | seconds | note |",
        "|---|---|---|---|",
    ]
    for r in s["steps"]:
        note = str(r.get("note", "")).replace("|", "\\|")
        lines.append(f"| {r['step']} | {_fmt(r['rc'])} | {_fmt(r['seconds'])} | {note} |")
    c = s["connect_check"]
    lines += [
        "",
        f"Cold `up`: {_fmt(s['cold']['status'])}, ready in {_fmt(s['cold']['seconds_to_ready'])} s. "
        f"connect --check: {_fmt(c.get('ok'))} ok, {_fmt(c.get('error'))} error(s). "
        f"After down: {_fmt(s['down']['status'])}, left {_fmt(s['down']['left'])}, GPU memory "
        f"{_fmt(s['gpu_mib_after_down'])} MiB (down's NVML: {_fmt(s['down']['gpu_used_mib'])}); after the warm "
        f"profile {_fmt(s['gpu_mib_after_warm'])} MiB; leftover VLLM:: processes: "
        f"{s['leftovers_after_down'] or 'none'} / {s['leftovers_after_warm'] or 'none'}.",
        "",
        *_md_load("`profile --url --load` (cold-started server)", s["profile_url"]),
        *_md_load("`profile BUILD --start warm --load`", s["profile_warm"]),
    ]
    return "\n".join(lines).rstrip() + "\n"


def write_doc(out: Path, doc: Path, commit: str) -> None:
    """Put this run's summary at the top of the runs in docs/gpu-acceptance.md, headed by its date and commit."""
    summary = _json(out / "summary.json")
    md = _text(out / "summary.md")
    if summary is None or md is None:
        raise SystemExit(f"acceptance_summary: no summary.json/summary.md in {out}: run the summary phase first")
    date = str(summary.get("meta", {}).get("date_utc") or "unknown date")[:10]
    head = "# GPU acceptance runs (scripts/gpu/tools/acceptance.sh)\n"
    intro = (
        "The README's GPU loop, keyed, on the lent H200 with vLLM 0.25.0 and a real-weights checkpoint. "
        "Newest first; each section is the run's summary.md. Run it whenever GPU-facing code changes.\n"
    )
    old = doc.read_text(encoding="utf-8") if doc.is_file() else head + "\n" + intro
    first, sep, rest = old.partition("\n## ")
    section = f"## {date} (commit {commit})\n\n{md}\n"
    doc.write_text(first.rstrip() + "\n\n" + section + (("## " + rest) if sep else ""), encoding="utf-8")
    print(f"wrote the {date} run (commit {commit}) into {doc}")


def main(argv: list[str]) -> int:
    if argv[:1] == ["--doc"]:
        if len(argv) != 5 or argv[3] != "--commit":
            raise SystemExit("usage: acceptance_summary.py --doc OUT DOC.md --commit SHA")
        write_doc(Path(argv[1]), Path(argv[2]), argv[4])
        return 0
    if len(argv) != 2:
        raise SystemExit("usage: acceptance_summary.py WORK OUT")
    work, out = Path(argv[0]), Path(argv[1])
    s = summarize(work)
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(s, indent=1) + "\n", encoding="utf-8")
    (out / "summary.md").write_text(to_markdown(s), encoding="utf-8")
    sys.stdout.write(to_markdown(s))
    return 1 if s["failed_steps"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
