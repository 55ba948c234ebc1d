"""The one redaction of tqdeploy: secrets and identifying names out of text, mappings, argv and JSON data.

Every output that may leave the host (the support bundle first, other commands later) goes through one
``Redactor``. Replacements are placeholders such as ``[ip-1]``: deterministic (numbered in the order they
are met, so the same collectors in the same order give the same bundle) and consistent (one original, one
placeholder, in every file). ``mapping()`` says what each placeholder stands for and is meant to be kept
apart from what is shared; for secrets it holds only a sha256 fingerprint, never the value.

A value found secret once is a known literal from then on: it and its encodings (URL, base64, hex, JSON
escapes) are replaced wherever they appear; ``relit()`` runs that replacement again over text redacted
before the value was known. Host identity follows sos clean (host names under the host's domains,
users, addresses); tqdeploy.redact_names holds those rules, redact_rules the patterns.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tqdeploy import redact_rules as R
from tqdeploy.redact_keys import decode_blob, drop_private_keys, encodings
from tqdeploy.redact_names import NameRules
from tqdeploy.redact_rules import GENERIC_USERS, SECRET_FLAGS, is_secret_name, secret_flag

__all__ = ["GENERIC_USERS", "SECRET_FLAGS", "Redactor", "is_secret_name", "scan", "secret_flag"]
MIN_SECRET = 4  # shorter values are words, not secrets worth hunting everywhere
LINE_WISE_FROM = 8192  # longer texts: the secret rules run only on the lines a trigger found


def _find_all(text: str, needle: str, out: list[int]) -> None:
    pos = text.find(needle)
    while pos >= 0:
        out.append(pos)
        pos = text.find(needle, pos + 1)


def _trigger_hits(text: str, low: str) -> list[int]:
    """Offsets where a secret rule may match: plain substrings found with str.find (C speed), so the rules
    themselves run only on the few lines that have one."""
    hits: list[int] = []
    for needle in R.SECRET_LITERALS:
        _find_all(low, needle, hits)
    for needle in R.TOKEN_LITERALS:
        _find_all(text, needle, hits)
    for word in R.NAMED_WORDS:
        found: list[int] = []
        _find_all(low, word, found)
        hits.extend(p for p in found if R.NAME_TAIL.match(low, p + len(word)))
    return sorted(hits)


def _trigger_lines(text: str, low: str) -> list[tuple[int, int]]:
    """Spans of whole lines that hold a trigger, each with the line after it (a value after `\\` or on the
    next line of a list); merged, in order. Each line is searched back to its start once, so this stays
    linear on one huge line too."""
    spans: list[tuple[int, int]] = []
    end = -1
    for pos in _trigger_hits(text, low):
        if pos < end:
            continue
        start = max(text.rfind("\n", 0, pos) + 1, end, 0)
        stop = text.find("\n", pos)
        stop = len(text) if stop < 0 else text.find("\n", stop + 1)
        stop = len(text) if stop < 0 else stop + 1
        if spans and start <= spans[-1][1]:
            spans[-1] = (spans[-1][0], stop)
        else:
            spans.append((start, stop))
        end = stop
    return spans


class Redactor(NameRules):
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

    def relit(self, text: str) -> str:
        """Known values (and their encodings) once more: for text redacted before they were known."""
        return self._sub_literals(text, None) if self.enabled else text

    def _has_token(self, text: str) -> bool:
        return any(p in text for p in R.TOKEN_LITERALS)

    def _secrets(self, text: str) -> str:
        text, keys = drop_private_keys(text)
        if keys:
            self.counts["private_key"] += keys
        text = self._sub_literals(text, R.SECRET_KINDS)
        low = text.lower()
        if len(text) <= LINE_WISE_FROM or len(low) != len(text):
            return self._secret_rules(text, low)
        out, pos = [], 0
        for start, end in _trigger_lines(text, low):
            out.append(text[pos:start])
            out.append(self._secret_rules(text[start:end], low[start:end]))
            pos = end
        out.append(text[pos:])
        return "".join(out)

    def _secret_rules(self, text: str, low: str) -> str:
        """Every secret rule over a text (a whole short text, or the lines of a long one that may hold one)."""
        if "://" in text:
            text = R.URL_USERINFO.sub(lambda m: m.group(1) + self._userinfo(m.group(2)) + "@", text)
            text = R.WEBHOOK.sub(lambda m: m.group(1) + self.secret(m.group(2)), text)
        if self._has_token(text):
            text = R.TOKENS.sub(lambda m: self.secret(m.group(0)), text)
        if "bearer" in low or "basic" in low:
            text = R.AUTH_SCHEME.sub(self._auth_scheme, text)
        if any(h in low for h in ("auth", "api-key", "token")):
            text = R.HEADER.sub(self._header, text)
        text = self._flags(text, low)
        if "=" in text or ":" in text:
            text = R.NAMED.sub(self._named, text)
        if "=" in text and ("?" in text or "&" in text):
            text = R.QUERY.sub(self._query, text)
        return R.BASE64_BLOB.sub(self._blob, text)

    def _flags(self, text: str, low: str) -> str:
        if "--" in text:
            text = R.OPTION.sub(self._option, text)
            text = R.LISTED_OPTION.sub(self._listed_option, text)
        if "login" in low:
            text = R.REGISTRY_LOGIN.sub(lambda m: self._group_secret(m, "value"), text)
        if "-u" in text or "-U" in text:
            text = R.USER_PASSWORD.sub(self._user_password, text)
        if "passw" in low or "account" in low:
            text = R.NETRC.sub(lambda m: self._group_secret(m, "value"), text)
        return text

    def _group_secret(self, m: re.Match[str], group: str) -> str:
        value = m.group(group)
        if R.is_reference(value) or R.PLACEHOLDER.search(value):
            return m.group(0)
        start, end = m.start(group) - m.start(), m.end(group) - m.start()
        return m.group(0)[:start] + self._quoted_secret(value) + m.group(0)[end:]

    def _userinfo(self, info: str) -> str:
        user, sep, password = info.partition(":")
        if not sep:  # a token as user name (https://TOKEN@host)
            return self.secret(info) if len(info) >= 8 and not R.PLACEHOLDER.fullmatch(info) else info
        self.add_literal(password, "secret")  # its encodings elsewhere too; the user name goes with it
        return self.secret(info)

    def _auth_scheme(self, m: re.Match[str]) -> str:
        value = m.group(3)
        if not (re.search("[0-9+/=]", value) or (re.search("[a-z]", value) and re.search("[A-Z]", value))):
            return m.group(0)  # "basic functionality": a word, not a credential
        return m.group(1) + m.group(2) + self.secret(value)

    def _header(self, m: re.Match[str]) -> str:
        value = m.group(4)
        if R.PLACEHOLDER.search(value) or R.is_reference(value) or R.is_prose(value) or len(value) < 4:
            return m.group(0)
        return m.group(1) + m.group(2) + m.group(3) + self.secret(value)

    def _count(self, kind: str, replacement: str) -> str:
        self.counts[kind] += 1
        return replacement

    def secret(self, value: str) -> str:
        if not value or R.PLACEHOLDER.fullmatch(value.strip("'\"")) or value.lower() in R.NOT_SECRET_VALUES:
            return value  # null, true, absent: what a field holds when there is no secret
        self.add_literal(value, "secret")
        return self.placeholder("secret", value)

    def _option(self, m: re.Match[str]) -> str:
        flag = secret_flag("--" + m.group("flag"))
        value = m.group("value")
        if flag is None or R.is_reference(value) or R.is_prose(value) or R.PLACEHOLDER.fullmatch(value.strip("'\"")):
            return m.group(0)
        out = f"--{m.group('flag')}{m.group('sep')}{self._quoted_secret(value)}"
        more = m.group("more")
        if SECRET_FLAGS.get(flag) != "+" or not more:
            return out + more
        parts = re.split(r"([ \t]+)", more)  # ['', ' ', 'K2', ' ', 'K3']: values until prose starts
        for i in range(2, len(parts), 2):
            if R.is_prose(parts[i]) or R.is_reference(parts[i]):
                return out + "".join(parts[i - 1 :])
            out += parts[i - 1] + self.secret(parts[i])
        return out

    def _listed_option(self, m: re.Match[str]) -> str:
        value = m.group("value")
        if secret_flag(m.group("flag")) is None or "=" in m.group("flag") or R.is_reference(value):
            return m.group(0)
        cut = m.start("value") - m.start()
        return m.group(0)[:cut] + self.secret(value) + m.group(0)[cut + len(value) :]

    def _user_password(self, m: re.Match[str]) -> str:
        user, pw = m.group("user"), m.group("pw")
        if (user.isdigit() and pw.isdigit()) or R.is_reference(pw) or R.PLACEHOLDER.fullmatch(pw):
            return m.group(0)  # -u 1000:1000 is a uid:gid
        cut = m.start("pw") - m.start()
        return m.group(0)[:cut] + self.secret(pw) + m.group(0)[cut + len(pw) :]

    def _quoted_secret(self, value: str) -> str:
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            inner = value[1:-1]
            if not inner or R.is_reference(inner):
                return value
            return value[0] + self.secret(inner) + value[0]
        return self.secret(value)

    def _named(self, m: re.Match[str]) -> str:
        name = m.group("name")
        if not is_secret_name(name):
            return m.group(0)
        if not m.group("q") and name.lower() in R.BARE_NAMES and not R.at_line_start(m.string, m.start()):
            return m.group(0)  # `an API key: see below` is prose; `password: x` at a line's start is not
        value = m.group("value")
        if value.startswith("[") and value.endswith("]") and not R.PLACEHOLDER.fullmatch(value):
            new = re.sub(
                r"'([^']*)'|\"([^\"]*)\"",
                lambda q: q.group(0)[0] + self.secret(q.group(1) or q.group(2) or "") + q.group(0)[0],
                value,
            )
        elif self._not_a_value(value):
            new = value
        elif value.startswith('\\"') and value.endswith('\\"') and len(value) > 4:
            new = '\\"' + self.secret(value[2:-2]) + '\\"'
        else:
            new = self._quoted_secret(value)
        return m.group(0)[: m.start("value") - m.start()] + new

    @staticmethod
    def _not_a_value(value: str) -> bool:
        bare = value.strip("'\"\\")
        return (
            bare.lower() in R.NOT_SECRET_VALUES
            or R.is_reference(value)
            or R.is_prose(value)
            or bool(R.PLACEHOLDER.fullmatch(bare))
            or bare.startswith(("{", "`"))
            or is_secret_name(bare)  # `key: api-key` in a secretKeyRef names the key, it is not one
        )

    def _query(self, m: re.Match[str]) -> str:
        name = m.group(2)
        if (is_secret_name(name) or name.lower() in R.QUERY_SECRET_NAMES) and not R.PLACEHOLDER.search(m.group(3)):
            return f"{m.group(1)}{name}={self.secret(m.group(3))}"
        return m.group(0)

    def _blob(self, m: re.Match[str]) -> str:
        """A base64 word that decodes to a credential (a Docker auth's user:password, a token)."""
        decoded = decode_blob(m.group(0))
        if decoded is None:
            return m.group(0)
        if decoded in self._literals and self._literals[decoded][0] in R.SECRET_KINDS:
            kind, original = self._literals[decoded]
            return self.placeholder(kind, original)
        user_pw = re.fullmatch(r"[^:\s]{1,128}:\S{3,}", decoded)
        if user_pw or self._has_token(decoded) and R.TOKENS.search(decoded) or self._known_in(decoded):
            return self.secret(m.group(0))
        return m.group(0)

    def _known_in(self, text: str) -> bool:
        return any(kind in R.SECRET_KINDS and form in text for form, (kind, _) in self._literals.items())

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
        return rf"(?<![\w-]){re.escape(form)}(?![\w-])"

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


def scan(text: str, redactor: Redactor | None = None) -> Counter[str]:
    """Secret-shaped strings still in text (what a fresh redaction would replace), counted per kind;
    placeholders and masks such as vLLM's '***' do not count. With a redactor that knows the host (names,
    users, domains), identifying names count too; without one only secrets and addresses do."""
    probe = redactor or Redactor()
    before = Counter(probe.counts)
    probe.text(text)
    return probe.counts - before
