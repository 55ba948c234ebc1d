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
    TESTS,
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
    mine = embedded_text().replace('served_name = "smollm2-135m-instruct"', 'served_name = "mine"')
    (tmp / "tqdeploy.toml").write_text(mine)

    def after() -> None:
        assert (tmp / "tqdeploy.toml").read_text() == mine

    return Case(["build", "--embedded", "tiny-cpu-demo", "--out", "."], needle="tqdeploy.toml", after=after, chdir=tmp)


def _built(tmp: Path, embedded: str = "tiny-cpu-demo") -> Path:
    from tqdeploy.deployspec import load_spec
    from tqdeploy.render import render_files, write_build

    out = tmp / "b"
    write_build(out, render_files(load_spec(embedded=embedded)))
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
    spec = spec_with(tmp, 'served_name = "smollm2-135m-instruct"', 'served_name = "ti\\u0000ny"')
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


def run_case(name: str, make: Callable[[Path], Case], tmp: Path, run_cli, monkeypatch) -> tuple[Case, int, str, str]:
    """Make the case and run it: in a subprocess when it asks for one, else in-process within the time bound."""
    monkeypatch.delenv("HF_ENDPOINT", raising=False)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    case = make(tmp)
    started = time.monotonic()
    if case.subprocess:
        return (case, *run_subprocess(case, tmp))
    for key, value in case.env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(case.chdir or tmp)
    code, out, err = run_cli(*case.argv)
    assert time.monotonic() - started < IN_PROCESS_LIMIT_S, f"{name} took {time.monotonic() - started:.1f} s"
    return case, code, out, err


def test_hostile_input(name, tmp_path, run_cli, monkeypatch):
    case, code, out, err = run_case(name, CASES[name], tmp_path, run_cli, monkeypatch)
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
        # exactly what the Dockerfile COPYs (serve.sh healthcheck.sh warmup.sh launch_vllm.py) and itself
        lines = (out / "Dockerfile").read_text().splitlines()
        copied = [name for line in lines if line.startswith("COPY") for name in line.split()[1:-1]]
        assert sorted(tar.getnames()) == sorted(["Dockerfile", *copied])
        assert "serve.sh" in tar.getnames() and not any(n.startswith(("secrets", "models")) for n in tar.getnames())
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


# ---------------------------------------------------------------- build files: state.json, logs, key files
# Each is a file a command reads from a build that anyone with access can edit, copy or replace: a FIFO once
# hung status/logs/down/connect, /dev/zero was read until MemoryError, and `logs` printed a linked /etc/shadow.


def _state_dir(tmp: Path) -> Path:
    folder = tmp / "b" / ".tqdeploy"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


GOOD_STATE = {
    "schema": "tqdeploy.state/1",
    "runtime": "process",
    "host": "127.0.0.1",
    "port": 18123,
    "base_url": "http://127.0.0.1:18123",
    "served_model_name": "tiny",
    "phase": "stopped",
    "ready": False,
    "restarts": 0,
}


def _write_state(tmp: Path, text: str) -> Path:
    (_state_dir(tmp) / "state.json").write_text(text)
    return tmp / "b"


def state_fifo_status(tmp: Path) -> Case:
    os.mkfifo(_state_dir(tmp) / "state.json")
    return Case(["status", str(tmp / "b")], needle="state.json is a FIFO", subprocess=True)


def state_fifo_down(tmp: Path) -> Case:
    os.mkfifo(_state_dir(tmp) / "state.json")
    return Case(["down", str(tmp / "b")], needle="state.json is a FIFO", subprocess=True)


def state_fifo_connect(tmp: Path) -> Case:
    os.mkfifo(_state_dir(tmp) / "state.json")
    return Case(["connect", "openai", str(tmp / "b")], needle="state.json is a FIFO", subprocess=True)


def state_dev_zero(tmp: Path) -> Case:
    (_state_dir(tmp) / "state.json").symlink_to("/dev/zero")
    return Case(["status", str(tmp / "b")], needle="lies outside", subprocess=True)


def state_link_to_a_file_outside(tmp: Path) -> Case:
    (tmp / "elsewhere.json").write_text(json.dumps(GOOD_STATE))
    (_state_dir(tmp) / "state.json").symlink_to(tmp / "elsewhere.json")
    return Case(["status", str(tmp / "b")], needle="lies outside")


