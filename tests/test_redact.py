"""tqdeploy.redact: every secret shape and identifying name it promises to replace, and what it must keep."""

from __future__ import annotations

import base64
import json
import re

import pytest

from tqdeploy.redact import SECRET_FLAGS, Redactor, is_secret_name, scan, secret_flag
from tqdeploy.resources import data_dir

# The real shape of vLLM 0.32's line (tests/fixtures/vllm-logs/cpu-vllm-0.32.0/tiny-warm.log), with the values
# an older vLLM printed unmasked (docs/facts.md: before vllm-project/vllm#52523).
NON_DEFAULT = (
    "(APIServer pid=7152) INFO 11-29 09:42:25 [api_utils.py:286] non-default args: {'port': 18000, "
    "'model': '/home/alice/models/tiny', 'api_key': ['sk-SEEDoldvllmKEY0123456', 'SEEDsecondKEY'], "
    "'hf_token': 'hf_SEEDhftokenABCDEFGHIJKLMN', 'max_model_len': 512}"
)


def test_non_default_args_line_keeps_its_shape_and_loses_its_secrets():
    r = Redactor()
    out = r.text(NON_DEFAULT)
    for seed in ("sk-SEEDoldvllmKEY0123456", "SEEDsecondKEY", "hf_SEEDhftoken", "alice"):
        assert seed not in out
    assert "'port': 18000" in out and "'max_model_len': 512" in out and "non-default args: {" in out
    assert re.search(r"'api_key': \['\[secret-\d+\]', '\[secret-\d+\]'\]", out)
    assert r.text(out) == out  # idempotent: a redacted text is left as it is
    assert scan(out) == {}


def _schema_flags() -> dict:
    return json.loads((data_dir("checks") / "vllm-schema" / "0.32.0.json").read_text())


def test_secret_flags_match_vllm_parser_schema():
    schema = _schema_flags()
    assert schema["parser"]["allow_abbrev"] is True  # so unambiguous prefixes are accepted by vLLM
    names = [n for o in schema["options"].values() for n in o["names"] if n.startswith("--")]
    for flag, nargs in SECRET_FLAGS.items():
        dest = flag.replace("-", "_")
        assert schema["options"][dest]["nargs"] == nargs
        full = f"--{flag}"
        # every prefix vLLM would accept (unambiguous), in both spellings, selects the secret flag
        for n in range(3, len(full) + 1):
            prefix = full[:n]
            if [x for x in names if x.startswith(prefix)] == [full]:
                assert secret_flag(prefix) == flag
                assert secret_flag(prefix.replace("-", "_").replace("__", "--", 1)) == flag
    assert secret_flag("--api-k") == "api-key" and secret_flag("--ap") == "api-key"  # ambiguous: still redacted
    assert secret_flag("--api-server-count") is None and secret_flag("--port") is None


@pytest.mark.parametrize(
    "argv, leaked",
    [
        (["vllm", "serve", "m", "--api-key", "K1", "K2", "--port", "8000"], ["K1", "K2"]),
        (["vllm", "serve", "m", "--api_key=K3"], ["K3"]),
        (["vllm", "serve", "m", "--api-k", "K4"], ["K4"]),
        (["vllm", "serve", "m", "--api_ke", "K5"], ["K5"]),
        (["vllm", "serve", "m", "--hf-token", "hf_abcdefghijklmnopqrstu"], ["hf_abcdefghijklmnopqrstu"]),
        (["vllm", "serve", "m", "--hf_t=T6", "--dtype", "bfloat16"], ["T6"]),
        (["env", "HF_TOKEN=T7", "vllm", "serve", "m", "--db-password", "T8"], ["T7", "T8"]),
    ],
)
def test_argv_every_spelling(argv, leaked):
    out = Redactor().argv(argv)
    assert not any(seed in tok for seed in leaked for tok in out)
    assert out[0] == argv[0]


