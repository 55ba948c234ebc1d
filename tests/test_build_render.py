"""Rendering: golden files for every template, determinism, lock, --dry-run, --check, stale files."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tqdeploy.deployspec import load_spec
from tqdeploy.render import render_files, verify, write_build

TESTS = Path(__file__).resolve().parent
GOLDEN = TESTS / "golden"
FIX = TESTS / "fixtures" / "build"
DEMO_SPEC = TESTS.parent / "tool" / "tqdeploy" / "deployspec" / "defaults" / "tiny-cpu-demo.toml"
UPDATE = os.environ.get("TQDEPLOY_UPDATE_GOLDEN") == "1"

CASES = {
    "qwen36-27b-tq": lambda: load_spec(),
    "tiny-cpu-demo": lambda: load_spec(embedded="tiny-cpu-demo"),
    "multinode": lambda: load_spec(FIX / "multinode.toml"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_rendered_files_match_golden(case):
    files = render_files(CASES[case]())
    gold = GOLDEN / case
    if UPDATE:
        for old in gold.rglob("*"):
            if old.is_file():
                old.unlink()
        for rel, f in files.items():
            (gold / rel).parent.mkdir(parents=True, exist_ok=True)
            (gold / rel).write_bytes(f.data)
    on_disk = sorted(str(p.relative_to(gold)) for p in gold.rglob("*") if p.is_file())
    assert on_disk == sorted(files), "rendered file set differs from golden (TQDEPLOY_UPDATE_GOLDEN=1 regenerates)"
    for rel, f in files.items():
        assert f.data == (gold / rel).read_bytes(), f"{case}/{rel} differs from golden"


def test_every_template_is_covered_by_a_golden_case():
    from tqdeploy.resources import data_dir

    used = set()
    for make in CASES.values():
        from tqdeploy.render.files import template_plan

        spec = make()
        used |= {t for _, t, _ in template_plan(spec)}
    templates = {str(p.relative_to(data_dir("templates"))) for p in data_dir("templates").rglob("*.j2")}
    templates |= {str(p.relative_to(data_dir("dockerfiles"))) for p in data_dir("dockerfiles").rglob("*.j2")}
    partials = {t for t in templates if Path(t).name.startswith("_")}
    assert templates - partials == used


def test_render_twice_gives_the_same_bytes(tmp_path):
    a, b = render_files(CASES["qwen36-27b-tq"]()), render_files(CASES["qwen36-27b-tq"]())
    assert {k: v.data for k, v in a.items()} == {k: v.data for k, v in b.items()}
    first = write_build(tmp_path / "b", a)
    assert first["written"] and not first["unchanged"]
    again = write_build(tmp_path / "b", b)
    assert again["written"] == [] and sorted(again["unchanged"]) == sorted(a)


def test_separate_processes_with_different_hash_seeds_render_identical_builds(tmp_path, tqdeploy_exe):
    digests = []
    for seed in ("1", "2"):
        out = tmp_path / f"b{seed}"
        env = {**os.environ, "PYTHONHASHSEED": seed}
        res = subprocess.run(
            [tqdeploy_exe, "build", str(FIX / "multinode.toml"), "--out", str(out)],
            capture_output=True,
            text=True,
            env=env,
        )
        assert res.returncode == 0, res.stderr
        digests.append(
            {
                str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest()
                for p in sorted(out.rglob("*"))
                if p.is_file()
            }
        )
    assert digests[0] == digests[1]


def test_lock_records_pins_and_every_file_hash():
    files = render_files(CASES["qwen36-27b-tq"]())
    lock = json.loads(files["tqdeploy.lock.json"].data)
    assert lock["schema"] == "tqdeploy.lock/1"
    assert lock["pins"]["vllm"]["version"] == "0.32.0"
    assert lock["pins"]["image"] == {
        "base": "vllm/vllm-openai:v0.32.0",
        "digest": "unresolved",
        "note": "no digest was read from a registry; run `tqdeploy build --resolve-digests` where the "
        "registry is reachable to pin it",
    }
    assert lock["pins"]["model"]["pinned"] is False and "branch" in lock["pins"]["model"]["note"]
    from tqdeploy import __version__

    assert lock["pins"]["tool"] == {"name": "tqdeploy", "version": __version__}
    assert set(lock["files"]) == set(files) - {"tqdeploy.lock.json"}
    for rel, digest in lock["files"].items():
        assert hashlib.sha256(files[rel].data).hexdigest() == digest
    multi = json.loads(render_files(CASES["multinode"]())["tqdeploy.lock.json"].data)
    assert multi["pins"]["model"] == {
        "repo": "Qwen/Qwen3.6-27B",
        "pinned": True,
        "revision": "0123456789abcdef0123456789abcdef01234567",
    }


def test_no_digest_is_invented_anywhere():
    import re

    from tqdeploy.deployspec.digests import known_digests

    read = {d.digest.encode() for d in known_digests().values()}  # each with where and when it was read
    for make in CASES.values():
        for rel, f in render_files(make()).items():
            for digest in re.findall(rb"sha256:[0-9a-f]{64}", f.data):
                assert digest in read, f"{rel} holds a digest nobody read from a registry"


def test_a_digest_kept_as_data_pins_a_tag_only_base_and_a_spec_digest_overrides_it(tmp_path):
    from tqdeploy.deployspec.digests import apply_known_digest, known_digests

    data = tmp_path / "base-digests.toml"
    kept = "sha256:" + "ab" * 32
    data.write_text(f'[[image]]\nref = "vllm/vllm-openai:v0.32.0"\ndigest = "{kept}"\nread = "a test registry"\n')
    table = known_digests(data)
    spec = load_spec()
    unpinned_hash = spec.spec_hash
    spec = apply_known_digest(spec, table)
    files = render_files(spec)
    assert f"ARG BASE_IMAGE=vllm/vllm-openai:v0.32.0@{kept}\n".encode() in files["Dockerfile"].data
    lock = json.loads(files["tqdeploy.lock.json"].data)
    assert lock["pins"]["image"] == {
        "base": "vllm/vllm-openai:v0.32.0",
        "digest": kept,
        "source": "tqdeploy data base-digests.toml (read from a test registry)",
    }
    assert spec.spec_hash != unpinned_hash  # another base, another image tag
    own = "sha256:" + "cd" * 32
    text = embedded_spec_path_text().replace(
        'base = "vllm/vllm-openai:v0.32.0"', f'base = "vllm/vllm-openai:v0.32.0"\ndigest = "{own}"'
    )
    (tmp_path / "s.toml").write_text(text)
    mine = apply_known_digest(load_spec(tmp_path / "s.toml"), table)
    assert mine.image.digest == own and mine.digest_source == "spec"
    assert json.loads(render_files(mine)["tqdeploy.lock.json"].data)["pins"]["image"]["source"] == "spec"


def test_the_shipped_digest_table_is_well_formed_and_a_broken_one_is_refused(tmp_path):
    from tqdeploy.deployspec.digests import digests_path, known_digests
    from tqdeploy.errors import TQError

    assert digests_path().is_file()
    for ref, known in known_digests().items():
        assert known.ref == ref and known.read
    bad = tmp_path / "d.toml"
    bad.write_text('[[image]]\nref = "x/y:1"\ndigest = "sha256:1234"\nread = "somewhere"\n')
    with pytest.raises(TQError, match=r"d.toml: \[\[image\]\] entry 1 must have ref, digest"):
        known_digests(bad)


def embedded_spec_path_text() -> str:
    from tqdeploy.deployspec.load import embedded_spec_path

    return embedded_spec_path("qwen36-27b-tq").read_text()


def test_scripts_are_executable_and_the_rest_is_not(tmp_path):
    write_build(tmp_path, render_files(CASES["qwen36-27b-tq"]()))
    for name in ("serve.sh", "healthcheck.sh", "download.sh"):
        assert (tmp_path / name).stat().st_mode & 0o777 == 0o755
    assert (tmp_path / "compose.yaml").stat().st_mode & 0o777 == 0o644


def test_dry_run_prints_a_diff_and_writes_nothing(run_cli, tmp_path):
    out = tmp_path / "build"
    code, stdout, _ = run_cli("build", "--out", str(out), "--dry-run")
    assert code == 0
    assert not out.exists()
    assert "--- /dev/null\n+++ b/serve.sh\n" in stdout
    assert run_cli("build", "--out", str(out))[0] == 0
    (out / "compose.yaml").write_text((out / "compose.yaml").read_text().replace("unless-stopped", "always"))
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    code, stdout, dry_err = run_cli("build", "--out", str(out), "--dry-run")
    assert code == 0
    assert "--- a/compose.yaml\n+++ b/compose.yaml\n" in stdout
    assert "-    restart: always\n+    restart: unless-stopped\n" in stdout
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert "a build would refuse: compose.yaml" in dry_err  # the edit is the user's: a plain build keeps it
    code, _, err = run_cli("build", "--out", str(out))
    assert code == 2 and "compose.yaml" in err and "--force" in err
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert run_cli("build", "--out", str(out), "--force")[0] == 0
    (backup,) = out.glob(".tqdeploy-backup-*")
    assert "restart: always" in (backup / "compose.yaml").read_text()
    code, stdout, _ = run_cli("build", "--out", str(out), "--dry-run")
    assert stdout.startswith("no changes")


def test_check_passes_on_a_fresh_build_and_names_drifted_files(run_cli, tmp_path):
    out = tmp_path / "build"
    run_cli("build", "--out", str(out))
    code, stdout, _ = run_cli("build", "--check", str(out))
    # + warmup.sh, launch_vllm.py, k8s/warmup-job.yaml, readyprobe.py
    assert code == 0 and "all 17 files match" in stdout
    with open(out / "serve.sh", "a") as fh:
        fh.write("echo tampered\n")
    (out / "k8s" / "service.yaml").unlink()
    code, stdout, _ = run_cli("build", "--check", str(out), "--json")
    assert code == 1
    data = json.loads(stdout)
    assert data["modified"] == ["serve.sh"] and data["missing"] == ["k8s/service.yaml"] and data["ok"] is False
    assert verify(out) == {"modified": ["serve.sh"], "missing": ["k8s/service.yaml"]}


def test_check_without_a_lock_is_a_usage_error(run_cli, tmp_path):
    code, _, err = run_cli("build", "--check", str(tmp_path))
    assert code == 2
    assert "is not a tqdeploy build directory" in err
    (tmp_path / "afile").write_text("x")
    code, _, err = run_cli("build", "--check", str(tmp_path / "afile"))
    assert code == 2 and "is not a tqdeploy build directory" in err and "internal error" not in err
    (tmp_path / "tqdeploy.lock.json").write_text('{"schema": "tqdeploy.lock/1", "files": {"serve.sh": 5}}\n')
    code, _, err = run_cli("build", "--check", str(tmp_path))
    assert code == 2 and err.startswith(
        f"tqdeploy: error: {tmp_path / 'tqdeploy.lock.json'}: not a tqdeploy.lock/1 lock file"
    )


def test_rebuild_removes_only_files_it_created(run_cli, tmp_path):
    out = tmp_path / "build"
    run_cli("build", "--out", str(out))
    (out / "models").mkdir()
    (out / "models" / "weights.bin").write_bytes(b"operator data")
    (out / "k8s" / "my-extra.yaml").write_text("kind: ConfigMap\n")
    key = (out / "secrets" / "vllm-api-key").read_bytes()  # the default spec's key file, created by build
    # The demo spec without its API key renders no k8s/ (a Service needs a key): those files go.
    unkeyed = tmp_path / "unkeyed.toml"
    unkeyed.write_text(DEMO_SPEC.read_text().replace('api_key_file = "./secrets/vllm-api-key"\n', ""))
    code, stdout, _ = run_cli("build", str(unkeyed), "--out", str(out), "--json", "--take-over")  # another deployment
    assert code == 0
    removed = json.loads(stdout)["changes"]["removed"]
    assert sorted(removed) == [
        "download.sh",
        "gpustack-backend.yaml",
        "k8s/deployment.yaml",
        "k8s/pvc.yaml",
        "k8s/service.yaml",
        "k8s/warmup-job.yaml",
        "launch_vllm.py",
    ]
    assert (out / "models" / "weights.bin").read_bytes() == b"operator data"
    assert (out / "k8s" / "my-extra.yaml").exists()
    assert (out / "secrets" / "vllm-api-key").read_bytes() == key  # the user's data once created: kept
    assert not list(out.glob(".tqdeploy-staging-*"))
    assert run_cli("build", "--check", str(out))[0] == 0


def test_build_into_a_file_path_is_refused(run_cli, tmp_path):
    target = tmp_path / "afile"
    target.write_text("x")
    code, _, err = run_cli("build", "--out", str(target))
    assert code == 2 and "is not a directory" in err
    assert target.read_text() == "x"


def test_seeded_secrets_reach_no_rendered_file(run_cli, tmp_path, monkeypatch):
    key = "tq-seeded-api-key-7f3a9c1e"
    token = "hf_seededTOKEN0123456789abcdef"
    monkeypatch.setenv("HF_TOKEN", token)
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "vllm-api-key").write_text(key)
    spec = (
        (FIX / "multinode.toml")
        .read_text()
        .replace("/etc/tqdeploy/vllm-api-key", str(tmp_path / "secrets" / "vllm-api-key"))
    )
    (tmp_path / "tqdeploy.toml").write_text(spec)
    outputs = []
    for extra in (("--dry-run",), ("--json",), ()):
        code, stdout, err = run_cli("build", str(tmp_path / "tqdeploy.toml"), "--out", str(tmp_path / "b"), *extra)
        assert code == 0
        outputs += [stdout, err]
    assert "+++ b/serve.sh" in outputs[0]  # the dry run printed the files themselves
    for text in outputs:
        assert key not in text and token not in text
    for p in (tmp_path / "b").rglob("*"):
        if p.is_file():
            data = p.read_bytes()
            assert key.encode() not in data and token.encode() not in data, p


def test_the_build_command_loads_no_sdk_until_it_renders(tqdeploy_exe):
    """`--help` imports no command module (cli's lazy command table, issue 36), so build and init import their
    library at the top; the SDKs stay behind their functions: importing the commands loads neither jinja2 nor
    docker (a build that renders no image never imports docker at all)."""
    code = (
        "import sys; import tqdeploy.commands.build, tqdeploy.commands.init; "
        "print([m for m in ('jinja2', 'docker') if m in sys.modules])"
    )
    python = str(Path(tqdeploy_exe).parent / "python")
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"


def test_check_with_a_spec_names_files_the_spec_now_renders_differently(run_cli, tmp_path):
    from tqdeploy.deployspec.load import embedded_spec_path

    spec = tmp_path / "tqdeploy.toml"
    spec.write_text(embedded_spec_path("qwen36-27b-tq").read_text())
    out = tmp_path / "build"
    assert run_cli("build", str(spec), "--out", str(out))[0] == 0
    assert run_cli("build", str(spec), "--check", str(out))[0] == 0
    spec.write_text(spec.read_text().replace("port = 8000", "port = 8001"))
    code, stdout, _ = run_cli("build", str(spec), "--check", str(out), "--json")
    assert code == 1
    data = json.loads(stdout)
    assert data["modified"] == [] and data["missing"] == []  # the directory still matches its own lock
    assert {"serve.sh", "compose.yaml", "healthcheck.sh", "tqdeploy.toml"} <= set(data["stale"])


def test_template_environment_is_strict_and_sandboxed(tmp_path):
    from jinja2.exceptions import SecurityError, UndefinedError

    from tqdeploy.render.env import make_env

    (tmp_path / "missing.j2").write_text("port={{ prot }}\n")
    (tmp_path / "escape.j2").write_text("{{ ''.__class__.__mro__[1].__subclasses__() }}\n")
    (tmp_path / "quote.j2").write_text("{{ v | shquote }} {{ v | yamlstr }}\n")
    env = make_env([tmp_path])
    with pytest.raises(UndefinedError):
        env.get_template("missing.j2").render(port=1)
    with pytest.raises(SecurityError):
        env.get_template("escape.j2").render()
    assert env.get_template("quote.j2").render(v="a b'$(x)") == "'a b'\"'\"'$(x)' \"a b'$(x)\"\n"


def _tree(root: Path) -> dict[str, bytes | None]:
    return {
        str(p.relative_to(root)): (p.read_bytes() if p.is_file() and not p.is_symlink() else None)
        for p in sorted(root.rglob("*"))
    }


@pytest.mark.parametrize("obstacle", ["dir-for-file", "file-for-dir", "symlinked-dir"])
def test_a_build_dir_that_cannot_take_the_files_is_refused_before_anything_is_written(run_cli, tmp_path, obstacle):
    out, outside = tmp_path / "build", tmp_path / "outside"
    out.mkdir()
    outside.mkdir()
    if obstacle == "dir-for-file":
        (out / "serve.sh").mkdir()  # sorted after Dockerfile, compose.yaml, ...: they must not be written either
        where = "serve.sh"
    elif obstacle == "file-for-dir":
        (out / "monitoring").write_text("not a folder\n")
        where = "monitoring"
    else:
        (out / "k8s").symlink_to(outside)  # would send the manifests outside the build dir
        where = "k8s"
    before = _tree(out)
    for extra in ((), ("--dry-run",)):
        code, stdout, err = run_cli("build", "--out", str(out), *extra)
        assert code == 2 and "Traceback" not in err, err
        assert err.startswith(f"tqdeploy: error: {out / where} is in the way"), err
        assert _tree(out) == before and list(outside.iterdir()) == []


def test_out_below_a_file_is_refused(run_cli, tmp_path):
    (tmp_path / "afile").write_text("x")
    code, _, err = run_cli("build", "--out", str(tmp_path / "afile" / "sub"))
    assert code == 2
    assert err.splitlines()[0] == (
        f"tqdeploy: error: {tmp_path / 'afile'} exists and is not a directory, "
        f"so {tmp_path / 'afile' / 'sub'} cannot be created"
    )


def test_a_staging_folder_left_by_an_interrupted_build_is_cleaned_up(run_cli, tmp_path):
    out = tmp_path / "build"
    assert run_cli("build", "--out", str(out))[0] == 0
    (out / ".tqdeploy-staging-interrupted").mkdir()
    (out / ".tqdeploy-staging-interrupted" / "serve.sh").write_text("half\n")
    (out / ".operator-notes").write_text("mine\n")
    assert run_cli("build", "--out", str(out))[0] == 0
    assert not list(out.glob(".tqdeploy-staging-*"))
    assert (out / ".operator-notes").read_text() == "mine\n"


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ("--check", "B", "--image"),
            "--check verifies an existing build directory and writes nothing; it does not take --image",
        ),
        (("--check", "B", "--out", "C", "--dry-run"), "it does not take --out, --dry-run"),
        (("--check", "B", "--resolve-digests"), "it does not take --resolve-digests"),
        (("--dry-run", "--image"), "--dry-run writes nothing, so there is no build directory to build an image from"),
    ],
)
def test_option_combinations_that_would_be_ignored_are_refused(run_cli, tmp_path, args, message):
    args = [str(tmp_path / a) if a in ("B", "C") else a for a in args]
    code, stdout, err = run_cli("build", *args)
    assert code == 2 and stdout == ""
    assert err.splitlines()[0].startswith("tqdeploy: error: ") and err.splitlines()[0].endswith(message)
    assert list(tmp_path.iterdir()) == []


def test_the_text_report_names_what_is_not_pinned(run_cli, tmp_path):
    code, stdout, _ = run_cli("build", "--out", str(tmp_path / "b"))
    assert code == 0
    assert (
        "  not pinned: model: 'main' is a branch or tag, not a commit: set model.revision to the 40-hex "
        "commit you tested"
    ) in stdout.splitlines()
    assert any(
        line.startswith("  not pinned: image: no digest was read from a registry") for line in stdout.splitlines()
    )
    code, stdout, _ = run_cli("build", str(FIX / "multinode.toml"), "--out", str(tmp_path / "m"))
    assert "not pinned: model" not in stdout  # a commit sha is a pin


def test_lock_says_when_the_vllm_version_is_only_the_specs_claim(tmp_path):
    text = (
        'name = "custom"\n[model]\npath = "/m"\nserved_name = "m"\n[vllm]\nversion = "0.32.0"\n'
        '[image]\nbase = "registry.internal/team/vllm-patched:2026-11"\n'
    )
    (tmp_path / "s.toml").write_text(text)
    pin = json.loads(render_files(load_spec(tmp_path / "s.toml"))["tqdeploy.lock.json"].data)
    assert pin["pins"]["vllm"] == {
        "version": "0.32.0",
        "how": "base image registry.internal/team/vllm-patched:2026-11",
        "note": "registry.internal/team/vllm-patched:2026-11 is not vLLM's official image: that it holds "
        "vLLM 0.32.0 is the spec's claim, not checked by tqdeploy",
    }
    official = json.loads(render_files(CASES["qwen36-27b-tq"]())["tqdeploy.lock.json"].data)["pins"]["vllm"]
    assert official == {"version": "0.32.0", "how": "official image tag vllm/vllm-openai:v0.32.0"}


def test_check_with_a_spec_takes_the_digest_the_registry_answered_at_build_time(run_cli, tmp_path):
    # The registry side of --resolve-digests is tested against a loopback registry (test_build_docker);
    # here the build it leaves behind: the digest in the lock, not in the spec.
    from tqdeploy.deployspec.digests import with_digest
    from tqdeploy.render.build import run_check

    spec_file = tmp_path / "tqdeploy.toml"
    spec_file.write_text(embedded_spec_path_text())
    spec = with_digest(load_spec(spec_file), "sha256:" + "12" * 32, "registry (--resolve-digests)")
    write_build(tmp_path / "b", render_files(spec))
    result = run_check(tmp_path / "b", spec_file)
    assert result.exit_code == 0 and result.drift["stale"] == []
    spec_file.write_text(spec_file.read_text().replace("v0.32.0", "v0.32.0-cu129"))  # another base: stale
    assert "Dockerfile" in run_check(tmp_path / "b", spec_file).drift["stale"]


def test_a_second_build_into_the_same_directory_at_once_is_refused(run_cli, tmp_path):
    import fcntl

    out = tmp_path / "build"
    assert run_cli("build", "--out", str(out))[0] == 0
    fd = os.open(out, os.O_RDONLY)  # what a build in progress holds
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        before = _tree(out)
        code, _, err = run_cli("build", "--embedded", "tiny-cpu-demo", "--out", str(out))
        assert code == 2 and err.startswith(f"tqdeploy: error: another tqdeploy build is writing into {out}")
        assert _tree(out) == before
    finally:
        os.close(fd)
    assert run_cli("build", "--embedded", "tiny-cpu-demo", "--out", str(out), "--take-over")[0] == 0


def test_every_file_a_build_renders_is_one_the_write_guard_knows():
    # render/guard.py RENDERABLE: the only names a rebuild may remove; a new template must be added there.
    from tqdeploy.filenames import SPEC_FILE_NAME
    from tqdeploy.render.files import template_plan
    from tqdeploy.render.guard import RENDERABLE
    from tqdeploy.render.lock import LOCK_NAME

    rendered = {SPEC_FILE_NAME, LOCK_NAME}
    for make in CASES.values():
        spec = make()
        rendered |= {out for out, _, _ in template_plan(spec)}
    assert rendered <= RENDERABLE
    assert RENDERABLE - rendered <= {"k8s/deployment.yaml", "k8s/leaderworkerset.yaml"}  # one per spec shape