def state_folder(tmp: Path) -> Case:
    (_state_dir(tmp) / "state.json").mkdir()
    return Case(["status", str(tmp / "b")], needle="state.json is a folder")


def state_2mb(tmp: Path) -> Case:
    build = _write_state(tmp, json.dumps({**GOOD_STATE, "last_error": {"id": "x", "title": "y" * (2 << 20)}}))
    return Case(["status", str(build)], needle="more than the 1048576")


def state_deeply_nested(tmp: Path) -> Case:
    return Case(["status", str(_write_state(tmp, "[" * 500_000 + "]" * 500_000))], needle="state.json is corrupt")


def state_binary(tmp: Path) -> Case:
    (_state_dir(tmp) / "state.json").write_bytes(b"\xff\xfe\x00{")
    return Case(["status", str(tmp / "b")], needle="state.json is corrupt")


# A hand-edited field: (field, JSON text of the value). Every one was an internal error, a wrong verdict or a
# 300-digit uptime before state.json was validated; each must be one line naming the field.
BAD_FIELDS = {
    "restarts_many": ("restarts", '"many"'),
    "restarts_negative": ("restarts", "-1"),
    "started_at_yesterday": ("started_at", '"yesterday"'),
    "started_at_1e300": ("started_at", "1e300"),
    "started_at_nan": ("started_at", "NaN"),
    "started_at_next_year": ("started_at", str(int(time.time()) + 366 * 86400)),
    "port_99999": ("port", "99999"),
    "port_abc": ("port", '"abc"'),
    "port_zero": ("port", "0"),
    "port_float": ("port", "8000.5"),
    "pid_string": ("pid", '"x"'),
    "pid_zero": ("pid", "0"),
    "pid_negative": ("pid", "-1"),
    "pid_true": ("pid", "true"),
    "pid_past_pid_max": ("pid", str(1 << 40)),
    "pgid_float": ("pgid", "1.5"),
    "supervisor_pid_list": ("supervisor_pid", "[1]"),
    "base_url_unclosed_ipv6": ("base_url", '"http://[::1"'),
    "base_url_other_host": ("base_url", '"http://evil.example:18123"'),
    "base_url_file_scheme": ("base_url", '"file:///etc/passwd"'),
    "base_url_port_99999": ("base_url", '"http://127.0.0.1:99999"'),
    "base_url_credentials": ("base_url", f'"http://user:{PASSWORD}@127.0.0.1:18123"'),
    "log_path_etc_shadow": ("log_path", '"/etc/shadow"'),
    "log_path_parent": ("log_path", '"../../../etc/passwd"'),
    "phase_number": ("phase", "5"),
    "phase_unknown": ("phase", '"hacked"'),
    "ready_string": ("ready", '"yes"'),
    "exit_code_1e400": ("exit_code", "1e400"),
    "api_key_file_number": ("api_key_file", "5"),
    "served_model_name_newline": ("served_model_name", '"ti\\nny"'),
    "last_error_string": ("last_error", '"boom"'),
    "last_error_without_id": ("last_error", '{"title": "t"}'),
    "gpu_baseline_bad_index": ("gpu_baseline", '[{"index": "x", "used_mib": 1}]'),
    "backend_key_of_another_runtime": ("backend", '{"container_id": "../../x"}'),  # the process runtime's section
    "backend_python_nul": ("backend", '{"python": "a\\u0000b"}'),
    "runtime_unknown": ("runtime", '"ssh"'),
    "spec_sha256_short": ("spec_sha256", '"abc"'),
    "host_with_space": ("host", '"127.0.0.1 evil"'),
}


def _bad_field_case(name: str, field_name: str, value: str) -> Callable[[Path], Case]:
    def case(tmp: Path) -> Case:
        text = json.dumps({k: v for k, v in GOOD_STATE.items() if k != field_name})
        build = _write_state(tmp, text[:-1] + f', "{field_name}": {value}}}')
        state = build / ".tqdeploy" / "state.json"  # carries the seeded password of one case, on purpose
        return Case(["status", str(build)], needle=f"field {field_name} = ", inputs=[state])

    case.__name__ = case.__qualname__ = f"state_field_{name}"
    return case


for _name, (_field, _value) in BAD_FIELDS.items():
    globals()[f"state_field_{_name}"] = _bad_field_case(_name, _field, _value)


def state_bad_field_down_says_use_force(tmp: Path) -> Case:
    build = _write_state(tmp, json.dumps({**GOOD_STATE, "pid": "x"}))
    return Case(["down", str(build)], needle="field pid = 'x'", subprocess=True)


