"""`profile BUILD --start cold|warm|both`: start through `up` (start.py), time the start from up's
stamped log plus tqdeploy's own /health and first-token probes, profile, then stop with `down`."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from tqdeploy.profile.report import ProfileResult
from tqdeploy.profile.run import Inputs, profile, progress


def profile_once(build: Path, mode: str, inputs: Inputs) -> ProfileResult:
    from tqdeploy.profile import start as up
    from tqdeploy.profile.probe import first_token_probe
    from tqdeploy.profile.timeline import Event

    progress(f"{mode} start of {build} through tqdeploy up")
    started = up.start(build, mode)
    try:
        # up waited for /health itself: its polls are in the stamped log (uvicorn access lines)
        token_at, error = first_token_probe(started.base_url)
        events = [] if token_at is None else [Event("first_token", "first token", -1, token_at, "probe")]
        result = profile(replace(inputs, log=started.log_path, url=started.base_url), mode, events, started.launched_at)
    finally:
        up.stop(build)
    result.context.update(
        compile_cache=started.compile_cache,
        page_cache=started.page_cache,
        up_seconds_to_ready=started.seconds_to_ready,
        first_token_error=error,
    )
    return result


def profile_build(build: Path, start: str, inputs: Inputs) -> ProfileResult:
    if start != "both":
        return profile_once(build, start, inputs)
    cold = profile_once(build, "cold", replace(inputs, load=None))
    warm = profile_once(build, "warm", inputs)
    warm.context["compare"] = compare(cold, warm)
    return warm


def compare(cold: ProfileResult, warm: ProfileResult) -> dict:
    """Phase by phase: cold seconds, warm seconds, and what a warm start still spends."""

    def by_name(r: ProfileResult) -> dict[str, float]:
        out: dict[str, float] = {}
        for p in r.timeline.phases if r.timeline else []:
            out[p.name] = out.get(p.name, 0.0) + p.seconds
        return out

    c, w = by_name(cold), by_name(warm)
    rows: list[dict] = [
        {"phase": n, "cold_s": round(c.get(n, 0.0), 3), "warm_s": round(w.get(n, 0.0), 3)}
        for n in dict.fromkeys([*c, *w])
    ]
    wall_c = cold.timeline.wall_seconds if cold.timeline else None
    wall_w = warm.timeline.wall_seconds if warm.timeline else None
    return {
        "phases": rows,
        "cold_wall_s": wall_c,
        "warm_wall_s": wall_w,
        "warm_over_cold": round(wall_w / wall_c, 3) if wall_c and wall_w else None,
        "warm_still_spends": sorted(rows, key=lambda r: -float(r["warm_s"]))[:3],
    }
