"""Deployment spec `tqdeploy.toml`: load, fill defaults, validate.

Public API:
  load_spec(path=None, *, embedded=None, check_vllm_flags=True) -> Spec
  embedded_spec_names() -> list[str]; DEFAULT_SPEC_NAME
  spec_problems(spec) -> list[Problem]   (value rules, no I/O)
"""

from __future__ import annotations

from pathlib import Path

from tqdeploy.spec.load import (
    DEFAULT_SPEC_NAME,
    Problem,
    embedded_spec_names,
    embedded_spec_path,
    parse_spec_text,
    raise_problems,
    read_spec_file,
)
from tqdeploy.spec.model import Spec
from tqdeploy.spec.validate import spec_problems

__all__ = ["DEFAULT_SPEC_NAME", "Problem", "Spec", "embedded_spec_names", "load_spec", "spec_problems"]


def load_spec(
    path: str | Path | None = None, *, embedded: str | None = None, check_vllm_flags: bool = True, model=None
) -> Spec:
    """A valid spec, or a TQError naming file:line and the key. No file and no name: the embedded default.

    model: checkpoint facts (tqdeploy.model.load_model_facts) to check the flags against as well.
    """
    if path is not None and embedded is not None:
        from tqdeploy.errors import TQError

        raise TQError("give a spec file or an embedded spec name, not both", "drop one of them")
    if path is None:
        p = embedded_spec_path(embedded or DEFAULT_SPEC_NAME)
        text, source = p.read_text(encoding="utf-8"), f"embedded:{p.stem}"
    else:
        text, source = read_spec_file(path)
    spec = Spec(parse_spec_text(text, source), source, text)
    raise_problems(spec_problems(spec), source, text)
    from tqdeploy.spec.accel import accelerator_problems

    raise_problems(accelerator_problems(spec), source, text)  # after spec_problems: it needs a valid version
    from tqdeploy.spec.digests import apply_known_digest

    apply_known_digest(spec)  # before anything reads the spec hash: the digest is part of it
    if check_vllm_flags:
        from tqdeploy.spec.flags import check_flags

        spec.flag_check = check_flags(spec, model)
        raise_problems(spec.flag_check.problems, source, text)
    return spec