def state_bad_field_connect(tmp: Path) -> Case:
    build = _write_state(tmp, json.dumps({**GOOD_STATE, "base_url": "http://[::1"}))
    return Case(["connect", "openai", str(build)], needle="field base_url")


def _log_dir(tmp: Path) -> Path:
    folder = _state_dir(tmp) / "logs"
    folder.mkdir(exist_ok=True)
    return folder


def logs_link_to_etc_passwd(tmp: Path) -> Case:
    (_log_dir(tmp) / "server.log").symlink_to("/etc/passwd")
    return Case(["logs", str(tmp / "b")], needle="lies outside")


def logs_run_log_linked_outside(tmp: Path) -> Case:
    (tmp / "secret.txt").write_text(SECRET + "\n")
    (_log_dir(tmp) / "server-1.log").symlink_to(tmp / "secret.txt")
    (_log_dir(tmp) / "server.log").symlink_to("server-1.log")
    return Case(["logs", str(tmp / "b")], needle="lies outside", inputs=[tmp / "secret.txt"])


def logs_fifo(tmp: Path) -> Case:
    os.mkfifo(_log_dir(tmp) / "server.log")
    return Case(["logs", str(tmp / "b")], needle="server.log is a FIFO", subprocess=True)


def logs_fifo_follow(tmp: Path) -> Case:
    os.mkfifo(_log_dir(tmp) / "server.log")
    return Case(["logs", str(tmp / "b"), "-f"], needle="server.log is a FIFO", subprocess=True)


def logs_dev_zero(tmp: Path) -> Case:
    (_log_dir(tmp) / "server.log").symlink_to("/dev/zero")
    return Case(["logs", str(tmp / "b")], needle="lies outside", subprocess=True)


def logs_folder(tmp: Path) -> Case:
    (_log_dir(tmp) / "server.log").mkdir()
    return Case(["logs", str(tmp / "b")], needle="server.log is a folder")


def logs_never_started(tmp: Path) -> Case:
    (tmp / "b").mkdir()
    return Case(["logs", str(tmp / "b")], needle="was never started")


# ---------------------------------------------------------------- key files (up pre-flight, connect)


def _connect_state(tmp: Path, key: Path) -> Path:
    state = {**GOOD_STATE, "port": 9, "base_url": "http://127.0.0.1:9", "api_key_file": str(key)}
    return _write_state(tmp, json.dumps(state))


def connect_check_key_folder(tmp: Path) -> Case:
    (tmp / "key").mkdir()
    return Case(["connect", "openai", str(_connect_state(tmp, tmp / "key")), "--check"], code=1)


def connect_check_key_fifo(tmp: Path) -> Case:
    os.mkfifo(tmp / "key")
    return Case(["connect", "openai", str(_connect_state(tmp, tmp / "key")), "--check"], code=1, subprocess=True)


def connect_check_key_dev_zero(tmp: Path) -> Case:
    return Case(["connect", "openai", str(_connect_state(tmp, Path("/dev/zero"))), "--check"], code=1, subprocess=True)


def connect_check_key_binary(tmp: Path) -> Case:
    (tmp / "key").write_bytes(b"\x00\xffsk")
    return Case(["connect", "openai", str(_connect_state(tmp, tmp / "key")), "--check"], code=1)


# ---------------------------------------------------------------- options: durations and URLs


def up_timeout_inf(tmp: Path) -> Case:
    return Case(["up", str(_built(tmp)), "--timeout", "inf"], needle="--timeout inf")


def up_stall_timeout_nan(tmp: Path) -> Case:
    return Case(["up", str(_built(tmp)), "--stall-timeout", "nan"], needle="--stall-timeout nan")


def up_drain_timeout_inf(tmp: Path) -> Case:
    return Case(["up", str(_built(tmp)), "--drain-timeout", "inf"], needle="--drain-timeout inf")


def connect_request_timeout_inf(tmp: Path) -> Case:
    argv = ["connect", "openai", str(_built(tmp)), "--request-timeout", "inf", "--check"]
    return Case(argv, needle="--request-timeout inf")


def connect_request_timeout_nan(tmp: Path) -> Case:
    return Case(["connect", "openai", str(_built(tmp)), "--request-timeout", "nan"], needle="--request-timeout nan")


