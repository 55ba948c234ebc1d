"""What tqdeploy.redact replaces: the patterns and name rules, apart from the Redactor that applies them.

Every pattern is linear in its input: each quantifier is bounded or runs over a character class the next
token cannot start with, and patterns that start inside a word are anchored by a look-behind, so a 200 KB
word after `key` costs one scan, not one per position (issue 19: the old NAMED pattern never finished).

vLLM facts these rules rely on (vLLM 0.32.0 source):
- FlexibleArgumentParser (vllm/utils/argparse_utils.py) accepts ``--api_key`` for ``--api-key`` and
  ``--api-key=VALUE``; it sets no ``allow_abbrev``, so argparse's default (True) accepts unambiguous
  prefixes: ``--api-k`` is the shortest for ``--api-key`` (``--ap`` also matches ``--api-server-count``),
  ``--hf-t`` for ``--hf-token``. ``--api-key`` takes ``nargs="+"`` (several keys), ``--hf-token``
  ``nargs="?"`` (entrypoints/launchers/cli_args.py, engine/arg_utils.py).
- The "non-default args" log line is a Python dict repr and masks only api_key, hf_token and
  watermark_config (entrypoints/serve/utils/api_utils.py); older releases printed the key itself.

Token formats are the documented prefixes of each issuer (the same ones detect-secrets' plugins and
GitHub's secret scanning match): hf_ (Hugging Face User Access Tokens), ghp_/gho_/ghu_/ghs_/ghr_ and
github_pat_ (GitHub), glpat- and the other gl*- prefixes (GitLab), xox[abpors]- (Slack), AIza (Google API
keys), nvapi- (NVIDIA API catalog), sk-/sk-ant-/sk-proj- (OpenAI, Anthropic), AKIA/ASIA... (AWS key ids);
and the shapes of detect-secrets' regex detectors that need no keyword beside them (detect_secrets/plugins:
stripe.py sk_live_/rk_live_, npm.py npm_, telegram_token.py DIGITS:A..., sendgrid.py SG., square_oauth.py
sq0csp-, mailchimp.py ...-usN). Twilio's AC/SK and Discord's bot tokens have no literal a line can be picked
by (secrets.py runs the rules only on lines with a trigger), so they are left to the named and entropy rules.
"""

from __future__ import annotations

import re

SECRET_KINDS = frozenset({"secret", "private_key", "keyword"})
# vLLM's secret options and how many values each takes ("+": until the next option, "?": at most one).
SECRET_FLAGS = {"api-key": "+", "hf-token": "?"}
SECRET_WORDS = frozenset(
    {"token", "key", "secret", "password", "passwd", "pwd", "apikey", "credential", "credentials", "passphrase"}
)
SECRET_ENDINGS = ("token", "secret", "password", "passwd", "secretkey", "accesskey", "privatekey", "apikey", "authkey")
LAST_ONLY_WORDS = frozenset({"pass", "pat", "auth", "sig", "signature"})  # DB_PASS, GITHUB_PAT, X_AUTH
SECRET_NAMES = frozenset({"docker_auth_config", "auths"})  # Docker's credential blobs
# "key" after these words names a field, not a credential: topologyKey, sort_key, cache_key, primaryKey.
NOT_SECRET_BEFORE_KEY = frozenset(
    {"topology", "sort", "partition", "primary", "foreign", "cache", "hash", "hot", "lookup", "map", "label", "group"}
    | {"routing", "shard", "sharding", "dict", "index", "match", "selector", "metric", "node", "pod", "object", "kv"}
    | {"prefix", "row", "column", "unique", "composite", "idempotency", "dedup", "event", "message", "request"}
)
# A bare word as a name (`password: x`, `token=x`) counts only at the start of a line or of a comment;
# mid-sentence (`without an API key: tqdeploy's key file`) it is prose.
BARE_NAMES = frozenset(SECRET_WORDS | LAST_ONLY_WORDS)
LINE_START = re.compile(
    r"(?:\d{9,11}\.\d{3}\|)?[ \t]{0,16}(?:#|//|;|--|\*|-|\+)?[ \t]{0,16}(?:export[ \t]{1,8})?"
)  # after a tqdeploy log stamp (EPOCH.mmm|), a comment marker, a shell trace's `+`
# A comment's first words before a name: `# mirror password:`, `  // staging db password =`, `x = 1  # old key:`.
COMMENT_WORDS = re.compile(r"[^\n#]{0,120}?(?:#|//)[ \t]{0,16}(?:[A-Za-z][\w.\-]{0,40}[ \t]{1,8}){1,3}")
# A last word that makes the name about a secret, not one: api_key_file, hf_token_present, secretKeyRef.
NOT_SECRET_LAST = frozenset(
    {"file", "path", "dir", "present", "set", "count", "len", "length", "name", "env", "ref", "id", "type", "size"}
    | {"helper", "enabled", "disabled", "required", "mode", "url", "endpoint", "header", "format", "bits", "prefix"}
    | {"source", "timeout", "ttl", "expiry", "expires", "kind", "version", "names", "files", "keys", "refs"}
)
# Account names that identify nobody (service and image accounts); never replaced as bare words.
GENERIC_USERS = frozenset(
    {"root", "nobody", "vllm", "ubuntu", "user", "admin", "app", "python", "docker", "nvidia", "debian", "runner"}
)
# Values that say whether a secret is there, or point at one, not what it is (doctor: "HF_TOKEN": "absent").
NOT_SECRET_VALUES = frozenset(
    {"", "true", "false", "none", "null", "0", "1", "absent", "present", "set", "unset", "yes", "no", "required"}
)
# Words prose puts after a flag or a name (`--api-key is absent`, `token: the one from hf auth login`).
STOP_WORDS = frozenset(
    {"is", "are", "was", "be", "not", "and", "or", "the", "a", "an", "to", "of", "in", "on", "for", "with", "when"}
    | {"if", "unless", "only", "also", "as", "by", "from", "given", "flag", "option", "value", "too", "at", "it"}
    | {"this", "that", "its", "their", "your", "no", "nor", "then", "so", "but", "see", "via", "here", "there"}
)
PLACEHOLDER = re.compile(r"\[[a-z0-9_]+-\d+\]|\*{3,}|<redacted>|\[private-key dropped\]")
# A value that refers to a secret held elsewhere: $VAR, ${VAR}, $(cmd), <hint>, %(name)s, {{ template }}.
REFERENCE = re.compile(r"""['"]?(?:\$\{|\$\(|\$[A-Z_][A-Z0-9_]*\b|<[^<>]{0,80}>?|%\(|\{\{|\[\[)""")

