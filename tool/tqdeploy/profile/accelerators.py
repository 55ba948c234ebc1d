"""Start-up accelerators a profile can recommend, from what it measured: a load format for an I/O-bound weight
load (TQ436: the load against the disk's own O_DIRECT rate, disk.py) and the startup plan (TQ437)."""

from __future__ import annotations

from tqdeploy.findings import Finding, Severity
from tqdeploy.profile import disk
from tqdeploy.profile.jsontypes import JSONObject
from tqdeploy.profile.report import ProfileResult
from tqdeploy.profile.startfacts import startup_plan_state, vllm_version
from tqdeploy.profile.timeline import Phase
from tqdeploy.vllmfacts import logpatterns as ms

IO_BOUND = 0.7  # load rate / disk rate at or above which the disk is what the load waits on; below, the reader
COLD = 0.5  # page-cache resident fraction below which the cache is "mostly cold"
MIN_WEIGHTS_S = 5.0  # a shorter load is not worth a different loader
MIN_PROFILING_S = 2.0
# the first release whose source was read to have it (v1/worker/startup_plan.py in the 0.32.0 CPU venv);
# older ones may have it too, unverified, so the finding stays silent for them
STARTUP_PLAN_SINCE = (0, 32, 0)
LOAD_FORMATS = 'load_format = "fastsafetensors" or "runai_streamer"'


def disk_figures(
    weights: JSONObject, residency: JSONObject | None, when: str | None, direct_read: JSONObject | None
) -> JSONObject:
    """The timeline's weights plus the disk's rate, the page-cache state and their ratio (decimal GB/s both)."""
    out = dict(weights)
    rate = (direct_read or {}).get("gb_per_s")
    out["disk_read_gb_per_s"] = rate
    if direct_read is None:
        out["disk_note"] = "not measured (no model folder: pass --model DIR)"
    elif rate is None:
        out["disk_note"] = direct_read.get("reason")
    if direct_read and direct_read.get("fs_type"):
        out["disk_fs_type"] = direct_read["fs_type"]
    out["page_cache_resident_fraction"] = (residency or {}).get("fraction")
    out["page_cache_measured"] = when if residency and residency.get("fraction") is not None else None
    if residency and residency.get("fraction") is None and residency.get("error"):
        out["page_cache_note"] = residency["error"]
    load = weights.get("gb_per_s")
    out["vs_disk"] = round(load / rate, 3) if load and rate else None
    return out


def weight_load_finding(weights: JSONObject) -> Finding | None:
    ratio, seconds = weights.get("vs_disk"), weights.get("seconds") or 0.0
    if ratio is None or seconds < MIN_WEIGHTS_S:
        return None
    cached = weights.get("page_cache_resident_fraction")
    before = weights.get("page_cache_measured") == "before start"
    evidence = {
        k: weights.get(k)
        for k in ("bytes", "seconds", "gb_per_s", "disk_read_gb_per_s", "vs_disk", "page_cache_resident_fraction")
    } | {"page_cache_measured": weights.get("page_cache_measured")}
    if ratio < IO_BOUND:
        return Finding(
            "TQ436",
            Severity.INFO,
            f"weight load at {ratio:.2f}x the disk's read rate over {seconds:.1f} s: the disk is not the bottleneck",
            evidence,
            "the time goes to reading and copying tensors, not to the disk: a faster disk will not help, a reader "
            'with several threads can (load_format = "runai_streamer" cut a cold 7.3 GB load on the 2-core CPU host '
            "from 22.9 s to 16.3 s, both at about 0.33x the disk); on GPU hosts also check the "
            "PCIe link (tqdeploy doctor) and CPU contention during the load",
            "start-up",
        )
    if before and cached is not None and cached >= COLD:
        return None  # read from a warm page cache at the disk's rate or faster: nothing the disk can explain
    cold = "page cache mostly cold before start" if before else "page-cache state during the load unknown"
    return Finding(
        "TQ436",
        Severity.WARN if before else Severity.INFO,
        f"weight load I/O-bound: {ratio:.2f}x the disk's O_DIRECT rate over {seconds:.1f} s ({cold})",
        evidence,
        f"set {LOAD_FORMATS} in the spec's [vllm] table (vLLM --load-format; the package is pinned in the "
        "Dockerfile), put the weights on a faster disk, or keep them in the page cache between starts",
        "start-up",
    )


def startup_plan_finding(text: str, phases: list[Phase]) -> Finding | None:
    """A GPU start on a vLLM that has the startup plan, with no plan line, that spent >= 2 s profiling memory."""
    version = vllm_version(text)
    if version is None or version < STARTUP_PLAN_SINCE or not ms.GPU_START.search(text):
        return None
    if startup_plan_state(text) is not None:
        return None
    seconds = sum(p.seconds for p in phases if p.name == "memory profiling")
    if seconds < MIN_PROFILING_S:
        return None
    return Finding(
        "TQ437",
        Severity.WARN if seconds >= 10 else Severity.INFO,
        f"startup plan off: memory profiling took {seconds:.1f} s on every start",
        {"memory_profiling_s": round(seconds, 3), "vllm_version": ".".join(map(str, version))},
        "set startup_plan = true in the spec's [vllm] table (VLLM_ENABLE_STARTUP_PLAN=1): vLLM saves the result "
        "under VLLM_CACHE_ROOT/startup_plan/ and skips memory profiling on the next matching start",
        "start-up",
    )


def measure_residency(model_dir: str | None) -> JSONObject | None:
    """Page-cache residency of the model's weight files (bounded: disk.py's time budget)."""
    if not model_dir:
        return None

    return disk.page_cache_residency(disk.weight_files(model_dir))


def measure_direct_read(model_dir: str | None) -> JSONObject | None:
    """The disk's O_DIRECT rate under the weights; run with the server down so the two do not compete."""
    if not model_dir:
        return None

    files = disk.weight_files(model_dir)
    return disk.direct_read_rate(files) if files else {"gb_per_s": None, "reason": f"no weight files in {model_dir}"}


def apply_disk(result: ProfileResult, residency: JSONObject | None, when: str, direct_read: JSONObject | None) -> None:
    """Put the disk facts into the result's weights (profile.json `weights`) and add TQ436 when it applies."""
    result.context["disk"] = {"page_cache": residency, "page_cache_measured": when, "direct_read": direct_read}
    if result.timeline is None:
        return
    result.timeline.weights = disk_figures(result.timeline.weights, residency, when, direct_read)
    finding = weight_load_finding(result.timeline.weights)
    if finding is not None:
        result.findings.append(finding)