def connect_base_url_unclosed_ipv6(tmp: Path) -> Case:
    argv = ["connect", "openai", str(_built(tmp)), "--base-url", "http://[::1"]
    return Case(argv, needle="--base-url 'http://[::1' does not parse")


def connect_model_newline(tmp: Path) -> Case:
    return Case(["connect", "openai", str(_built(tmp)), "--served-model-name", "ti\nny"], needle="control character")


def profile_duration_inf(tmp: Path) -> Case:
    return Case(["profile", "--url", "http://127.0.0.1:9", "--load", "--duration", "inf"], needle="--duration inf")


def profile_log_with_an_impossible_date(tmp: Path) -> Case:
    log = tmp / "vllm.log"
    log.write_text(
        "INFO 02-30 08:05:03 [api_server.py:1] vLLM API server version 0.32.0\n"
        "INFO 13-45 25:61:61 [gpu_model_runner.py:1] Starting to load model /m...\n"
    )
    return Case(["profile", "--log", str(log), "--out", str(tmp / "p"), "--no-chart"], code=0)


def download_deadline_nan(tmp: Path) -> Case:
    return Case(["download", "org/tiny@main", "--to", str(tmp / "d"), "--deadline", "nan"], needle="--deadline nan")


# ---------------------------------------------------------------- the seven earlier cases (issue 20, item 9)


def config_layer_types_string(tmp: Path) -> Case:
    config = qwen3_config(layer_types="full_attention", num_hidden_layers=3)
    return Case(_plan(model_dir(tmp, config)), needle="layer_types = 'full_attention' is not a list of names")


def config_layer_types_mixed(tmp: Path) -> Case:
    config = qwen3_config(layer_types=[1, None, {}], num_hidden_layers=3)
    return Case(_plan(model_dir(tmp, config)), needle="layer_types = [1, None, {}] is not a list of names")


def config_torch_dtype_unknown(tmp: Path) -> Case:
    folder = model_dir(tmp, qwen3_config(torch_dtype=[1, None]))
    return Case(_plan(folder), needle="torch_dtype = [1, None] is not a dtype")


def config_attn_type_list_strings(tmp: Path) -> Case:
    return Case(_plan(model_dir(tmp, qwen3_config(attn_type_list=["1", "0"]))), needle="attn_type_list")


def index_is_a_list(tmp: Path) -> Case:
    folder = model_dir(tmp, None, **{"model.safetensors.index.json": b"[1]"})
    return Case(_plan(folder), needle="is not a safetensors index (a JSON list")


def index_total_size_1e40_with_a_missing_shard(tmp: Path) -> Case:
    index = {"metadata": {"total_size": 1e40}, "weight_map": {"w": "model-00001-of-00002.safetensors"}}
    folder = model_dir(tmp, None, **{"model.safetensors.index.json": json.dumps(index).encode()})
    return Case(_plan(folder), needle="metadata.total_size = 1e+40 is not a byte count")


def index_total_size_negative(tmp: Path) -> Case:
    index = {"metadata": {"total_size": -5}, "weight_map": {"w": "model-00001-of-00002.safetensors"}}
    folder = model_dir(tmp, None, **{"model.safetensors.index.json": json.dumps(index).encode()})
    return Case(_plan(folder), needle="metadata.total_size = -5")


def _snapshot(tmp: Path, edit: Callable[[dict], None]) -> Path:
    data = json.loads((TESTS / "fixtures" / "hosts" / "h200-1gpu.json").read_text())
    edit(data)
    path = tmp / "host.json"
    path.write_text(json.dumps(data))
    return path


def snapshot_negative_gpu_memory_doctor(tmp: Path) -> Case:
    snap = _snapshot(tmp, lambda d: d["gpus"][0].update(memory_total=-150_000_000_000))
    return Case(["doctor", "--snapshot", str(snap)], needle="gpus[0].memory_total = -150000000000")


def snapshot_negative_gpu_memory_plan(tmp: Path) -> Case:
    snap = _snapshot(tmp, lambda d: d["gpus"][0].update(memory_used=-1))
    return Case(["plan", "--model", str(model_dir(tmp)), "--snapshot", str(snap)], needle="memory_used")


def snapshot_infinite_shm(tmp: Path) -> Case:
    snap = _snapshot(tmp, lambda d: d["shm"].update(free_bytes=float("inf")))
    return Case(["doctor", "--snapshot", str(snap)], needle="shm.free_bytes = inf")