URL_HOST = re.compile(
    r"(?i)\b([a-z][a-z0-9+.\-]{0,30}://(?:[^\s/@'\"<>]{0,512}@)?)([\w.\-]{1,253}|\[[0-9a-f:.%\w]{2,60}\])(:\d{1,5})?"
)
WEBHOOK = re.compile(
    r"(?i)(hooks\.slack\.com/(?:services|workflows|triggers)/|discord(?:app)?\.com/api/webhooks/"
    r"|[\w\-]{1,63}\.webhook\.office\.com/webhookb2/|chat\.googleapis\.com/v1/spaces/)([\w/\-.%?=&]{8,2048})"
)
TOKENS = re.compile(
    r"(?<![A-Za-z0-9_\-])(?:hf_[A-Za-z0-9]{16,256}|sk-(?:ant-|proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{16,512}"
    r"|gh[pousr]_[A-Za-z0-9]{20,256}|github_pat_[A-Za-z0-9_]{20,256}"
    r"|gl(?:pat|dt|rt|ptt|ft|soat|cbt)-[A-Za-z0-9_\-]{20,256}|xox[abposre]-[A-Za-z0-9\-]{10,256}"
    r"|xapp-[A-Za-z0-9\-]{10,256}|AIza[0-9A-Za-z_\-]{30,40}|nvapi-[A-Za-z0-9_\-]{20,256}"
    r"|eyJ[A-Za-z0-9_\-]{8,4096}\.[A-Za-z0-9_\-]{8,4096}\.[A-Za-z0-9_\-]{8,4096}"
    r"|(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}|npm_[A-Za-z0-9\-]{36,72}|pypi-[A-Za-z0-9_\-]{50,512}"
    r"|[rs]k_(?:live|test)_[0-9A-Za-z]{24,247}|\d{5,16}:A[A-Za-z0-9_\-]{34}|SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}"
    r"|sq0csp-[0-9A-Za-z_\-]{43}|[0-9a-z]{32}-us\d{1,2})"
    r"(?![A-Za-z0-9_\-])"
)
AUTH_SCHEME = re.compile(r"(?i)(?<![\w-])(bearer|basic)([ \t]{1,8})([A-Za-z0-9._~+/\-]{8,4096}={0,2})")
HEADER = re.compile(
    r"(?i)(?<![\w-])(authorization|proxy-authorization|x-api-key|api-key|x-auth-token|x-goog-api-key|private-token"
    r"|x-vault-token|openai-api-key|anthropic-api-key)(['\"]?[ \t]{0,8}[:=][ \t]{0,8}['\"]?)"
    r"((?:(?:bearer|basic|token|bot|apikey)[ \t]{1,8})?)([^\s'\",;]{1,4096})"
)
# --flag VALUE, --flag=VALUE, --flag \<newline> VALUE; more values after it for nargs="+" options.
OPTION = re.compile(
    r"(?<![\w-])--(?P<flag>[A-Za-z][\w-]{0,40})(?P<sep>=|(?:[ \t]|\\\r?\n){1,16})(?!-)"
    r"(?P<value>'[^'\n]{0,4096}'|\"[^\"\n]{0,4096}\"|[^\s'\"(`;|&)<>]{1,4096})"
    r"(?P<more>(?:[ \t]{1,8}(?![-#\\])[^\s'\"(`;|&)<>]{1,4096}){0,8})"
)
# An argv written as a list (TOML/JSON/Python, also JSON inside a JSON string): "--api-key", "VALUE"
LISTED_OPTION = re.compile(
    r"(?P<q1>\\?['\"])(?P<flag>--[A-Za-z][\w-]{0,40})(?P=q1)(?P<sep>[ \t]{0,8},[ \t\r\n]{0,16})"
    r"(?P<q2>\\?['\"])(?P<value>[^'\"\\\n]{1,4096})(?P=q2)"
)
REGISTRY_LOGIN = re.compile(
    r"(?i)\b(?:docker|podman|nerdctl|buildah|skopeo|helm(?:[ \t]{1,8}registry)?)[ \t]{1,8}login\b[^\n]{0,300}?"
    r"[ \t](?:-p|--password)(?:=|[ \t]{1,8})(?P<value>'[^'\n]{1,512}'|\"[^\"\n]{1,512}\"|[^\s'\"]{1,512})"
)
USER_PASSWORD = re.compile(
    r"(?<![\w-])(?:-u|-U|--user|--proxy-user)(?:=|[ \t]{1,8})(?P<q>['\"]?)"
    r"(?P<user>[^\s:'\"]{1,256}):(?P<pw>[^\s'\"]{1,1024})(?P=q)"
)
NETRC = re.compile(
    r"(?m)(?:^[ \t]{0,16}|\blogin[ \t]{1,8}\S{1,256}[ \t]{1,8})(?:password|passwd|account)[ \t]{1,8}"
    r"(?P<value>[^\s]{1,1024})"
)
NAMED = re.compile(
    r"(?<![\w.\-$])(?P<q>\\?['\"]?)(?P<name>[A-Za-z_][\w.\-]{0,80})(?P=q)"
    r"(?P<sep>[ \t]{0,8}(?::=|=>|:|=)[ \t]{0,8})"
    r"(?P<value>'[^'\n]{0,4096}'|\\?\"(?:[^\"\\\n]|\\[^\"\n]){0,4096}\\?\"|\[(?:'[^'\n]{0,4096}'|\"[^\"\n]{0,4096}\"|[^\]'\"\n]){0,4096}\]"
    r"|[^\s,;&'\"}\])]{1,4096})"
)
# Where a secret rule can match at all: a line with none of these is left to the literal and token passes.
# Plain substrings (found at C speed with str.find); a NAMED_WORDS hit counts only when NAME_TAIL follows it.
SECRET_LITERALS = (
    "://", "bearer", "basic", "authorization", "api-key", "auth-token", "private-token", "vault-token", "--",
    "login", "-u", "passw", "account", "?", "&",
)  # fmt: skip
NAMED_WORDS = ("token", "key", "secret", "pwd", "pass", "pat", "auth", "sig", "credential")
# One pattern per word, each starting with its literal, so the regex engine's literal scan finds the few hits.
NAMED_TRIGGERS = tuple(re.compile(w + r"[\w.\-]{0,80}['\"]?[ \t]{0,8}[:=]") for w in NAMED_WORDS)
TOKEN_LITERALS = (
    "hf_", "sk-", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "gldt-", "glrt-", "glptt-",
    "glft-", "glsoat-", "glcbt-", "xox", "xapp-", "AIza", "nvapi-", "eyJ", "AKIA", "ASIA", "AGPA", "AIDA", "AROA",
    "ANPA", "ANVA", "AIPA", "npm_", "pypi-", "k_live_", "k_test_", ":A", "SG.", "sq0csp-", "-us",
)  # fmt: skip
QUERY = re.compile(r"([?&])([\w.\-]{1,64})=([^&\s#'\"]{1,4096})")
QUERY_SECRET_NAMES = frozenset({"sig", "signature", "auth", "x-amz-signature", "x-amz-credential", "code", "key"})
BASE64_BLOB = re.compile(r"(?<![A-Za-z0-9+/=_\-])[A-Za-z0-9+/]{12,4096}={0,2}(?![A-Za-z0-9+/=_\-])")

