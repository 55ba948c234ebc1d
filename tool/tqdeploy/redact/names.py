"""Host identity out of text, the way sos clean does it: host names (the host's short and full name, every
name under its domains, any other name not on the public allow-list), users and their home paths, MAC and
IPoIB hardware addresses, IPv4/IPv6 addresses (loopback and unspecified kept).

The allow-list of public names (hubs, mirrors, registries people publish) is data:
checks/public-hosts.toml. Top-level domains that make a dotted word a host name (and file extensions that
make it a file name instead) are listed there too.
"""

from __future__ import annotations

import ipaddress
import re
import tomllib
from collections.abc import Iterable
from functools import lru_cache
from typing import TYPE_CHECKING

from tqdeploy.redact import rules as R
from tqdeploy.resources import data_dir

if TYPE_CHECKING:
    from collections import Counter


@lru_cache(maxsize=1)
def public_names() -> tuple[frozenset[str], frozenset[str], frozenset[str], frozenset[str]]:
    """(public hosts, reserved suffixes, top-level domains, file extensions) from checks/public-hosts.toml."""
    data = tomllib.loads((data_dir("checks") / "public-hosts.toml").read_text(encoding="utf-8"))
    return (
        frozenset(h.lower() for h in data["public"]["hosts"]),
        frozenset(s.lower() for s in data["reserved"]["suffixes"]),
        frozenset(t.lower() for t in data["names"]["tlds"]),
        frozenset(e.lower() for e in data["names"]["file_extensions"]),
    )


