"""The one redaction of tqdeploy: secrets and identifying names out of text, mappings, argv and JSON data.

Every output that may leave the host (the support bundle first, other commands later) goes through one
``Redactor``. Replacements are placeholders such as ``[ip-1]``: deterministic (numbered in the order they
are met, so the same collectors in the same order give the same bundle) and consistent (one original, one
placeholder, in every file). ``mapping()`` says what each placeholder stands for and is meant to be kept
apart from what is shared; for secrets it holds only a sha256 fingerprint, never the value.

The patterns and name rules live in tqdeploy.redact_rules (with the vLLM facts they rest on).
"""

from __future__ import annotations

import hashlib
import ipaddress
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tqdeploy import redact_rules as R
from tqdeploy.redact_rules import GENERIC_USERS, SECRET_FLAGS, is_secret_name, secret_flag

__all__ = ["GENERIC_USERS", "SECRET_FLAGS", "Redactor", "is_secret_name", "scan", "secret_flag"]


class Redactor:
    """Collects placeholders and counts for one output (one bundle). ``enabled=False`` passes all through."""

    def __init__(
        self,
        *,
        secrets: Iterable[str] = (),
        hostnames: Iterable[str] = (),
        usernames: Iterable[str] = (),
        enabled: bool = True,
        names: bool = True,
    ) -> None:
        self.enabled = enabled
        self.names = names  # False: secrets only (lint, doctor): hosts, IPs and users stay as written
        self.counts: Counter[str] = Counter()
        self._placeholders: dict[tuple[str, str], str] = {}
        self._numbers: Counter[str] = Counter()
        self._literals: dict[str, str] = {}  # known original -> kind
        self._literal_re: re.Pattern[str] | None = None
        for value in secrets:
            self.add_literal(value, "secret")
        for value in hostnames:
            self.add_literal(value, "host")
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
        """A value known to be secret or identifying: replaced wherever it appears, whatever its shape."""
        value = (value or "").strip()
        if len(value) < 3 or (kind != "secret" and value.lower() in GENERIC_USERS | {"localhost"}):
            return
        self._literals.setdefault(value, kind)
        self._literal_re = None

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
        low = text.lower()  # cheap substring triggers: a pass whose trigger is absent cannot match
        text = self._secrets(text, low)
        return self._names(text, low) if self.names else text

    def _secrets(self, text: str, low: str) -> str:
        if "private key" in low:
            text = R.PRIVATE_KEY.sub(lambda m: self._count("private_key", "[private-key dropped]"), text)
        if "://" in text:
            text = R.URL_USERINFO.sub(lambda m: m.group(1) + self.secret(m.group(2)) + "@", text)
        text = self._sub_literals(text, only="secret")
        if any(t in text for t in ("hf_", "sk-", "gh", "eyJ", "AKIA")):
            text = R.TOKENS.sub(lambda m: self.secret(m.group(0)), text)
        if "bearer" in low or "basic" in low or "token" in low:
            text = R.AUTH_SCHEME.sub(lambda m: m.group(1) + m.group(2) + self.secret(m.group(3)), text)
        if "authorization" in low or "api-key" in low or "auth-token" in low:
            text = R.HEADER.sub(self._header, text)
        if "--" in text:
            text = R.OPTION.sub(self._option, text)
            text = R.LISTED_OPTION.sub(self._listed_option, text)
        if any(w in low for w in ("token", "key", "secret", "passw", "pwd", "credential")):
            text = R.NAMED.sub(self._named, text)
        if "=" in text and ("?" in text or "&" in text):
            text = R.QUERY.sub(self._query, text)
        return text

    def _names(self, text: str, low: str) -> str:
        """Host names, users, MAC and IP addresses (after the secrets, so a URL's credentials are gone)."""
        if "://" in text:
            text = R.URL_HOST.sub(self._url_host, text)
        homes = "/home/" in text or "users" in low
        for home in R.HOME.finditer(text) if homes else ():  # a user named by a home path: replaced everywhere
            if home.group(2).lower() not in GENERIC_USERS and not R.PLACEHOLDER.fullmatch(home.group(2)):
                self.add_literal(home.group(2), "user")
        text = self._sub_literals(text, only=None)
        if homes:
            text = R.HOME.sub(lambda m: m.group(1) + self._user(m.group(2)), text)
        if ":" in text or "-" in text:
            text = R.MAC.sub(lambda m: self.placeholder("mac", m.group(0).lower()), text)
        if ":" in text:
            text = R.IPV6.sub(self._ipv6, text)
        return R.IPV4.sub(self._ipv4, text)

    def _header(self, m: re.Match[str]) -> str:
        value = m.group(3).strip()
        return m.group(0) if R.PLACEHOLDER.search(value) else m.group(1) + m.group(2) + self.secret(value)

    def _url_host(self, m: re.Match[str]) -> str:
        host = m.group(2)
        low = host.lower().rstrip(".")
        if R.PLACEHOLDER.fullmatch(host) or low == "localhost" or re.fullmatch(r"[\d.]+|\[[0-9a-f:.]*\]", low):
            return m.group(0)  # IPs are handled (and loopback kept) by the IP rules
        if any(low == h or low.endswith("." + h) for h in R.PUBLIC_HOSTS):
            return m.group(0)
        if "_" in host or ("." not in host and not m.group(3)):
            return m.group(0)  # not a DNS name (an nginx upstream), or a bare word without a port
        self.add_literal(host, "host")
        return m.group(1) + self.placeholder("host", host) + (m.group(3) or "")

    def _count(self, kind: str, replacement: str) -> str:
        self.counts[kind] += 1
        return replacement

    def secret(self, value: str) -> str:
        if not value or R.PLACEHOLDER.fullmatch(value.strip("'\"")):
            return value
        return self.placeholder("secret", value)

    def _user(self, name: str) -> str:
        if R.PLACEHOLDER.fullmatch(name) or name.lower() in GENERIC_USERS:
            return name
        self.add_literal(name, "user")  # so the bare name is caught later in this bundle too
        return self.placeholder("user", name)

    def _option(self, m: re.Match[str]) -> str:
        flag = secret_flag("--" + m.group(1))
        if flag is None:
            return m.group(0)
        values = m.group(3) if SECRET_FLAGS.get(flag) == "+" else None
        if values is None:  # one value; anything after it is not this option's
            first, _, rest = m.group(3).partition(" ")
            tail = " " + rest if rest else ""
            return f"--{m.group(1)}{m.group(2)}{self._quoted_secret(first)}{tail}"
        return f"--{m.group(1)}{m.group(2)}" + " ".join(self._quoted_secret(v) for v in values.split())

    def _listed_option(self, m: re.Match[str]) -> str:
        if secret_flag(m.group(2)) is None or "=" in m.group(2):
            return m.group(0)
        q = m.group(4)
        return f"{m.group(1)}{m.group(2)}{m.group(1)}{m.group(3)}{q}{self.secret(m.group(5))}{q}"

    def _quoted_secret(self, value: str) -> str:
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            return value[0] + self.secret(value[1:-1]) + value[0]
        return self.secret(value)

    def _named(self, m: re.Match[str]) -> str:
        if not is_secret_name(m.group("name")):
            return m.group(0)
        value = m.group("value")
        if value.startswith("[") and value.endswith("]") and not R.PLACEHOLDER.fullmatch(value):
            inner = re.sub(
                r"'([^']*)'|\"([^\"]*)\"",
                lambda q: q.group(0)[0] + self.secret(q.group(1) or q.group(2) or "") + q.group(0)[0],
                value,
            )
            new = inner
        elif value.strip("'\"").lower() in R.NOT_SECRET_VALUES:
            new = value
        else:
            new = self._quoted_secret(value)
        return m.group(0)[: m.start("value") - m.start()] + new

    def _query(self, m: re.Match[str]) -> str:
        name = m.group(2)
        if is_secret_name(name) or name.lower() in ("sig", "signature", "auth", "x-amz-signature", "x-amz-credential"):
            return f"{m.group(1)}{name}={self.secret(m.group(3))}"
        return m.group(0)

    def _sub_literals(self, text: str, only: str | None) -> str:
        if not self._literals:
            return text
        if self._literal_re is None:
            alts = sorted(self._literals, key=len, reverse=True)
            self._literal_re = re.compile("|".join(rf"(?<![\w.-]){re.escape(a)}(?![\w-])" for a in alts))
        rx = self._literal_re

        def repl(m: re.Match[str]) -> str:
            kind = self._literals.get(m.group(0), "")
            if only is not None and kind != only:
                return m.group(0)
            return self.placeholder(kind, m.group(0))

        return rx.sub(repl, text)

    def _ipv4(self, m: re.Match[str]) -> str:
        try:
            ip = ipaddress.IPv4Address(m.group(0))
        except ValueError:
            return m.group(0)
        if ip.is_loopback or ip.is_unspecified or ip.is_multicast or str(ip) == "255.255.255.255":
            return m.group(0)
        return self.placeholder("ip", str(ip))

    def _ipv6(self, m: re.Match[str]) -> str:
        if "::" not in m.group(0) and m.group(0).count(":") < 6:
            return m.group(0)  # 09:42:25 and other clock times: cheaper to skip than to parse
        try:
            ip = ipaddress.IPv6Address(m.group(0))
        except ValueError:
            return m.group(0)
        if ip.is_loopback or ip.is_unspecified:
            return m.group(0)
        return self.placeholder("ipv6", ip.compressed)

    # -- structures ---------------------------------------------------------------------------------
    def env(self, env: Mapping[str, str]) -> dict[str, str]:
        """Environment variables: a secret-named variable's value becomes a placeholder, the rest is text."""
        if not self.enabled:
            return dict(env)
        return {k: (self.secret(v) if is_secret_name(k) and v else self.text(v)) for k, v in sorted(env.items())}

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
        """JSON-shaped data: strings as text, secret-named keys' string values as secrets, other types kept."""
        if not self.enabled:
            return obj
        if isinstance(obj, Mapping):
            out = {}
            for key, value in obj.items():
                if is_secret_name(str(key)) and isinstance(value, str) and value.lower() not in R.NOT_SECRET_VALUES:
                    out[self.text(str(key))] = self.secret(value)
                else:
                    out[self.text(str(key))] = self.data(value)
            return out
        if isinstance(obj, (list, tuple)):
            return [self.data(v) for v in obj]
        if isinstance(obj, str):
            return self.text(obj)
        return obj


def scan(text: str) -> Counter[str]:
    """Secret-shaped strings still in text (what a fresh redaction would replace), counted per kind;
    placeholders and masks such as vLLM's '***' do not count. Host names need the host, so are not scanned."""
    probe = Redactor()
    probe.text(text)
    return probe.counts
