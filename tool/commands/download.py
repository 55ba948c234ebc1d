"""`tqdeploy download`: fetch a model through mirrors, verified and resumable; or check a copy."""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

ORDER = 40


def split_ref(ref: str) -> tuple[str, str | None]:
    """REPO[@REV] -> (repo, rev or None). Repository ids never contain '@'."""
    repo, _, rev = ref.partition("@")
    return repo.strip(), (rev.strip() or None)


def default_dest(repo: str) -> Path:
    return Path("models") / repo.replace("/", "--")


def download(
    ref: Optional[str] = typer.Argument(None, metavar="REPO[@REV]", help="e.g. Qwen/Qwen3.6-27B@main; "
                                       "REV is a branch, tag or commit (default main)."),
    mirror: Optional[List[str]] = typer.Option(None, "--mirror", help="Hub endpoint to use, repeatable, tried "
                                               "in order (default: HF_ENDPOINT, else https://huggingface.co)."),
    to: Optional[Path] = typer.Option(None, "--to", help="Target folder (default: models/ORG--NAME)."),
    offline: bool = typer.Option(False, "--offline", help="No network: list the files still missing; exit 1 if any."),
    verify: Optional[Path] = typer.Option(None, "--verify", metavar="DIR", help="Check an existing copy against "
                                          "its manifest (and the repository when reachable); exit 1 if bad."),
    retries: int = typer.Option(4, "--retries", min=0, help="Retries per file and mirror on 429, 5xx and broken "
                                "transfers, with backoff 1, 2, 4 ... s (Retry-After honoured)."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON; no progress bars."),
) -> int:
    """Download what serving a model needs (weights, config, tokenizer), verified and resumable."""
    from tqdeploy.errors import EXIT_FINDINGS, EXIT_OK, TQError
    from tqdeploy.output import emit

    if verify is not None:
        if offline or to is not None:
            raise TQError("--verify DIR takes no --offline or --to", "run `tqdeploy download --verify DIR`")
        from tqdeploy.download import verify_dir

        report = verify_dir(verify, mirror or None, progress=not as_json)
        if ref:  # a REPO[@REV] given with --verify must be what the folder holds
            repo, rev = split_ref(ref)
            m = report.manifest
            if repo != m.repo or (rev and rev not in (m.revision, m.commit)):
                raise TQError(f"{verify} holds {m.repo}@{m.revision} ({m.commit[:12]}), not {ref}",
                              "pass the folder of that model, or leave REPO out")
        emit(report, as_json)
        return EXIT_OK if report.ok else EXIT_FINDINGS
    if not ref:
        raise TQError("no model given", "run `tqdeploy download ORG/NAME[@REV]` or `tqdeploy download --verify DIR`")
    repo, rev = split_ref(ref)
    if not repo or repo.count("/") > 1 or " " in repo:
        raise TQError(f"{ref!r} is not a repository id", "write it as ORG/NAME[@REV], e.g. Qwen/Qwen3.6-27B@main")
    dest = to if to is not None else default_dest(repo)
    if offline:
        from tqdeploy.download import check_offline
        from tqdeploy.download.report import OfflineResult

        result = OfflineResult(check_offline(dest, repo, rev))
        emit(result, as_json)
        return EXIT_OK if result.report.ok else EXIT_FINDINGS
    from tqdeploy.download import RetryPolicy, run_download
    from tqdeploy.download.report import DownloadResult

    outcome = run_download(repo, rev or "main", dest, mirror or None, progress=not as_json,
                           policy=RetryPolicy(attempts=retries + 1))
    emit(DownloadResult(outcome), as_json)
    return EXIT_OK


def register(app: typer.Typer) -> None:
    app.command("download")(download)
