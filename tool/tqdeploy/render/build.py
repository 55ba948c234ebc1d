"""What `tqdeploy build` does, as a library: load, validate, render, then write / diff / check / image."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdeploy.deployspec.model import Spec
from tqdeploy.errors import EXIT_FINDINGS, EXIT_OK
from tqdeploy.filenames import SPEC_FILE_NAME


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
    api_key_file: Any = None  # tqdeploy.render.apikey.KeyFile: where the key is, never the key
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

    def _render_dry_run(self, console) -> None:
        if self.diff:
            sys.stdout.write(self.diff)
            sys.stdout.flush()
        else:
            console.print(f"no changes: {self.out_dir} already matches spec {self.name}", soft_wrap=True)
        for note in self.notes:  # stderr: the diff on stdout stays a clean patch
            print(f"note: {note}", file=sys.stderr)
        if self.api_key_file:
            print(f"note: {self.api_key_file.line()}", file=sys.stderr)

    def render(self, console) -> None:
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

    def render(self, console) -> None:
        if self.exit_code == EXIT_OK:
            console.print(f"{self.build_dir}: all {self.checked} files match tqdeploy.lock.json", soft_wrap=True)
            return
        for kind, paths in self.drift.items():
            for p in paths:
                console.print(f"{self.build_dir}: {kind}: {p}", soft_wrap=True)
        console.print(f"fix: run `{self.rebuild}` to restore the files (edit the spec, not the build)", soft_wrap=True)
        if self.drift.get("stale"):
            console.print("stale: the spec renders these files differently now; rebuild to update them", soft_wrap=True)


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
    from tqdeploy.errors import TQError

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


def run_check(build_dir: Path, spec_file: Path | None = None, embedded: str | None = None) -> CheckResult:
    """Files against the lock; with a spec, also the lock against what the spec renders now ("stale")."""
    from tqdeploy.render.lock import read_lock, verify

    drift = verify(build_dir)
    lock = read_lock(build_dir)
    if spec_file is not None or embedded is not None:
        import json

        from tqdeploy.deployspec import load_spec
        from tqdeploy.lint.specflags import lint_spec
        from tqdeploy.render.files import render_files

        spec = lint_spec(load_spec(spec_file, embedded=embedded))
        pinned = lock.get("pins", {}).get("image", {}) if isinstance(lock.get("pins"), dict) else {}
        if (
            not spec["image"]["digest"]
            and str(pinned.get("source", "")).startswith("registry")
            and pinned.get("base") == spec["image"]["base"]
        ):
            # The build pinned what the registry answered then (--resolve-digests): the same input here,
            # or every file naming the base would read as stale.
            spec.data["image"]["digest"] = pinned["digest"]
            spec.digest_source = pinned["source"]
        files = render_files(spec)
        now = json.loads(files["tqdeploy.lock.json"].data)["files"]
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
    import shlex

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


def checkpoint_facts(spec: Spec, out: Path, model: str | None):
    """Facts of the checkpoint to check the flags against: --model, else a local model.path that exists
    (relative paths are relative to the build dir). None when neither is at hand (a repo is not fetched)."""
    from tqdeploy.model import load_model_facts

    if model:
        return load_model_facts(model), model
    path = spec["model"]["path"]
    if path:
        local = Path(path).expanduser()
        local = local if local.is_absolute() else Path(out) / local
        if (local / "config.json").is_file():
            return load_model_facts(str(local)), str(local)
    return None, None


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
    from tqdeploy.deployspec import load_spec
    from tqdeploy.lint.specflags import lint_spec
    from tqdeploy.render.caches import moved_caches
    from tqdeploy.render.files import render_files, skipped_outputs
    from tqdeploy.render.lock import pins
    from tqdeploy.render.write import diff_build, write_build

    spec_file, chosen = spec_to_use(spec_file, embedded)
    spec = load_spec(spec_file, embedded=embedded)  # once: the checkpoint's path and the flags come from it
    facts, facts_from = checkpoint_facts(spec, out, model)
    lint_spec(spec, facts)
    notes: list[str] = [chosen] if chosen else []
    if facts_from:
        notes.append(f"vLLM flags checked against the checkpoint at {facts_from}")
    for f in spec.flag_check.findings if spec.flag_check is not None else []:
        sev = getattr(f.severity, "value", f.severity)
        if sev in ("warn", "info"):  # errors refused the spec already
            notes.append(
                f"lint {f.id} ({sev}) {f.location}: {f.title}" + (f"; fix: {f.remediation}" if f.remediation else "")
            )
    if resolve_digests:
        from tqdeploy.render.image import resolve_digest

        digest = resolve_digest(spec["image"]["base"])
        pinned = spec["image"]["digest"]
        if pinned and pinned != digest:
            from tqdeploy.errors import TQError

            where = (
                "the spec's image.digest" if spec.digest_source == "spec" else f"the digest from {spec.digest_source}"
            )
            raise TQError(
                f"{spec['image']['base']} now resolves to {digest}, not {where} {pinned}",
                "the tag moved: review the new image, then update that digest (or build without "
                "--resolve-digests to keep the pinned one)",
            )
        spec.data["image"]["digest"] = digest
        spec.digest_source = "registry (--resolve-digests)"
        notes.append(
            f'base digest {digest} read from the registry; add `digest = "{digest}"` to [image] in the spec to keep it'
        )
    files = render_files(spec)
    from tqdeploy.deployspec.accel import accelerators

    accel = accelerators(spec)
    notes += [accel.summary(), *accel.notes]  # what the build rendered to shorten start-up, and what it left out
    result = BuildResult(
        name=spec.name,
        spec_source=spec.source,
        spec_sha256=spec.spec_hash,
        out_dir=str(out),
        mode="dry-run" if dry_run else "write",
        files=list(files),
        skipped=skipped_outputs(spec),
        notes=notes,
        pins=pins(spec),
        accelerators=accel.to_dict([c.env for c in moved_caches()]),
    )
    from tqdeploy.render.apikey import ensure_key_file

    if dry_run:
        from tqdeploy.render.guard import guard

        result.api_key_file = ensure_key_file(spec, out, dry_run=True)
        result.diff = diff_build(out, files)
        from tqdeploy.render.lock import LOCK_NAME
        from tqdeploy.render.owner import other_deployment

        refused = None if take_over else other_deployment(out, files[LOCK_NAME].data, spec_must_match=spec_file is None)
        if refused is not None:
            result.notes.append(f"a build would refuse: {refused.message}; fix: {refused.remediation}")
        conflicts = guard(out, {rel: f.data for rel, f in files.items()}).conflicts
        if conflicts and not force:
            result.notes.append(
                f"a build would refuse: {', '.join(conflicts)} in {out} are not what tqdeploy wrote; "
                "--force replaces them after a backup"
            )
        return result
    result.changes = write_build(out, files, force=force, take_over=take_over, spec_must_match=spec_file is None)
    result.api_key_file = ensure_key_file(spec, out)  # after the build: its folder exists and is checked
    if image:
        result.image = _image(spec, out, progress)
        if not result.image.get("id"):  # asked for an image and none was built: not a success (the files are)
            result.exit_code = EXIT_FINDINGS
    return result


def _image(spec, out: Path, progress: bool) -> dict[str, Any]:
    from tqdeploy.render.context import image_tag
    from tqdeploy.render.image import build_image, docker_build_command, docker_client

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