class NameRules:
    """The identity half of tqdeploy.redact.Redactor (it supplies placeholder, add_literal, _sub_literals)."""

    counts: Counter[str]
    _literals: dict[str, tuple[str, str]]

    def __init__(self, domains: Iterable[str] = (), public_hosts: Iterable[str] | None = None) -> None:
        public, self._reserved, self._tlds, self._file_ext = public_names()
        self._public = frozenset(h.lower() for h in public_hosts) if public_hosts is not None else public
        self._domains: set[str] = set()
        self._ip_seen: dict[str, str] = {}  # address as written -> its placeholder (or itself: loopback)
        for d in domains:
            self.add_domain(d)

    # supplied by Redactor
    def placeholder(self, kind: str, original: str) -> str:
        raise NotImplementedError

    def add_literal(self, value: str, kind: str) -> None:
        raise NotImplementedError

    def _sub_literals(self, text: str, kinds: frozenset[str] | None) -> str:
        raise NotImplementedError

    # -- what is whose ------------------------------------------------------------------------------
    def add_domain(self, domain: str) -> None:
        domain = domain.strip().strip(".").lower()
        if domain and "." in domain and not self.is_public(domain) or domain and self._is_internal_tld(domain):
            self._domains.add(domain)
            self.add_literal(domain, "domain")

    def add_host(self, name: str) -> None:
        """A name of this host: its short name everywhere, its full name, and its domain (sos clean)."""
        name = name.strip().strip(".")
        if not name or name.lower() == "localhost":
            return
        self.add_literal(name, "host")
        short, _, domain = name.partition(".")
        if domain:
            self.add_literal(short, "host")
            self.add_domain(domain)

    def _is_internal_tld(self, domain: str) -> bool:
        return "." not in domain and domain in ("internal", "local", "lan", "corp", "intranet", "home")

    def is_public(self, host: str) -> bool:
        low = host.lower().rstrip(".")
        suffixes = [low[i + 1 :] for i, c in enumerate(low) if c == "."]
        if any(s in self._reserved for s in [low, *suffixes]):
            return True  # example.com, *.example, *.test: names that identify nobody (RFC 2606, RFC 6761)
        return low in self._public or any(s in self._public for s in suffixes)

    def _is_host_name(self, name: str) -> bool:
        low = name.lower()
        last = low.rsplit(".", 1)[-1]
        if any(low == d or low.endswith("." + d) for d in self._domains):
            return True
        return last in self._tlds and last not in self._file_ext and not self.is_public(low)

    # -- text ---------------------------------------------------------------------------------------
    def _names(self, text: str) -> str:
        """Host names, users, MAC and IP addresses (after the secrets, so a URL's credentials are gone)."""
        if "://" in text:
            text = R.URL_HOST.sub(self._url_host, text)
        self._learn_users(text)
        text = self._sub_literals(text, frozenset({"host", "user", "domain", "keyword"}))
        if "[host-" in text:
            text = R.AFTER_HOST.sub(self._after_host, text)
        if "/home/" in text or "/Users/" in text or "\\Users\\" in text:
            text = R.HOME.sub(lambda m: m.group(1) + self._user(m.group(2)), text)
        if "." in text or ":" in text:
            text = R.ADDRESS.sub(self._address, text)
        return text

    def _address(self, m: re.Match[str]) -> str:
        """One word with a dot or colon: an IPv4/IPv6 (after an interface prefix such as `ib0:` too), a MAC
        or IPoIB address, a host name, host:port; anything else (times, versions, file names) as written."""
        word = m.group(0)
        core = word.rstrip(".:-%_")
        if not core:
            return word
        before = m.string[max(0, m.start() - 24) : m.start()]
        if R.IPV4.fullmatch(core):  # the common case, without the general path
            return self._ipv4(core, before) + word[len(core) :]
        after = m.string[m.end() : m.end() + 1]
        return self._classify(core, before, after) + word[len(core) :]

    def _classify(self, core: str, before: str, after: str) -> str:
        if R.MAC.fullmatch(core):
            return self.placeholder("mac", core.lower())
        if ":" in core:
            v6 = self._ipv6(core)
            if v6 is not None:
                return v6
            head, _, rest = core.partition(":")
            v6 = self._ipv6(rest) if "::" in rest or rest.count(":") >= 5 else None
            if v6 is not None:  # ib0:fe80::1, inet6:2001:db8::1
                return head + ":" + v6
            return ":".join(self._dotted(p, before if i == 0 else "", after) for i, p in enumerate(core.split(":")))
        return self._dotted(core, before, after)

    def _dotted(self, part: str, before: str, after: str) -> str:
        if "." not in part:
            return part
        if R.IPV4.fullmatch(part):
            return self._ipv4(part, before)
        if after == "(" or "_" in part or not R.DNS_NAME.fullmatch(part):
            return part  # logger.info(, api_utils.py, 0.32.0
        if before.endswith("/") and not before.endswith("//"):
            return part  # a path component, not a host
        return self._host(part) if self._is_host_name(part) else part

    def _learn_users(self, text: str) -> None:
        """A user named by a home path (/home/NAME) is replaced everywhere in this bundle."""
        if "/home/" in text or "/Users/" in text or "\\Users\\" in text:
            for home in R.HOME.finditer(text):
                name = home.group(2)
                if name.lower() not in R.GENERIC_USERS and not R.PLACEHOLDER.fullmatch(name):
                    self.add_literal(name, "user")

    def _url_host(self, m: re.Match[str]) -> str:
        host = m.group(2)
        low = host.lower().rstrip(".")
        if R.PLACEHOLDER.fullmatch(host) or low == "localhost" or re.fullmatch(r"[\d.]+|\[[0-9a-f:.%\w]*\]", low):
            return m.group(0)  # IPs are handled (and loopback kept) by the IP rules
        if self.is_public(low):
            return m.group(0)
        if "_" in host or ("." not in host and not m.group(3)):
            return m.group(0)  # not a DNS name (an nginx upstream), or a bare word without a port
        return m.group(1) + self._host(host) + (m.group(3) or "")

    def _host(self, name: str) -> str:
        low = name.lower().rstrip(".")
        if low in self._domains:
            return self.placeholder("domain", low)
        self.add_literal(name, "host")
        short, _, domain = low.partition(".")
        if domain and self._literals.get(short, ("", ""))[0] == "host":  # this host's short name: its domain too
            self.add_domain(domain)
        if domain and any(domain == d or domain.endswith("." + d) for d in self._domains):
            self.add_literal(short, "host") if len(short) >= 3 and not short.isdigit() else None
        return self.placeholder("host", name)

    def _after_host(self, m: re.Match[str]) -> str:
        domain = m.group(2)[1:]
        if self.is_public(domain) or domain.lower().rsplit(".", 1)[-1] in self._file_ext:
            return m.group(0)
        return m.group(1) + "." + self.placeholder("domain", domain.lower())

    def _user(self, name: str) -> str:
        if R.PLACEHOLDER.fullmatch(name) or name.lower() in R.GENERIC_USERS:
            return name
        self.add_literal(name, "user")
        return self.placeholder("user", name)

    def _ipv4(self, text: str, before: str) -> str:
        known = self._ip_seen.get(text)
        if known is not None:  # an address met before: its placeholder, unless this one is a version
            if known == text or R.looks_like_version(before):
                return text
            self.counts["ip"] += 1
            return known
        octets = [int(o) for o in text.split(".")]
        if max(octets) > 255 or any(o != "0" and o.startswith("0") for o in text.split(".")):
            return text
        if octets[0] == 127 or octets[0] == 0 or 224 <= octets[0] <= 239 or text == "255.255.255.255":
            self._ip_seen[text] = text
            return text  # loopback, unspecified, multicast, broadcast: the same on every host
        if R.looks_like_version(before):
            return text  # torch==2.13.0.1, cuda-12.4.1.0: a version, not an address
        self._ip_seen[text] = self.placeholder("ip", ".".join(map(str, octets)))
        return self._ip_seen[text]

    def _ipv6(self, text: str) -> str | None:
        """The placeholder of an IPv6 address (its %zone kept), the address itself for loopback and
        unspecified, None for what is not one (09:42:25 and other clock times)."""
        addr, pct, zone = text.partition("%")
        if "::" not in addr and addr.count(":") < 6:
            return None
        try:
            ip = ipaddress.IPv6Address(addr)
        except ValueError:
            return None
        if ip.is_loopback or ip.is_unspecified:
            return text
        return self.placeholder("ipv6", ip.compressed) + pct + zone
