"""What differs between an artifact's manifest and this host's facts, and which differences refuse an import.

Refused (the caches were built for something else: they miss, or, for a CPU ISA, load kernels this CPU cannot
run): any fact in REFUSE, and any model file whose hash differs. Warned, never refused: a path inside vLLM's
compile key (WARN): vLLM's own compile cache misses there while inductor's and Triton's still hit, which is what
a process-runtime build in another folder gets (containers mount the model at the same path everywhere).
`cache import --force` imports despite refusals and says so: the caches whose key differs are rebuilt by vLLM
(they miss); the force is for a difference the operator knows enters no key (a driver point release).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from tqdeploy.startcache.manifest import Manifest

REFUSE = (
    "vllm",
    "torch",
    "triton",
    "python",
    "machine",
    "cuda",
    "device",
    "capability",
    "cpu_isa",
    "driver",
    "fingerprint",
    "flags",
)
WARN = ("vllm_dir", "model_dir")


@dataclass(frozen=True)
class Difference:
    fact: str
    artifact: str
    here: str
    refuses: bool

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def line(self) -> str:
        return f"{self.fact}: artifact {self.artifact[:80]!r}, here {self.here[:80]!r}"


def differences(manifest: Manifest, facts: dict[str, str], model_files: dict[str, str]) -> list[Difference]:
    out = []
    for key in REFUSE + WARN:
        theirs, ours = manifest.facts.get(key, "missing"), facts.get(key, "missing")
        if theirs != ours:
            out.append(Difference(key, theirs, ours, key in REFUSE))
    for name in sorted(set(manifest.model_files) | set(model_files)):
        theirs, ours = manifest.model_files.get(name, "missing"), model_files.get(name, "missing")
        if theirs != ours:
            out.append(Difference(f"model file {name}", theirs, ours, True))
    return out


def refusals(diffs: list[Difference]) -> list[Difference]:
    return [d for d in diffs if d.refuses]