def snapshot_memory_total_string_plan(tmp: Path) -> Case:
    snap = _snapshot(tmp, lambda d: d["gpus"][0].update(memory_total="80GB"))
    argv = ["plan", "--model", str(model_dir(tmp)), "--snapshot", str(snap)]
    return Case(argv, needle="gpus[0].memory_total = '80GB' must be an integer or null")


def snapshot_gpu_name_null_plan(tmp: Path) -> Case:
    snap = _snapshot(tmp, lambda d: d["gpus"][0].update(name=None))
    return Case(["plan", "--model", str(model_dir(tmp)), "--snapshot", str(snap)], needle="gpus[0].name = None")


def snapshot_compute_capability_number_doctor(tmp: Path) -> Case:
    snap = _snapshot(tmp, lambda d: d["gpus"][0].update(compute_capability=9.0))
    needle = "compute_capability = 9.0 must be a list of integers or null"
    return Case(["doctor", "--snapshot", str(snap)], needle=needle)


def snapshot_disk_free_string_doctor(tmp: Path) -> Case:
    snap = _snapshot(tmp, lambda d: d["disk"].update(free_bytes="lots"))
    return Case(["doctor", "--snapshot", str(snap)], needle="disk.free_bytes = 'lots' must be an integer")


def snapshot_fifo(tmp: Path) -> Case:
    os.mkfifo(tmp / "host.json")
    return Case(["doctor", "--snapshot", str(tmp / "host.json")], needle="is a FIFO", subprocess=True)


def snapshot_dev_zero(tmp: Path) -> Case:
    needle = "/dev/zero is not a readable text file (is a character device"
    return Case(["doctor", "--snapshot", "/dev/zero"], needle=needle, subprocess=True)


def download_revision_newline(tmp: Path) -> Case:
    return Case(["download", "org/tiny@ma\nin", "--to", str(tmp / "d")], needle="control character")


def download_trailing_newline(tmp: Path) -> Case:
    return Case(["download", "org/tiny@main\n", "--to", str(tmp / "d")], needle="control character")


def plan_revision_newline(tmp: Path) -> Case:
    return Case(["plan", "--model", "org/tiny@ma\nin", "--gpu", "H200"], needle="control character")


def plan_revision_escape(tmp: Path) -> Case:
    return Case(["plan", "--model", "org/tiny@main\x1b[2J", "--gpu", "H200"], needle="control character")


def spec_revision_newline(tmp: Path) -> Case:
    spec = spec_with(tmp, 'revision = "main"', 'revision = "ma\\nin"', "qwen36-27b-tq")
    return Case(["build", str(spec), "--out", str(tmp / "b")], needle="model.revision 'ma\\nin'")


def spec_repo_trailing_newline(tmp: Path) -> Case:
    spec = spec_with(tmp, 'repo = "Qwen/Qwen3.6-27B"', 'repo = "Qwen/Qwen3.6-27B\\n"', "qwen36-27b-tq")
    return Case(["build", str(spec), "--out", str(tmp / "b")], needle="model.repo")


def spec_served_name_trailing_newline(tmp: Path) -> Case:
    spec = spec_with(tmp, 'served_name = "smollm2-135m-instruct"', 'served_name = "tiny\\n"')
    return Case(["build", str(spec), "--out", str(tmp / "b")], needle="model.served_name")


def download_lock_fifo(tmp: Path) -> Case:
    os.mkfifo(tmp / "tqdeploy.lock.json")
    argv = ["download", "org/tiny", "--to", str(tmp / "d"), "--lock", str(tmp / "tqdeploy.lock.json")]
    return Case(argv, needle="is a FIFO", subprocess=True)


CASES = {name: fn for name, fn in globals().items() if callable(fn) and fn.__module__ == __name__}
CASES = {name: fn for name, fn in CASES.items() if not name.startswith(("_", "check_", "test_", "run_"))}
CASES.pop("Case", None)


def pytest_generate_tests(metafunc):
    if metafunc.function is test_hostile_input:
        metafunc.parametrize("name", sorted(CASES))


# ---------------------------------------------------------------- what must still pass, and the readers' details


