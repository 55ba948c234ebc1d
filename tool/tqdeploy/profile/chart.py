"""The PNG: start-up phases as bars on one time axis; under a load, KV usage and running / waiting
requests over time. matplotlib on the Agg backend (no display), through adaptors/plot.py."""

from __future__ import annotations

from pathlib import Path

from tqdeploy.adaptors import plot
from tqdeploy.profile.jsontypes import JSONObject
from tqdeploy.profile.timeline import UNATTRIBUTED, Timeline


def write_chart(path: Path, timeline: Timeline | None, samples: list[JSONObject] | None) -> Path:
    plt = plot.pyplot()

    rows = (1 if timeline and timeline.phases else 0) + (1 if samples else 0)
    fig, axes = plt.subplots(max(rows, 1), 1, figsize=(10, 3.2 * max(rows, 1)), squeeze=False)
    i = 0
    if timeline and timeline.phases:
        ax = axes[i][0]
        names = list(dict.fromkeys(p.name for p in timeline.phases))
        for p in timeline.phases:
            color = "#cccccc" if p.name == UNATTRIBUTED else f"C{names.index(p.name) % 10}"
            ax.barh(names.index(p.name), max(p.seconds, 0.05), left=p.start_s, color=color)
            ax.text(p.start_s + p.seconds, names.index(p.name), f" {p.seconds:.1f} s", va="center", fontsize=7)
        ax.set_yticks(range(len(names)), names, fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel("seconds since " + timeline.origin)
        ax.set_title(f"start-up: {timeline.wall_seconds:.1f} s, {timeline.attributed_fraction:.0%} attributed")
        i += 1
    if samples:
        ax = axes[i][0]
        t = [s["t_s"] for s in samples]
        ax.plot(t, [100 * s.get("kv_usage", 0.0) for s in samples], label="KV cache usage %", color="C0")
        ax.set_ylabel("KV usage %")
        ax.set_xlabel("seconds into the load")
        ax2 = ax.twinx()
        ax2.step(t, [s.get("running", 0) for s in samples], label="running", color="C1", where="post")
        ax2.step(t, [s.get("waiting", 0) for s in samples], label="waiting", color="C3", where="post")
        ax2.set_ylabel("requests")
        lines = ax.get_legend_handles_labels()
        lines2 = ax2.get_legend_handles_labels()
        ax.legend(lines[0] + lines2[0], lines[1] + lines2[1], loc="upper right", fontsize=8)
        ax.set_title("under load")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
