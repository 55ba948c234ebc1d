"""Spec loading: TOML errors as file:line, unknown keys named, invalid values refused, nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tqdeploy.deployspec import embedded_spec_names, load_spec, spec_problems
from tqdeploy.deployspec.load import parse_spec_text
from tqdeploy.deployspec.model import Spec
from tqdeploy.errors import TQError

FIX = Path(__file__).resolve().parent / "fixtures" / "build"


def _refused(run_cli, tmp_path, spec_path, *extra):
    out = tmp_path / "out"
    code, stdout, err = run_cli("build", str(spec_path), "--out", str(out), *extra)
    assert code == 2
    assert "Traceback" not in err
    assert not out.exists(), "a refused spec must write nothing"
    return err.splitlines()


def test_embedded_specs_load_and_validate():
    assert {"qwen36-27b-tq", "tiny-cpu-demo"} <= set(embedded_spec_names())
    spec = load_spec()
    assert spec.name == "qwen36-27b-tq"
    assert spec.vllm.kv_cache_dtype == "turboquant_4bit_nc"
    assert spec.server.host == "127.0.0.1"
    demo = load_spec(embedded="tiny-cpu-demo")
    assert demo.variant == "cpu" and demo.model.path == "./models/smollm2"


def test_toml_syntax_error_names_file_and_line(run_cli, tmp_path):
    lines = _refused(run_cli, tmp_path, FIX / "bad-syntax.toml")
    assert lines[0].startswith(f"tqdeploy: error: {FIX / 'bad-syntax.toml'}:6:")
    assert "invalid TOML" in lines[0]
    assert lines[1].startswith("  fix:")


def test_unknown_key_is_named_with_its_line_and_a_suggestion(run_cli, tmp_path):
    lines = _refused(run_cli, tmp_path, FIX / "unknown-key.toml")
    assert lines[0] == (
        f"tqdeploy: error: {FIX / 'unknown-key.toml'}:6: unknown key 'model.revison' (did you mean 'revision'?)"
    )


def test_unknown_section_is_named(tmp_path):
    with pytest.raises(TQError, match=r"x.toml:2: unknown section \[sevrer\] \(did you mean 'server'\?\)"):
        parse_spec_text("schema = 1\n[sevrer]\nport = 1\n", "x.toml")


def test_wrong_type_is_named():
    with pytest.raises(TQError, match=r"s.toml:3: server.port must be an integer, got str '8000'"):
        parse_spec_text('name = "a"\n[server]\nport = "8000"\n', "s.toml")


def test_public_bind_without_api_key_is_refused(run_cli, tmp_path):
    lines = _refused(run_cli, tmp_path, FIX / "public-no-key.toml")
    assert "server.host 0.0.0.0 publishes the API beyond this machine without an API key" in lines[0]
    assert ":16:" in lines[0]  # the line of host = "0.0.0.0"
    assert "api_key_file" in lines[1]


@pytest.mark.parametrize(
    "patch, message",
    [
        (("max_model_len = 262144", "max_model_len = 0"), "vllm.max_model_len must be >= 1"),
        (("port = 8000", "port = 70000"), "server.port 70000 is not a TCP port"),
        (('name = "qwen36-27b-tq"', 'name = "Qwen_Bad"'), "must be a lowercase DNS label"),
        (
            ("extra_args = []", 'extra_args = ["--api-key", "s3cret"]'),
            "vllm.extra_args puts a secret on vLLM's command line (--api-key)",
        ),
        (
            ("extra_args = []", 'extra_args = ["--hf-token=hf_seededSpecToken0123456789"]'),
            "vllm.extra_args puts a secret on vLLM's command line (--hf-token)",
        ),
        (
            ("extra_args = []", 'extra_args = ["--tokenizer", "hf_seededSpecToken0123456789"]'),
            "vllm.extra_args puts a secret on vLLM's command line (a Hugging Face token)",
        ),
        (
            ('mirrors = ["https://huggingface.co"]', 'mirrors = ["https://ops:s3cret@mirror.example"]'),
            "a model.mirrors URL carries credentials",
        ),
        (
            ('base = "vllm/vllm-openai:v0.32.0"', 'base = "vllm/vllm-openai:v0.25.0"'),
            "image.base vllm/vllm-openai:v0.25.0 is not the vLLM 0.32.0 image that vllm.version pins",
        ),
        (
            ('base = "vllm/vllm-openai:v0.32.0"', 'base = "registry.internal:5000/mirror/vllm/vllm-openai:nightly"'),
            "is not the vLLM 0.32.0 image that vllm.version pins",
        ),
        (('base = "vllm/vllm-openai:v0.32.0"', 'base = "vllm/vllm-openai:v0.32.0-cu129"'), None),
        (('base = "vllm/vllm-openai:v0.32.0"', 'base = "registry.internal:5000/vllm/vllm-openai:v0.32.0"'), None),
        (("extra_args = []", 'extra_args = ["--max-model-len=4096"]'), "use vllm.max_model_len instead"),
        (
            ('base = "vllm/vllm-openai:v0.32.0"', 'base = "vllm/vllm-openai:latest"'),
            "explicit version tag (not latest)",
        ),
        (
            ('base = "vllm/vllm-openai:v0.32.0"', 'base = "vllm/vllm-openai:v0.32.0"\ndigest = "sha256:1234"'),
            "image.digest must be sha256:<64 hex>",
        ),
        (('version = "0.32.0"', 'version = "latest"'), "is not an exact release"),
        (('gpus = "all"', "gpus = [0]\n"), None),
        (("tensor_parallel_size = 1", "tensor_parallel_size = 2"), None),
    ],
)
def test_invalid_values_are_refused_and_nothing_is_written(run_cli, tmp_path, patch, message):
    from tqdeploy.deployspec.load import embedded_spec_path

    text = embedded_spec_path("qwen36-27b-tq").read_text()
    assert patch[0] in text
    spec_file = tmp_path / "tqdeploy.toml"
    spec_file.write_text(text.replace(patch[0], patch[1], 1))
    if message is None:  # valid variations must pass the spec's own rules
        assert spec_problems(parse_spec_text(spec_file.read_text(), str(spec_file))) == []
        return
    lines = _refused(run_cli, tmp_path, spec_file)
    assert message in "\n".join(lines[:2])
    assert lines[0].startswith(f"tqdeploy: error: {spec_file}:")
    for secret in ("s3cret", "hf_seededSpecToken0123456789"):  # the refusal does not spread the secret
        assert secret not in "\n".join(lines)


def test_tp_larger_than_listed_gpus_is_refused(tmp_path):
    text = (
        'name = "a"\n[model]\npath = "/m"\nserved_name = "a"\n[vllm]\nversion = "0.32.0"\n'
        'tensor_parallel_size = 4\n[image]\nbase = "x/y:1"\n[resources]\ngpus = [0, 1]\n'
    )
    assert [p.message for p in spec_problems(parse_spec_text(text, "a.toml"))] == [
        "2 GPU(s) listed but tensor_parallel_size is 4"
    ]


def test_repo_and_path_are_exclusive():
    text = (
        'name = "a"\n[model]\nrepo = "a/b"\nrevision = "main"\npath = "/m"\nserved_name = "a"\n'
        '[vllm]\nversion = "0.32.0"\n[image]\nbase = "x/y:1"\n'
    )
    problems = spec_problems(parse_spec_text(text, "a.toml"))
    assert "set exactly one of model.repo and model.path" in [p.message for p in problems]


def test_missing_spec_file_is_one_line(run_cli, tmp_path):
    code, _, err = run_cli("build", str(tmp_path / "nope.toml"), "--out", str(tmp_path / "o"))
    assert code == 2
    assert err.splitlines()[0] == f"tqdeploy: error: spec file {tmp_path / 'nope.toml'} not found"


def test_spec_hash_ignores_comments_and_key_order():
    a = 'name = "a"\nschema = 1\n[model]\npath = "/m"\nserved_name = "a"\n'
    b = '# a comment\nschema = 1\nname = "a"\n\n[model]\nserved_name = "a"   # here too\npath = "/m"\n'
    ha = Spec.from_data(parse_spec_text(a, "a"), "a").spec_hash
    hb = Spec.from_data(parse_spec_text(b, "b"), "b").spec_hash
    assert ha == hb
    c = b.replace('"/m"', '"/n"')
    assert Spec.from_data(parse_spec_text(c, "c"), "c").spec_hash != ha


def test_docs_describe_every_spec_key():
    from tqdeploy.deployspec.schema import SCHEMA

    doc = (Path(__file__).resolve().parent.parent / "docs" / "build.md").read_text()
    for section, table in SCHEMA.items():
        if section:
            assert f"### [{section}]" in doc
        for key, meta in table.items():
            assert f"| `{key}` |" in doc and meta.doc.replace("|", "/") in doc, f"{section}.{key} undocumented"


def test_flags_are_checked_against_a_local_checkpoint(run_cli, tmp_path):
    model = Path(__file__).resolve().parent / "fixtures" / "models" / "qwen3.6-27b"
    text = (
        f'name = "q"\n[model]\npath = "{model}"\nserved_name = "q"\n[vllm]\nversion = "0.32.0"\n'
        'tensor_parallel_size = 3\n[image]\nbase = "vllm/vllm-openai:v0.32.0"\n[resources]\ngpus = [0, 1, 2]\n'
    )
    (tmp_path / "s.toml").write_text(text)
    lines = _refused(run_cli, tmp_path, tmp_path / "s.toml")
    assert lines[0].startswith(f"tqdeploy: error: {tmp_path / 's.toml'}:7: vllm.tensor_parallel_size: ")
    assert "16 linear-attention key heads are not divisible by 3" in lines[0]
    (tmp_path / "s.toml").write_text(text.replace("tensor_parallel_size = 3", "tensor_parallel_size = 2"))
    code, stdout, err = run_cli("build", str(tmp_path / "s.toml"), "--out", str(tmp_path / "b"), "--json")
    assert code == 0, err
    import json

    assert f"vLLM flags checked against the checkpoint at {model}" in json.loads(stdout)["notes"]


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "s.toml: name is required: a lowercase DNS label (a-z, 0-9, '-', at most 53 chars) (and 4 more problems)"),
        ("model = 5\n", "s.toml:1: model must be one table [model], got int 5"),
        ('[[model]]\nrepo = "a/b"\n', "s.toml:1: model must be one table [model], got an array of tables [[...]]"),
    ],
)
def test_a_misshapen_spec_is_named_plainly(tmp_path, text, message):
    (tmp_path / "s.toml").write_text(text)
    with pytest.raises(TQError) as err:
        load_spec(tmp_path / "s.toml")
    assert err.value.message == str(tmp_path / message)


def test_vllm_version_must_be_an_exact_release():
    from tqdeploy.deployspec.validate import is_exact_release

    assert [v for v in ("0.32.0", "0.32.0rc1", "0.32.0.post1", "1.0.0") if not is_exact_release(v)] == []
    for v in ("latest", "0.32", "v0.32.0", "0.32.0+cpu", "0.32.1.dev5", "0.32.0-rc1", ">=0.32", "", None):
        assert not is_exact_release(v), v


def test_loading_a_spec_runs_no_linter_and_a_build_reads_its_spec_once(tmp_path, monkeypatch):
    """issue 22: load_spec is the spec's own rules only (spec/ imports nothing of lint, tests/test_layers.py);
    the build lints the spec it loaded, and parses the file once, also when no --model is given."""
    import subprocess
    import sys

    import tqdeploy.deployspec as spec_pkg
    from tqdeploy.render.build import run_build

    probe = (
        "import sys, tqdeploy.deployspec as s; s.load_spec(); "
        "print(sorted(m for m in sys.modules if m.startswith('tqdeploy.lint')))"
    )
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "[]"

    spec_file = tmp_path / "s.toml"
    spec_file.write_text(
        (Path(spec_pkg.embedded_spec_path("tiny-cpu-demo"))).read_text(encoding="utf-8"), encoding="utf-8"
    )
    parsed: list[str] = []
    real = spec_pkg.parse_spec_text
    monkeypatch.setattr(spec_pkg, "parse_spec_text", lambda text, source: parsed.append(source) or real(text, source))
    result = run_build(spec_file, out=tmp_path / "b", dry_run=True, progress=False)
    assert parsed == [str(spec_file)]
    assert result.name and not (tmp_path / "b").exists()


# The hashes the embedded specs had while Spec held a dict (before the typed sections, issue 36): the locks,
# image tags and cache fingerprints of existing builds name them, so the typed spec must hash the same bytes.
PINNED_SPEC_HASHES = {
    "qwen36-27b-tq": "df6fb2e78ebdba7bed9a6147b5a4bc222764a63a373c1ba77d03bf70e8e3fce3",
    "tiny-cpu-demo": "675a31358f523a7dfcd373efec9fad3f88825c38626cc421ed7ec24366f9246f",
}


@pytest.mark.parametrize("name", sorted(PINNED_SPEC_HASHES))
def test_the_typed_spec_hashes_what_the_dict_spec_hashed(name):
    from tqdeploy.deployspec.load import embedded_spec_path

    spec = load_spec(embedded=name)
    assert spec.spec_hash == PINNED_SPEC_HASHES[name]
    text = embedded_spec_path(name).read_text()
    # the sections give back the schema's dict, key for key (TOML arrays are tuples in a loaded spec)
    assert json.loads(spec.canonical_json()) == parse_spec_text(text, name)


def test_the_typed_sections_are_the_schema_s_sections():
    """One definition of the keys: a key added to the schema without its field (or the reverse) fails here."""
    from dataclasses import fields

    from tqdeploy.deployspec.model import SECTIONS
    from tqdeploy.deployspec.schema import SCHEMA

    assert set(SECTIONS) == set(SCHEMA) - {""}
    for name, section in SECTIONS.items():
        assert [f.name for f in fields(section)] == list(SCHEMA[name]), name
    top = [f.name for f in fields(Spec)][: len(SCHEMA[""])]
    assert top == list(SCHEMA[""])


def test_a_loaded_spec_is_frozen():
    import dataclasses

    spec = load_spec()
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.vllm.kv_cache_dtype = "fp8"  # type: ignore[misc]
    assert isinstance(spec.vllm.extra_args, tuple) and isinstance(spec.model.mirrors, tuple)
