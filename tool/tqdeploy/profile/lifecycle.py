"""`profile BUILD --start cold|warm|both`: start through `up` (start.py), time the start from up's
stamped log plus tqdeploy's own /health and first-token probes, profile, then stop with `down`."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from tqdeploy.net import KEY_REFUSED_ID
from tqdeploy.profile import caches
from tqdeploy.profile import start as up
from tqdeploy.profile.accelerators import apply_disk, measure_direct_read, measure_residency
from tqdeploy.profile.events import Event
from tqdeploy.profile.jsontypes import JSONObject
from tqdeploy.profile.probe import first_token_probe
from tqdeploy.profile.report import ProfileResult
from tqdeploy.profile.run import Inputs, profile, progress
from tqdeploy.profile.server import make_client, refused


def profile_once(
    build: Path, mode: str, inputs: Inputs, measured: dict[str, JSONObject | None] | None = None
) -> ProfileResult:
    """One start; `measured` carries the disk's direct read rate from an earlier start of the same build."""
    measured = {} if measured is None else measured
    model_dir = inputs.model or up.model_dir(build)
    residency = measure_residency(model_dir)  # before the start: does the load read from memory or disk?
    progress(f"{mode} start of {build} through tqdeploy up")
    key_file = inputs.key_file or up.key_file(build)  # the key the build's serve.sh exported
    where = caches.locations(build)
    before = caches.snapshot(where)
    try:
        started = up.start(build, mode)
    except up.StartFailed as failed:
        up.stop(build)
        return failed_profile(build, mode, inputs, failed)
    if mode == "cold":  # start() removed the deployment's VLLM_CACHE_ROOT, and every cache under it
        before = caches.cleared(before, up.compile_cache_dir(build))
    try:
        client = make_client(started.base_url, key_file, label="the base_url `tqdeploy up` reported")
        # up waited for /health itself: its polls are in the stamped log (uvicorn access lines)
        token_at, error, models = first_token_probe(client)
        events = [] if token_at is None else [Event("first_token", "first token", -1, token_at, "probe")]
        at = replace(inputs, log=started.log_path, url=started.base_url, key_file=key_file, build_dir=build)
        result = profile(at, mode, events, started.launched_at)
        if models is not None and models.key_refused and not any(f.id == KEY_REFUSED_ID for f in result.findings):
            result.findings.append(refused(models, client, key_file))
    finally:
        up.stop(build)
    if "direct_read" not in measured:  # once per build, with the server down
        measured["direct_read"] = measure_direct_read(model_dir)
    apply_disk(result, residency, "before start", measured["direct_read"])
    after = caches.snapshot(where)  # hit, miss or absent per cache, and where each lives (profile/caches.py)
    result.context["caches"] = caches.report(before, after)
    caches.mark_imported(result.context["caches"], where["compile"].parent)  # `cache import`'s files: hit or miss
    result.findings.extend(caches.cache_findings(build, where, after))
    result.context.update(
        compile_cache=started.compile_cache,
        page_cache=page_cache_wording(residency, started.page_cache),
        up_seconds_to_ready=started.seconds_to_ready,
        first_token_error=error,
    )
    return result


def failed_profile(build: Path, mode: str, inputs: Inputs, failed: up.StartFailed) -> ProfileResult:
    """A start `up` reported as failed: the timeline up to the failure (its log) and up's own findings."""
    log = failed.log_path if failed.log_path is not None and failed.log_path.is_file() else None
    result = profile(replace(inputs, log=log, url=None, load=None, build_dir=build), mode)
    seen = {f.id for f in result.findings}
    result.findings.extend(f for f in failed.findings if f.id not in seen)
    result.context["start_failed"] = True
    return result


def page_cache_wording(residency: JSONObject | None, fallback: str) -> str:
    fraction = (residency or {}).get("fraction")
    if fraction is None:
        why = (residency or {}).get("error") or "model folder unknown"
        return f"{fallback}; residency not measured: {why}"
    return f"not dropped; {fraction:.0%} of the weights were in the OS page cache before start (mincore)"


def profile_build(build: Path, start: str, inputs: Inputs) -> ProfileResult:
    if start != "both":
        return profile_once(build, start, inputs)
    measured: dict[str, JSONObject | None] = {}  # the disk's direct read, measured once for both starts
    cold = profile_once(build, "cold", replace(inputs, load=None), measured)
    if cold.context.get("start_failed"):
        return cold  # the warm start would fail the same way
    warm = profile_once(build, "warm", inputs, measured)
    warm.context["compare"] = compare(cold, warm)
    return warm


def compare(cold: ProfileResult, warm: ProfileResult) -> JSONObject:
    """Phase by phase: cold seconds, warm seconds, and what a warm start still spends."""

    def by_name(r: ProfileResult) -> dict[str, float]:
        out: dict[str, float] = {}
        for p in r.timeline.phases if r.timeline else []:
            out[p.name] = out.get(p.name, 0.0) + p.seconds
        return out

    c, w = by_name(cold), by_name(warm)
    rows: list[JSONObject] = [
        {"phase": n, "cold_s": round(c.get(n, 0.0), 3), "warm_s": round(w.get(n, 0.0), 3)}
        for n in dict.fromkeys([*c, *w])
    ]
    wall_c = cold.timeline.wall_seconds if cold.timeline else None
    wall_w = warm.timeline.wall_seconds if warm.timeline else None
    return {
        "phases": rows,
        "startup_plan": plan_effect(cold, warm, c, w),
        "cold_wall_s": wall_c,
        "warm_wall_s": wall_w,
        "warm_over_cold": round(wall_w / wall_c, 3) if wall_c and wall_w else None,
        "warm_still_spends": sorted(rows, key=lambda r: -float(r["warm_s"]))[:3],
    }


def plan_effect(cold: ProfileResult, warm: ProfileResult, c: dict[str, float], w: dict[str, float]) -> JSONObject:
    """The startup plan's state on both starts and the memory-profiling phase it saved (or did not)."""
    name = "memory profiling"
    state = {r: (x.timeline.startup_plan if x.timeline else None) for r, x in (("cold", cold), ("warm", warm))}
    saved = round(c.get(name, 0.0) - w.get(name, 0.0), 3) if name in c and name in w else None
    return {
        "cold": state["cold"],
        "warm": state["warm"],
        "phase": name,
        "cold_s": round(c[name], 3) if name in c else None,
        "warm_s": round(w[name], 3) if name in w else None,
        "saved_s": saved if state["warm"] == "applied" else None,
    }
