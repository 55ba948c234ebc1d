#!/bin/sh
# Rendered by tqdeploy 0.1.0 from spec qwen36-27b-tq (sha256 df6fb2e78ebdba7bed9a6147b5a4bc222764a63a373c1ba77d03bf70e8e3fce3).
# Fetches Qwen/Qwen3.6-27B at revision main into the models directory, through the
# spec's mirrors in order. Run it on the host before `docker compose up`.
# NOTE: revision main is a branch, not a commit: a later run may fetch other files.
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
exec tqdeploy download Qwen/Qwen3.6-27B@main --mirror https://huggingface.co --to "$DEST"
