#!/bin/sh
# Rendered by tqdeploy 0.1.0 from spec qwen36-multinode (sha256 1c0f35a07cf4c4a6ed052e2fd9137a61836ee771b7f3952c95a9dc0c286e01ee).
# Fetches Qwen/Qwen3.6-27B at revision 0123456789abcdef0123456789abcdef01234567 into the models directory, through the
# spec's mirrors in order. Run it on the host before `docker compose up`.
set -eu
# Relative paths in the spec are relative to this directory.
case "$0" in */*) cd "${0%/*}" ;; esac

MODELS_DIR="${TQ_MODELS_DIR:-./models}"
DEST="$MODELS_DIR/Qwen--Qwen3.6-27B"

if ! command -v tqdeploy >/dev/null 2>&1; then
  echo "download.sh: tqdeploy is not on PATH" >&2
  echo "  fix: install tqdeploy (pip install tqdeploy-*.whl in a venv, or pipx install) and put it on PATH, then run again" >&2
  exit 69
fi
# A gated repo needs HF_TOKEN in the environment; it is read there, never written here.

# `tqdeploy download` tries the mirrors in the spec's order, resumes and verifies every file.
exec tqdeploy download Qwen/Qwen3.6-27B@0123456789abcdef0123456789abcdef01234567 --mirror https://hf-mirror.internal.example --mirror https://huggingface.co --to "$DEST"
