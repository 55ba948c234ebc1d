"""`tqdeploy download`: fetch a model through mirrors, verified and resumable; or check a copy."""

from __future__ import annotations

from pathlib import Path

import typer

from tqdeploy.commands import options
from tqdeploy.download import RetryPolicy, check_offline, load_manifest, run_download, verify_dir
from tqdeploy.download.report import DownloadResult, OfflineResult
from tqdeploy.download.request import DownloadRequest, from_ref, from_spec, split_ref
from tqdeploy.download.transfer import DEFAULT_DEADLINE_S
from tqdeploy.errors import EXIT_FINDINGS, EXIT_OK, TQError
from tqdeploy.output import emit

# The arguments and options, named once here so that the command's signature reads as a list of what it takes.
REF = typer.Argument(
    None,
    metavar="REPO[@REV]",
    help="e.g. Qwen/Qwen3.6-27B@main; REV is a branch, tag or commit (default main, or the --lock's revision).",
)
MIRROR = typer.Option(
    None,
    "--mirror",
    help="Hub endpoint to use, repeatable, tried in order (default: the spec's mirrors, else HF_ENDPOINT, else "
    "https://huggingface.co).",
)
TO = typer.Option(
    None, "--to", help="Target folder (default: models/ORG--NAME, or the spec's storage.models_dir/ORG--NAME)."
)
SPEC = typer.Option(
    None,
    "--spec",
    metavar="FILE|BUILD",
    help="Take the model, revision, mirrors and target folder from a deployment spec (tqdeploy.toml), or a "
    "build directory: the model lands in the folder `tqdeploy up BUILD` serves it from.",
)
LOCK = typer.Option(
    None,
    "--lock",
    metavar="FILE",
    help="Record the resolved commit in this build's tqdeploy.lock.json (done on its own when --to is a build's "
    "models folder).",
)
OFFLINE = typer.Option(False, "--offline", help="No network: list the files still missing; exit 1 if any.")
VERIFY = typer.Option(
    None,
    "--verify",
    metavar="DIR",
    help="Check an existing copy against its manifest (and the repository when reachable); exit 1 if bad.",
)
RETRIES = typer.Option(
    4,
    "--retries",
    min=0,
    help="Retries per file and mirror on 429, 5xx and broken transfers, with backoff 1, 2, 4 ... s (Retry-After "
    "honoured).",
)
DEADLINE = typer.Option(
    DEFAULT_DEADLINE_S,
    "--deadline",
    help="Give up after this many seconds in all (listing, every file, mirror and retry); partial files are "
    "kept for the next run. Default 6 h (55.6 GB at 2.6 MB/s); raise it for a slower link.",
)


def download(
    ref: str | None = REF,
    mirror: list[str] | None = MIRROR,
    to: Path | None = TO,
    spec: Path | None = SPEC,
    lock: Path | None = LOCK,
    offline: bool = OFFLINE,
    verify: Path | None = VERIFY,
    retries: int = RETRIES,
    deadline: float = DEADLINE,
    as_json: bool = options.as_json(note="no progress bars"),
) -> int:
    """Download what serving a model needs (weights, config, tokenizer), verified and resumable."""
    if verify is not None:
        if offline or to is not None or spec is not None or lock is not None:
            raise TQError(
                "--verify DIR takes no --offline, --to, --spec or --lock", "run `tqdeploy download --verify DIR`"
            )
        return _verify(verify, ref, mirror, as_json)

    options.check_seconds("--deadline", deadline, most=30 * 86_400.0, example="3600")
    req = _request(ref, spec, to, mirror, lock)
    if offline:
        result = OfflineResult(check_offline(req.dest, req.repo, req.revision))
        emit(result, as_json)
        return EXIT_OK if result.report.ok else EXIT_FINDINGS

    outcome = run_download(
        req.repo,
        req.download_revision,
        req.dest,
        req.mirrors,
        progress=not as_json,
        policy=RetryPolicy(attempts=retries + 1, deadline_s=deadline),
        lock=req.lock,
    )
    emit(DownloadResult(outcome), as_json)
    return EXIT_OK


def _request(
    ref: str | None, spec: Path | None, to: Path | None, mirror: list[str] | None, lock: Path | None
) -> DownloadRequest:
    """What to fetch and where, from REPO[@REV] or from --spec (one of them)."""
    if spec is not None:
        if ref:
            raise TQError(f"give REPO[@REV] or --spec, not both ({ref} and {spec})", "drop one of them")
        return from_spec(spec, to, mirror or None, lock)
    if ref:
        return from_ref(ref, to, mirror or None, lock)
    raise TQError(
        "no model given",
        "run `tqdeploy download ORG/NAME[@REV]`, `tqdeploy download --spec "
        "tqdeploy.toml` or `tqdeploy download --verify DIR`",
    )


def _verify(folder: Path, ref: str | None, mirror: list[str] | None, as_json: bool) -> int:
    m = load_manifest(folder) if ref else None
    if m is not None and ref:  # a REPO[@REV] given with --verify must be what the folder holds: say so before hashing
        repo, rev = split_ref(ref)
        if repo != m.repo or (rev and rev not in (m.revision, m.commit)):
            raise TQError(
                f"{folder} holds {m.repo}@{m.revision} ({m.commit[:12]}), not {ref}",
                "pass the folder of that model, or leave REPO out",
            )
    report = verify_dir(folder, mirror or None, progress=not as_json)
    emit(report, as_json)
    return EXIT_OK if report.ok else EXIT_FINDINGS


def register(app: typer.Typer) -> None:
    app.command("download")(download)
