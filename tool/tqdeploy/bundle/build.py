"""Build a bundle: seed the redactor, run each collector (in the order their needs give, bounded, never
fatal), redact, write, map."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console

from tqdeploy import __version__
from tqdeploy.bundle import collect_build as cb
from tqdeploy.bundle import collect_host as ch
from tqdeploy.bundle.archive import (
    MAX_FILE_BYTES,
    MAX_TOTAL_BYTES,
    TAIL_KEPT,
    Entries,
    archive_bytes,
    as_text,
    dump_json,
)
from tqdeploy.bundle.collector import Collected, Collector, Files, Inputs, ordered
from tqdeploy.bundle.context import Absent, BundleContext, read_state, state_record
from tqdeploy.bundle.identity import HostIdentity, this_host
from tqdeploy.bundle.knowns import mapping_path_for, seeded_redactor, write_mapping
from tqdeploy.bundle.products import JudgedHost, ServerVersion
from tqdeploy.errors import TQError, shown
from tqdeploy.fsutil import atomic_write_bytes
from tqdeploy.redact import Redactor

SCHEMA = "tqdeploy.bundle/1"
COLLECTOR_TIMEOUT_S = 60.0
# Declared in the order the manifest lists them and placeholders are numbered where the needs leave it free;
# ordered() moves a provider before its consumers whatever the order here.
COLLECTORS: tuple[Collector, ...] = (
    Collector("doctor", cb.collect_doctor, provides=JudgedHost),
    Collector("spec", cb.collect_spec),
    Collector("plan", cb.collect_plan, needs=(JudgedHost,)),
    Collector("state", cb.collect_state),
    Collector("logs", cb.collect_logs),
    Collector("profile", cb.collect_profile),
    Collector("metrics", ch.collect_metrics, provides=ServerVersion),
    Collector("versions", ch.collect_versions, needs=(ServerVersion,)),
    Collector("env", ch.collect_env),
    Collector("nvidia-smi", ch.collect_nvidia_smi),
    Collector("kernel", ch.collect_kernel),
    Collector("runtime", ch.collect_runtime),
    Collector("processes", ch.collect_processes),
)


@dataclass
class BundleResult:
    path: Path
    mapping_path: Path | None
    manifest: dict[str, Any]
    seconds: float
    size: int
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": "tqdeploy.bundle-result/1",
            "path": str(self.path),
            "mapping_path": str(self.mapping_path) if self.mapping_path else None,
            "size": self.size,
            "seconds": round(self.seconds, 3),
            "redacted": self.manifest["redacted"],
            "redactions": self.manifest["redactions"],
            "collectors": self.manifest["collectors"],
        }

    def render(self, console: Console) -> None:
        for c in self.manifest["collectors"]:
            # a collector's error quotes paths and answers from outside: escaped and cut
            note = shown(c.get("reason") or c.get("error") or ", ".join(c.get("files", [])), 2000)
            console.print(f"  {c['status']:8} {c['name']:11} {c['seconds']:6.2f} s  {note}", markup=False)
        red = ", ".join(f"{k} {v}" for k, v in sorted(self.manifest["redactions"].items())) or "nothing"
        console.print(f"bundle {self.path} ({self.size} bytes, {self.seconds:.2f} s); redacted: {red}", markup=False)
        if self.mapping_path:
            console.print(f"placeholder mapping (keep it, do not share it): {self.mapping_path}", markup=False)
        else:
            console.print("NOT REDACTED (--no-redact): do not attach this bundle anywhere public", markup=False)


@dataclass
class Outcome:
    """What one collector's run left: its manifest record, its files, the product it provided."""

    record: dict[str, Any]
    files: Files = field(default_factory=dict)
    product: object | None = None


@dataclass
class _Finished:
    """What the collector's thread left behind: what it returned, or what it raised."""

    result: Files | Collected | None = None
    error: BaseException | None = None


def _run_in_thread(collector: Collector, ctx: BundleContext, inputs: Inputs, timeout: float) -> _Finished | None:
    """The collector's outcome, or None when it overran. A daemon thread: one that hangs past its timeout cannot
    keep `tqdeploy bundle` from exiting, and what it returns later is never read."""
    finished = _Finished()

    def target() -> None:
        try:
            finished.result = collector.run(ctx, inputs)
        except BaseException as exc:  # noqa: BLE001 - reported by the caller, whatever it is
            finished.error = exc

    worker = threading.Thread(target=target, name=f"bundle-{collector.name}", daemon=True)
    worker.start()
    worker.join(timeout)
    return None if worker.is_alive() else finished


def run_collector(collector: Collector, ctx: BundleContext, inputs: Inputs, timeout: float) -> Outcome:
    """One collector, recorded for the manifest whatever happens: raising or overrunning is never fatal; a
    product of a type it did not declare is a failure of that collector (its files are kept out too)."""
    t0 = time.perf_counter()
    finished = _run_in_thread(collector, ctx, inputs, timeout)
    record: dict[str, Any] = {"name": collector.name}  # a manifest entry: JSON
    result = finished.result if finished else None
    collected = result if isinstance(result, Collected) else Collected(result or {})
    product = collected.product
    if finished is None:
        record.update(status="timeout", error=f"did not finish within {timeout:.0f} s")
    elif isinstance(finished.error, Absent):
        record.update(status="absent", reason=str(finished.error))
    elif finished.error is not None:
        record.update(status="failed", error=f"{type(finished.error).__name__}: {finished.error}"[:500])
    elif product is not None and (collector.provides is None or not isinstance(product, collector.provides)):
        declared = collector.provides.__name__ if collector.provides else "nothing"
        record.update(status="failed", error=f"provided a {type(product).__name__}; it declares {declared}")
    else:
        record["status"] = "ok"
    record["seconds"] = round(time.perf_counter() - t0, 3)
    if record["status"] != "ok":
        return Outcome(record)
    return Outcome(record, collected.files, product)