def test_a_state_written_by_tqdeploys_own_writers_reads_back_whole(tmp_path):
    """Validation must not refuse what up, the supervisor and down write: every field they set round-trips."""
    from tqdeploy.findings import Finding, Severity
    from tqdeploy.runtime import state

    build = tmp_path / "b"
    log = state.logs_dir(build) / "server-1.log"
    error = Finding("TQ402", Severity.ERROR, "KV cache too small", {"max_model_len": 512}, "lower it", "runtime")
    written = state.new_state(
        build,
        runtime="process",
        host="::",
        port=18123,
        base_url="http://[::1]:18123",
        served_model_name="org/tiny:v1",
        spec_sha256="a" * 64,
        log_path=str(log),
        started_at=time.time(),
        phase="process",
        api_key_file=str(tmp_path / "secrets" / "key"),
        restarts=2,
        backend={"python": "/usr/bin/python3"},
        gpu_baseline=[{"index": 0, "name": "H200", "used_mib": 512, "free_mib": 1, "total_mib": 2, "processes": []}],
    )
    launched = {"pgid": os.getpid(), "supervisor_pid": os.getpid(), "pid": os.getpid()}
    ended = {"exit_code": -9, "exited_at": time.time(), "last_error": error.to_dict(), "ready": False}
    state.update_state(build, **launched)
    state.update_state(build, **ended)
    assert state.read_state(build) == written | launched | ended


def test_a_state_of_a_wildcard_bind_may_name_loopback(tmp_path):
    from tqdeploy.runtime import state

    for host, url in (
        ("0.0.0.0", "http://127.0.0.1:8000"),
        ("0.0.0.0", "http://localhost:8000"),
        ("::", "http://[::1]:8000"),
    ):
        state.new_state(tmp_path, host=host, port=8000, base_url=url)
        assert state.read_state(tmp_path)["base_url"] == url
    state.new_state(tmp_path, host="10.0.0.5", port=8000, base_url="http://127.0.0.1:8000")
    with pytest.raises(state.CorruptState, match="must name the state's host 10.0.0.5"):
        state.read_state(tmp_path)


def _log(tmp: Path, data: bytes) -> Path:
    logs = tmp / "b" / ".tqdeploy" / "logs"
    logs.mkdir(parents=True)
    (logs / "server-1.log").write_bytes(data)
    (logs / "server.log").symlink_to("server-1.log")
    return tmp / "b"


def test_logs_keeps_a_last_line_without_its_newline(run_cli, tmp_path):
    build = _log(tmp_path, b"1764578703.123|INFO first\n1764578704.000|INFO the last, cut\n1764578705.5")
    code, out, err = run_cli("logs", str(build))
    assert code == 0, err
    assert out == "INFO first\nINFO the last, cut\n1764578705.5\n"
    build2 = _log(tmp_path / "two", b"no newline at all")
    assert run_cli("logs", str(build2))[1] == "no newline at all\n"


def test_logs_prints_whole_lines_of_a_bounded_tail(tmp_path, monkeypatch):
    from tqdeploy.runtime import logs

    lines = [f"line {i:04d} " + "x" * 40 for i in range(2000)]
    build = _log(tmp_path, ("\n".join(lines) + "\n").encode())
    monkeypatch.setattr(logs, "LOG_LIMIT", 10_000)
    shown = list(logs.read_lines(build, None, False, False))
    assert shown == lines[-len(shown) :] and 150 < len(shown) < 200  # ~10 kB of 50-byte lines, none cut


def test_logs_without_follow_stops_at_the_size_it_opened(tmp_path):
    """A log that keeps growing while `logs` reads it is read up to its size at the start, never forever."""
    from tqdeploy.runtime import logs

    build = _log(tmp_path, b"a\nb\n")
    reader = logs.read_lines(build, None, False, False)
    assert next(reader) == "a"
    with open(build / ".tqdeploy" / "logs" / "server-1.log", "ab") as f:
        f.write(b"written later\n" * 1000)
    assert list(reader) == ["b"]


def _key_build(tmp: Path) -> Path:
    text = embedded_text()
    text = "\n".join(line for line in text.splitlines() if not line.startswith("api_key_file"))
    spec = tmp / "spec.toml"
    spec.write_text(text.replace("port = 8000", 'port = 8000\napi_key_file = "secrets/key"', 1) + "\n")
    from tqdeploy.deployspec import load_spec
    from tqdeploy.render import render_files, write_build

    out = tmp / "b"
    write_build(out, render_files(load_spec(spec)))
    (out / "secrets").mkdir(exist_ok=True)
    (out / "secrets" / "key").unlink(missing_ok=True)
    return out


