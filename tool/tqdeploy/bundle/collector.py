"""What a collector is, and the order the bundle runs them in (sos report's plugins, made explicit).

A collector declares what it needs (product types, frozen dataclasses of bundle/products.py) and what it
provides (at most one product type). The framework sorts the collectors so that every provider runs before
the collectors that need its product, and hands each collector exactly the products it declared: no shared
scratch space whose order of writes the collectors silently depend on. The sort keeps the declared order
wherever the needs allow it, so the bundle's placeholders are numbered the same run after run.

A provider that did not finish (absent, failed, timed out) provides nothing; a collector that needs its
product is then told so through Inputs.need (Absent, naming the provider) or reads None through
Inputs.optional and does without.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from tqdeploy.bundle.context import Absent, BundleContext
from tqdeploy.errors import TQError

ProductT = TypeVar("ProductT")
# One archive member's content: text, bytes read from disk, or data a collector built (written as JSON).
Content = object
Files = Mapping[str, Content]


@dataclass(frozen=True)
class Collected:
    """A collector's files for the archive, and the product it declared it provides (None: it has none)."""

    files: Files
    product: object | None = None


class UndeclaredInput(Exception):
    """A collector read a product it did not declare: its bug, reported as its failure in the manifest."""


class Inputs:
    """The products one collector declared it needs, and nothing else; what a failed provider left out is
    named with the reason, so the collector's own absence says where it came from."""

    def __init__(self, collector: str, products: Mapping[type, object], missing: Mapping[type, str]) -> None:
        self._collector = collector
        self._products = dict(products)
        self._missing = dict(missing)

    def _declared(self, kind: type) -> None:
        if kind not in self._products and kind not in self._missing:
            raise UndeclaredInput(f"collector {self._collector} reads {kind.__name__} without declaring it in needs")

    def optional(self, kind: type[ProductT]) -> ProductT | None:
        self._declared(kind)
        value = self._products.get(kind)
        return value if isinstance(value, kind) else None

    def need(self, kind: type[ProductT]) -> ProductT:
        value = self.optional(kind)
        if value is None:
            raise Absent(f"no {kind.__name__}: {self._missing.get(kind, 'not provided')}")
        return value


CollectorRun = Callable[[BundleContext, Inputs], Files | Collected]


@dataclass(frozen=True)
class Collector:
    """One entry of the bundle's collector list: its name in the manifest, the function, the product types it
    needs (handed over through Inputs) and the one it provides (returned in Collected)."""

    name: str
    run: CollectorRun
    needs: tuple[type, ...] = ()
    provides: type | None = None


class CollectorGraphError(TQError):
    """The collectors cannot be ordered: a need that no collector provides, a cycle, a product provided twice.
    A programming error of the collector set, raised before anything is collected."""


def _providers(collectors: Iterable[Collector]) -> dict[type, str]:
    providers: dict[type, str] = {}
    names: set[str] = set()
    for c in collectors:
        if c.name in names:
            raise CollectorGraphError(f"two bundle collectors are named {c.name!r}", "give each collector its own name")
        names.add(c.name)
        if c.provides is not None:
            if c.provides in providers:
                raise CollectorGraphError(
                    f"bundle collectors {providers[c.provides]} and {c.name} both provide {c.provides.__name__}",
                    "let one collector provide each product",
                )
            providers[c.provides] = c.name
    return providers


def _cycle(waiting: dict[str, set[str]]) -> list[str]:
    """One cycle among the collectors that never became ready (each waits on another of them)."""
    start = min(waiting)
    path = [start]
    while True:
        nxt = min(waiting[path[-1]])
        if nxt in path:
            return [*path[path.index(nxt) :], nxt]
        path.append(nxt)


def ordered(collectors: Iterable[Collector]) -> list[Collector]:
    """The collectors with every provider before its consumers (Kahn's sort, declared order kept where free)."""
    given = list(collectors)
    providers = _providers(given)
    after: dict[str, set[str]] = {}
    for c in given:
        for kind in c.needs:
            if kind not in providers:
                raise CollectorGraphError(
                    f"bundle collector {c.name} needs {kind.__name__}, which no collector provides",
                    f"add the collector that provides {kind.__name__}, or drop {c.name}",
                )
        after[c.name] = {providers[kind] for kind in c.needs}
    done: set[str] = set()
    out: list[Collector] = []
    while len(out) < len(given):
        ready = next((c for c in given if c.name not in done and after[c.name] <= done), None)
        if ready is None:
            waiting = {name: deps - done for name, deps in after.items() if name not in done}
            raise CollectorGraphError(
                "bundle collectors need each other in a cycle: " + " -> ".join(_cycle(waiting)),
                "let one of them do without the other's product",
            )
        done.add(ready.name)
        out.append(ready)
    return out
