"""tune.png: capacity (sequences of the context held), goodput at the targets, and perplexity over the
reference with each dtype's floor, one bar per measured dtype. matplotlib (Agg) through adaptors/plot.py."""

from __future__ import annotations

import io
from pathlib import Path

from tqdeploy.adaptors import plot
from tqdeploy.fsutil import atomic_write_bytes
from tqdeploy.tune.goodput import num
from tqdeploy.tune.verdict import Row


def write_chart(path: Path, rows: list[Row], context: int) -> Path | None:
    measured = [r for r in rows if r.result and not r.excluded and not r.failed]
    if not measured:
        return None
    plt = plot.pyplot()

    names = [r.dtype for r in measured]
    holds = [float(r.holds or 0) for r in measured]
    good = [float(r.good.get("tokens_per_s") or 0.0) for r in measured]
    quality = [num((r.result or {}).get("quality", {}).get("ratio")) or 0.0 for r in measured]
    floors = [num((r.result or {}).get("quality", {}).get("floor")) for r in measured]
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6))
    panels = (
        (holds, f"sequences of {context} tokens held"),
        (good, "goodput at the targets (tok/s)"),
        (quality, "perplexity / reference (dashed: its floor)"),
    )
    for ax, (values, title) in zip(axes, panels, strict=True):
        ax.bar(range(len(names)), values, color=[f"C{i % 10}" for i in range(len(names))])
        ax.set_xticks(range(len(names)), names, rotation=30, ha="right", fontsize=8)
        ax.set_title(title, fontsize=9)
    for i, floor in enumerate(floors):
        if floor is not None:
            axes[2].hlines(floor, i - 0.4, i + 0.4, colors="red", linestyles="dashed")
    axes[2].set_ylim(bottom=min([0.9, *[q for q in quality if q]]))
    fig.tight_layout()

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    atomic_write_bytes(path, buf.getvalue())
    return path
