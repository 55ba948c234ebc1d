"""Model cache disk (TQ122), HF_TOKEN present/absent (TQ123), HF_ENDPOINT mirror reachable (TQ124)."""

from __future__ import annotations

from tqdeploy.doctor.registry import HostInputs, Verdicts, error, host_check, info, passed, skipped, warn
from tqdeploy.model.facts import ModelFacts

# Qwen3.6-27B BF16 weights incl. vision tower and MTP: ~55.6 GB (docs/facts.md), tqdeploy's first target.
DEFAULT_TARGET_WEIGHTS_BYTES = 55_600_000_000


def _model_weights_bytes(model: ModelFacts | None) -> int | None:
    """Bytes still to download for --model REPO@REV (ModelFacts.weight_bytes); a local folder needs none."""
    if model is None:
        return None
    if model.source and "@" not in model.source:  # a checkpoint folder already on disk
        return None
    return model.weight_bytes if model.weight_bytes and model.weight_bytes > 0 else None


@host_check("TQ122", "storage", "free disk where models are cached")
def cache_disk(ctx: HostInputs) -> Verdicts:
    disk = ctx.host.disk
    if not disk:
        return skipped(ctx.host.probe_errors.get("disk", "not probed"))
    free = disk.get("free_bytes")
    if not isinstance(free, int):  # a hand-made snapshot's disk section without its figure
        return skipped("the snapshot's disk section records no free_bytes")
    weights = _model_weights_bytes(ctx.model)
    need = weights or DEFAULT_TARGET_WEIGHTS_BYTES
    what = "the given model's weights" if weights else "Qwen3.6-27B BF16 weights (~55.6 GB, the default target)"
    ev = {
        "cache": disk.get("path"),
        "filesystem_of": disk.get("measured_at"),
        "free_gb": round(free / 1e9, 1),
        "needed_gb": round(need / 1e9, 1),
        "for": what,
    }
    fix = "free space there, or point HF_HOME / HF_HUB_CACHE at a larger disk (a local NVMe disk loads fastest)"
    if free < need:
        if weights:
            return error(
                ev,
                fix,
                title=f"{round(free / 1e9, 1)} GB free in the model cache, {what} need {round(need / 1e9, 1)} GB",
            )
        return warn(ev, fix, title=f"{round(free / 1e9, 1)} GB free in the model cache: less than {what}")
    return passed(ev, title=f"{round(free / 1e9, 1)} GB free in the model cache")


@host_check("TQ123", "hub", "Hugging Face token")
def hf_token(ctx: HostInputs) -> Verdicts:
    env = ctx.host.env
    if not env:
        return skipped(ctx.host.probe_errors.get("env", "not probed"))
    if env.get("hf_token_present"):
        return passed({"HF_TOKEN": "present"}, title="HF_TOKEN present")
    return info(
        {"HF_TOKEN": "absent"},
        "public repositories download without it; set HF_TOKEN for gated or private "
        "ones (e.g. from a secrets file, never on the command line)",
        title="HF_TOKEN absent",
    )


@host_check("TQ124", "hub", "model mirror (HF_ENDPOINT) reachable")
def mirror(ctx: HostInputs) -> Verdicts:
    env = ctx.host.env
    endpoint = (env or {}).get("hf_endpoint")
    if not endpoint:
        return skipped("HF_ENDPOINT not set: downloads go to huggingface.co")
    m = ctx.host.mirror
    if not m:
        reason = ctx.host.probe_errors.get("mirror") or "not tested (--offline)"
        return skipped(reason, {"endpoint": endpoint})
    ev = {
        "endpoint": m.get("endpoint"),
        "proxy": m.get("proxy"),
        "status": m.get("status"),
        "seconds": m.get("seconds"),
        "error": m.get("error") or None,
    }
    fix = "check the URL, DNS and proxy settings (HTTPS_PROXY / NO_PROXY) or unset HF_ENDPOINT; downloads will fail"
    status = m.get("status")
    if m.get("reachable") and isinstance(status, int) and status >= 500:
        # a 502/503/504 is typically a proxy or gateway that could not reach the mirror behind it
        via = f" (through proxy {m.get('proxy')})" if m.get("proxy") else ""
        return error(ev, fix, title=f"mirror {m.get('endpoint')} answered HTTP {status}{via}: server or gateway error")
    if m.get("reachable"):
        return passed(ev, title=f"mirror {m.get('endpoint')} answered HTTP {status} in {m.get('seconds')} s")
    return error(ev, fix, title=f"mirror {m.get('endpoint')} not reachable")