# One pass finds every word that may be an address or a host name (a dot or colon in it); Python sorts them.
NOT_ADDRESS = (
    r"\d{1,20}(?:\.\d{1,20}){0,2}%?|\d{1,20}(?::\d{1,20}){1,4}(?:\.\d{1,9})?"  # 12.3, 08:05:03, 1764576300.123
    r"|[A-Za-z0-9_\-]{1,80}\.(?:py|sh|c|cc|cpp|cu|h|rs|go):\d{1,6}"  # [loggers.py:259] of every vLLM log line
)
ADDRESS = re.compile(
    r"(?<![A-Za-z0-9_.:%\-\\])(?!(?:" + NOT_ADDRESS + r")(?![A-Za-z0-9_:%\-]|\.[A-Za-z0-9]))"
    r"(?:[A-Za-z0-9][A-Za-z0-9_%\-]{0,80}|:)[.:][A-Za-z0-9:][A-Za-z0-9_.:%\-]{0,400}"
)
MAC = re.compile(r"(?i)[0-9a-f]{2}([:-])[0-9a-f]{2}(?:\1[0-9a-f]{2}){4}(?:(?:\1[0-9a-f]{2}){14})?")
IPV4 = re.compile(r"\d{1,3}(?:\.\d{1,3}){3}")
# A raw key in a log (`openssl rand -hex 32`): 32 bytes as hex, standing alone; not where a digest is named
# just before it on its line (sha256 ..., digest:, "etag":, commit ...), which is how logs print hashes.
HEX_KEY = re.compile(r"(?<![0-9A-Za-z_\-])(?:[0-9a-f]{64}|[0-9A-F]{64})(?![0-9A-Za-z_\-])")
DIGEST_BEFORE = re.compile(r"(?i)(?:sha|digest|hash|checksum|etag|oid|fingerprint|commit|revision|blob)[^\n]{0,24}\Z")
IPV4_IN_NAME = re.compile(r"(?<![\d.])\d{1,3}(?:\.\d{1,3}){3}(?!\.?\d)")  # worker-10.1.2.3.log, x_10.1.2.3
DNS_NAME = re.compile(r"(?:[A-Za-z0-9][A-Za-z0-9\-]{0,62}\.){1,10}[A-Za-z]{2,24}")
HOME = re.compile(r"(?<![\w])(/home/|/Users/|C:\\Users\\)([^/\\\s'\":\[\]]{1,64})")
AFTER_HOST = re.compile(r"(\[host-\d+\])((?:\.[A-Za-z0-9][A-Za-z0-9\-]{0,62}){1,10})(?![\w\-]|\.[A-Za-z0-9])")


