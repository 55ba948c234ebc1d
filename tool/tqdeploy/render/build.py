"""What `tqdeploy build` does, as a library: load, validate, render, then write / diff / check / image."""

from __future__ import annotations

import json
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tqdeploy.deployspec import load_spec
from tqdeploy.deployspec.accel import Accelerators, accelerators
from tqdeploy.deployspec.command import VllmCommand, vllm_command
from tqdeploy.deployspec.digests import with_digest
from tqdeploy.deployspec.model import Spec
from tqdeploy.errors import EXIT_FINDINGS, EXIT_OK, TQError
from tqdeploy.filenames import SPEC_FILE_NAME
from tqdeploy.lint.specflags import FlagCheck, lint_vllm_command
from tqdeploy.model import load_model_facts
from tqdeploy.model.facts import ModelFacts
from tqdeploy.render.apikey import KeyFile, ensure_key_file
from tqdeploy.render.caches import moved_caches
from tqdeploy.render.context import image_tag
from tqdeploy.render.files import RenderedFile, render_files, skipped_outputs
from tqdeploy.render.guard import guard
from tqdeploy.render.image import build_image, docker_build_command, docker_client, resolve_digest
from tqdeploy.render.lock import LOCK_NAME, pins, read_lock, verify
from tqdeploy.render.owner import other_deployment
from tqdeploy.render.write import diff_build, write_build

if TYPE_CHECKING:
    from rich.console import Console


@dataclass
class BuildResult:
    name: str
    spec_source: str
    spec_sha256: str
    out_dir: str
    mode: str  # "write" or "dry-run"
    files: list[str]
    changes: dict[str, list[str]] = field(default_factory=dict)
    diff: str = ""
    skipped: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    pins: dict[str, Any] = field(default_factory=dict)
    image: dict[str, Any] = field(default_factory=dict)
    accelerators: dict[str, Any] = field(default_factory=dict)  # tqdeploy.deployspec.accel.Accelerators.to_dict
    api_key_file: KeyFile | None = None  # where the key is, never the key
    exit_code: int = EXIT_OK

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": "tqdeploy.build/1",
            "name": self.name,
            "spec_source": self.spec_source,
            "spec_sha256": self.spec_sha256,
            "out_dir": self.out_dir,
            "mode": self.mode,
            "files": self.files,
            "changes": self.changes,
            "diff": self.diff,
            "skipped": self.skipped,
            "notes": self.notes,
            "pins": self.pins,
            "image": self.image,
            "accelerators": self.accelerators,
            "api_key_file": self.api_key_file.to_dict() if self.api_key_file else None,
        }

    def _render_dry_run(self, console: Console) -> None:
        if self.diff:
            sys.stdout.write(self.diff)
            sys.stdout.flush()
        else:
            console.print(f"no changes: {self.out_dir} already matches spec {self.name}", soft_wrap=True)
        for note in self.notes:  # stderr: the diff on stdout stays a clean patch
            print(f"note: {note}", file=sys.stderr)
        if self.api_key_file:
            print(f"note: {self.api_key_file.line()}", file=sys.stderr)

    def render(self, console: Console) -> None:
        if self.mode == "dry-run":
            self._render_dry_run(console)
            return
        console.print(
            f"built {self.name} from {self.spec_source} (spec sha256 {self.spec_sha256[:12]}) into {self.out_dir}",
            soft_wrap=True,
        )
        for key in ("written", "unchanged", "removed", "kept", "backup"):
            if self.changes.get(key):
                console.print(f"  {key}: {', '.join(self.changes[key])}", soft_wrap=True)
        if self.api_key_file:
            console.print(f"  {self.api_key_file.line()}", soft_wrap=True)
        for what, why in self.skipped.items():
            console.print(f"  not rendered: {what}: {why}", soft_wrap=True)
        for note in self.notes:
            console.print(f"  note: {note}", soft_wrap=True)
        for what, pin in self.pins.items():  # what is not pinned yet, so a reader of the text sees it too
            if isinstance(pin, dict) and pin.get("note"):
                console.print(f"  not pinned: {what}: {pin['note']}", soft_wrap=True)
        if self.image:
            if self.image.get("id"):
                console.print(f"  image: {self.image['tag']} ({self.image['id']})", soft_wrap=True)
            else:
                console.print(
                    f"  image not built: {self.image.get('reason', '')}\n  run: {self.image['command']}", soft_wrap=True
                )


