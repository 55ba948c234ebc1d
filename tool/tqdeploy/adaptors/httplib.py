"""The HTTP library under huggingface_hub's session (httpx2 for huggingface_hub 2.x, what tqdeploy pins; httpx for
1.x): the only module that imports it. tqdeploy also runs inside a vLLM environment, which keeps its own
huggingface_hub (the lent H200's vLLM 0.25.0 stack has 1.33.0 with httpx 0.28): a timeout or an exception class
from the other library is not understood there ("TypeError: 'Timeout' object cannot be interpreted as an
integer", seen on that host), so the library is the one the session's client comes from, asked at run time."""

from __future__ import annotations

import importlib
from functools import lru_cache
from types import ModuleType

from tqdeploy.adaptors import hfhub


@lru_cache(maxsize=1)
def session_http_lib() -> ModuleType:
    """The module (httpx2 or httpx) whose client huggingface_hub.utils.get_session() returns: its Timeout,
    Response and error classes are the ones that session takes and raises."""
    if type(hfhub.get_session()).__module__.split(".")[0] == "httpx":  # huggingface_hub 1.x
        return importlib.import_module("httpx")
    return importlib.import_module("httpx2")
