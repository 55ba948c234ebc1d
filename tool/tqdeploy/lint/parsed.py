"""A vLLM command line as the parser read it: each option occurrence with its argv span and values."""

from __future__ import annotations

from dataclasses import dataclass, field

from tqdeploy.findings import Finding
from tqdeploy.vllmfacts.schema import Option


@dataclass
class Occurrence:
    option: Option
    name: str  # as written
    start: int  # argv index of the option token
    end: int  # one past its last value token
    values: list[str] = field(default_factory=list)

    @property
    def value(self) -> str | None:
        return self.values[-1] if self.values else None


@dataclass
class ParsedArgs:
    occurrences: list[Occurrence] = field(default_factory=list)
    positionals: list[tuple[int, str]] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    def last(self, dest: str) -> Occurrence | None:
        found = [o for o in self.occurrences if o.option.dest == dest]
        return found[-1] if found else None

    def value(self, dest: str) -> str | None:
        occ = self.last(dest)
        return occ.value if occ else None

    def flag_on(self, dest: str) -> bool:
        occ = self.last(dest)
        return occ is not None and not occ.name.startswith("--no-")