@dataclass
class CheckResult:
    build_dir: str
    drift: dict[str, list[str]]
    checked: int
    rebuild: str = "tqdeploy build SPEC --out BUILD_DIR"  # what restores the files (rebuild_command)

    @property
    def exit_code(self) -> int:
        return EXIT_FINDINGS if any(self.drift.values()) else EXIT_OK

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": "tqdeploy.build-check/1",
            "build_dir": self.build_dir,
            "files_checked": self.checked,
            "ok": self.exit_code == EXIT_OK,
            **self.drift,
        }

    def render(self, console: Console) -> None:
        if self.exit_code == EXIT_OK:
            console.print(f"{self.build_dir}: all {self.checked} files match tqdeploy.lock.json", soft_wrap=True)
            return
        for kind, paths in self.drift.items():
            for p in paths:
                console.print(f"{self.build_dir}: {kind}: {p}", soft_wrap=True)
        console.print(f"fix: run `{self.rebuild}` to restore the files (edit the spec, not the build)", soft_wrap=True)
        if self.drift.get("stale"):
            console.print("stale: the spec renders these files differently now; rebuild to update them", soft_wrap=True)


@dataclass(frozen=True)
class BuildRequest:
    """What `tqdeploy build` is asked: a build (or a dry run) from a spec, or a check of a build directory."""

    spec_file: Path | None = None
    embedded: str | None = None
    out: Path | None = None  # None: ./build
    dry_run: bool = False
    check: Path | None = None  # the build directory --check verifies
    image: bool = False
    resolve_digests: bool = False
    model: str | None = None
    force: bool = False
    take_over: bool = False


def build_or_check(req: BuildRequest) -> BuildResult | CheckResult:
    """The build the request asks for, or the check of its --check directory; options that would be silently
    ignored are refused first."""
    check_options(
        check=req.check is not None,
        out=req.out is not None,
        dry_run=req.dry_run,
        image=req.image,
        resolve_digests=req.resolve_digests,
        model=req.model is not None,
        force=req.force,
        take_over=req.take_over,
    )
    if req.check is not None:
        return run_check(req.check, req.spec_file, req.embedded)
    return run_build(
        req.spec_file,
        embedded=req.embedded,
        out=req.out or Path("build"),
        dry_run=req.dry_run,
        image=req.image,
        resolve_digests=req.resolve_digests,
        progress=True,  # on stderr: JSON on stdout stays clean
        model=req.model,
        force=req.force,
        take_over=req.take_over,
    )


def check_options(
    *,
    check: bool,
    out: bool,
    dry_run: bool,
    image: bool,
    resolve_digests: bool,
    model: bool,
    force: bool = False,
    take_over: bool = False,
) -> None:
    """Refuse option combinations that would be silently ignored."""
    if check:
        given = [
            name
            for name, on in (
                ("--out", out),
                ("--dry-run", dry_run),
                ("--image", image),
                ("--resolve-digests", resolve_digests),
                ("--model", model),
                ("--force", force),
                ("--take-over", take_over),
            )
            if on
        ]
        if given:
            raise TQError(
                f"--check verifies an existing build directory and writes nothing; it does not take {', '.join(given)}",
                "run `tqdeploy build --check DIR` on its own, optionally with the spec file",
            )
    if dry_run and image:
        raise TQError(
            "--dry-run writes nothing, so there is no build directory to build an image from",
            "drop --image, or drop --dry-run",
        )


@dataclass(frozen=True)
class RenderedBuild:
    """A spec made into a build once: the spec as built (digest pinned), its one vLLM command, what lint said
    about that command, the start-up accelerators it renders, and the files. What the rest of the build reads,
    instead of asking the spec again."""

    spec: Spec
    command: VllmCommand
    flag_check: FlagCheck
    accel: Accelerators
    files: dict[str, RenderedFile]


