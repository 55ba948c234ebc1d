"""Talking HTTP to a deployment: one client (client.py), URL checks and redaction (urls.py), the checks of
what a server answered (answers.py). Low in the layering: connect, runtime, profile and bundle import it, and
model, spec, probe and download import its URL checks (a mirror's too).

Public API:
  Client(base_url, key=None, label="--url")  .get / .post / .stream -> Answer / Stream, never raises
  check_url(url, label) -> url     redact_url(url) -> str (no user, password, secret query values)
  check_endpoint(url, what) -> url (a mirror)     shown_url(text) -> str     redact_hub_logs()
  model_ids(answer) -> list[str] | None     key_refused_finding(answer, ...) -> Finding (TQ468)
"""

from tqdeploy.net.answers import BAD_ANSWER_ID, KEY_REFUSED_ID, bad_answer_finding, key_refused_finding, model_ids
from tqdeploy.net.client import Answer, Client, Stream
from tqdeploy.net.urls import check_url, is_loopback, redact_url, same_origin

__all__ = [
    "BAD_ANSWER_ID",
    "KEY_REFUSED_ID",
    "Answer",
    "Client",
    "Stream",
    "bad_answer_finding",
    "check_url",
    "is_loopback",
    "key_refused_finding",
    "model_ids",
    "redact_url",
    "same_origin",
]
