"""`tqdeploy profile`: the start-up timeline of a vLLM deployment, its real KV capacity against the plan,
and KV usage under a bounded load. Every figure is read from vLLM's own logs and /metrics."""
