"""huggingface_hub behind one module: the only importer of the SDK, each function importing it when called.

Why when called: huggingface_hub reads HF_ENDPOINT and HF_HUB_OFFLINE once, at import (constants.py), so a
caller checks the variable (net.urls.check_hf_endpoint_env) before its first call here, and a command that never
talks to the Hub never pays for the import. The product's modules import this adaptor at their top.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any


def errors() -> ModuleType:
    """huggingface_hub.errors: HfHubHTTPError, RepositoryNotFoundError, GatedRepoError... for `except`."""
    from huggingface_hub import errors as hub_errors

    return hub_errors


def get_session() -> Any:
    """The HTTP client huggingface_hub sends with (proxies and headers as it configures them)."""
    from huggingface_hub.utils import get_session as hub_session

    return hub_session()


def hf_raise_for_status(response: Any) -> None:
    """Raise an HTTP error response as huggingface_hub names it (RevisionNotFoundError, GatedRepoError...)."""
    from huggingface_hub.utils import hf_raise_for_status as raise_for_status

    raise_for_status(response)


def build_hf_headers(**options: Any) -> dict[str, str]:
    """The request headers huggingface_hub sends (user agent, token as huggingface_hub resolves it)."""
    from huggingface_hub.utils import build_hf_headers as hub_headers

    return dict(hub_headers(**options))


def get_token() -> str | None:
    """The token huggingface_hub would use: HF_TOKEN, then the one `hf auth login` stored."""
    from huggingface_hub import get_token as hub_token

    return hub_token()


def is_offline_mode() -> bool:
    """HF_HUB_OFFLINE as huggingface_hub read it: its session refuses every request then."""
    from huggingface_hub import is_offline_mode as hub_offline

    return bool(hub_offline())


def hf_hub_url(repo_id: str, filename: str, *, revision: str, endpoint: str) -> str:
    """The resolve URL of one file of a repository at a revision on a mirror."""
    from huggingface_hub import hf_hub_url as hub_url

    return str(hub_url(repo_id, filename, revision=revision, endpoint=endpoint))


def get_hf_file_metadata(url: str, *, token: Any, timeout: float) -> Any:
    """HEAD of one file: its size, ETag (a sha256 or git blob id) and commit."""
    from huggingface_hub import get_hf_file_metadata as hub_metadata

    return hub_metadata(url, token=token, timeout=timeout)


def disable_progress_bars() -> None:
    """No tqdm bars from huggingface_hub (for the rest of the process)."""
    from huggingface_hub.utils import disable_progress_bars as hub_no_bars

    hub_no_bars()


def hf_hub_download(repo_id: str, filename: str, *, revision: str, endpoint: str) -> str:
    """One file into huggingface_hub's cache; returns its path."""
    from huggingface_hub import hf_hub_download as hub_download

    return str(hub_download(repo_id, filename, revision=revision, endpoint=endpoint))


def safetensors_metadata(repo_id: str, *, revision: str, endpoint: str) -> Any:
    """The safetensors headers of a repository (HfApi.get_safetensors_metadata), read without the weights."""
    from huggingface_hub import HfApi

    return HfApi(endpoint=endpoint).get_safetensors_metadata(repo_id, revision=revision)
