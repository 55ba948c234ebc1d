"""Deployment spec `tqdeploy.toml`: load, fill defaults, validate.

Public API:
  load_spec(path=None, *, embedded=None) -> Spec   (typed, frozen sections; no linter: the build lints
                                                    its VllmCommand with tqdeploy.lint.specflags)
  embedded_spec_names() -> list[str]; DEFAULT_SPEC_NAME
  spec_problems(data) -> list[Problem]   (value rules on the schema-checked TOML, no I/O)
"""

from __future__ import annotations

from pathlib import Path

from tqdeploy.deployspec.accel import accelerator_problems
from tqdeploy.deployspec.digests import apply_known_digest
from tqdeploy.deployspec.load import (
    DEFAULT_SPEC_NAME,
    Problem,
    embedded_spec_names,
    embedded_spec_path,
    parse_spec_text,
    raise_problems,
    read_spec_file,
)
from tqdeploy.deployspec.model import Spec
from tqdeploy.deployspec.validate import spec_problems
from tqdeploy.errors import TQError

__all__ = ["DEFAULT_SPEC_NAME", "Problem", "Spec", "embedded_spec_names", "load_spec", "spec_problems"]


def load_spec(path: str | Path | None = None, *, embedded: str | None = None) -> Spec:
    """A valid spec, or a TQError naming file:line and the key. No file and no name: the embedded default.

    Its vLLM flags are checked against vLLM's own schema only where a build needs them:
    tqdeploy.lint.specflags.lint_vllm_command(spec, command, model_facts), above the spec in the layers.
    """
    if path is not None and embedded is not None:
        raise TQError("give a spec file or an embedded spec name, not both", "drop one of them")
    if path is None:
        p = embedded_spec_path(embedded or DEFAULT_SPEC_NAME)
        text, source = p.read_text(encoding="utf-8"), f"embedded:{p.stem}"
    else:
        text, source = read_spec_file(path)
    data = parse_spec_text(text, source)
    raise_problems(spec_problems(data), source, text)
    spec = Spec.from_data(data, source, text)  # typed from here on: every value passed the rules above
    raise_problems(accelerator_problems(spec), source, text)  # after spec_problems: it needs a valid version
    return apply_known_digest(spec)  # before anything reads the spec hash: the digest is part of it