def name_words(name: str) -> list[str]:
    """apiKey, API_KEY, api-key, X-Api-Key -> lower-case words (camelCase split too)."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    return [w for w in re.split(r"[^a-z0-9]+", spaced.lower()) if w]


def is_secret_name(name: str) -> bool:
    """HF_TOKEN, api_key, X-Api-Key, DB_PASS, GITHUB_PAT, MINIO_SECRETKEY, SecretAccessKey: a name whose value
    is a secret (whole words only, so max_tokens or kv_cache_dtype are not)."""
    key = name.lower().replace("-", "_")
    if key in SECRET_NAMES:
        return True
    if key in ("pwd", "oldpwd"):  # the shell's working directory, not a password
        return False
    words = name_words(name)
    if not words or words[-1] in NOT_SECRET_LAST:
        return False
    if words[-1] == "key" and len(words) > 1 and words[-2] in NOT_SECRET_BEFORE_KEY:
        return False
    if words[-1] in LAST_ONLY_WORDS:
        return True
    return any(w in SECRET_WORDS or w.endswith(SECRET_ENDINGS) for w in words)


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


def is_reference(value: str) -> bool:
    """$VAR, "$(cat FILE)", <key file>: names where a secret is, not the secret."""
    return bool(REFERENCE.match(value.strip()))


def at_line_start(text: str, pos: int) -> bool:
    """Only blanks, a comment marker or `export` between the line's start and pos (looking back 64 chars);
    or, inside a comment, up to three words after its marker: `# mirror password: VALUE` in a spec is a note
    of a credential (it once reached the bundle's copy of the spec), `an API key: see below` mid-line is not."""
    lo = max(0, pos - 64)
    nl = text.rfind("\n", lo, pos)
    if nl < 0 and lo > 0:
        return False
    return bool(LINE_START.fullmatch(text, nl + 1, pos) or COMMENT_WORDS.fullmatch(text, nl + 1, pos))


def looks_like_version(before: str) -> bool:
    """Before an IPv4-shaped string, ==, v, `version: "`, `cuda-`: it is a version (torch==2.13.0.1), not an IP."""
    b = before.rstrip(" \t\"':")
    low = b.lower()
    if low.endswith(("==", ">=", "<=", "~=", "!=", "<", ">", "version", "ver")) or before.endswith(("v", "V")):
        return True
    return len(b) >= 2 and b[-1] in "-_" and b[-2].isalpha()


def is_prose(value: str) -> bool:
    return value.strip("'\"").lower() in STOP_WORDS
