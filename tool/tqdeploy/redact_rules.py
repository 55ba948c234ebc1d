"""What tqdeploy.redact replaces: the patterns and name rules, apart from the Redactor that applies them.

vLLM facts these rules rely on (vLLM 0.32.0 source):
- FlexibleArgumentParser (vllm/utils/argparse_utils.py) accepts ``--api_key`` for ``--api-key`` and
  ``--api-key=VALUE``; it sets no ``allow_abbrev``, so argparse's default (True) accepts unambiguous
  prefixes: ``--api-k`` is the shortest for ``--api-key`` (``--ap`` also matches ``--api-server-count``),
  ``--hf-t`` for ``--hf-token``. ``--api-key`` takes ``nargs="+"`` (several keys), ``--hf-token``
  ``nargs="?"`` (entrypoints/launchers/cli_args.py, engine/arg_utils.py).
- The "non-default args" log line is a Python dict repr and masks only api_key, hf_token and
  watermark_config (entrypoints/serve/utils/api_utils.py); older releases printed the key itself.
"""

from __future__ import annotations

import re

SECRET_KINDS = frozenset({"secret", "private_key"})
# vLLM's secret options and how many values each takes ("+": until the next option, "?": at most one).
SECRET_FLAGS = {"api-key": "+", "hf-token": "?"}
SECRET_WORDS = ("token", "key", "secret", "password", "passwd", "pwd", "apikey", "credential", "credentials")
NOT_SECRET_LAST = frozenset({"file", "path", "dir", "present", "set", "count", "len", "length", "name", "env"})
# URL hosts kept as they are: public services every deployment talks to; any other URL host is identifying.
PUBLIC_HOSTS = (
    "huggingface.co",
    "hf.co",
    "github.com",
    "githubusercontent.com",
    "pypi.org",
    "pythonhosted.org",
    "vllm.ai",
    "pytorch.org",
    "nvidia.com",
    "docker.io",
    "docker.com",
    "ghcr.io",
    "nvcr.io",
    "quay.io",
    "example.com",
)
# Account names that identify nobody (service and image accounts); never replaced as bare words.
GENERIC_USERS = frozenset({"root", "nobody", "vllm", "ubuntu", "user", "admin", "app", "python", "docker", "nvidia"})
# Values that say whether a secret is there, not what it is (doctor evidence "HF_TOKEN": "absent").
NOT_SECRET_VALUES = frozenset({"", "true", "false", "none", "null", "0", "1", "absent", "present", "set", "unset"})
PLACEHOLDER = re.compile(r"\[[a-z0-9]+-\d+\]|\*{3,}|<redacted>|\[private-key dropped\]")

PRIVATE_KEY = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?:.*?-----END [A-Z0-9 ]*PRIVATE KEY-----|.*\Z)", re.S)
URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)([^\s/'\"<>]*)@")
URL_HOST = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://(?:[^\s/@'\"<>]*@)?)([\w.\-]+|\[[0-9a-f:.]+\])(:\d+)?")
# Hugging Face, OpenAI-style, GitHub tokens, JWTs (eyJ...), AWS access key ids
TOKENS = re.compile(
    r"\b(?:hf_[A-Za-z0-9]{16,}|sk-[A-Za-z0-9_\-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}"
    r"|eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}|AKIA[0-9A-Z]{16})\b"
)
AUTH_SCHEME = re.compile(r"(?i)\b(bearer|basic|token)(\s+)([A-Za-z0-9._~+/=\-]{8,})")
HEADER = re.compile(
    r"(?i)\b(authorization|proxy-authorization|x-api-key|api-key|x-auth-token)(\s*[:=]\s*)([^\r\n'\"]+)"
)
OPTION = re.compile(
    r"(?<![\w-])--([A-Za-z][\w-]*)(=|[ \t]+)((?:'[^']*'|\"[^\"]*\"|[^\s'\"(`]+)(?:[ \t]+(?!-|\\)[^\s'\"]+)*)"
)
# An argv written as a list (TOML/JSON/Python): '--api-key', 'VALUE'
LISTED_OPTION = re.compile(r"(['\"])(--[A-Za-z][\w-]*)\1(\s*,\s*)(['\"])([^'\"]*)\4")
NAMED = re.compile(
    r"(?i)(?P<q>['\"]?)(?P<name>[A-Za-z_][\w.\-]*(?:token|key|secret|passw|pwd|credential)[\w.\-]*)(?P=q)"
    r"(?P<sep>\s*[:=]\s*)"
    r"(?P<value>'[^']*'|\"[^\"]*\"|\[(?:'[^']*'|\"[^\"]*\"|[^\]'\"])*\]|[^\s,;&'\"}\]]+)"
)
QUERY = re.compile(r"([?&])([\w.\-]+)=([^&\s#'\"]+)")
MAC = re.compile(r"(?i)(?<![\w:-])[0-9a-f]{2}(?:([:-])[0-9a-f]{2})(?:\1[0-9a-f]{2}){4}(?![\w:-])")
IPV6 = re.compile(r"(?i)(?<![\w:.])(?:[0-9a-f]{0,4}:){2,7}(?:[0-9a-f]{0,4}|\d+\.\d+\.\d+\.\d+)(?![\w:])")
IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w]|\.\d)")
HOME = re.compile(r"(?<![\w])(/home/|/Users/|C:\\Users\\)([^/\\\s'\":]+)")


def is_secret_name(name: str) -> bool:
    """HF_TOKEN, api_key, X-Api-Key, DB_PASSWORD: a name whose value is a secret (whole words only, so
    max_tokens or kv_cache_dtype are not)."""
    words = [w for w in re.split(r"[^a-z0-9]+", name.lower()) if w]
    if words and words[-1] in NOT_SECRET_LAST:  # api_key_file, hf_token_present: about a secret, not one
        return False
    return any(w in SECRET_WORDS or w.endswith(("token", "secret", "password")) for w in words)


def secret_flag(option: str) -> str | None:
    """The vLLM secret option an argv spelling selects (``--api_key``, ``--api-k``, ``--ap``), else None.
    Ambiguous prefixes (vLLM rejects them) still count: the value next to them is a secret all the same."""
    name = option.lstrip("-").split("=", 1)[0].replace("_", "-").lower()
    if len(name) < 2 or not option.startswith("--"):
        return None
    for flag in SECRET_FLAGS:
        if flag.startswith(name) or name == flag + "s":  # --api-keys: vLLM refuses it, its value is a key all the same
            return flag
    return "generic" if is_secret_name(name) else None
