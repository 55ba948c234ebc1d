"""Hostile inputs to build, init, plan and download: one case per input.

Each case returns what to run and what must come out: exit 2 with a one-line error naming the input
(or exit 1 with findings). Every case is also held to what must never happen (see check_outcome).
Cases run in-process through the real CLI entry point; those that could block a process (a FIFO)
or need a memory limit run as a subprocess with a timeout and an address-space cap.
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from hostile.seeds import (
    HF_SECRET,
    PASSWORD,
    SECRET,
    SECRETS,
    embedded_text,
    leftovers,
    model_dir,
    qwen3_config,
    safetensors_bytes,
    secrets_in_files,
    spec_with,
)

IN_PROCESS_LIMIT_S = 20.0  # generous on 2 shared cores; every case here takes well under 2 s alone
SUBPROCESS_LIMIT_S = 60
MEMORY_LIMIT = 3 << 30  # address space of a subprocess case: the 10**12-layer config once took 1.3 GB+


@dataclass
class Case:
    argv: list[str]
    code: int = 2
    needle: str = ""  # must appear in the first line of stderr
    env: dict[str, str] = field(default_factory=dict)
    inputs: list[Path] = field(default_factory=list)  # files that carry a seeded secret on purpose
    after: Callable[[], None] | None = None  # what must hold on disk afterwards
    subprocess: bool = False
    chdir: Path | None = None


# ---------------------------------------------------------------- loses the user's files


def build_out_root(tmp: Path) -> Case:
    return Case(["build", "--embedded", "tiny-cpu-demo", "--out", "/"], needle="--out / is /")


def build_out_etc(tmp: Path) -> Case:
    return Case(["build", "--embedded", "tiny-cpu-demo", "--out", "/etc/../etc"], needle="is /etc")


def first_build_over_user_files(tmp: Path) -> Case:
    out = tmp / "b"
    out.mkdir()
    (out / "Dockerfile").write_text("FROM my-own-image\n")
    (out / "nginx.conf").write_text("# mine\n")

    def after() -> None:
        assert (out / "Dockerfile").read_text() == "FROM my-own-image\n"
        assert (out / "nginx.conf").read_text() == "# mine\n"
        assert sorted(p.name for p in out.iterdir()) == ["Dockerfile", "nginx.conf"]

    return Case(
        ["build", "--embedded", "tiny-cpu-demo", "--out", str(out)], needle="Dockerfile, nginx.conf", after=after
    )


def build_out_dot_keeps_hand_edited_spec(tmp: Path) -> Case:
    mine = embedded_text().replace('served_name = "tiny"', 'served_name = "mine"')
    (tmp / "tqdeploy.toml").write_text(mine)

    def after() -> None:
        assert (tmp / "tqdeploy.toml").read_text() == mine

    return Case(["build", "--embedded", "tiny-cpu-demo", "--out", "."], needle="tqdeploy.toml", after=after, chdir=tmp)


def _built(tmp: Path, embedded: str = "tiny-cpu-demo") -> Path:
    from tqdeploy.render import render_files, write_build
    from tqdeploy.spec import load_spec

    out = tmp / "b"
    write_build(out, render_files(load_spec(embedded=embedded, check_vllm_flags=False)))
    return out


def rebuild_keeps_an_edited_file(tmp: Path) -> Case:
    out = _built(tmp)
    edited = (out / "serve.sh").read_text() + "# my change\n"
    (out / "serve.sh").write_text(edited)

    def after() -> None:
        assert (out / "serve.sh").read_text() == edited

    return Case(["build", "--embedded", "tiny-cpu-demo", "--out", str(out)], needle="serve.sh", after=after)


def rebuild_force_backs_up_the_edit(tmp: Path) -> Case:
    out = _built(tmp)
    edited = (out / "serve.sh").read_text() + "# my change\n"
    (out / "serve.sh").write_text(edited)

    def after() -> None:
        (backup,) = out.glob(".tqdeploy-backup-*")
        assert (backup / "serve.sh").read_text() == edited
        assert "# my change" not in (out / "serve.sh").read_text()

    return Case(["build", "--embedded", "tiny-cpu-demo", "--out", str(out), "--force"], code=0, after=after)


def rebuild_keeps_an_edited_stale_file(tmp: Path) -> Case:
    out = _built(tmp, "qwen36-27b-tq")  # renders download.sh; tiny-cpu-demo does not
    (out / "download.sh").write_text("#!/bin/sh\n# mine now\n")

    def after() -> None:
        assert (out / "download.sh").read_text() == "#!/bin/sh\n# mine now\n"

    return Case(["build", "--embedded", "tiny-cpu-demo", "--out", str(out)], needle="download.sh", after=after)


def lock_naming_user_files_deletes_nothing(tmp: Path) -> Case:
    out = _built(tmp)
    (out / "models").mkdir()
    weights = out / "models" / "w.safetensors"
    weights.write_bytes(b"weights")
    outside = tmp / "x"
    outside.write_bytes(b"outside")
    lock = json.loads((out / "tqdeploy.lock.json").read_text())
    digest = hashlib.sha256(b"weights").hexdigest()
    lock["files"].update(
        {
            "models/w.safetensors": digest,
            "../x": hashlib.sha256(b"outside").hexdigest(),
            str(outside): hashlib.sha256(b"outside").hexdigest(),
        }
    )
    (out / "tqdeploy.lock.json").write_text(json.dumps(lock))

    def after() -> None:
        assert weights.read_bytes() == b"weights" and outside.read_bytes() == b"outside"

    return Case(["build", "--embedded", "tiny-cpu-demo", "--out", str(out)], code=0, after=after)


# ---------------------------------------------------------------- leaks a secret


def _extra_args(tmp: Path, args: str) -> Path:
    return spec_with(tmp, "extra_args = []", f"extra_args = [{args}]")


def extra_args_api_key_underscore(tmp: Path) -> Case:
    spec = _extra_args(tmp, f'"--api_key", "{SECRET}"')
    return Case(["build", str(spec), "--out", str(tmp / "b")], needle="--api-key", inputs=[spec])


def extra_args_api_key_abbreviated(tmp: Path) -> Case:
    spec = _extra_args(tmp, f'"--api-k={SECRET}"')
    return Case(["build", str(spec), "--out", str(tmp / "b")], needle="--api-k is read as --api-key", inputs=[spec])


def extra_args_api_key_dry_run(tmp: Path) -> Case:
    spec = _extra_args(tmp, f'"--api_key", "{SECRET}"')
    return Case(["build", str(spec), "--out", str(tmp / "b"), "--dry-run"], needle="--api-key", inputs=[spec])


def extra_args_hf_token_underscore(tmp: Path) -> Case:
    spec = _extra_args(tmp, f'"--hf_token={SECRET}"')
    return Case(["build", str(spec), "--out", str(tmp / "b")], needle="--hf-token", inputs=[spec])


def _mirror_spec(tmp: Path, url: str) -> Path:
    return spec_with(tmp, 'mirrors = ["https://huggingface.co"]', f'mirrors = ["{url}"]', "qwen36-27b-tq")


def spec_mirror_unparsable_with_password(tmp: Path) -> Case:
    spec = _mirror_spec(tmp, f"http://user:{PASSWORD}@[::1")
    return Case(["build", str(spec), "--out", str(tmp / "b")], needle="model.mirrors", inputs=[spec])


def spec_mirror_token_in_query(tmp: Path) -> Case:
    spec = _mirror_spec(tmp, f"https://mirror.example/?token={HF_SECRET}")
    return Case(["build", str(spec), "--out", str(tmp / "b")], needle="query string", inputs=[spec])


def download_mirror_unparsable_with_password(tmp: Path) -> Case:
    argv = ["download", "org/tiny@main", "--to", str(tmp / "d"), "--mirror", f"http://user:{PASSWORD}@[::1"]
    return Case(argv, needle="does not parse")


def download_mirror_token_in_query(tmp: Path) -> Case:
    argv = ["download", "org/tiny@main", "--to", str(tmp / "d"), "--mirror", f"http://127.0.0.1:9/?token={HF_SECRET}"]
    return Case(argv, needle="query string")


def _bad_endpoint() -> dict[str, str]:
    return {"HF_ENDPOINT": f"http://user:{PASSWORD}@[::1"}


def hf_endpoint_password_plan(tmp: Path) -> Case:
    return Case(["plan", "--model", "org/tiny@main", "--gpu", "H200"], needle="HF_ENDPOINT", env=_bad_endpoint())


def hf_endpoint_password_init(tmp: Path) -> Case:
    argv = ["init", "--model", "org/tiny@main", "--no-probe", "--out", str(tmp / "t.toml")]
    return Case(argv, needle="HF_ENDPOINT", env=_bad_endpoint())


def hf_endpoint_password_download(tmp: Path) -> Case:
    return Case(["download", "org/tiny@main", "--to", str(tmp / "d")], needle="HF_ENDPOINT", env=_bad_endpoint())


# ---------------------------------------------------------------- crashes or lies


def _plan(folder: Path, *extra: str) -> list[str]:
    return ["plan", "--model", str(folder), "--gpu", "H200", *extra]


def config_layers_10e12(tmp: Path) -> Case:
    folder = model_dir(tmp, qwen3_config(num_hidden_layers=10**12))
    return Case(_plan(folder), needle="num_hidden_layers", subprocess=True)


def config_10mb_nested_arrays(tmp: Path) -> Case:
    folder = model_dir(tmp, '{"a": ' + "[" * 5_000_000 + "]" * 5_000_000 + "}")
    return Case(_plan(folder), needle="config.json", subprocess=True)


def config_1mb_nested_arrays(tmp: Path) -> Case:
    folder = model_dir(tmp, '{"a": ' + "[" * 500_000 + "]" * 500_000 + "}")
    return Case(_plan(folder), needle="nested too deeply")


def config_kv_lora_rank_string(tmp: Path) -> Case:
    return Case(_plan(model_dir(tmp, qwen3_config(kv_lora_rank="abc"))), needle="kv_lora_rank")


def config_kv_heads_zero(tmp: Path) -> Case:
    return Case(_plan(model_dir(tmp, qwen3_config(num_key_value_heads=0))), needle="num_key_value_heads = 0")


def config_5000_digit_integer(tmp: Path) -> Case:
    text = json.dumps(qwen3_config()).replace('"num_hidden_layers": 36', '"num_hidden_layers": ' + "9" * 5000)
    return Case(_plan(model_dir(tmp, text)), needle="not valid JSON")


def _tensor(offsets: str) -> str:
    return '{"w": {"dtype": "BF16", "shape": [4], "data_offsets": ' + offsets + "}}"


def _st_case(tmp: Path, offsets: str, needle: str = "data_offsets") -> Case:
    st = safetensors_bytes(_tensor(offsets), b"\0" * 8)
    return Case(_plan(model_dir(tmp, None, **{"model.safetensors": st})), needle=needle)


def st_offsets_strings(tmp: Path) -> Case:
    return _st_case(tmp, '["x", "y"]')


def st_offsets_null(tmp: Path) -> Case:
    return _st_case(tmp, "[null, null]")


def st_offsets_infinity(tmp: Path) -> Case:
    return _st_case(tmp, "[0, Infinity]", "corrupt safetensors header")


def st_offsets_nan(tmp: Path) -> Case:
    return _st_case(tmp, "[NaN, 8]", "corrupt safetensors header")


def st_offsets_float_reversed(tmp: Path) -> Case:
    return _st_case(tmp, "[1e15, 0]")


def st_offsets_negative(tmp: Path) -> Case:
    return _st_case(tmp, "[-8, 0]", "outside its data")


def st_offsets_past_the_file(tmp: Path) -> Case:
    return _st_case(tmp, "[0, 1000000000000000]", "outside its data")


def st_header_200k_deep(tmp: Path) -> Case:
    st = safetensors_bytes("[" * 200_000 + "]" * 200_000)
    return Case(_plan(model_dir(tmp, None, **{"model.safetensors": st})), needle="corrupt safetensors header")


def _index(tmp: Path, weight_map) -> Path:
    return model_dir(tmp, None, **{"model.safetensors.index.json": json.dumps({"weight_map": weight_map}).encode()})


def index_weight_map_list(tmp: Path) -> Case:
    return Case(_plan(_index(tmp, ["model-00001.safetensors"])), needle="weight_map is not an object")


def index_weight_map_parent(tmp: Path) -> Case:
    (tmp / "other").mkdir()
    (tmp / "other" / "model.safetensors").write_bytes(safetensors_bytes(_tensor("[0, 8]"), b"\0" * 8))
    return Case(_plan(_index(tmp, {"w": "../other/model.safetensors"})), needle="outside the checkpoint folder")


def index_weight_map_absolute(tmp: Path) -> Case:
    return Case(_plan(_index(tmp, {"w": "/etc/passwd"})), needle="outside the checkpoint folder")


def download_mirror_unparsable(tmp: Path) -> Case:
    return Case(["download", "org/tiny@main", "--to", str(tmp / "d"), "--mirror", "http://[::1"], needle="http://[::1")


def download_mirror_port_99999(tmp: Path) -> Case:
    argv = ["download", "org/tiny@main", "--to", str(tmp / "d"), "--mirror", "http://127.0.0.1:99999"]
    return Case(argv, needle="port is not 1-65535")


def download_revision_with_at(tmp: Path) -> Case:
    return Case(["download", "org/tiny@main@evil", "--to", str(tmp / "d")], needle="main@evil")


def plan_reserve_inf(tmp: Path) -> Case:
    return Case(_plan(model_dir(tmp), "--reserve-gib", "inf"), needle="--reserve-gib inf")


def plan_min_concurrency_nan(tmp: Path) -> Case:
    return Case(_plan(model_dir(tmp), "--min-concurrency", "nan"), needle="--min-concurrency nan")


def plan_kv_memory_inf(tmp: Path) -> Case:
    return Case(_plan(model_dir(tmp), "--kv-cache-memory-gib", "inf"), needle="--kv-cache-memory-gib inf")


def plan_tp_int64_max(tmp: Path) -> Case:
    return Case(_plan(model_dir(tmp), "--tp", "9223372036854775807"), needle="--tp 9223372036854775807")


def plan_gpu_memory_utilization_nan(tmp: Path) -> Case:
    return Case(_plan(model_dir(tmp), "--gpu-memory-utilization", "nan"), needle="--gpu-memory-utilization nan")


def _spec_number(tmp: Path, old: str, new: str) -> Case:
    spec = spec_with(tmp, old, new, "qwen36-27b-tq")
    return Case(["build", str(spec), "--out", str(tmp / "b")], needle=new.split(" =")[0])


def spec_tp_int64_max(tmp: Path) -> Case:
    return _spec_number(tmp, "tensor_parallel_size = 1", "tensor_parallel_size = 9223372036854775807")


def spec_max_model_len_huge(tmp: Path) -> Case:
    return _spec_number(tmp, "max_model_len = 262144", "max_model_len = 99999999999999999")


def spec_served_name_nul(tmp: Path) -> Case:
    spec = spec_with(tmp, 'served_name = "tiny"', 'served_name = "ti\\u0000ny"')
    return Case(["build", str(spec), "--out", str(tmp / "b")], needle="model.served_name")


def spec_utf8_bom(tmp: Path) -> Case:
    spec = tmp / "bom.toml"
    spec.write_bytes(b"\xef\xbb\xbf" + embedded_text().encode())
    return Case(["build", str(spec), "--out", str(tmp / "b")], needle="byte order mark (BOM)")


# ---------------------------------------------------------------- hangs or grows without bound


def fifo_model_safetensors(tmp: Path) -> Case:
    folder = model_dir(tmp)
    os.mkfifo(folder / "model.safetensors")
    return Case(_plan(folder), needle="not a regular file", subprocess=True)


def fifo_config_json(tmp: Path) -> Case:
    folder = tmp / "model"
    folder.mkdir()
    os.mkfifo(folder / "config.json")
    return Case(_plan(folder), needle="not a regular file", subprocess=True)


def fifo_spec_file(tmp: Path) -> Case:
    os.mkfifo(tmp / "spec.toml")
    return Case(
        ["build", str(tmp / "spec.toml"), "--out", str(tmp / "b")], needle="not a regular file", subprocess=True
    )


def spec_dev_zero(tmp: Path) -> Case:
    return Case(["build", "/dev/zero", "--out", str(tmp / "b")], needle="/dev/zero", subprocess=True)


def extra_args_20000(tmp: Path) -> Case:
    spec = _extra_args(tmp, ", ".join(['"--enforce-eager"'] * 20_000))
    return Case(["build", str(spec), "--out", str(tmp / "b")], needle="larger than a deployment spec")


def extra_args_1500_within_the_size_cap(tmp: Path) -> Case:
    spec = _extra_args(tmp, ",\n".join(['"-O3"'] * 1500))
    return Case(["build", str(spec), "--out", str(tmp / "b")], needle="1500 items")


def spec_200kb_with_a_toml_error(tmp: Path) -> Case:
    spec = tmp / "big.toml"
    spec.write_text("".join(f"x{i}" + ".a" * 2000 + " = 1\n" for i in range(50)) + "[broken\n")
    return Case(["build", str(spec), "--out", str(tmp / "b")], needle="not a deployment spec")


def spec_60kb_dotted_keys(tmp: Path) -> Case:
    spec = tmp / "dotted.toml"
    spec.write_text("".join(f"x{i}" + ".a" * 2000 + " = 1\n" for i in range(15)) + "[broken\n")
    return Case(["build", str(spec), "--out", str(tmp / "b")], needle="dotted parts")


def spec_60kb_nested_arrays(tmp: Path) -> Case:
    spec = tmp / "nested.toml"
    spec.write_text("x = " + "[\n" * 30000)
    return Case(["build", str(spec), "--out", str(tmp / "b")], needle="nested too deeply")


def run_subprocess(case: Case, tmp: Path) -> tuple[int, str, str]:
    def limits() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
        os.setsid()

    exe = Path(sys.executable).parent / "tqdeploy"
    env = {**os.environ, **case.env, "NO_COLOR": "1", "COLUMNS": "200"}
    proc = subprocess.Popen(
        [str(exe), *case.argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=case.chdir or tmp,
        preexec_fn=limits,
    )
    try:
        out, err = proc.communicate(timeout=SUBPROCESS_LIMIT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        proc.communicate()
        pytest.fail(f"{case.argv} ran past {SUBPROCESS_LIMIT_S} s")
    return proc.returncode, out, err


def check_outcome(case: Case, tmp: Path, code: int, out: str, err: str) -> None:
    assert "Traceback" not in out + err and "internal error" not in err, err[-2000:]
    for secret in SECRETS:
        assert secret not in out and secret not in err, f"seeded secret printed: {err[-500:]}"
    assert code == case.code, (code, out[-1000:], err[-1000:])
    if case.code == 2:
        lines = err.splitlines()
        assert lines and lines[0].startswith("tqdeploy: error:"), err[-1000:]
        assert case.needle in lines[0], lines[0]
        assert len(lines) <= 2, err  # one line, and the fix
    assert secrets_in_files(tmp, set(case.inputs)) == []
    assert leftovers(tmp) == []
    if case.after is not None:
        case.after()


def test_hostile_input(name, tmp_path, run_cli, monkeypatch):
    monkeypatch.delenv("HF_ENDPOINT", raising=False)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    case = CASES[name](tmp_path)
    started = time.monotonic()
    if case.subprocess:
        code, out, err = run_subprocess(case, tmp_path)
    else:
        for key, value in case.env.items():
            monkeypatch.setenv(key, value)
        monkeypatch.chdir(case.chdir or tmp_path)
        code, out, err = run_cli(*case.argv)
        assert time.monotonic() - started < IN_PROCESS_LIMIT_S, f"{name} took {time.monotonic() - started:.1f} s"
    check_outcome(case, tmp_path, code, out, err)


def test_the_image_context_holds_only_what_the_dockerfile_copies(tmp_path):
    import io
    import tarfile

    from tqdeploy.render.image import context_tar

    out = _built(tmp_path, "qwen36-27b-tq")
    (out / "secrets").mkdir(exist_ok=True)  # build created it with a random key
    (out / "secrets" / "vllm-api-key").write_text(SECRET)
    (out / "models").mkdir()
    (out / "models" / "w.safetensors").write_bytes(b"weights")
    with tarfile.open(fileobj=io.BytesIO(context_tar(out))) as tar:
        assert sorted(tar.getnames()) == ["Dockerfile", "healthcheck.sh", "serve.sh"]
        assert tar.getmember("serve.sh").mode & 0o777 == 0o755


def build_check_with_a_fifo_lock(tmp: Path) -> Case:
    (tmp / "b").mkdir()
    os.mkfifo(tmp / "b" / "tqdeploy.lock.json")
    return Case(["build", "--check", str(tmp / "b")], needle="not valid JSON", subprocess=True)


def build_check_with_a_fifo_in_place_of_serve_sh(tmp: Path) -> Case:
    out = _built(tmp)
    (out / "serve.sh").unlink()
    os.mkfifo(out / "serve.sh")
    return Case(["build", "--check", str(out)], code=1, subprocess=True)


def extra_args_password_flag(tmp: Path) -> Case:
    spec = _extra_args(tmp, f'"--db-password={SECRET}"')
    return Case(["build", str(spec), "--out", str(tmp / "b")], needle="a secret by its name", inputs=[spec])


def extra_args_api_keys_plural(tmp: Path) -> Case:
    spec = _extra_args(tmp, f'"--api-keys", "{SECRET}"')
    return Case(["build", str(spec), "--out", str(tmp / "b")], needle="--api-keys is read as --api-key", inputs=[spec])


def _manifest(tmp: Path, files) -> Path:
    folder = tmp / "m"
    folder.mkdir()
    manifest = {"schema": "tqdeploy.download.manifest/1", "repo": "org/tiny", "revision": "main", "commit": "0" * 40}
    (folder / "tqdeploy-manifest.json").write_text(json.dumps({**manifest, "files": files}))
    return folder


def verify_manifest_path_outside_the_folder(tmp: Path) -> Case:
    folder = _manifest(tmp, [{"path": "../../etc/passwd", "size": 1, "sha256": None, "git_oid": None, "lfs": False}])
    return Case(["download", "--verify", str(folder)], needle="not inside the model folder")


def verify_manifest_as_a_list(tmp: Path) -> Case:
    folder = tmp / "m"
    folder.mkdir()
    (folder / "tqdeploy-manifest.json").write_text("[1, 2]")
    return Case(["download", "--verify", str(folder)], needle="not a tqdeploy manifest")


CASES = {name: fn for name, fn in globals().items() if callable(fn) and fn.__module__ == __name__}
CASES = {name: fn for name, fn in CASES.items() if not name.startswith(("_", "check_", "test_", "run_"))}
CASES.pop("Case", None)


def pytest_generate_tests(metafunc):
    if metafunc.function is test_hostile_input:
        metafunc.parametrize("name", sorted(CASES))
