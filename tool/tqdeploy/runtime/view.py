"""Human views of up/down/status results (rich); the JSON forms are the results' to_dict()."""

from __future__ import annotations

from pathlib import Path

from tqdeploy.output import render_findings


def _problems(findings):
    return [f for f in findings if f.severity.value in ("error", "warn")]


def render_up(console, result) -> None:
    if result.status == "ready":
        console.print(
            f"[green]ready[/green] {result.served_model_name} at {result.base_url} "
            f"in {result.seconds_to_ready:.1f} s (pid {result.pid}, group {result.pgid})"
        )
    elif result.status == "check-failed":
        console.print(
            f"[bold red]check failed[/bold red]: {result.served_model_name} at {result.base_url} serves wrong answers; "
            f"left running for inspection, not ready (`tqdeploy down {result.build_dir}` stops it)"
        )
    elif result.status == "interrupted":
        console.print(f"[bold red]interrupted[/bold red] ({result.interrupted_by}): {result.build_dir} is not serving")
    elif result.status == "started":
        console.print(f"started {result.served_model_name} (group {result.pgid}); `tqdeploy status` follows it")
    else:
        console.print(f"[bold red]{result.status}[/bold red]: {result.build_dir} is not serving")
    if result.answer_check:
        render_answer_check(console, result.answer_check)
    problems = _problems(result.findings)
    if problems:
        render_findings(console, problems, title="tqdeploy up", show_ok=False)
    if result.log_path:
        console.print(f"log: {result.log_path}")


def render_answer_check(console, summary: dict) -> None:
    """One line for the answer check's summary (state.json answer_check): up and status print it."""
    ppl = summary.get("perplexity")
    figure = f", perplexity {ppl:g}" if isinstance(ppl, (int, float)) else ""
    failed = [f"{f['id']} {f['title']}" for f in summary.get("findings") or [] if f.get("severity") == "error"]
    word = "[green]passed[/green]" if summary.get("status") == "pass" else "[bold red]failed[/bold red]"
    console.print(f"answer check {word} in {summary.get('seconds')} s{figure}" + "".join(f"\n  {t}" for t in failed))


def render_down(console, result) -> None:
    r = result.report
    if result.status == "stopped" and r is not None:
        forced = f", {len(r.killed)} needed SIGKILL" if r.killed else ""
        left = "nothing left" if not r.left else f"{len(r.left)} process(es) still running"
        console.print(f"stopped {len(r.found)} process(es) in {r.seconds:.1f} s{forced}; {left}")
    else:
        console.print(f"{result.build_dir}: nothing running")
    if r is not None and r.port_free is not None:
        console.print("port: free" if r.port_free else "port: still in use")
    if r is not None and r.gpus:
        for g in r.gpus:
            console.print(f"GPU {g['index']}: {g['used_mib']} / {g['total_mib']} MiB used")
    problems = _problems(result.findings)
    if problems:
        render_findings(console, problems, title="tqdeploy down", show_ok=False)
    if result.log_path and Path(result.log_path).exists():  # a never-started build has no log to point at
        console.print(f"logs kept: {result.log_path}")


def render_status(console, result) -> None:
    d = result.data
    line = f"{result.build_dir}: {d['state']}"
    if d["live"]:
        line += f" (phase {d['phase']}, pid {d['pid']}, up {d['uptime_s']:.0f} s, health {d['health']})"
    if d.get("base_url"):
        line += f" {d['served_model_name']} at {d['base_url']}"
    console.print(line)
    for name, value in (d.get("env_overrides") or {}).items():  # what serve.sh read instead of the build's own
        console.print(f"environment: {name}={value} (set by the caller of `up`)", markup=False)
    if d.get("restarts"):
        console.print(f"restarts: {d['restarts']}")
    for p in d["processes"]:
        console.print(f"  pid {p['pid']} {p['title']}")
    for n in d.get("nodes") or []:  # a multi-node build (runtime/multinode.py)
        alive = "live" if n["live"] else "gone"
        console.print(
            f"node {n['rank']} ({n['role']}): {alive}, pid {n['pid']}, group {n['pgid']}, log {n['log_path']}"
        )
    for g in d.get("gpus") or []:
        console.print(f"GPU {g['index']} {g['name']}: {g['used_mib']} / {g['total_mib']} MiB used")
    if d.get("answer_check"):
        render_answer_check(console, d["answer_check"])
    err = d.get("last_error")
    if err:
        console.print(f"[red]last error[/red] {err['id']}: {err['title']}")
        if err.get("remediation"):
            console.print(f"  fix: {err['remediation']}")
    if d.get("log_path"):
        console.print(f"log: {d['log_path']}")
