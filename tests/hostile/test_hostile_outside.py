"""Hostile round three, the input side (issue 35): strings from outside printed raw, readers that crash or
run without bound on a crafted snapshot or bundle, and mirrors that answer with hostile listings.

Each case is named by its kind and runs the real CLI (in-process; a subprocess where a memory cap matters).
Held to what every hostile case is held to (test_hostile_inputs.check_outcome): no traceback or internal
error, the exit code, a one-line error naming the input; and here also: no raw escape character reaches
stdout or stderr, and what must be shown (an escaped name) is.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from hostile.seeds import TESTS, model_dir
from hostile.test_hostile_inputs import Case, _snapshot, check_outcome, run_case
from support.hubmirror import clean_hub_env, repo  # noqa: F401 (fixtures)

ESC = "\x1b]0;owned\x07\x1b[2J\x1b[31m"  # set the title, clear the screen, turn red


@dataclass
class Shown(Case):
    shows: str = ""  # must appear in stdout or stderr (the escaped form of a hostile name)
    limit_chars: int = 0  # stdout + stderr at most this long (0: no bound checked)


def _bundle(tmp: Path, files: dict[str, bytes], manifest: dict | None = None, raw_manifest: bytes | None = None):
    """A bundle as `tqdeploy bundle` lays it out (tar.gz, manifest.json first), with any manifest at all."""
    if manifest is None:
        manifest = {
            "schema": "tqdeploy.bundle/1",
            "tool_version": "0.1.0",
            "created_at": "2026-12-04T00:00:00+00:00",
            "redacted": True,
            "redactions": {},
            "collectors": [{"name": "logs", "status": "ok", "seconds": 0.1}],
            "files": {n: {"sha256": hashlib.sha256(d).hexdigest(), "size": len(d)} for n, d in files.items()},
        }
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in [("manifest.json", raw_manifest or json.dumps(manifest).encode()), *files.items()]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    path = tmp / "b.tar.gz"
    path.write_bytes(gzip.compress(buf.getvalue()))
    return path


# ---------------------------------------------------------------- terminal injection, echoed whole


def escape_in_snapshot_gpu_name_doctor(tmp: Path) -> Case:
    snap = _snapshot(tmp, lambda d: d["gpus"][0].update(name="NVIDIA H200" + ESC))
    return Shown(["doctor", "--snapshot", str(snap)], code=0, shows="\\x1b[2J")


def escape_in_snapshot_gpu_name_plan(tmp: Path) -> Case:
    snap = _snapshot(tmp, lambda d: d["gpus"][0].update(name="NVIDIA H200" + ESC + "[blink]"))
    return Shown(["plan", "--model", str(model_dir(tmp)), "--snapshot", str(snap)], code=0, shows="\\x1b[2J")


def escape_in_archive_member_name_inspect(tmp: Path) -> Case:
    bundle = _bundle(tmp, {f"logs/x{ESC}.log": b"a quiet line\n"})
    return Shown(["bundle", "--inspect", str(bundle)], code=0, shows="logs/x\\x1b]0;owned\\x07")


def newline_in_archive_member_name_inspect(tmp: Path) -> Case:
    bundle = _bundle(tmp, {"logs/a.log\nproblem: none, looks clean": b"line\n"})
    return Shown(["bundle", "--inspect", str(bundle)], code=0, shows="logs/a.log\\nproblem")


def manifest_8mib_tool_version_inspect(tmp: Path) -> Case:
    data = b"line\n"
    manifest = {"schema": "tqdeploy.bundle/1", "tool_version": "9" * (8 << 20), "files": {}}
    bundle = _bundle(tmp, {"logs/a.log": data}, manifest)
    return Shown(["bundle", "--inspect", str(bundle)], needle="tool_version is 8388608 characters", limit_chars=4000)


def lock_900kb_name_rebuild(tmp: Path) -> Case:
    from tqdeploy.cli import main

    out = tmp / "b"
    assert main(["build", "--embedded", "tiny-cpu-demo", "--out", str(out)]) == 0
    lock = out / "tqdeploy.lock.json"
    data = json.loads(lock.read_text())
    data["name"] = "n" * 900_000
    lock.write_text(json.dumps(data))
    argv = ["build", "--embedded", "tiny-cpu-demo", "--out", str(out)]
    return Shown(argv, needle="the deployment 'nnnn", shows="chars)", limit_chars=6000)


# ---------------------------------------------------------------- snapshots: bounded, typed, one line


def snapshot_memory_total_4000_digits_plan(tmp: Path) -> Case:
    snap = _snapshot(tmp, lambda d: d["gpus"][0].update(memory_total=int("9" * 4000)))
    argv = ["plan", "--model", str(model_dir(tmp)), "--snapshot", str(snap)]
    return Case(argv, needle="gpus[0].memory_total = 99999")


def snapshot_memory_total_4000_digits_doctor(tmp: Path) -> Case:
    snap = _snapshot(tmp, lambda d: d["gpus"][0].update(memory_total=int("9" * 4000)))
    return Case(["doctor", "--snapshot", str(snap)], needle="(4000 digits) is past 64 bits")


def snapshot_gpu_name_10mib_doctor(tmp: Path) -> Case:
    snap = _snapshot(tmp, lambda d: d["gpus"][0].update(name="H" * (10 << 20)))
    return Case(["doctor", "--snapshot", str(snap)], needle="gpus[0].name is a string of 10485760 characters")


def _wrong_type(section: str, key: str, value) -> Callable[[Path], Case]:
    def case(tmp: Path) -> Case:
        def edit(d: dict) -> None:
            target = d.setdefault(section, {})
            if section == "pci":  # one object per bus id
                target = target.setdefault(next(iter(target), "0000:00:06.0"), {})
            target[key] = value

        snap = _snapshot(tmp, edit)
        return Case(["doctor", "--snapshot", str(snap)], needle=f".{key} = ")

    return case


snapshot_wrong_type_container = _wrong_type("container", "markers", 5)
snapshot_wrong_type_docker = _wrong_type("docker", "runtimes", 7)
snapshot_wrong_type_env = _wrong_type("env", "hf_endpoint", ["a"])
snapshot_wrong_type_kernel = _wrong_type("kernel", "release", 5)
snapshot_wrong_type_mirror = _wrong_type("mirror", "status", "200")
snapshot_wrong_type_cuda_libs = _wrong_type("cuda_libs", "ldconfig", {"cudnn": 3})
snapshot_wrong_type_pci = _wrong_type("pci", "aer", ["fatal"])
snapshot_wrong_type_probe_errors = _wrong_type("probe_errors", "nvml", ["a", "list"])


def bundle_snapshot_nested_100000_doctor(tmp: Path) -> Case:
    bundle = _bundle(tmp, {"host/snapshot.json": b"[" * 100_000 + b"]" * 100_000})
    return Case(["doctor", "--snapshot", str(bundle)], needle="nests deeper than 64 levels")


# ---------------------------------------------------------------- bundle manifests: schema before use


def manifest_nested_100000_inspect(tmp: Path) -> Case:
    bundle = _bundle(tmp, {"logs/a.log": b"x\n"}, raw_manifest=b'{"files": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")
    return Case(["bundle", "--inspect", str(bundle)], needle="nests deeper than 64 levels")


def manifest_files_list_inspect(tmp: Path) -> Case:
    bundle = _bundle(tmp, {"logs/a.log": b"x\n"}, {"schema": "tqdeploy.bundle/1", "files": ["logs/a.log"]})
    return Case(["bundle", "--inspect", str(bundle)], needle="files = ['logs/a.log'] must be an object")


def manifest_files_strings_inspect(tmp: Path) -> Case:
    bundle = _bundle(tmp, {"logs/a.log": b"x\n"}, {"schema": "tqdeploy.bundle/1", "files": {"logs/a.log": "abc"}})
    return Case(["bundle", "--inspect", str(bundle)], needle="files = {'logs/a.log': 'abc'} must be an object")


def manifest_odd_collectors_inspect(tmp: Path) -> Case:
    manifest = {"schema": "tqdeploy.bundle/1", "files": {}, "collectors": [{"name": 5, "status": ["ok"]}]}
    bundle = _bundle(tmp, {}, manifest)
    return Case(["bundle", "--inspect", str(bundle)], needle="collectors[0].name = 5 must be a string")


CASES = {name: fn for name, fn in globals().items() if callable(fn) and getattr(fn, "__module__", "") == __name__}
CASES = {n: f for n, f in CASES.items() if not n.startswith(("_", "test_")) and n not in ("Shown", "ESC")}


@pytest.mark.parametrize("name", sorted(CASES))
def test_hostile_outside_input(name, tmp_path, run_cli, monkeypatch):
    case, code, out, err = run_case(name, CASES[name], tmp_path, run_cli, monkeypatch)
    check_outcome(case, tmp_path, code, out, err)
    assert "\x1b" not in out + err and "\x07" not in out + err, (out + err)[:2000]
    if isinstance(case, Shown):
        assert case.shows in out + err, (out + err)[:3000]
        assert not case.limit_chars or len(out + err) <= case.limit_chars, len(out + err)


def test_inspect_of_a_log_of_4m_short_lines_is_linear(tmp_path, run_cli):
    """Every line was scanned on its own: 46 s here before (53 s in the issue); halving spans: ~4 s."""
    log = b"x\n" * 4_000_000 + b"token sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD\n"
    bundle = _bundle(tmp_path, {"logs/vllm.log": log})
    started = time.monotonic()
    code, out, err = run_cli("bundle", "--inspect", str(bundle))
    took = time.monotonic() - started
    assert code == 1 and "secret in logs/vllm.log line 4000001" in out, (out, err)
    assert took < 20, f"--inspect took {took:.1f} s"


# ---------------------------------------------------------------- mirrors: hostile listings, bounded reads


def _add_file(name: str) -> Callable[[dict], None]:
    return lambda body: body["siblings"].append({"rfilename": name, "size": 3, "blobId": "0" * 40})


def _lfs(key: str, value) -> Callable[[dict], None]:
    def edit(body: dict) -> None:
        for s in body["siblings"]:
            if "lfs" in s:
                s["lfs"][key] = value

    return edit


LISTINGS = {
    "listing_name_with_nul": (_add_file("a\x00b.json"), "holds a control character"),
    "listing_name_with_newline": (_add_file("tokenizer.json\nmodel.safetensors"), "holds a control character"),
    "listing_name_with_escape": (_add_file(f"x{ESC}.json"), "x\\x1b]0;owned\\x07"),
    "listing_lfs_size_abc": (_lfs("size", "abc"), "size 'abc' is not a byte count"),
    "listing_lfs_sha256_number": (_lfs("sha256", 12345), "LFS sha256 12345 is not 64 hex characters"),
    "listing_commit_path_traversal": (
        lambda body: body.update(sha="../../../../etc/x" + "y" * 5000),
        "its commit ../../../../etc/xyyy",
    ),
}


@pytest.mark.parametrize("kind", sorted(LISTINGS))
def test_a_hostile_listing_is_refused_in_one_line(kind, run_cli, repo, tmp_path, clean_hub_env):
    from support.hubmirror import Faults, HubMirror

    edit, needle = LISTINGS[kind]
    dest = tmp_path / "d"
    with HubMirror(repo, Faults(api_edit=edit)) as m:
        code, out, err = run_cli("download", "org/tiny@main", "--to", str(dest), "--mirror", m.url)
    errors = [line for line in err.splitlines() if line.startswith("tqdeploy: error:")]
    assert code == 1 and len(errors) == 1 and needle in errors[0], err[-3000:]
    assert "no mirror could list org/tiny@main" in errors[0] and len(errors[0]) < 3000
    assert "Traceback" not in err and not any(c in out + err for c in "\x00\x1b\x07"), err[-3000:]
    written = [p for p in dest.rglob("*") if p.is_file() and ".tqdeploy" not in p.parts] if dest.exists() else []
    assert written == [], written  # no shard, no manifest holding the commit


def test_a_hostile_tree_listing_is_refused_too(run_cli, repo, tmp_path, clean_hub_env):
    """A mirror that ignores ?blobs=true is listed through its tree API: the same checks hold there."""
    from support.hubmirror import Faults, HubMirror

    def edit(tree: list) -> None:
        tree.append({"type": "file", "path": f"x{ESC}\nmodel.safetensors", "size": 3, "oid": "0" * 40})

    dest = tmp_path / "d"
    with HubMirror(repo, Faults(ignore_blobs=True, tree_edit=edit)) as m:
        code, out, err = run_cli("download", "org/tiny@main", "--to", str(dest), "--mirror", m.url)
    errors = [line for line in err.splitlines() if line.startswith("tqdeploy: error:")]
    assert code == 1 and len(errors) == 1 and "holds a control character" in errors[0], err[-2000:]
    assert not any(c in out + err for c in "\x1b\x07"), err[-2000:]


def test_an_endless_listing_is_read_to_its_bound_only(repo, tmp_path, clean_hub_env):
    from support.hubmirror import Faults, HubMirror
    from tqdeploy.download.listing_http import LISTING_LIMIT
    from tqdeploy.download.remote import list_repo
    from tqdeploy.errors import TQError

    started = time.monotonic()
    with HubMirror(repo, Faults(api_endless=True)) as m, pytest.raises(TQError) as err:
        list_repo([m.url], "org/tiny", "main", False, lambda e: None)
    assert f"its listing is larger than {LISTING_LIMIT} bytes" in err.value.message
    assert time.monotonic() - started < 30


def test_a_listing_sent_a_byte_at_a_time_is_given_up_on_at_the_minimum_rate(repo, tmp_path, clean_hub_env):
    """The minimum-rate rule covered transfers only: a listing at 1 byte every 2 s ran past 60 s."""
    from support.hubmirror import Faults, HubMirror
    from tqdeploy.download.remote import list_repo
    from tqdeploy.download.transfer import RetryPolicy
    from tqdeploy.errors import TQError

    policy = RetryPolicy(attempts=1, rate_window_s=1.0, min_bytes_per_s=1000.0)
    started = time.monotonic()
    with HubMirror(repo, Faults(api_trickle_s=0.05)) as m, pytest.raises(TQError) as err:
        list_repo([m.url], "org/tiny", "main", False, lambda e: None, policy=policy)
    assert "it sends its listing at" in err.value.message and "under 1000 B/s" in err.value.message
    assert time.monotonic() - started < 10


def test_the_default_download_deadline_is_hours_not_a_day():
    from tqdeploy.download.transfer import DEFAULT_DEADLINE_S, RetryPolicy

    assert DEFAULT_DEADLINE_S == RetryPolicy().deadline_s == 6 * 3600


# ---------------------------------------------------------------- the bundle: one list of detectors for both sides

STANDALONE_TOKENS = {  # detect-secrets' regex detectors that need no keyword (detect_secrets/plugins/*.py)
    "stripe_live_key": "sk_live_4eC39HqLyjWDarjtT1zdp7dQ",
    "npm_token": "npm_Zq8dE5fG7hI9jK1-M3nO5pQ7rS9tU1vW3xY5",
    "telegram_bot_token": "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1",
    "sendgrid_key": "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",
    "raw_hex_key": "5e2c" * 16,
}
HOST_IP = "10.77.1.23"
MIRROR_PASSWORD = "Qm8x-hunter2-zqh"


def _build_with(root: Path, logs: dict[str, str], spec: str = "# spec\n") -> Path:
    build = root / "build"
    (build / ".tqdeploy" / "logs").mkdir(parents=True)
    (build / "tqdeploy.toml").write_text(spec)
    for name, text in logs.items():
        (build / ".tqdeploy" / "logs" / name).write_text(text)
    return build


def _bundled(build: Path, out: Path):
    from tqdeploy.bundle.build import COLLECTORS, build_bundle
    from tqdeploy.bundle.identity import HostIdentity

    names = ("state", "logs", "spec")
    collectors = tuple(c for c in COLLECTORS if c.name in names)
    return build_bundle(build, out, collectors=collectors, identity=HostIdentity(hostnames=(), users=()))


def _all_text(path: Path) -> str:
    with tarfile.open(path, "r:gz") as tar:
        names = "\n".join(m.name for m in tar.getmembers())
        return names + "\n" + "\n".join(tar.extractfile(m).read().decode() for m in tar.getmembers() if m.isfile())


@pytest.mark.parametrize("kind", sorted(STANDALONE_TOKENS))
def test_a_token_standing_alone_in_a_log_line_is_redacted_and_inspect_finds_it(kind, tmp_path, run_cli):
    token = STANDALONE_TOKENS[kind]
    build = _build_with(tmp_path, {"server.log": f"INFO started\n{token}\nINFO ready\n"})
    result = _bundled(build, tmp_path / "b.tar.gz")
    assert token not in _all_text(result.path), kind
    # appended to the log after bundling (hashes fixed up): --inspect must see what the bundle would redact
    tampered = _bundle(tmp_path, {"logs/server.log": f"INFO started\n{token}\n".encode()})
    code, out, err = run_cli("bundle", "--inspect", str(tampered))
    assert code == 1 and "secret in logs/server.log line 2" in out, (kind, out, err)


def test_a_digest_in_a_log_stays_and_is_not_called_a_secret(tmp_path, run_cli):
    line = "INFO image sha256:" + "5e2c" * 16 + "\n"
    build = _build_with(tmp_path, {"server.log": line})
    result = _bundled(build, tmp_path / "b.tar.gz")
    assert line in _all_text(result.path)
    code, out, err = run_cli("bundle", "--inspect", str(_bundle(tmp_path, {"logs/server.log": line.encode()})))
    assert code == 0, out


def test_a_secret_noted_in_a_spec_comment_is_redacted(tmp_path, run_cli):
    spec = f'[model]\nrepo = "org/m"\nmirrors = ["https://m.example"]  # mirror password: {MIRROR_PASSWORD}\n'
    spec += f"# staging mirror password: {MIRROR_PASSWORD}-2\n"
    build = _build_with(tmp_path, {"server.log": "INFO\n"}, spec=spec)
    result = _bundled(build, tmp_path / "b.tar.gz")
    text = _all_text(result.path)
    assert MIRROR_PASSWORD not in text and "# mirror password: [secret-" in text, text[-2000:]
    tampered = _bundle(tmp_path, {"build/tqdeploy.toml": spec.encode()})
    code, out, _ = run_cli("bundle", "--inspect", str(tampered))
    assert code == 1 and "secret in build/tqdeploy.toml line 3" in out, out


def test_an_address_inside_a_log_file_name_is_redacted_and_inspect_finds_it(tmp_path, run_cli):
    build = _build_with(tmp_path, {f"worker-{HOST_IP}.log": "INFO worker up\n"})
    (tmp_path / "elsewhere.log").write_text("x\n")  # a link is skipped, and its path and target recorded
    (build / ".tqdeploy" / "logs" / f"old-{HOST_IP}.log").symlink_to(tmp_path / "elsewhere.log")
    result = _bundled(build, tmp_path / "b.tar.gz")
    assert any("[ip-1]" in s["path"] for s in result.manifest["skipped"]), result.manifest["skipped"]
    assert HOST_IP not in _all_text(result.path) and HOST_IP not in json.dumps(result.manifest)
    assert "logs/worker-[ip-1].log" in result.manifest["files"], result.manifest["files"]
    tampered = _bundle(tmp_path, {f"logs/worker-{HOST_IP}.log": b"INFO worker up\n"})
    code, out, _ = run_cli("bundle", "--inspect", str(tampered))
    assert code == 1 and f"ip (member name) in logs/worker-{HOST_IP}.log" in out, out


# ---------------------------------------------------------------- the linter: the Python API is the same arguments

PY_SNIPPETS = {
    "llm_quantization_turboquant": ('LLM(model="m", quantization="turboquant")', "FA001"),
    "engine_args_quantization_turbo": ('EngineArgs(model="m", quantization="turbo")', "FA001"),
    "llm_kv_cache_dtype_not_a_choice": ('LLM(model="m", kv_cache_dtype="turboquant_4bit")', "TQ302"),
}


@pytest.mark.parametrize("kind", sorted(PY_SNIPPETS))
def test_python_api_keywords_get_the_checks_their_flags_get(kind, run_cli):
    call, expected = PY_SNIPPETS[kind]
    code, out, err = run_cli("lint", "--json", "--", "python3", "-c", f"from vllm import LLM, EngineArgs; {call}")
    assert code == 1, (out, err)
    findings = json.loads(out)["findings"]
    assert any(expected in (f["id"] + f["title"]) and f["severity"] == "error" for f in findings), findings
    assert len([f for f in findings if "FA00" in f["title"]]) <= 1, findings  # one entry, not FA001 and FA002


def test_the_flag_and_the_keyword_get_the_same_catalogue_entry(run_cli):
    _, out_cli, _ = run_cli("lint", "--json", "--", "vllm", "serve", "m", "--quantization", "turboquant")
    _, out_py, _ = run_cli(
        "lint", "--json", "--", "python3", "-c", 'from vllm import LLM; LLM("m", quantization="turbo")'
    )
    entry = [f["title"].split(":")[0] for f in json.loads(out_cli)["findings"] if f["id"] == "TQ310"]
    assert entry == ["FA001"] and entry == [f["title"].split(":")[0] for f in json.loads(out_py)["findings"]]


def test_a_valid_python_launch_stays_valid(run_cli):
    code, out, err = run_cli("lint", "--", "python3", "-c", 'from vllm import LLM; LLM("m", kv_cache_dtype="fp8")')
    assert code == 0, (out, err)


def test_a_manifest_naming_a_shard_with_an_escape_is_refused_and_nothing_raw_is_printed(run_cli, tmp_path):
    from tqdeploy.download.manifest import MANIFEST_NAME, SCHEMA

    dest = tmp_path / "m"
    dest.mkdir()
    files = [{"path": f"a{ESC}.safetensors", "size": 1, "sha256": None, "git_oid": None, "lfs": False}]
    manifest = {"schema": SCHEMA, "repo": "org/m", "revision": "main", "commit": "0" * 40, "files": files}
    (dest / MANIFEST_NAME).write_text(json.dumps(manifest))
    code, out, err = run_cli("download", "--verify", str(dest))
    assert code == 2 and "holds a control character" in err and "\\x1b" in err, err
    assert not any(c in out + err for c in "\x1b\x07"), err


def test_a_server_answer_nested_100000_deep_is_not_json_not_a_crash():
    from tqdeploy.connect.http import _parse
    from tqdeploy.net.client import Answer

    deep = "[" * 100_000
    assert Answer("http://127.0.0.1:1/x", 200, deep.encode()).json() is None
    assert _parse(deep) == deep


def test_a_completion_event_nested_100000_deep_is_a_malformed_event():
    from tqdeploy.profile.load import _tokens_in

    with pytest.raises(ValueError, match="not a completion event"):
        _tokens_in("data: " + "[" * 100_000)


def test_a_multinode_record_nested_50000_deep_is_refused_in_one_line(tmp_path):
    from tqdeploy.errors import TQError
    from tqdeploy.nodefile import RECORD_NAME, build_record

    (tmp_path / RECORD_NAME).write_text("[" * 50_000)  # inside the 64 KiB the record may be
    with pytest.raises(TQError, match="is not JSON"):
        build_record(tmp_path)


def test_an_escape_sequence_in_a_linted_script_is_shown_escaped(run_cli, tmp_path):
    script = tmp_path / "serve.sh"
    script.write_text(f'vllm serve "m{ESC}" --quantization turboquant\n')
    code, out, err = run_cli("lint", "--file", str(script))
    assert code == 1 and "\\x1b[2J" in out, out
    assert not any(c in out + err for c in "\x1b\x07"), out
