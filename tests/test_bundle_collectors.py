"""The bundle's collectors declare what they need and provide; the framework orders them and hands each its
typed products (issue 36 item 2). Real bundles are built and read back; the collectors here are small ones."""

from __future__ import annotations

import json
import tarfile

import pytest

from tqdeploy.bundle.build import COLLECTORS, build_bundle
from tqdeploy.bundle.collector import Collected, Collector, CollectorGraphError, ordered
from tqdeploy.bundle.identity import HostIdentity
from tqdeploy.bundle.products import JudgedHost, ServerVersion
from tqdeploy.errors import TQError
from tqdeploy.snapshot import HostSnapshot

NOBODY = HostIdentity()


def members(path) -> dict[str, bytes]:
    with tarfile.open(path, "r:gz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


# Two small collectors around a real product: one provides the server's /version answer, one reads it.
def greeter(ctx, inputs):
    return Collected({"greet/hello.txt": "hello\n"}, ServerVersion(b"hello"))


def shouter(ctx, inputs):
    return {"greet/shout.txt": inputs.need(ServerVersion).body.decode().upper() + "\n"}


def test_a_consumer_declared_first_runs_after_its_provider_and_gets_the_product(tmp_path):
    collectors = (
        Collector("shout", shouter, needs=(ServerVersion,)),
        Collector("greet", greeter, provides=ServerVersion),
    )
    assert [c.name for c in ordered(collectors)] == ["greet", "shout"]
    result = build_bundle(None, tmp_path / "b.tar.gz", collectors=collectors, identity=NOBODY)
    assert [c["name"] for c in result.manifest["collectors"]] == ["greet", "shout"]
    assert all(c["status"] == "ok" for c in result.manifest["collectors"]), result.manifest["collectors"]
    assert members(result.path)["greet/shout.txt"] == b"HELLO\n"


def test_the_product_collectors_keep_their_declared_order_where_needs_allow():
    names = [c.name for c in ordered(COLLECTORS)]
    assert names == [c.name for c in COLLECTORS]  # the manifest's order and placeholder numbering as before
    assert names.index("doctor") < names.index("plan") and names.index("metrics") < names.index("versions")
    by_name = {c.name: c for c in COLLECTORS}
    assert by_name["plan"].needs == (JudgedHost,) and by_name["versions"].needs == (ServerVersion,)


def test_a_cycle_is_named_before_anything_is_collected(tmp_path):
    collectors = (
        Collector("greet", greeter, needs=(JudgedHost,), provides=ServerVersion),
        Collector("shout", shouter, needs=(ServerVersion,), provides=JudgedHost),
    )
    with pytest.raises(CollectorGraphError, match=r"cycle: greet -> shout -> greet") as caught:
        build_bundle(None, tmp_path / "b.tar.gz", collectors=collectors, identity=NOBODY)
    assert isinstance(caught.value, TQError) and caught.value.remediation
    assert not (tmp_path / "b.tar.gz").exists()


def test_a_need_no_collector_provides_is_named(tmp_path):
    with pytest.raises(CollectorGraphError, match="shout needs ServerVersion, which no collector provides"):
        build_bundle(None, tmp_path / "b.tar.gz", collectors=(Collector("shout", shouter, needs=(ServerVersion,)),))
    with pytest.raises(CollectorGraphError, match="both provide ServerVersion"):
        ordered((Collector("a", greeter, provides=ServerVersion), Collector("b", greeter, provides=ServerVersion)))
    with pytest.raises(CollectorGraphError, match="two bundle collectors are named 'a'"):
        ordered((Collector("a", greeter), Collector("a", shouter)))


def test_a_failed_provider_makes_its_consumer_absent_naming_it(tmp_path):
    def broken(ctx, inputs):
        raise RuntimeError("the disk is gone")

    def optional_reader(ctx, inputs):
        got = inputs.optional(ServerVersion)
        return {"greet/optional.json": {"greeting": got.body.decode() if got else None}}

    collectors = (
        Collector("greet", broken, provides=ServerVersion),
        Collector("shout", shouter, needs=(ServerVersion,)),
        Collector("maybe", optional_reader, needs=(ServerVersion,)),
    )
    result = build_bundle(None, tmp_path / "b.tar.gz", collectors=collectors, identity=NOBODY)
    by_name = {c["name"]: c for c in result.manifest["collectors"]}
    assert by_name["greet"]["status"] == "failed"
    assert by_name["shout"]["status"] == "absent"
    assert by_name["shout"]["reason"] == "no ServerVersion: collector greet failed, provided none"
    assert by_name["maybe"]["status"] == "ok"
    assert json.loads(members(result.path)["greet/optional.json"]) == {"greeting": None}


def test_a_collector_gets_only_what_it_declared_and_provides_only_its_declared_type(tmp_path):
    def undeclared(ctx, inputs):
        return {"greet/x.txt": inputs.need(ServerVersion).body}

    def liar(ctx, inputs):
        return Collected({"greet/liar.txt": "x"}, JudgedHost(HostSnapshot()))

    collectors = (
        Collector("greet", greeter, provides=ServerVersion),
        Collector("undeclared", undeclared),
        Collector("liar", liar, provides=ServerVersion),
    )
    with pytest.raises(CollectorGraphError):  # two providers of ServerVersion
        ordered(collectors)
    collectors = (collectors[0], collectors[1], Collector("liar", liar))
    result = build_bundle(None, tmp_path / "b.tar.gz", collectors=collectors, identity=NOBODY)
    by_name = {c["name"]: c for c in result.manifest["collectors"]}
    assert by_name["undeclared"]["status"] == "failed"
    assert "reads ServerVersion without declaring it in needs" in by_name["undeclared"]["error"]
    assert by_name["liar"] == by_name["liar"] | {"status": "failed", "files": []}
    assert "provided a JudgedHost; it declares nothing" in by_name["liar"]["error"]
    assert "greet/liar.txt" not in members(result.path)
