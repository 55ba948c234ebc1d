"""The secret half of tqdeploy.redact.Redactor: credentials in assignments, flags, headers, URLs, token
formats and encoded blobs (the patterns are in redact.rules, private keys in redact.keys).

Long texts are not searched whole by each rule: plain-substring triggers (str.find, C speed) pick the lines
that may hold a secret, and only those go through the rules, so a 4 MiB log costs a few scans.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from tqdeploy.net.urls import URL_USERINFO  # user:password@ in a URL: net's one pattern
from tqdeploy.redact import rules as R
from tqdeploy.redact.keys import decode_blob, drop_private_keys
from tqdeploy.redact.rules import SECRET_FLAGS, is_secret_name, secret_flag

if TYPE_CHECKING:
    from collections import Counter

LINE_WISE_FROM = 8192  # longer texts: the secret rules run only on the lines a trigger found


# A name that counts or measures (KEY_MAX_BYTES, TOKEN_LIMIT, SECRET_TTL_S): a plain number there is a size, not a
# secret (rendered launch_vllm.py's `KEY_MAX_BYTES = 4096` was redacted, so the bundle's copy differed from disk).
_QUANTITY_NAME = re.compile(
    r"(?:^|_)(?:MAX|MIN|BYTES|SIZE|LEN|LENGTH|COUNT|LIMIT|TIMEOUT|TTL|SECONDS|S|MS)(?:_|$)", re.I
)


_CODE_CALL = re.compile(r"[A-Za-z_][\w.]*\(")


def _a_quantity(name: str, value: str) -> bool:
    """A number that counts or measures: under a name that says so, or any integer of at most 4 digits (an
    exit code, a port part, a count: `EXIT_KEY = 67` in launch_vllm.py). Longer bare numbers stay secrets."""
    bare = value.strip("'\"")
    if not bare.replace(".", "", 1).isdigit():
        return False
    return bool(_QUANTITY_NAME.search(name)) or (bare.isdigit() and len(bare) <= 4)


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
    for trigger in R.NAMED_TRIGGERS:
        hits.extend(m.start() for m in trigger.finditer(low))
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


class SecretRules:
    """Mixed into Redactor, which supplies secret(), placeholder(), counts and the known literals."""

    counts: Counter[str]
    _literals: dict[str, tuple[str, str]]

    def secret(self, value: str) -> str:
        raise NotImplementedError

    def placeholder(self, kind: str, original: str) -> str:
        raise NotImplementedError

    def add_literal(self, value: str, kind: str) -> None:
        raise NotImplementedError

    def _sub_literals(self, text: str, kinds: frozenset[str] | None) -> str:
        raise NotImplementedError

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
            text = URL_USERINFO.sub(lambda m: m.group(1) + self._userinfo(m.group(2)) + "@", text)
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
        sep = m.group("sep")
        prose_like = ":" in sep or sep != sep.strip()  # `key: x`, `token = x`; `token=x` and `k="v"` are data
        bare = not m.group("q") and name.lower() in R.BARE_NAMES
        if bare and prose_like and not R.at_line_start(m.string, m.start()):
            return m.group(0)  # `an API key: see below` is prose; `password: x` at a line's start is not
        value = m.group("value")
        if value.startswith("[") and value.endswith("]") and not R.PLACEHOLDER.fullmatch(value):
            new = re.sub(
                r"'([^']*)'|\"([^\"]*)\"",
                lambda q: q.group(0)[0] + self.secret(q.group(1) or q.group(2) or "") + q.group(0)[0],
                value,
            )
        elif self._not_a_value(value) or _a_quantity(name, value):
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
            or bool(_CODE_CALL.match(bare))  # `key = read_key(path)`, `key = data.decode(...)`: code, not a value
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
