"""The one redaction of tqdeploy: secrets and identifying names out of text, mappings, argv and JSON data.

Every output that may leave the host (the support bundle first, other commands later) goes through one
``Redactor``. Replacements are placeholders such as ``[ip-1]``: deterministic (numbered in the order they
are met, so the same collectors in the same order give the same bundle) and consistent (one original, one
placeholder, in every file). ``mapping()`` says what each placeholder stands for and is meant to be kept
apart from what is shared; for secrets it holds only a sha256 fingerprint, never the value.

A value found secret once is a known literal from then on: it and its encodings (URL, base64, hex, JSON
escapes) are replaced wherever they appear; ``relit()`` runs that replacement again over text redacted
before the value was known. Host identity follows sos clean (host names under the host's domains,
users, addresses); tqdeploy.redact.names holds those rules, redact.rules the patterns.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tqdeploy.redact import rules as R
from tqdeploy.redact.keys import encodings
from tqdeploy.redact.names import NameRules
from tqdeploy.redact.rules import GENERIC_USERS, SECRET_FLAGS, is_secret_name, secret_flag
from tqdeploy.redact.secrets import SecretRules

__all__ = ["GENERIC_USERS", "SECRET_FLAGS", "Redactor", "is_secret_name", "scan", "secret_flag"]
MIN_SECRET = 4  # shorter values are words, not secrets worth hunting everywhere


class Redactor(SecretRules, NameRules):
    """Collects placeholders and counts for one output (one bundle). ``enabled=False`` passes all through."""

    def __init__(
        self,
        *,
        secrets: Iterable[str] = (),
        hostnames: Iterable[str] = (),
        usernames: Iterable[str] = (),
        domains: Iterable[str] = (),
        keywords: Iterable[str] = (),
        public_hosts: Iterable[str] | None = None,
        enabled: bool = True,
        names: bool = True,
    ) -> None:
        self.enabled = enabled
        self.names = names  # False: secrets only (lint, doctor): hosts, IPs and users stay as written
        self.counts: Counter[str] = Counter()
        self._placeholders: dict[tuple[str, str], str] = {}
        self._numbers: Counter[str] = Counter()
        self._literals: dict[str, tuple[str, str]] = {}  # form as written -> (kind, original)
        self._regex_cache: dict[tuple[str, ...], re.Pattern[str]] = {}
        NameRules.__init__(self, domains, public_hosts)
        for value in secrets:
            self.add_literal(value, "secret")
        for value in keywords:
            self.add_literal(value, "keyword")
        for value in hostnames:
            self.add_host(value)
        for value in usernames:
            self.add_literal(value, "user")

    # -- placeholders -------------------------------------------------------------------------------
    def placeholder(self, kind: str, original: str) -> str:
        key = (kind, original)
        if key not in self._placeholders:
            self._numbers[kind] += 1
            self._placeholders[key] = f"[{kind}-{self._numbers[kind]}]"
        self.counts[kind] += 1
        return self._placeholders[key]

    def add_literal(self, value: str, kind: str) -> None:
        """A value known to be secret or identifying: replaced wherever it appears, whatever its shape;
        a secret's encodings too."""
        value = (value or "").strip()
        if len(value) < (MIN_SECRET if kind in R.SECRET_KINDS else 3) or R.PLACEHOLDER.fullmatch(value):
            return
        if kind not in R.SECRET_KINDS and value.lower() in GENERIC_USERS | {"localhost"}:
            return
        if value in self._literals:
            return
        self._literals[value] = (kind, value)
        if kind in R.SECRET_KINDS:
            for form in encodings(value):
                self._literals.setdefault(form, (kind, value))

    def mapping(self) -> dict[str, dict[str, str]]:
        out: dict[str, dict[str, str]] = {}
        for (kind, original), ph in self._placeholders.items():
            shown = (
                "sha256:" + hashlib.sha256(original.encode()).hexdigest()[:16] if kind in R.SECRET_KINDS else original
            )
            out.setdefault(kind, {})[ph] = shown
        return out

    # -- text ---------------------------------------------------------------------------------------
    def text(self, text: str) -> str:
        if not self.enabled or not text:
            return text
        text = self._secrets(text)
        return self._names(text) if self.names else text

    def known(self, text: str) -> str:
        """Only what is certainly secret: known values and token formats. For texts tqdeploy wrote itself
        (a fix line such as `export VLLM_API_KEY="$(cat FILE)"`), which the heuristics would misread."""
        if not self.enabled or not text:
            return text
        text = self._sub_literals(text, R.SECRET_KINDS)
        return R.TOKENS.sub(lambda m: self.secret(m.group(0)), text) if self._has_token(text) else text

    def path(self, text: str) -> str:
        """A file or member name: text(), then an IPv4 address run into a word (`worker-10.1.2.3.log`, which
        the text rules read as a version or a file name) is an address too: in a name it says which host."""
        text = self.text(text)
        if not self.enabled or not self.names or "." not in text:
            return text
        return R.IPV4_IN_NAME.sub(lambda m: self._ipv4(m.group(0), ""), text)

    def log(self, text: str) -> str:
        """A server log: text(), then a raw 64-hex key standing alone (R.HEX_KEY), which in a log is a key
        pasted or echoed there, not a digest (a digest is named before it: R.DIGEST_BEFORE)."""
        text = self.text(text)
        if not self.enabled or not R.HEX_KEY.search(text):
            return text

        def repl(m: re.Match[str]) -> str:
            start = max(0, m.start() - 40)
            if R.DIGEST_BEFORE.search(m.string, start, m.start()):
                return m.group(0)
            return self.secret(m.group(0))

        return R.HEX_KEY.sub(repl, text)

    def relit(self, text: str) -> str:
        """Known values (and their encodings) once more: for text redacted before they were known."""
        return self._sub_literals(text, None) if self.enabled else text

    def secret(self, value: str) -> str:
        if not value or R.PLACEHOLDER.fullmatch(value.strip("'\"")) or value.lower() in R.NOT_SECRET_VALUES:
            return value  # null, true, absent: what a field holds when there is no secret
        self.add_literal(value, "secret")
        return self.placeholder("secret", value)

    def _sub_literals(self, text: str, kinds: frozenset[str] | None) -> str:
        """Known values present in text, replaced; one C-speed substring test per value keeps this linear."""
        present = tuple(
            sorted(
                (f for f, (k, _) in self._literals.items() if (kinds is None or k in kinds) and f in text),
                key=lambda f: (-len(f), f),
            )
        )
        if not present:
            return text
        rx = self._regex_cache.get(present)
        if rx is None:
            rx = re.compile("|".join(self._literal_pattern(f) for f in present))
            self._regex_cache[present] = rx

        def repl(m: re.Match[str]) -> str:
            kind, original = self._literals[m.group(0)]
            return self.placeholder(kind, original)

        return rx.sub(repl, text)

    def _literal_pattern(self, form: str) -> str:
        kind = self._literals[form][0]
        if kind in R.SECRET_KINDS:
            return rf"(?<![A-Za-z0-9]){re.escape(form)}(?![A-Za-z0-9])" if len(form) < 8 else re.escape(form)
        return rf"(?<![A-Za-z0-9]){re.escape(form)}(?![A-Za-z0-9])"  # worker-HOST.log, HOST_cache: still the host

    # -- structures ---------------------------------------------------------------------------------
    def env(self, env: Mapping[str, str]) -> dict[str, str]:
        """Environment variables: a secret-named variable's value becomes a placeholder, the rest is text."""
        if not self.enabled:
            return dict(env)
        return {
            k: (self.secret(v) if is_secret_name(k) and v.lower() not in R.NOT_SECRET_VALUES else self.text(v))
            for k, v in sorted(env.items())
        }

    def argv(self, argv: Sequence[str]) -> list[str]:
        """A command line, token by token, with every spelling vLLM's parser accepts for its secret options."""
        if not self.enabled:
            return list(argv)
        out: list[str] = []
        pending: str | None = None  # nargs of the secret option whose values come next
        for tok in argv:
            if pending is not None and not tok.startswith("-"):
                out.append(self.secret(tok))
                pending = None if pending in ("?", "1") else pending
                continue
            pending = None
            flag = secret_flag(tok) if tok.startswith("--") else None
            if flag is not None and "=" in tok:
                name, value = tok.split("=", 1)
                out.append(f"{name}={self.secret(value)}")
                continue
            if flag is not None:
                pending = SECRET_FLAGS.get(flag, "1")
            out.append(self.text(tok))
        return out

    def data(self, obj: Any) -> Any:
        """JSON-shaped data: strings as text, secret-named keys' values as secrets, a list of strings that
        holds a secret option as an argv (a container's Cmd/Args), other types kept."""
        if not self.enabled:
            return obj
        if isinstance(obj, Mapping):
            out: dict[str, Any] = {}
            for key, value in obj.items():
                secret_key = is_secret_name(str(key))
                if secret_key and isinstance(value, str) and value.lower() not in R.NOT_SECRET_VALUES:
                    out[self.text(str(key))] = self.secret(value)
                elif secret_key and isinstance(value, Mapping) and str(key).lower() == "auths":
                    out[self.text(str(key))] = {self.text(str(k)): self._all_secret(v) for k, v in value.items()}
                else:
                    out[self.text(str(key))] = self.data(value)
            return out
        if isinstance(obj, (list, tuple)):
            if obj and all(isinstance(v, str) for v in obj) and any(v.startswith("--") for v in obj):
                return self.argv(obj)
            return [self.data(v) for v in obj]
        if isinstance(obj, str):
            return self.text(obj)
        return obj

    def _all_secret(self, obj: Any) -> Any:
        """Every string under a Docker `auths` entry (auth, identitytoken, password) is a credential."""
        if isinstance(obj, Mapping):
            return {k: self._all_secret(v) for k, v in obj.items()}
        return self.secret(obj) if isinstance(obj, str) and obj else obj


def scan(text: str, redactor: Redactor | None = None, path: bool = False, log: bool = False) -> Counter[str]:
    """Secret-shaped strings still in text (what a fresh redaction would replace), counted per kind;
    placeholders and masks such as vLLM's '***' do not count. With a redactor that knows the host (names,
    users, domains), identifying names count too; without one only secrets and addresses do. ``path``: text
    is a file or member name, scanned as the bundle redacts names (Redactor.path); ``log``: a server log
    (Redactor.log). The same methods the bundle redacts with, so what it replaces a scan finds."""
    probe = redactor or Redactor()
    before = Counter(probe.counts)
    redact = probe.path if path else probe.log if log else probe.text
    redact(text)
    return probe.counts - before