def test_argv_keeps_a_valueless_hf_token_and_the_options_after_it():
    assert Redactor().argv(["--hf-token", "--port", "8000"]) == ["--hf-token", "--port", "8000"]


def test_free_text_command_lines():
    r = Redactor()
    out = r.text('exec vllm serve m --api-key "K1" --port 8000 --api_key=K2 --api-k K3 K4 --dtype auto')
    assert all(k not in out for k in ("K1", "K2", "K3", "K4"))
    assert "--port 8000" in out and "--dtype auto" in out
    # a flag named in prose on one line does not swallow the next line
    assert r.text("# not behind --api-key\n# (vLLM guards /v1)").endswith("# (vLLM guards /v1)")


def test_headers_tokens_urls_and_private_keys():
    r = Redactor()
    text = (
        "curl -H 'Authorization: Bearer SEEDbearer12345678' -H 'X-Api-Key: SEEDxapi' "
        "https://SEEDuser:SEEDp@ss@mirror.seedcorp.internal:8443/api?token=SEEDquery&rev=main "
        "http://bad url://SEEDu2:SEEDp2@[not-a-host/ gh ghp_SEEDgithubtoken0123456789 "
        "OPENAI_API_KEY=sk-proj-SEEDopenai01234567 DB_PASSWORD='SEED pw' jwt eyJSEEDhdr0123.eyJSEEDbody01.SEEDsig0123 "
        "aws AKIASEEDAAAAAAAAAAAA\n"
        "-----BEGIN RSA PRIVATE KEY-----\nSEEDkeymaterial\n-----END RSA PRIVATE KEY-----\nafter"
    )
    out = r.text(text)
    assert "SEED" not in out, out
    assert "mirror.seedcorp.internal" not in out and "rev=main" in out and out.endswith("after")
    assert r.counts["private_key"] == 1
    assert "https://huggingface.co/Qwen/x" == r.text("https://huggingface.co/Qwen/x")


def test_network_names_are_consistent_and_loopback_kept():
    r = Redactor(hostnames=["gpu-node-7"])
    out = r.text(
        "peer 10.1.2.3 and again 10.1.2.3, bind 0.0.0.0 and 127.0.0.1 and ::1, v6 2001:db8:85a3::8a2e:370:7334, "
        "mac 3C:22:FB:12:34:56, on gpu-node-7 and gpu-node-7.corp; time 09:42:25, pci 0000:00:06.0, vLLM 0.32.0"
    )
    assert out.count("[ip-1]") == 2 and "10.1.2.3" not in out
    assert "0.0.0.0" in out and "127.0.0.1" in out and "::1" in out
    assert "2001:db8" not in out and "3C:22" not in out and "gpu-node-7" not in out
    assert "09:42:25" in out and "0000:00:06.0" in out and "0.32.0" in out
    mapping = r.mapping()
    assert mapping["ip"] == {"[ip-1]": "10.1.2.3"} and mapping["mac"] == {"[mac-1]": "3c:22:fb:12:34:56"}


def test_users_and_home_paths():
    r = Redactor(usernames=["alice"])
    out = r.text("/home/bob/.cache and /Users/carol/x, alice logged in, then bob again, /home/vllm stays")
    assert not any(n in out for n in ("alice", "bob", "carol"))
    assert "/home/vllm" in out


def test_env_and_data():
    r = Redactor()
    env = r.env({"HF_TOKEN": "hf_SEEDenvtokenABCDEFGHIJ", "MAX_TOKENS": "128", "HF_HOME": "/home/dave/hf"})
    assert env["HF_TOKEN"].startswith("[secret-") and env["MAX_TOKENS"] == "128" and "dave" not in env["HF_HOME"]
    data = r.data({"evidence": {"HF_TOKEN": "absent", "hf_token_present": True}, "api_key_file": "/etc/k"})
    assert data == {"evidence": {"HF_TOKEN": "absent", "hf_token_present": True}, "api_key_file": "/etc/k"}
    assert r.data({"password": "SEEDpw"})["password"].startswith("[secret-")


