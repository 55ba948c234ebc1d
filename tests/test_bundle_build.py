"""tqdeploy bundle on a build dir seeded with secrets everywhere they can occur: none of them in any byte of
the archive, placeholders consistent across files, manifest hashes that verify, a doctor replay with the same
verdicts, and collectors that fail or overrun recorded without stopping the bundle."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import re
import socket
import tarfile
import threading
import time

import pytest

NOW = time.time()
IP, IPV6, MAC = "10.23.45.67", "2001:db8:85a3::8a2e:370:7334", "3c:22:fb:12:34:56"
HOST = "gpu-zqseedhost-17.zqseedcorp.internal"
KEY_FILE_KEY = "ZQSEEDkeyfile0004"
ENV = {
    "HF_TOKEN": "hf_ZQSEEDenvtoken0010abcdefgh",
    "VLLM_API_KEY": "ZQSEEDenvapikey0011",
    "HF_ENDPOINT": "https://ZQSEEDenvuser:ZQSEEDenvpass@mirror.zqseedcorp.internal/",
    "TQ_DB_PASSWORD": "ZQSEEDenvpw0012",
}
LOG_LINES = [
    # vLLM 0.32's real line shape (tests/fixtures/vllm-logs/cpu-vllm-0.32.0/tiny-warm.log) with the values an
    # older vLLM printed unmasked.
    "(APIServer pid=7152) INFO 12-01 08:05:03 [api_utils.py:286] non-default args: {'port': 8000, "
    "'model': '/home/zqseeduser/models/tiny', 'api_key': ['ZQSEEDkeyfile0004', 'sk-ZQSEEDlogkey0005abcdefgh'], "
    "'hf_token': 'hf_ZQSEEDlogtoken0006abcdefgh', 'max_model_len': 512}",
    f"(APIServer pid=7152) INFO 12-01 08:05:04 [launcher.py:40] peer {IP} via {IPV6} mac {MAC} on {HOST}",
    "(APIServer pid=7152) INFO 12-01 08:05:05 [x.py:1] headers Authorization: Bearer ZQSEEDbearer0007xyz",
    "(APIServer pid=7152) INFO 12-01 08:05:05 [x.py:1] headers X-Api-Key: ZQSEEDxapikey0008",
    f"(APIServer pid=7152) INFO 12-01 08:05:06 [x.py:1] the key in prose: {KEY_FILE_KEY} and ZQSEEDenvapikey0011",
    "(APIServer pid=7152) INFO 12-01 08:05:06 [x.py:1] cmd: vllm serve m --api_key=ZQSEEDcmd0013 --api-k ZQSEEDcmd0014",
    "-----BEGIN OPENSSH PRIVATE KEY-----",
    "ZQSEEDprivatekeymaterial",
    "-----END OPENSSH PRIVATE KEY-----",
]


def make_build(root, state_extra=None):
    from tqdeploy.cli import main

    build = root / "build"
    assert main(["build", "--embedded", "tiny-cpu-demo", "--out", str(build)]) == 0
    with (build / "tqdeploy.toml").open("a") as fh:
        fh.write("# mirror https://ZQSEEDurluser:ZQSEEDurlpass@mirror.zqseedcorp.internal:8443/hf?token=ZQSEEDq1\n")
        fh.write("# extra_args = ['--api-key', 'ZQSEEDspeckey0001']\n")
    with (build / "serve.sh").open("a") as fh:
        fh.write("#   --api_key=ZQSEEDservekey0002 --api-k ZQSEEDservekey0003\n")
    key_file = root / "api-key"
    key_file.write_text(KEY_FILE_KEY + "\n")
    logs = build / ".tqdeploy" / "logs"
    logs.mkdir(parents=True)
    old = [f"{NOW - 7200:.3f}|(APIServer pid=7152) INFO 12-01 06:05:00 [x.py:1] an old line OLDMARK"]
    new = [f"{NOW - 5 + i * 0.001:.3f}|{line}" for i, line in enumerate(LOG_LINES)]
    (logs / "server.log").write_text("\n".join(old + new) + "\n")
    state = {
        "schema": "tqdeploy.state/1",
        "runtime": "process",
        "pid": None,
        "host": HOST,
        "port": 8000,
        "base_url": f"http://{IP}:8000",
        "served_model_name": "tiny",
        "log_path": str(logs / "server.log"),
        "phase": "failed",
        "ready": False,
        "api_key_file": str(key_file),
        "restarts": 1,
        "last_error": f"upstream {IP} refused (https://{HOST}/v1?token=ZQSEEDquery0009)",
        **(state_extra or {}),
    }
    (build / ".tqdeploy" / "state.json").write_text(json.dumps(state))
    return build


def members(path) -> dict[str, bytes]:
    with tarfile.open(path, "r:gz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


def assert_no_seed(raw: bytes) -> None:
    low = raw.lower()
    for seed in (b"zqseed", IP.encode(), b"2001:db8:85a3", MAC.encode()):
        assert seed not in low, seed


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    from tqdeploy.bundle.build import build_bundle

    root = tmp_path_factory.mktemp("seeded")
    with pytest.MonkeyPatch.context() as mp:
        for k, v in ENV.items():
            mp.setenv(k, v)
        build = make_build(root)
        t0 = time.perf_counter()
        result = build_bundle(build, root / "bundle.tar.gz")
        seconds = time.perf_counter() - t0
    return result, seconds, root


def test_no_seed_in_any_byte_of_the_archive(seeded):
    result, seconds, _ = seeded
    raw = gzip.decompress(result.path.read_bytes())  # the whole tar stream: names, headers, contents
    assert_no_seed(raw)
    host = socket.gethostname()
    if len(host) >= 3:
        assert host.encode() not in raw
    files = members(result.path)
    assert {"logs/server.log", "runtime/state.json", "build/tqdeploy.toml", "env/env.json"} <= set(files)
    assert b"non-default args: {" in files["logs/server.log"] and b"[private-key dropped]" in files["logs/server.log"]
    counts = result.manifest["redactions"]
    assert counts["secret"] >= 15 and counts["ip"] >= 2 and counts["private_key"] == 1 and counts["host"] >= 2
    assert seconds < 10


def test_placeholders_are_consistent_across_files_and_mapping_stays_outside(seeded):
    result, _, root = seeded
    mapping_file = result.mapping_path
    assert mapping_file == root / "bundle.mapping.json" and mapping_file.stat().st_mode & 0o777 == 0o600
    mapping = json.loads(mapping_file.read_text())["mapping"]
    ip_ph = {v: k for k, v in mapping["ip"].items()}[IP]
    host_ph = {v: k for k, v in mapping["host"].items()}[HOST]
    files = members(result.path)
    for name in ("logs/server.log", "runtime/state.json"):
        assert ip_ph.encode() in files[name] and host_ph.encode() in files[name], name
    assert not any("mapping" in n for n in files)
    # the mapping names hosts and IPs for the sender, never a secret: those are fingerprints only
    text = mapping_file.read_text()
    assert "ZQSEED" not in text and all(v.startswith("sha256:") for v in mapping["secret"].values())


def test_manifest_lists_every_file_with_a_verifying_hash_and_each_collector(seeded):
    result, _, _ = seeded
    with tarfile.open(result.path, "r:gz") as tar:
        names = [m.name for m in tar.getmembers()]
    assert names[0] == "manifest.json" and names[1:] == sorted(names[1:])  # deterministic order
    files = members(result.path)
    manifest = json.loads(files.pop("manifest.json"))
    assert set(manifest["files"]) == set(files)
    for name, data in files.items():
        assert manifest["files"][name] == {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    by_name = {c["name"]: c for c in manifest["collectors"]}
    assert by_name["metrics"]["status"] == "absent"  # the state's server is not on loopback: never queried
    assert by_name["doctor"]["status"] == "ok" and by_name["logs"]["status"] == "ok"
    assert all(isinstance(c["seconds"], float) for c in manifest["collectors"])
    assert manifest["tool_version"] and manifest["created_at"] and manifest["redacted"] is True


def test_inspect_is_clean_and_catches_tampering(seeded, tmp_path, run_cli):
    result, _, _ = seeded
    code, out, _ = run_cli("bundle", "--inspect", str(result.path), "--json")
    report = json.loads(out)
    assert code == 0 and report["secret_shaped"] == {} and report["problems"] == []
    files = members(result.path)
    files["logs/server.log"] += b"appended Authorization: Bearer ZZsneakytoken123456\n"
    tampered = tmp_path / "tampered.tar.gz"
    with tarfile.open(tampered, "w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    code, out, _ = run_cli("bundle", "--inspect", str(tampered), "--json")
    report = json.loads(out)
    assert code == 1 and "logs/server.log: sha256 differs" in report["problems"]
    assert report["secret_shaped"]["logs/server.log"] == {"secret": 1}


def test_doctor_replays_from_the_bundle_with_the_same_verdicts(seeded, run_cli):
    result, _, _ = seeded
    recorded = json.loads(members(result.path)["doctor/doctor.json"])
    code, out, err = run_cli("doctor", "--snapshot", str(result.path), "--json")
    replay = json.loads(out)
    verdicts = sorted((f["id"], f["severity"]) for f in recorded["findings"])
    assert verdicts and sorted((f["id"], f["severity"]) for f in replay["findings"]) == verdicts
    assert code == recorded["summary"]["exit_code"]


def test_logs_since_binary_drop_and_truncation(tmp_path, monkeypatch):
    from tqdeploy.bundle import archive, collect_build
    from tqdeploy.bundle.build import COLLECTORS, build_bundle

    build = make_build(tmp_path)
    (build / "sub").mkdir()
    (build / "sub" / "profile.json").write_bytes(b"\x00\x01binary")
    wanted = tuple(c for c in COLLECTORS if c.name in ("logs", "profile"))
    result = build_bundle(build, tmp_path / "b.tar.gz", logs_since_s=3600, collectors=wanted)
    log = members(result.path)["logs/server.log"]
    assert b"OLDMARK" not in log and b"non-default args" in log
    (build / ".tqdeploy" / "logs" / "raw.log").write_text("INFO an unstamped vLLM line RAWMARK\n")
    result = build_bundle(build, tmp_path / "r.tar.gz", logs_since_s=60, collectors=wanted)
    assert b"RAWMARK" in members(result.path)["logs/raw.log"]  # no stamps: nothing to cut by, kept
    assert {"path": "profile/profile.json", "reason": "binary content"} in result.manifest["dropped"]
    monkeypatch.setattr(archive, "MAX_FILE_BYTES", 300)
    result = build_bundle(build, tmp_path / "c.tar.gz", collectors=wanted)
    record = result.manifest["files"]["logs/server.log"]
    assert record["truncated"] is True and record["original_size"] > 300 and record["size"] == 300
    assert members(result.path)["logs/server.log"].endswith(b"[private-key dropped]\n")  # the tail is kept
    monkeypatch.setattr(collect_build, "LOG_TAIL_BYTES", 200)
    result = build_bundle(build, tmp_path / "t.tar.gz", collectors=wanted)
    assert members(result.path)["logs/server.log"].startswith(b"[tqdeploy bundle: the first ")


def test_a_failing_and_an_overrunning_collector_are_recorded_not_fatal(tmp_path):
    from tqdeploy.bundle.build import COLLECTORS, build_bundle
    from tqdeploy.bundle.collector import Collector

    release = threading.Event()

    def boom(ctx, inputs):
        raise RuntimeError(f"cannot read /home/zqseeduser/x at {IP}")

    def slow(ctx, inputs):
        release.wait(30)
        return {"slow/never.txt": "late"}

    spec = tuple(c for c in COLLECTORS if c.name == "spec")
    t0 = time.perf_counter()
    try:
        result = build_bundle(
            make_build(tmp_path),
            tmp_path / "b.tar.gz",
            collectors=(Collector("boom", boom), Collector("slow", slow), *spec),
            timeout_s=2,
        )
    finally:
        release.set()
    assert time.perf_counter() - t0 < 10
    by_name = {c["name"]: c for c in result.manifest["collectors"]}
    assert by_name["boom"]["status"] == "failed" and by_name["boom"]["error"].startswith("RuntimeError: cannot read")
    assert "zqseed" not in by_name["boom"]["error"] and IP not in by_name["boom"]["error"]  # errors redacted too
    assert by_name["slow"]["status"] == "timeout" and by_name["spec"]["status"] == "ok"
    assert "build/serve.sh" in members(result.path)


def test_no_redact_is_explicit_and_inspect_flags_it(tmp_path, run_cli, capsys):
    build = make_build(tmp_path)
    capsys.readouterr()  # the build's own report
    out = tmp_path / "raw.tar.gz"
    code, stdout, _ = run_cli("bundle", str(build), "--out", str(out), "--no-redact", "--json")
    assert code == 0 and json.loads(stdout)["redacted"] is False and json.loads(stdout)["mapping_path"] is None
    assert not (tmp_path / "raw.mapping.json").exists()
    assert b"ZQSEEDkeyfile0004" in gzip.decompress(out.read_bytes())
    code, stdout, _ = run_cli("bundle", "--inspect", str(out), "--json")
    assert code == 1 and "logs/server.log" in json.loads(stdout)["secret_shaped"]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--logs-since", "5x"], "--logs-since '5x' is not a duration"),
        (["/nonexistent/build"], "build directory /nonexistent/build does not exist"),
        (["--inspect", "/nonexistent.tar.gz"], "bundle /nonexistent.tar.gz does not exist"),
    ],
)
def test_bad_input_is_one_line_exit_2(args, message, run_cli):
    code, out, err = run_cli("bundle", *args)
    assert code == 2 and message in err and "Traceback" not in err


def test_durations():
    from tqdeploy.bundle.cli_args import parse_duration

    assert [parse_duration(d) for d in ("90s", "30m", "2h", "1d", "1h30m")] == [90, 1800, 7200, 86400, 5400]


def test_inspect_of_a_file_that_is_not_a_bundle(tmp_path, run_cli):
    junk = tmp_path / "notes.tar.gz"
    junk.write_bytes(gzip.compress(b"just text"))
    code, _, err = run_cli("bundle", "--inspect", str(junk))
    assert code == 2 and "is unreadable" in err
    code, _, err = run_cli("doctor", "--snapshot", str(junk))
    assert code == 2 and "is unreadable" in err


@pytest.mark.docker
def test_container_inspect_env_values_are_redacted(tmp_path):
    docker = pytest.importorskip("docker")
    from tqdeploy.bundle.build import COLLECTORS, build_bundle

    try:
        client = docker.from_env(timeout=10)
        client.ping()
    except docker.errors.DockerException as exc:
        pytest.skip(f"no Docker engine: {exc}")
    image, _ = client.images.build(fileobj=io.BytesIO(b"FROM scratch\nLABEL tqdeploy.test=bundle\n"), rm=True)
    env = {"HF_TOKEN": "hf_ZQSEEDcontainer0015abcdef", "PLAIN_SETTING": "ZQSEEDplain0016"}
    container = client.containers.create(image.id, command=["/none"], environment=env)
    try:
        # a state the typed record accepts (base_url names the state's host, last_error is a finding or none):
        # the bundle acts only on a valid state's container id
        state = {
            "runtime": "docker",
            "container_id": container.id,
            "base_url": f"http://{HOST}:8000",
            "last_error": None,
        }
        build = make_build(tmp_path, state)
        wanted = tuple(c for c in COLLECTORS if c.name == "runtime")
        result = build_bundle(build, tmp_path / "b.tar.gz", collectors=wanted)
    finally:
        container.remove(force=True)
    files = members(result.path)
    inspect = json.loads(files["docker/container.json"])
    assert inspect["Id"] == container.id and "docker/info.json" in files
    assert all(re.fullmatch(r"[A-Z_]+=\[secret-\d+\]", e) for e in inspect["Config"]["Env"])
    assert_no_seed(gzip.decompress(result.path.read_bytes()))
    assert os.environ.get("HF_TOKEN") != env["HF_TOKEN"]


def test_the_runtime_collector_asks_the_states_runtime_chosen_from_the_registry(tmp_path, monkeypatch):
    """The bundle knows no runtime by name: the validated state's runtime (a dummy registered with one line)
    says what it runs; the process runtime has nothing beyond processes and logs; a bad state is acted on never."""
    from tqdeploy.bundle.build import COLLECTORS, build_bundle
    from tqdeploy.bundle.context import state_record
    from tqdeploy.runtime import registry, state

    monkeypatch.setitem(registry.RUNTIMES, "dummy", "support.dummy_runtime:DummyRuntime")
    wanted = tuple(c for c in COLLECTORS if c.name == "runtime")
    build = tmp_path / "build"
    state.new_state(build, runtime="dummy", port=8123, supervisor_pid=os.getpid(), started_at=time.time())
    result = build_bundle(build, tmp_path / "dummy.tar.gz", collectors=wanted)
    [collector] = result.manifest["collectors"]
    assert collector["name"] == "runtime" and collector["status"] == "ok", collector
    keeper = json.loads(members(result.path)["dummy/keeper.json"])
    assert keeper == {"supervisor_pid": os.getpid(), "port": 8123, "live": False}  # this pid has no marker

    state.new_state(build, runtime="process", port=8123)
    result = build_bundle(build, tmp_path / "process.tar.gz", collectors=wanted)
    [collector] = result.manifest["collectors"]
    assert collector["status"] == "absent" and "process runtime has nothing to record" in collector["reason"]

    raw = json.loads(state.state_path(build).read_text()) | {"runtime": "docker", "container_id": "$(reboot)"}
    assert state_record(build, raw) is None  # not what tqdeploy writes: no collector acts on it
    assert state_record(build, raw | {"container_id": "ab" * 6}).backend.container_id == "ab" * 6


def test_host_only_bundle_without_a_build_dir(tmp_path, monkeypatch, run_cli):
    monkeypatch.chdir(tmp_path)  # no ./build here
    code, out, _ = run_cli("bundle", "--json")
    result = json.loads(out)
    assert code == 0 and re.fullmatch(r"tqdeploy-bundle-\d{8}T\d{6}Z\.tar\.gz", result["path"])
    status = {c["name"]: c["status"] for c in result["collectors"]}
    assert status["doctor"] == "ok" and status["spec"] == "absent" and status["state"] == "absent"
    assert (tmp_path / result["path"].replace(".tar.gz", ".mapping.json")).stat().st_mode & 0o777 == 0o600


GOLDEN = __import__("pathlib").Path(__file__).resolve().parent / "golden"


@pytest.mark.parametrize("golden", sorted(p.name for p in GOLDEN.iterdir() if p.is_dir()))
def test_a_rendered_build_without_secrets_is_byte_identical_in_the_bundle(golden, tmp_path):
    """issue 19 item 2: serve.sh's VLLM_API_KEY="$(cat "$API_KEY_FILE")", the comment `--api-key is absent`,
    compose/k8s comments and dotted versions came out altered; a build with no secret counted 6."""
    from tqdeploy.bundle.build import COLLECTORS, build_bundle
    from tqdeploy.bundle.identity import HostIdentity, this_host

    src = GOLDEN / golden
    on_disk = {f"build/{p.relative_to(src)}": p.read_bytes() for p in src.rglob("*") if p.is_file()}
    spec_only = tuple(c for c in COLLECTORS if c.name == "spec")
    planted_host = HostIdentity(hostnames=["gpu-zq-7.zqcorp.internal"], users=["zqalice"], domains=["zqcorp.internal"])
    for n, ident in enumerate((planted_host, this_host())):
        result = build_bundle(src, tmp_path / f"b{n}.tar.gz", collectors=spec_only, identity=ident)
        files = members(result.path)
        files.pop("manifest.json")
        assert set(files) == set(on_disk)
        for name, data in files.items():
            assert data == on_disk[name], name
        assert result.manifest["redactions"] == {}, result.mapping_path.read_text()
        assert result.manifest["skipped"] == []


def test_human_output_shows_placeholders_as_written(tmp_path, run_cli):
    """Rich reads `[ip-1]` as a style tag: printed with markup it vanished from the report lines."""
    from tqdeploy.bundle.build import build_bundle
    from tqdeploy.bundle.collector import Collector

    def boom(ctx, inputs):
        raise RuntimeError(f"cannot reach {IP}")

    result = build_bundle(None, tmp_path / "b.tar.gz", collectors=(Collector("boom", boom),))
    from tqdeploy.output import make_console

    console = make_console()
    with console.capture() as captured:
        result.render(console)
    assert "cannot reach [ip-1]" in captured.get()
