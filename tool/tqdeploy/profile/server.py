"""profile's side of a running server: the client (with the deployment's key, read from its key file), what
/metrics says about the KV cache vLLM built, and the model the load asks for. Every answer that cannot be
used is a finding (TQ468 a refused key, TQ469 a bad answer), never an internal error."""

from __future__ import annotations

from pathlib import Path

from tqdeploy.errors import TQError
from tqdeploy.findings import Finding
from tqdeploy.net import Answer, Client, bad_answer_finding, key_refused_finding
from tqdeploy.profile.jsontypes import JSONObject
from tqdeploy.profile.load import LoadSpec, served_model
from tqdeploy.profile.metrics import cache_config_figures, fetch_metrics, parse_metrics
from tqdeploy.safeio import read_key_file

AREA = "server"


def make_client(url: str, key_file: Path | None, label: str = "--url") -> Client:
    """The client for the deployment at url; the key file is read with safeio's rules (a folder, FIFO,
    empty or binary file is a one-line error naming it, exit 2)."""
    key = None
    if key_file is not None:
        key = read_key_file(Path(key_file).expanduser())
    return Client(url, key, label=label)


def refused(answer: Answer, client: Client, key_file: Path | None) -> Finding:
    if key_file is not None:
        fix = f"pass the key file the server was started with (--api-key-file; now {key_file})"
    else:
        fix = "pass --api-key-file with the file holding the server's key (the build's server.api_key_file)"
    return key_refused_finding(
        answer, sent_key=client.has_key, fix=fix, area=AREA, key_file=str(key_file) if key_file else None
    )


def cache_config(client: Client, key_file: Path | None) -> tuple[JSONObject, list[Finding]]:
    """vllm:cache_config_info's figures; no answer at all is a one-line error (nothing runs there)."""
    answer = fetch_metrics(client)
    if answer.status == 0:
        raise TQError(
            f"--url {client.shown_url}: cannot read /metrics ({answer.error})",
            "start the server first (tqdeploy up BUILD) and pass its http://127.0.0.1:PORT",
        )
    if answer.key_refused:
        return {}, [refused(answer, client, key_file)]
    fix = "pass --url with the address of vLLM itself (its /metrics is Prometheus text of a few hundred KiB)"
    if not answer.ok:
        return {}, [bad_answer_finding(answer, f"/metrics answered {answer.status}, not vLLM's metrics", fix, AREA)]
    try:
        figures = cache_config_figures(parse_metrics(answer.text()).cache_config)
    except ValueError as exc:
        bad = Answer(answer.url, answer.status, error=str(exc))
        return {}, [bad_answer_finding(bad, "/metrics is not Prometheus text", fix, AREA)]
    return figures, []


def load_model(client: Client, key_file: Path | None, spec: LoadSpec | None = None) -> tuple[str | None, list[Finding]]:
    """The served model the load asks for, from /v1/models (a guarded route: the key is checked here); a
    load longer than the model's context (vLLM's ModelCard.max_model_len) is refused before it is sent."""
    model, answer = served_model(client)
    if model is not None:
        if spec is not None:
            check_fits(spec, context_length(answer, model))
        return model, []
    if answer.key_refused:
        return None, [refused(answer, client, key_file)]
    what = f"/v1/models answered {answer.status} without a model list"
    fix = "pass --url with the address of vLLM itself; read the server log"
    return None, [bad_answer_finding(answer, what, fix, AREA)]


def context_length(answer: Answer, model: str) -> int | None:
    """max_model_len of the model in a /v1/models answer (vllm/entrypoints/serve/engine/protocol.py
    ModelCard, filled in by entrypoints/openai/models/serving.py); None when absent or not a count."""
    body = answer.json()
    for card in body.get("data", []) if isinstance(body, dict) else []:
        if isinstance(card, dict) and card.get("id") == model:
            value = card.get("max_model_len")
            return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None
    return None


def check_fits(spec: LoadSpec, max_model_len: int | None) -> None:
    if max_model_len is None or spec.prompt_tokens + spec.output_tokens <= max_model_len:
        return
    raise TQError(
        f"--prompt-tokens {spec.prompt_tokens} + --output-tokens {spec.output_tokens} exceed the served model's "
        f"max_model_len {max_model_len}",
        f"keep the two under {max_model_len} together, e.g. --prompt-tokens {max(1, max_model_len // 2)}",
    )