def test_mapping_never_holds_a_secret_and_disabled_is_a_no_op():
    r = Redactor(secrets=["SEEDknownsecret"])
    out = r.text("x SEEDknownsecret y")
    assert "SEEDknownsecret" not in out and "SEEDknownsecret" not in json.dumps(r.mapping())
    assert Redactor(enabled=False).text(NON_DEFAULT) == NON_DEFAULT


def test_secret_names():
    for name in ("HF_TOKEN", "api_key", "X-Api-Key", "DB_PASSWORD", "AWS_SECRET_ACCESS_KEY", "githubtoken"):
        assert is_secret_name(name), name
    for name in ("max_tokens", "kv_cache_dtype", "max_num_batched_tokens", "api_key_file", "hf_token_present"):
        assert not is_secret_name(name), name


def test_lint_fix_lines_print_as_written(run_cli):
    """issue 21 item 5: TQ323's fix came out as `remove --api-key [secret-1] [secret-2] [secret-3]"$(cat ...`."""
    key = "sk-ZQlintfix0123456789abcd"
    fix = 'remove --api-key and export VLLM_API_KEY="$(cat /path/to/secret)" before starting vLLM'
    code, out, _ = run_cli("lint", "--json", "--", "vllm", "serve", "m", "--api-key", key)
    findings = {f["id"]: f for f in json.loads(out)["findings"]}
    assert findings["TQ323"]["remediation"] == fix and key not in out  # one finding shape (issue 21 item 4)
    code, out, _ = run_cli("lint", "--", "vllm", "serve", "m", "--api-key", key)
    assert fix in " ".join(out.split()) and key not in out and "[secret-1]" in out


@pytest.mark.parametrize(
    "text",
    [
        "# vLLM reads VLLM_API_KEY when --api-key is absent (vllm/entrypoints/serve/middleware/register.py),",
        'VLLM_API_KEY="$(cat "$API_KEY_FILE")"',
        "# Create it with: kubectl create secret generic x-api-key --from-file=api-key=<key file>",
        "topologyKey: kubernetes.io/hostname",
        "        key: api-key",
        "# vLLM starts here without an API key: tqdeploy's key file is not used.",
        "pip install torch==2.13.0.1 nvidia-cudnn-cu12==9.1.0.70 and cuda-12.4.1.0, vLLM v0.32.0.1",
        "token counting: 45.6 tokens/s at 08:05:03, basic functionality, Bearer authentication",
        "docker run -u 1000:1000 img; python -u x.py; --password-stdin",
        "logger.info(x) in api_utils.py, serve.sh, model.pt, https://huggingface.co/Qwen/x, registry-1.docker.io",
        "HF_TOKEN: absent, api_key: null, hf_token_present: true, apiKeyHelper: /usr/local/bin/key.sh",
    ],
)
def test_what_holds_no_secret_and_no_identity_is_left_as_written(text):
    r = Redactor(hostnames=["gpu-zq-7"], usernames=["zqalice"])
    assert r.text(text) == text and not r.counts


