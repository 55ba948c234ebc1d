"""The output of `tqdeploy connect`: the client's settings, notes, and (with --check) the findings."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tqdeploy.connect.endpoint import Endpoint
from tqdeploy.errors import shown
from tqdeploy.findings import Finding, exit_code_for, summarize
from tqdeploy.output import render_findings

if TYPE_CHECKING:  # rich is loaded where the view is drawn
    from rich.console import Console

SCHEMA = "tqdeploy.connect/1"


@dataclass
class ConnectResult:
    client: str
    endpoint: Endpoint
    settings: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    findings: list[Finding] | None = None  # None: not checked

    @property
    def exit_code(self) -> int:
        return exit_code_for(self.findings or [])

    def to_dict(self) -> dict[str, Any]:
        ep = self.endpoint
        return {
            "schema": SCHEMA,
            "client": self.client,
            "endpoint": {
                "root_url": ep.root_url,
                "openai_base_url": ep.openai_base_url,
                "served_model_name": ep.served_name,
                "api_key_file": str(ep.api_key_file) if ep.api_key_file else None,
                "source": ep.source,
            },
            "settings": self.settings,
            "notes": self.notes,
            "checked": self.findings is not None,
            "findings": [f.to_dict() for f in self.findings or []],
            "summary": summarize(self.findings or []),
        }

    def render(self, console: Console) -> None:
        ep = self.endpoint
        head = (
            f"{self.client}: {shown(ep.openai_base_url)} model {shown(repr(ep.served_name))} (from {shown(ep.source)})"
        )
        console.print(head, soft_wrap=True, markup=False)
        _render_settings(console, self.client, self.settings)
        for note in self.notes:
            console.print(f"note: {shown(note, 2000)}", soft_wrap=True, markup=False)
        if self.findings is not None:
            render_findings(console, self.findings, f"connect --check {self.client}")


def _render_settings(console: Console, client: str, settings: dict[str, Any]) -> None:
    if client == "claude-code":
        console.print(f"\nsettings.json ({settings['path']}), merged into what is there:", soft_wrap=True, markup=False)
        console.print(json.dumps(settings["settings_json"], indent=2), soft_wrap=True, markup=False)
    elif client == "openai":
        console.print(
            f"\nbase_url: {settings['base_url']}\nmodel:    {settings['model']}", soft_wrap=True, markup=False
        )
        for lang in ("python", "javascript", "curl"):
            console.print(f"\n# {lang}\n{settings[lang]}", soft_wrap=True, markup=False)
    else:
        for pack, inputs in settings["node_packs"].items():
            console.print(f"\n{pack}", soft_wrap=True, markup=False)
            for name, value in inputs.items():
                console.print(f"  {name}: {value}", soft_wrap=True, markup=False)
    console.print()