def _skipped(red: Redactor, entry: dict[str, str]) -> dict[str, str]:
    """A skipped file's record: its path and a link's target redacted as names are (an address in a file name
    too), the reason as text."""
    return {k: red.path(v) if k in ("path", "target") else red.text(v) for k, v in entry.items()}


def encode(red: Redactor, path: str, content: Any) -> bytes | None:
    """Redacted bytes of one collected file; None for binary content (dropped). Files read from disk are
    redacted as text, so one that holds nothing to replace comes out byte for byte as it lies on disk;
    data a collector built (a dict) is written as JSON."""
    if isinstance(content, (bytes, bytearray)):
        text = as_text(bytes(content))
        return None if text is None else red.text(text).encode("utf-8")
    if isinstance(content, str):
        return red.text(content).encode("utf-8")
    return dump_json(red.data(content))


def refuse_existing(out: Path, force: bool) -> None:
    """An existing bundle or mapping (or a symlink there) is replaced only with --force; then the link itself
    is replaced by the rename, its target never written."""
    for path in (out, mapping_path_for(out)):
        if os.path.lexists(path) and not force:
            raise TQError(
                f"{path} already exists; not overwritten",
                "pass another --out, remove the file, or add --force to replace it",
            )
        if os.path.isdir(path) and not os.path.islink(path):
            raise TQError(f"{path} is a directory", "pass a file name, e.g. --out bundle.tar.gz")


Pending = list[tuple[dict[str, Any], str, bytes | None]]


def _collect(
    ctx: BundleContext, red: Redactor, collectors: Sequence[Collector], timeout_s: float
) -> tuple[list[dict[str, Any]], Pending]:
    """Pass 1: every collector in the order of its needs, each handed the products it declared, each file
    redacted as it comes (the redactor learns secrets on the way)."""
    records: list[dict[str, Any]] = []
    pending: Pending = []
    products: dict[type, object] = {}
    missing: dict[type, str] = {}
    for collector in ordered(collectors):
        inputs = Inputs(
            collector.name,
            {k: products[k] for k in collector.needs if k in products},
            {k: missing[k] for k in collector.needs if k in missing},
        )
        outcome = run_collector(collector, ctx, inputs, timeout_s)
        record = outcome.record
        if collector.provides is not None:
            if outcome.product is not None:
                products[collector.provides] = outcome.product
            else:
                missing[collector.provides] = f"collector {collector.name} {record['status']}, provided none"
        for key in ("reason", "error"):
            if key in record:
                record[key] = red.text(record[key])
        record["files"] = []
        for path, content in sorted(outcome.files.items()):
            pending.append((record, path, encode(red, path, content)))
        records.append(record)
    return records, pending


def build_bundle(
    build_dir: Path | None,
    out: Path,
    *,
    logs_since_s: float | None = None,
    redact: bool = True,
    collectors: Sequence[Collector] | None = None,
    timeout_s: float = COLLECTOR_TIMEOUT_S,
    identity: HostIdentity | None = None,
    force: bool = False,
) -> BundleResult:
    t0 = time.perf_counter()
    refuse_existing(out, force)
    skipped: list[dict[str, str]] = []
    state = read_state(build_dir, skipped)
    red = seeded_redactor(state, redact, identity if identity is not None else this_host())
    state_rec = state_record(build_dir, state)
    ctx = BundleContext(build_dir, red, logs_since_s=logs_since_s, state=state, record=state_rec, skipped=skipped)
    # COLLECTORS read at call time: a module that adds to it (docs/architecture.md) is seen
    records, pending = _collect(ctx, red, COLLECTORS if collectors is None else collectors, timeout_s)
    # Pass 2: values learnt late (a key found in the last file) and their encodings, out of every file;
    # member names through the same redactor, so a host name in a file name is a placeholder too.
    entries = Entries()
    for record, path, data in pending:
        name = red.relit(red.path(path)) if redact else path  # an address inside a file name too
        if data is None:
            entries.drop(name, "binary content")
            continue
        text = data.decode("utf-8")
        if redact and path.startswith(TAIL_KEPT):  # server logs: a raw hex key standing alone too
            text = red.log(text)
        entries.add(name, red.relit(text).encode("utf-8") if redact else data)
        if name in entries.files:
            record["files"].append(name)
    manifest = {
        "schema": SCHEMA,
        "tool_version": __version__,
        "created_at": datetime.fromtimestamp(ctx.now, UTC).isoformat(timespec="seconds"),
        "build_dir": red.path(str(build_dir)) if build_dir else None,
        "redacted": redact,
        "redactions": dict(sorted(red.counts.items())),
        "collectors": records,
        "files": dict(sorted(entries.records.items())),
        "dropped": entries.dropped,
        "skipped": [_skipped(red, entry) for entry in ctx.skipped],
        "limits": {"max_file_bytes": MAX_FILE_BYTES, "max_total_bytes": MAX_TOTAL_BYTES},
    }
    atomic_write_bytes(out, archive_bytes(manifest, entries.files, int(ctx.now)))
    mapping_path = write_mapping(out, red.mapping()) if redact else None
    return BundleResult(out, mapping_path, manifest, time.perf_counter() - t0, out.stat().st_size)