def _pinned_by_registry(spec: Spec, lock: dict[str, Any]) -> Spec:
    """The spec with the digest the build pinned from the registry then (--resolve-digests), where it names the
    same base and pins none itself: the same input here, or every file naming the base would read as stale."""
    pinned = lock.get("pins", {}).get("image", {}) if isinstance(lock.get("pins"), dict) else {}
    if (
        not spec.image.digest
        and str(pinned.get("source", "")).startswith("registry")
        and pinned.get("base") == spec.image.base
    ):
        return with_digest(spec, pinned["digest"], pinned["source"])
    return spec


def run_check(build_dir: Path, spec_file: Path | None = None, embedded: str | None = None) -> CheckResult:
    """Files against the lock; with a spec, also the lock against what the spec renders now ("stale")."""
    drift = verify(build_dir)
    lock = read_lock(build_dir)
    if spec_file is not None or embedded is not None:
        spec = load_spec(spec_file, embedded=embedded)
        command = vllm_command(spec)
        lint_vllm_command(spec, command)
        files = render_files(_pinned_by_registry(spec, lock), command)
        now = json.loads(files[LOCK_NAME].data)["files"]
        drift["stale"] = sorted(p for p in set(now) | set(lock["files"]) if now.get(p) != lock["files"].get(p))
    return CheckResult(
        str(build_dir), drift, len(lock["files"]), rebuild_command(build_dir, spec_file, embedded, drift)
    )


def spec_to_use(spec_file: Path | None, embedded: str | None) -> tuple[Path | None, str]:
    """The spec a build reads, and a note when it was not named: the one given; else ./tqdeploy.toml, which
    `tqdeploy init` writes (as `make` reads ./Makefile and docker compose ./compose.yaml); else the embedded
    default (spec_file None)."""
    if spec_file is None and embedded is None and Path(SPEC_FILE_NAME).is_file():
        return Path(SPEC_FILE_NAME), (
            f"spec: ./{SPEC_FILE_NAME} (no spec was given); `--embedded NAME` builds an embedded spec instead"
        )
    return spec_file, ""


def rebuild_command(build_dir: Path, spec_file: Path | None, embedded: str | None, drift: dict[str, list[str]]) -> str:
    """The `tqdeploy build ...` that restores a drifted build: from the spec --check was given, else from the
    copy of its spec the build keeps (unless that copy drifted too)."""
    # an edited file is replaced only with --force (which keeps a backup); a missing one needs no force
    out = shlex.quote(str(build_dir)) + (" --force" if drift.get("modified") else "")
    if embedded is not None:
        return f"tqdeploy build --embedded {shlex.quote(embedded)} --out {out}"
    if spec_file is not None:
        return f"tqdeploy build {shlex.quote(str(spec_file))} --out {out}"
    drifted = set(drift.get("modified", [])) | set(drift.get("missing", []))
    if SPEC_FILE_NAME not in drifted and (build_dir / SPEC_FILE_NAME).is_file():
        return f"tqdeploy build {shlex.quote(str(build_dir / SPEC_FILE_NAME))} --out {out}"
    return f"tqdeploy build SPEC --out {out}"  # SPEC: its own copy drifted too; only the user knows the source


def checkpoint_facts(spec: Spec, out: Path, model: str | None) -> tuple[ModelFacts | None, str | None]:
    """Facts of the checkpoint to check the flags against: --model, else a local model.path that exists
    (relative paths are relative to the build dir). None when neither is at hand (a repo is not fetched)."""
    if model:
        return load_model_facts(model), model
    path = spec.model.path
    if path:
        local = Path(path).expanduser()
        local = local if local.is_absolute() else Path(out) / local
        if (local / "config.json").is_file():
            return load_model_facts(str(local)), str(local)
    return None, None


def _lint_notes(check: FlagCheck) -> list[str]:
    return [
        f"lint {f.id} ({f.severity.value}) {f.location}: {f.title}"
        + (f"; fix: {f.remediation}" if f.remediation else "")
        for f in check.advice
    ]


def _resolved(spec: Spec) -> tuple[Spec, str]:
    """The spec with the base digest the registry answers now (--resolve-digests), and the note saying so;
    a TQError where the tag moved away from a digest the spec or tqdeploy's data pinned."""
    digest = resolve_digest(spec.image.base)
    pinned = spec.image.digest
    if pinned and pinned != digest:
        where = "the spec's image.digest" if spec.digest_source == "spec" else f"the digest from {spec.digest_source}"
        raise TQError(
            f"{spec.image.base} now resolves to {digest}, not {where} {pinned}",
            "the tag moved: review the new image, then update that digest (or build without "
            "--resolve-digests to keep the pinned one)",
        )
    note = f'base digest {digest} read from the registry; add `digest = "{digest}"` to [image] in the spec to keep it'
    return with_digest(spec, digest, "registry (--resolve-digests)"), note


