"""/metrics sampled in a background thread while a load runs (bounded: it stops with the load)."""

from __future__ import annotations

import threading
import time

from tqdeploy.net import Client
from tqdeploy.profile.jsontypes import JSONObject
from tqdeploy.profile.metrics import Scrape, scrape
from tqdeploy.runtime.gpu import gpu_memory


class MetricsSampler:
    def __init__(self, client: Client, interval_s: float = 1.0):
        self.client = client
        self.interval_s = interval_s
        self.samples: list[JSONObject] = []
        self.first: Scrape | None = None
        self.last: Scrape | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._t0 = time.perf_counter()
        self._gpus = False
        self.missed = 0

    def elapsed_s(self) -> float:
        """Seconds since the sampler started, on the clock of the samples' `t_s`."""
        return time.perf_counter() - self._t0

    def scrape(self) -> Scrape:
        got = scrape(self.client, timeout=max(1.0, min(5.0, 2 * self.interval_s)))
        sample: JSONObject = {"t_s": round(time.perf_counter() - self._t0, 3), **got.values}
        if self._gpus:  # NVML memory per GPU on GPU hosts (runtime/gpu.py; None without a driver)
            sample["gpu_used_mib"] = [g["used_mib"] for g in gpu_memory() or []]
        self.samples.append(sample)
        if self.first is None:
            self.first = got
        self.last = got
        return got

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.scrape()
            except (OSError, ValueError):
                self.missed += 1  # a missed sample is shown as a gap, not an error
            self._stop.wait(self.interval_s)

    def __enter__(self) -> MetricsSampler:
        self._gpus = bool(gpu_memory())
        try:
            self.scrape()
        except (OSError, ValueError):
            self.missed += 1
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        try:
            self.scrape()
        except (OSError, ValueError):
            self.missed += 1

    def server_side(self) -> JSONObject:
        """What vLLM itself counted over the load: histogram means, preemptions, KV usage peak."""
        out: JSONObject = {"samples": len(self.samples), "missed_samples": self.missed}
        if self.first is None or self.last is None:
            return out
        for key in ("ttft", "itl"):
            a, b = self.first.histograms.get(key), self.last.histograms.get(key)
            if a and b and b["count"] > a["count"]:
                out[f"{key}_mean_s"] = (b["sum"] - a["sum"]) / (b["count"] - a["count"])
        for key in ("preemptions", "generation_tokens"):
            if key in self.last.values:
                out[key] = self.last.values[key] - self.first.values.get(key, 0.0)
        usage = [s["kv_usage"] for s in self.samples if "kv_usage" in s]
        out["kv_usage_max"] = max(usage) if usage else None
        out["running_max"] = max((s.get("running", 0) for s in self.samples), default=None)
        out["waiting_max"] = max((s.get("waiting", 0) for s in self.samples), default=None)
        gpu = [s["gpu_used_mib"] for s in self.samples if s.get("gpu_used_mib")]
        out["gpu_used_mib_max"] = [max(col) for col in zip(*gpu, strict=False)] if gpu else None
        return out
