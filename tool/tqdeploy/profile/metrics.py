"""vLLM's /metrics (Prometheus text), read with prometheus_client's own parser.

Names (docs/facts.md; vllm/v1/metrics/loggers.py in 0.32.0): vllm:kv_cache_usage_perc (0..1),
vllm:num_requests_running / _waiting, vllm:num_preemptions (counter, exposed as _total),
vllm:generation_tokens (counter), histograms vllm:time_to_first_token_seconds and
vllm:inter_token_latency_seconds, and the info gauge vllm:cache_config_info whose labels carry the cache
config (cache_dtype, num_gpu_blocks, kv_cache_size_tokens, block_size, ...).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from tqdeploy.net import Answer, Client
from tqdeploy.net.client import METRICS_LIMIT
from tqdeploy.profile.jsontypes import JSONObject

GAUGES = {
    "vllm:kv_cache_usage_perc": "kv_usage",
    "vllm:num_requests_running": "running",
    "vllm:num_requests_waiting": "waiting",
}
COUNTERS = {"vllm:num_preemptions": "preemptions", "vllm:generation_tokens": "generation_tokens"}
HISTOGRAMS = {"vllm:time_to_first_token_seconds": "ttft", "vllm:inter_token_latency_seconds": "itl"}


@dataclass
class Scrape:
    values: dict[str, float] = field(default_factory=dict)  # short name -> value summed over engines
    histograms: dict[str, dict[str, float]] = field(default_factory=dict)  # short -> {"sum","count"}
    cache_config: dict[str, str] = field(default_factory=dict)


def parse_metrics(text: str) -> Scrape:
    """The figures profile uses; ValueError when the text is not Prometheus exposition format."""
    try:
        return _parse(text)
    except (ValueError, IndexError, KeyError, TypeError) as exc:  # the parser's errors on a non-Prometheus page
        raise ValueError(f"not Prometheus text: {str(exc)[:120]}") from None


def _parse(text: str) -> Scrape:
    from prometheus_client.parser import text_string_to_metric_families

    out = Scrape()
    for family in text_string_to_metric_families(text):
        name = family.name
        for sample in family.samples:
            if not math.isfinite(sample.value) or sample.value < 0:
                continue  # a gauge or counter of vLLM is a finite count or fraction; nan/inf/-1 is no figure
            if name in GAUGES and sample.name == name:
                key = GAUGES[name]
                out.values[key] = out.values.get(key, 0.0) + sample.value
            elif name in COUNTERS and sample.name == name + "_total":
                key = COUNTERS[name]
                out.values[key] = out.values.get(key, 0.0) + sample.value
            elif name in HISTOGRAMS and sample.name in (name + "_sum", name + "_count"):
                hist = out.histograms.setdefault(HISTOGRAMS[name], {"sum": 0.0, "count": 0.0})
                hist[sample.name.rsplit("_", 1)[1]] += sample.value
            elif name == "vllm:cache_config_info" and not out.cache_config:
                out.cache_config = dict(sample.labels)
    return out


def fetch_metrics(client: Client, timeout: float = 5.0) -> Answer:
    """GET /metrics, bounded (METRICS_LIMIT, timeout); the caller checks answer.ok."""
    return client.get("/metrics", timeout=timeout, limit=METRICS_LIMIT)


def scrape(client: Client, timeout: float = 5.0) -> Scrape:
    """One parsed scrape; OSError when there is no usable answer, ValueError when it is not Prometheus text."""
    answer = fetch_metrics(client, timeout)
    if not answer.ok:
        raise OSError(answer.error or f"HTTP {answer.status}")
    return parse_metrics(answer.text())


def cache_config_figures(cache_config: dict[str, str]) -> JSONObject:
    """The cache_config_info labels that say what KV cache vLLM really built."""

    def num(key: str) -> int | None:
        value = cache_config.get(key)
        try:
            number = float(value) if value not in (None, "None", "") else None
        except ValueError:
            return None
        # a label is text: 1e400, nan or -3 is no block or token count
        return int(number) if number is not None and math.isfinite(number) and number >= 0 else None

    return {
        "cache_dtype": cache_config.get("cache_dtype"),
        "num_gpu_blocks": num("num_gpu_blocks"),
        "block_size": num("block_size"),
        "kv_cache_size_tokens": num("kv_cache_size_tokens"),
    }