def _make_key(path: Path, kind: str) -> None:
    if kind == "folder":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        data = {"empty": b"", "binary": b"\x00\xffsk\x01", "open": b"sk-tq-1\n", "private": b"sk-tq-1\n"}[kind]
        path.write_bytes(data)
        path.chmod(0o600 if kind == "private" else 0o644)


KEY_VERDICTS = {
    "folder": ("error", "is a folder, not a regular file"),
    "fifo": ("error", "is a FIFO, not a regular file"),
    "empty": ("error", "is empty"),
    "binary": ("error", "holds binary or control characters"),
    "open": ("warn", "has mode 0644: others on this host can read the key"),
}


@pytest.mark.parametrize("kind", [*KEY_VERDICTS, "private"])
def test_up_preflight_judges_the_key_file(tmp_path, kind):
    from tqdeploy.runtime.preflight import key_file_findings

    key = tmp_path / "key"
    _make_key(key, kind)
    findings = key_file_findings(key)
    if kind == "private":
        assert findings == []
        return
    severity, words = KEY_VERDICTS[kind]
    (finding,) = findings
    assert finding.id == "TQ413" and finding.severity.value == severity and words in finding.title, finding
    assert finding.evidence["api_key_file"] == str(key) and "sk-tq-1" not in json.dumps(finding.to_dict())


@pytest.mark.skipif(not (TESTS.parent / ".venv-vllm" / "bin" / "python").exists(), reason="no CPU vLLM venv")
@pytest.mark.parametrize("kind", ["folder", "open"])
def test_up_refuses_a_folder_as_key_file_before_anything_starts(tmp_path, kind):
    """The real CLI: a folder once passed pre-flight and failed later as a generic TQ419; 0644 only warns."""
    build = _key_build(tmp_path)
    _make_key(build / "secrets" / "key", kind)
    python = str(TESTS.parent / ".venv-vllm" / "bin" / "python")
    exe = Path(sys.executable).parent / "tqdeploy"
    proc = subprocess.run(
        [str(exe), "up", str(build), "--json", "--python", python],
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_LIMIT_S,
        env={**os.environ, "NO_COLOR": "1"},
    )
    result = json.loads(proc.stdout)
    assert proc.returncode == 1 and result["status"] == "refused", proc.stderr  # the tiny model is not there
    (key413,) = [f for f in result["findings"] if f["id"] == "TQ413"]
    assert key413["severity"] == KEY_VERDICTS[kind][0] and KEY_VERDICTS[kind][1] in key413["title"]
    assert not (build / ".tqdeploy" / "state.json").exists()  # refused before anything was started


def _page_examples(page: Path) -> dict[str, list[str]]:
    import re

    out: dict[str, list[str]] = {}
    section = None
    for line in page.read_text().splitlines():
        if line.startswith("## "):
            section = line[3:].strip()
        elif section in ("Catches", "Passes") and re.fullmatch(r"`[^`]+`", line.strip()):
            out.setdefault(section, []).append(line.strip().strip("`"))
    return out


TQ126_PAGE = TESTS.parent / "checks" / "docs" / "TQ126.md"


@pytest.mark.parametrize(
    "section,command", [(s, c) for s, cs in _page_examples(TQ126_PAGE).items() for c in cs], ids=lambda v: str(v)[:40]
)
def test_tq126_page_examples_run(run_cli, tmp_path, section, command):
    """Each example on checks/docs/TQ126.md is a shell command that makes FILE; doctor judges it."""
    subprocess.run(["sh", "-c", command], cwd=tmp_path, check=True, timeout=10)
    snapshot = TESTS / "fixtures" / "hosts" / "h200-1gpu.json"
    code, out, err = run_cli("doctor", "--snapshot", str(snapshot), "--api-key-file", str(tmp_path / "FILE"), "--json")
    assert code in (0, 1), err
    (finding,) = [f for f in json.loads(out)["findings"] if f["id"] == "TQ126"]
    if section == "Catches":
        assert finding["severity"] in ("warn", "error"), finding
    else:
        assert finding["severity"] == "ok", finding
    assert "sk-tq-example" not in out + err


def test_tq126_page_has_both_kinds_of_example():
    found = _page_examples(TQ126_PAGE)
    assert len(found.get("Catches", [])) >= 5 and len(found.get("Passes", [])) >= 2


