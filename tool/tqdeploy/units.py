"""Byte units, defined once. Binary units: what vLLM's logs, NVML and nvidia-smi call GiB."""

GiB = 1 << 30
