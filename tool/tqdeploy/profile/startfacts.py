"""Facts of a start beside its phases: torch.compile cache state, the weight load's size and rate, the startup
plan's state and the vLLM version."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from tqdeploy.profile.jsontypes import JSONObject
from tqdeploy.units import GiB
from tqdeploy.vllmfacts import logpatterns as ms

if TYPE_CHECKING:
    from tqdeploy.profile.events import Event


def compile_cache_state(text: str) -> str | None:
    if ms.COMPILE_LOAD_FAILED.search(text):
        return "load-failed"
    if ms.COMPILE_HIT.search(text) and not ms.COMPILE_MISS.search(text):
        return "hit"
    if ms.COMPILE_MISS.search(text):
        return "miss"
    if ms.EAGER.search(text):
        return "none (eager)"
    return None


def weights_figures(text: str, events: list[Event], weight_bytes: int | None = None) -> JSONObject:
    """Bytes and achieved GB/s of the weight load (checkpoint bytes when known, else the log's figure).
    With --load-format dummy nothing is read from disk, so no rate is given."""
    gib = None
    if weight_bytes:
        gib = weight_bytes / GiB
    elif (m := ms.MODEL_GIB.search(text)) is not None:
        gib = float(m.group(1))
    elif (m := ms.CHECKPOINT_GIB.search(text)) is not None:
        gib = float(m.group(1))
    seconds = next((e.reported_s for e in reversed(events) if e.key in ("model_loaded", "weights")), None)
    if seconds is None:
        seconds = _streamed_seconds(events)
    out: JSONObject = {"bytes": None if gib is None else round(gib * GiB), "seconds": seconds, "gb_per_s": None}
    if "'load_format': 'dummy'" in text or "load_format=dummy" in text:
        out["note"] = "dummy weights (--load-format dummy): nothing read from disk"
    elif gib and seconds:
        out["gb_per_s"] = round(gib * GiB / 1e9 / seconds, 3)
    return out


_TQDM_ELAPSED = re.compile(r"\[(\d+):(\d\d)<")


def _streamed_seconds(events: list[Event]) -> float | None:
    """The runai streamer's load, which vLLM does not time: from "Starting to load model" to the bar's 100% on
    tqdeploy's stamps, else the bar's own elapsed time (whole seconds)."""
    end = next((e for e in events if e.key == "weights_stream"), None)
    if end is None:
        return None
    start = next((e for e in events if e.key == "load_start"), None)
    if start is not None and start.source == end.source == "stamp" and start.time and end.time:
        return round(end.time - start.time, 3)
    m = _TQDM_ELAPSED.search(end.text)
    return float(int(m.group(1)) * 60 + int(m.group(2))) if m else None


def startup_plan_state(text: str) -> str | None:
    """applied | not-applied | saved, or None when the log has no startup-plan line (the plan is off, or this
    vLLM has none). A plan that was not applied is re-measured and saved again: not-applied wins over saved."""
    if ms.PLAN_APPLIED.search(text):
        return "applied"
    if ms.PLAN_NOT_APPLIED.search(text):
        return "not-applied"
    if ms.PLAN_SAVED.search(text):
        return "saved"
    return None


def vllm_version(text: str) -> tuple[int, int, int] | None:
    m = ms.VLLM_VERSION.search(text)
    if m is None:
        return None
    major, minor, patch = next(g for g in m.groups() if g).split(".")
    return int(major), int(minor), int(patch)