def test_connect_warns_of_a_key_file_others_can_read(run_cli, tmp_path):
    key = tmp_path / "key"
    _make_key(key, "open")
    build = _connect_state(tmp_path, key)
    code, out, err = run_cli("connect", "openai", str(build))
    assert code == 0, err
    assert f"the API key file {key} has mode 0644: others on this host can read the key: chmod 600 {key}" in out
    key.chmod(0o600)
    assert "has mode" not in run_cli("connect", "openai", str(build))[1]


def test_impossible_numbers_in_a_vllm_log_or_metrics_are_not_figures():
    from tqdeploy.profile.metrics import cache_config_figures
    from tqdeploy.runtime.classify import StartContext, classify_log
    from tqdeploy.runtime.logstamp import clock_seconds

    line = (
        "ValueError: To serve at least one request with the models's max seq len (512), "
        "(1.2.3 GiB KV cache is needed, which is larger than the available KV cache memory (9" + "9" * 400 + " GiB). "
        "Based on the available memory, the estimated maximum model length is " + "7" * 5000 + "."
    )
    finding = classify_log([line], StartContext("b", max_model_len=512, model_dir="/nonexistent"))
    assert finding is not None and finding.id == "TQ402"
    assert finding.evidence["estimated_max_model_len"] is None and "kv_needed_gib" not in finding.evidence
    assert cache_config_figures({"num_gpu_blocks": "1e400", "block_size": "nan", "kv_cache_size_tokens": "16"}) == {
        "cache_dtype": None,
        "num_gpu_blocks": None,
        "block_size": None,
        "kv_cache_size_tokens": 16,
    }
    assert clock_seconds(2, 30, 8, 5, 3) is None and clock_seconds(13, 1, 0, 0, 0) is None
    assert clock_seconds(2, 29, 0, 0, 1.5) - clock_seconds(2, 29, 0, 0, 0) == 1.5  # the year is a leap year


HOSTILE_VALUES = [
    *(None, True, -1, 0, 2**63, 1e300, -1e300, float("nan"), float("inf")),
    *("", "x" * 5000, "a\nb", "\x1b[2J", "http://[::1", "/etc/shadow"),
    *([], [1, None, {}], {}, {"id": 5}, {"id": "TQ1", "title": "t", "remediation": 7}),
]


def test_no_value_in_any_state_field_is_an_internal_error(capsys, tmp_path):
    """Every field, set to each value above, through what status and connect do with it (read, judge, render
    as text and JSON): a result or a TQError, never another exception. The CLI's one-line funnel for a
    TQError is held by the state_field_* cases above; this is the breadth (~500 states, in-process)."""
    from tqdeploy.connect import connect, resolve_endpoint
    from tqdeploy.errors import TQError
    from tqdeploy.output import emit
    from tqdeploy.runtime.statefields import CHECKS
    from tqdeploy.runtime.status import status

    build = tmp_path / "b"
    _state_dir(tmp_path)
    outcomes = set()
    for field_name in [*CHECKS, "backend"]:  # and the runtime's own section (its BackendState validates it)
        for value in HOSTILE_VALUES:
            (build / ".tqdeploy" / "state.json").write_text(json.dumps({**GOOD_STATE, field_name: value}))
            for run in (
                lambda: status(build, probe=False),
                lambda: connect("openai", resolve_endpoint(build)),
            ):
                try:
                    result = run()
                except TQError as err:
                    outcomes.add("refused")
                    assert "\n" not in err.message, err.message  # one line, whatever the value held
                    continue
                for as_json in (False, True):
                    emit(result, as_json)
                outcomes.add("read")
    capsys.readouterr()
    assert outcomes == {"read", "refused"}


def test_the_fix_a_corrupt_state_names_works(run_cli, tmp_path):
    """`status` refuses a hand-edited field and names `down BUILD --force`; that command rewrites the state
    (finding nothing of the deployment running) and `status` reads it again."""
    build = _write_state(tmp_path, json.dumps({**GOOD_STATE, "pid": "x", "started_at": 1e300}))
    code, _, err = run_cli("status", str(build))
    assert code == 2 and f"`tqdeploy down {build.resolve()} --force`" in err, err
    code, out, err = run_cli("down", str(build), "--force", "--json")
    assert code == 0, err
    assert any(f["id"] == "TQ420" and "field pid = 'x'" in f["evidence"]["error"] for f in json.loads(out)["findings"])
    code, out, err = run_cli("status", str(build), "--json")
    assert code == 1 and json.loads(out)["state"] == "stopped", err
