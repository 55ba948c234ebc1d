"""The heavy SDKs behind one module each (SkyPilot's sky/adaptors): the only importers of pynvml (nvml),
huggingface_hub (hfhub), its HTTP library (httplib), jinja2 (jinja), matplotlib (plot) and the Docker SDK (docker).
Each imports its SDK inside its functions, so a product module imports the adaptor at its top and pays only when
it calls it; `tqdeploy --help` never loads an SDK (tests/test_adaptors.py)."""