@pytest.mark.parametrize(
    "text, seed",
    [
        ("DB_PASS=zqv0001x", "zqv0001x"),
        ("GITHUB_PAT=zqv0002x", "zqv0002x"),
        ("MINIO_SECRETKEY=zqv0003x", "zqv0003x"),
        ("DOCKER_PASS=zqv0004x", "zqv0004x"),
        ("password: zqv0005x", "zqv0005x"),
        ("  # token = zqv0006x", "zqv0006x"),
        ("1764576300.123|secret: zqv0007x", "zqv0007x"),
        ("key=zqv0008x", "zqv0008x"),
        ('labels{token="zqv0009x"}', "zqv0009x"),
        ("docker login --username bob -p zqv0010x reg.io", "zqv0010x"),
        ("curl --user bob:zqv0011x https://x", "zqv0011x"),
        ("machine x login bob password zqv0012x", "zqv0012x"),
        ("  password zqv0013x", "zqv0013x"),
        ("https://hooks.slack.com/services/T00/B00/zqv0014xabcdef", "zqv0014x"),
        ("glpat-zqv0015xabcdefghijklmnop", "zqv0015x"),
        ("xoxp-1234-zqv0016xabcd", "zqv0016x"),
        ("AIzaSyzqv0017xabcdefghijklmnopqrstuvwx", "zqv0017x"),
        ("nvapi-zqv0018xabcdefghijklmnopqrstuv", "zqv0018x"),
        ("github_pat_11zqv0019xabcdefghijklmn", "zqv0019x"),
        ("ASIAZQV0020XAAAAAAAA", "ZQV0020X"),
        ('["--api-key", "zqv0021x"]', "zqv0021x"),
        ('\\"--api-key\\", \\"zqv0022x\\"', "zqv0022x"),
        ("vllm serve m --api-key \\\n    zqv0023x --port 1", "zqv0023x"),
        ("SecretAccessKey: zqv0024x", "zqv0024x"),
        ('{"auths": {"r.io": {"auth": "' + base64.b64encode(b"bob:zqv0025x").decode() + '"}}}', "zqv0025x"),
    ],
)
def test_every_secret_kind(text, seed):
    out = Redactor().text(text)
    assert seed not in out and "[secret-" in out, out


def test_private_keys_of_every_kind_also_cut_by_a_tail_window():
    body = ["b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW"] * 3
    cases = [
        "-----BEGIN EC PRIVATE KEY-----\nzqkey1\n-----END EC PRIVATE KEY-----\n",
        "-----BEGIN ENCRYPTED PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\n\nzqkey2\n"
        "-----END ENCRYPTED PRIVATE KEY-----\n",
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nzqkey3\n=ab12\n-----END PGP PRIVATE KEY BLOCK-----\n",
        "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nPublic-Lines: 1\nzqkey4\nPrivate-MAC: 0a\n",
        "\n".join(body) + "\nzqkey5\n-----END OPENSSH PRIVATE KEY-----\n",  # BEGIN cut off
        "\n".join(f"1764576300.{i:03d}|{b}" for i, b in enumerate(body)) + "\n",  # stamped, no BEGIN, no END
    ]
    for case in cases:
        r = Redactor()
        out = r.text("before\n" + case + "after\n")
        assert out.startswith("before\n") and out.endswith("after\n") and "zqkey" not in out, out
        assert body[0] not in out and r.counts["private_key"] == 1, out


def test_encodings_of_a_known_secret_anywhere():
    from urllib.parse import quote

    value = "zq/Known+Secret=0042"
    r = Redactor(secrets=[value])
    text = " ".join([value, quote(value, safe=""), base64.b64encode(value.encode()).decode(), value.encode().hex()])
    out = r.text(text)
    assert out == " ".join(["[secret-1]"] * 4), out


def test_host_identity_as_sos_clean():
    r = Redactor(hostnames=["gpu-zq-7.zqcorp.internal"], usernames=["zqalice"], domains=["zqlab.net"])
    out = r.text(
        "gpu-zq-7 and gpu-zq-7.zqcorp.internal, peer db.zqcorp.internal, search zqcorp.internal, "
        "ib0: fe80::a00:27ff:fe4e:66a1%ib0, ip-10-1-2-3.ec2.internal, registry.zqlab.net:5000/x, "
        "/data/zqalice/x and /home/zqbob/y then zqbob, pulled from nvcr.io and hf-mirror.com"
    )
    for seed in ("gpu-zq-7", "zqcorp", "fe80", "ip-10-1-2-3", "zqlab", "zqalice", "zqbob"):
        assert seed not in out, (seed, out)
    assert "nvcr.io" in out and "hf-mirror.com" in out and "%ib0" in out
