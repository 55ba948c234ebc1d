"""The server's API key file (TQ126), with `doctor --api-key-file FILE`.

The file is looked at once by run_doctor (tqdeploy.keyfile.inspect_key_file) and its facts, never the key,
travel in ctx.options["api_key_file"]; like every check this one reads only the context. Without the
option the check is left out.
"""

from __future__ import annotations

from tqdeploy.doctor.registry import HostInputs, Verdicts, error, host_check, passed, warn
from tqdeploy.keyfile import KeyFileFacts


@host_check("TQ126", "server", "API key file usable and private")
def api_key_file(ctx: HostInputs) -> Verdicts:
    given = ctx.options.get("api_key_file")
    if not given:
        return None
    facts = KeyFileFacts.from_dict(given)
    ev = {"api_key_file": facts.path, "mode": facts.mode}
    if facts.problem is not None:
        return error(ev, facts.fix or "write the server's key into it (one line), chmod 600", title=facts.problem)
    if facts.too_open:
        return warn(ev, facts.fix, title=f"API key file {facts.path} has mode {facts.mode}: others can read the key")
    return passed(ev, title=f"API key file {facts.path} holds a key, mode {facts.mode}")
