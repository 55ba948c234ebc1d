"""`tqdeploy tune BUILD`: which KV-cache dtype is worth it on this host (docs/tune.md).

Each candidate dtype is started through the build's own runtime (a copy of the build with only the dtype and the
port changed), measured for KV capacity, latency and throughput under the user's workload, and answer quality
against the unquantized reference; then one recommendation with its evidence. Modules: candidates (which dtypes),
workload (the sweep and the time estimate), store (results per dtype with their fingerprint), variant (start and
stop a copy), measure (one dtype), goodput and verdict (pure), report and chart (output), apply (--apply), run.
"""
