"""The plan's main table: one row per KV dtype, made to fit 80 columns with every dtype name whole.

At 80 columns a rich table with borders cut all four TurboQuant rows to `turboquant…`. So: no vertical
borders, two-line headers, numbers and names never wrapped, and a note that does not fit its column goes
below the table as a numbered footnote (the same text once) instead of wrapping word by word.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

from tqdeploy.plan.rows import PlanRow, as_finding, flagged

_NOTE_MIN = 10  # "warn TQ205" stays in its row at any width


def _cells(row: PlanRow) -> tuple[list[str], str]:
    if row.status == "not_applicable":
        return ["-", "-", "-", "-"], row.reason
    shown = dict.fromkeys(f"{p.severity.value} {as_finding(p).id}" for p in flagged(row.problems))
    note = ", ".join(shown) or row.reason or row.availability
    fixed = f"{row.fixed_state_bytes_per_seq / (1 << 20):.1f} MiB" if row.fixed_state_bytes_per_seq else "-"
    cells = [f"{row.kv_bytes_per_token:,}", f"{row.kv_tokens:,}", f"{row.max_concurrency:.2f}", fixed]
    return cells, note + ("" if row.exact else " (approximate)")


def render_rows(console: Console, plan_rows: list[PlanRow], max_model_len: int, recommended: str | None) -> None:
    from rich import box
    from rich.table import Table
    from rich.text import Text

    rows = [(r, *_cells(r)) for r in plan_rows]
    headers = ["kv-cache-dtype", "bytes/\ntoken", "KV tokens", f"seqs @\n{max_model_len:,}", "fixed/\nseq"]
    widths = [
        max([len(r.kv_cache_dtype) for r in plan_rows] + [len(headers[0])]),
        *(
            max([len(cells[i]) for _, cells, _ in rows] + [max(len(h) for h in headers[i + 1].split("\n"))])
            for i in range(4)
        ),
    ]
    columns = len(widths) + 1
    # a one-space divider between columns, one space of padding each side of a cell, none at the edges
    note_width = max(_NOTE_MIN, console.width - sum(widths) - (columns - 1) - 2 * (columns - 1))
    footnotes: dict[str, int] = {}
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, show_lines=False, pad_edge=False, padding=(0, 1))
    for i, header in enumerate(headers):
        table.add_column(header, justify="left" if i == 0 else "right", no_wrap=True, min_width=widths[i])
    table.add_column("note", justify="left", overflow="fold")
    for row, cells, note in rows:
        if len(note) > note_width:
            note = f"[{footnotes.setdefault(note, len(footnotes) + 1)}]"
        name = Text(row.kv_cache_dtype, style="bold green" if row.kv_cache_dtype == recommended else "")
        table.add_row(name, *cells, Text(note, style="dim"))
    console.print(table)
    for text, number in footnotes.items():
        console.print(Text(f"[{number}] {text}", style="dim"))
