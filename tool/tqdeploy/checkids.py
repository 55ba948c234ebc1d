"""Every id a user sees is a TQ id with a page in checks/docs/ (`tqdeploy explain ID`).

model.compat's rules report a code (TP_HEADS, TQ_HYBRID_BUG, ...) and no id: which check reports each is
tqdeploy.model.checkcodes (plan reads it too); `explain CODE` shows that check's page. The false-advice
catalogue's entries (FA001, ...) are reported by lint as TQ310; `explain FA001` shows the entry itself.
"""

from __future__ import annotations

import re

from tqdeploy.errors import TQError
from tqdeploy.lint.catalogue import FINDING_ID, load_catalogue
from tqdeploy.model.checkcodes import check_for_code
from tqdeploy.resources import data_dir, doc_path
from tqdeploy.suggest import closest

ADVICE_ID = re.compile(r"FA\d{3}")


def is_compat_code(name: str) -> bool:
    return bool(re.fullmatch(r"[A-Z]+(_[A-Z]+)+|held-memory", name)) and check_for_code(name) is not None


def _advice_page(name: str) -> str | None:
    entry = next((e for e in load_catalogue() if e.id == name), None)
    if entry is None:
        return None
    return (
        f"# {entry.id}: false advice, reported by lint as {FINDING_ID}\n\n"
        f"## What\n{entry.why}\n\n"
        + (f"## Catches\n`tqdeploy lint -- {entry.bad}`\n\n" if entry.bad else "")
        + (f"## Passes\n`tqdeploy lint -- {entry.good}`\n\n" if entry.good else "")
        + f"## Fix\n{entry.replacement}\n\nSource: {entry.citation}\n\n"
        f"From the false-advice catalogue (checks/false_advice.json); `tqdeploy explain {FINDING_ID}` has the rule.\n"
    )


def known_ids() -> list[str]:
    pages = sorted(p.stem for p in (data_dir("checks") / "docs").glob("TQ*.md"))
    return pages + [e.id for e in load_catalogue()]


def explain_page(name: str) -> tuple[str, str]:
    """(id, markdown) of a check id (TQ101), a catalogue entry (FA001) or a compat rule's code (TQ_HYBRID_BUG,
    shown as the page of the check that reports it). A TQError names the closest id otherwise."""
    wanted = name.strip().upper() if name.strip().lower() != "held-memory" else "held-memory"
    if is_compat_code(wanted):
        wanted = (check_for_code(wanted) or ("", ""))[0]
    if re.fullmatch(r"TQ\d{3}", wanted):  # never a path of its own
        path = doc_path(wanted)
        if path.is_file():
            return wanted, path.read_text(encoding="utf-8")
    elif ADVICE_ID.fullmatch(wanted):
        page = _advice_page(wanted)
        if page is not None:
            return wanted, page

    near = closest(wanted, known_ids())
    raise TQError(
        f"no check named {name!r}",
        (f"did you mean {near}? " if near else "")
        + "ids are TQnnn (checks/docs/) and FAnnn (checks/false_advice.json): tqdeploy explain TQ101",
    )