def make_build(spec: Spec, out: Path, model: str | None, resolve_digests: bool) -> tuple[RenderedBuild, list[str]]:
    """The spec's command made and linted once (against the checkpoint where one is at hand), the digest
    resolved where asked, the files rendered from that one command; with the notes the build reports."""
    facts, facts_from = checkpoint_facts(spec, out, model)
    command = vllm_command(spec)
    check = lint_vllm_command(spec, command, facts)
    notes = [f"vLLM flags checked against the checkpoint at {facts_from}"] if facts_from else []
    notes += _lint_notes(check)
    if resolve_digests:
        spec, note = _resolved(spec)
        notes.append(note)
    accel = accelerators(spec)
    notes += [accel.summary(), *accel.notes]  # what the build rendered to shorten start-up, and what it left out
    return RenderedBuild(spec, command, check, accel, render_files(spec, command, accel)), notes


def _dry_run_notes(built: RenderedBuild, out: Path, *, take_over: bool, force: bool, named: bool) -> list[str]:
    """What a real build into `out` would refuse, said ahead (named: the spec was a file, not embedded)."""
    notes = []
    lock = built.files[LOCK_NAME].data
    refused = None if take_over else other_deployment(out, lock, spec_must_match=not named)
    if refused is not None:
        notes.append(f"a build would refuse: {refused.message}; fix: {refused.remediation}")
    conflicts = guard(out, {rel: f.data for rel, f in built.files.items()}).conflicts
    if conflicts and not force:
        notes.append(
            f"a build would refuse: {', '.join(conflicts)} in {out} are not what tqdeploy wrote; "
            "--force replaces them after a backup"
        )
    return notes


def run_build(
    spec_file: Path | None,
    *,
    embedded: str | None = None,
    out: Path = Path("build"),
    dry_run: bool = False,
    image: bool = False,
    resolve_digests: bool = False,
    progress: bool = True,
    model: str | None = None,
    force: bool = False,
    take_over: bool = False,
) -> BuildResult:
    spec_file, chosen = spec_to_use(spec_file, embedded)
    spec = load_spec(spec_file, embedded=embedded)  # once: the checkpoint's path and the flags come from it
    built, notes = make_build(spec, out, model, resolve_digests)
    spec, files = built.spec, built.files
    result = BuildResult(
        name=spec.name,
        spec_source=spec.source,
        spec_sha256=spec.spec_hash,
        out_dir=str(out),
        mode="dry-run" if dry_run else "write",
        files=list(files),
        skipped=skipped_outputs(spec),
        notes=[chosen, *notes] if chosen else notes,
        pins=pins(spec),
        accelerators=built.accel.to_dict([c.env for c in moved_caches()]),
    )
    if dry_run:
        result.api_key_file = ensure_key_file(spec, out, dry_run=True)
        result.diff = diff_build(out, files)
        result.notes += _dry_run_notes(built, out, take_over=take_over, force=force, named=spec_file is not None)
        return result
    result.changes = write_build(out, files, force=force, take_over=take_over, spec_must_match=spec_file is None)
    result.api_key_file = ensure_key_file(spec, out)  # after the build: its folder exists and is checked
    if image:
        result.image = _image(spec, out, progress)
        if not result.image.get("id"):  # asked for an image and none was built: not a success (the files are)
            result.exit_code = EXIT_FINDINGS
    return result


def _image(spec: Spec, out: Path, progress: bool) -> dict[str, Any]:
    tag = image_tag(spec)
    client = docker_client()
    if client is None:
        return {
            "tag": tag,
            "id": None,
            "reason": "no Docker engine answers here",
            "command": docker_build_command(out, tag),
        }
    show = (lambda line: print(line, file=sys.stderr)) if progress else (lambda line: None)
    return {"tag": tag, "id": build_image(out, tag, client, show), "command": docker_build_command(out, tag)}
