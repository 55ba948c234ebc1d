"""tqdeploy: deploy and diagnose vLLM with TurboQuant KV-cache quantization."""

__version__ = "0.1.0"
