"""Start-up timeline from a vLLM log: contiguous phases, each ending at a milestone line.

Times come from, best first: tqdeploy's wall-clock stamps (runtime/logstamp.py, millisecond resolution),
then vLLM's own "mm-dd HH:MM:SS" prefix (one second, no year). A phase vLLM reports a length for (weights,
compile, graph capture) that is clearly shorter than the gap before it keeps only that length; the rest of
the gap is "unattributed", shown, never folded into a neighbour.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tqdeploy.profile.events import Event
from tqdeploy.profile.jsontypes import JSONObject
from tqdeploy.profile.startfacts import compile_cache_state, startup_plan_state, vllm_version, weights_figures
from tqdeploy.runtime.logstamp import clock_seconds, split
from tqdeploy.vllmfacts import logpatterns as ms

UNATTRIBUTED = "unattributed"
# a reported length may differ from the one-second clock by up to a second either side
_SLACK_S = {"stamp": 1.0, "vllm-clock": 2.0}


@dataclass
class Phase:
    name: str
    start_s: float
    seconds: float
    source: str

    def to_dict(self) -> JSONObject:
        return {
            "name": self.name,
            "start_s": round(self.start_s, 3),
            "seconds": round(self.seconds, 3),
            "source": self.source,
        }


@dataclass
class Timeline:
    stamped: bool
    origin: str  # what time 0 is
    phases: list[Phase] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    untimed: list[str] = field(default_factory=list)  # phases the log shows but cannot time
    compile_cache: str | None = None  # hit | miss | load-failed | none (eager)
    weights: JSONObject = field(default_factory=dict)
    startup_plan: str | None = None  # applied | not-applied | saved (VLLM_ENABLE_STARTUP_PLAN), None: no plan line
    # milestones whose time is earlier than the one before them (a clock set back, an edited or merged log):
    # their phases read 0 s, which is no measurement
    clock_backwards: list[JSONObject] = field(default_factory=list)

    @property
    def wall_seconds(self) -> float:
        return max((p.start_s + p.seconds for p in self.phases), default=0.0)

    @property
    def attributed_fraction(self) -> float:
        wall = self.wall_seconds
        if wall <= 0:
            return 1.0 if self.phases else 0.0
        named = sum(p.seconds for p in self.phases if p.name != UNATTRIBUTED)
        return named / wall


def _vllm_clock(text: str) -> float | None:
    m = ms.VLLM_CLOCK.search(text)
    if m is not None:
        mon, day, hh, mm, ss = (int(g) for g in m.groups())
        return clock_seconds(mon, day, hh, mm, ss)  # year unknown: only differences are used
    m = ms.FULL_CLOCK.search(text)
    if m is not None:
        _, mon, day, hh, mm, ss, milli = (int(g) for g in m.groups())
        return clock_seconds(mon, day, hh, mm, ss + milli / 1000)
    return None


def find_events(lines: list[str], release: str | None = None) -> tuple[list[Event], bool]:
    """Milestone events in log order; (events, whether the log carries wall-clock stamps). release: the vLLM
    release whose wording is read (logpatterns.milestones; None: every release's)."""
    parsed = [split(line) for line in lines]
    stamped = any(t is not None for t, _ in parsed)
    events: list[Event] = []
    pos = 0
    for mile in ms.milestones(release):
        for i in range(pos, len(parsed)):
            when, text = parsed[i]
            match = mile.pattern.search(text)
            if match is None:
                continue
            source = "stamp" if when is not None else "vllm-clock"
            if when is None and not stamped:
                when = _vllm_clock(text)
            reported = None
            if mile.duration_group is not None and match.group(mile.duration_group) is not None:
                reported = float(match.group(mile.duration_group))
            events.append(Event(mile.key, mile.phase, i, when, source, reported, text.strip()[:300]))
            pos = i
            break
    return events, stamped


def _origin(
    parsed: list[tuple[float | None, str]], stamped: bool, process_start: float | None
) -> tuple[float | None, str]:
    if process_start is not None:
        return process_start, "process start (launch time)"
    for when, text in parsed:
        t = when if stamped else _vllm_clock(text)
        if t is not None:
            return t, "first stamped log line" if stamped else "first vLLM log line (after imports)"
    return None, "none"


def build_timeline(
    text: str,
    *,
    process_start: float | None = None,
    extra: list[Event] | None = None,
    weight_bytes: int | None = None,
    release: str | None = None,
) -> Timeline:
    """The timeline of one start; `extra` adds events tqdeploy measured itself (first /health 200, first token).
    release: the build's vLLM release; None reads the one the log names (its version line), else every wording."""
    lines = text.splitlines()
    if release is None and (version := vllm_version(text)) is not None:
        release = ".".join(map(str, version))
    events, stamped = find_events(lines, release)
    parsed = [split(line) for line in lines]
    t0, origin = _origin(parsed, stamped, process_start)
    if extra:  # tqdeploy's own probes replace the access-log lines they produced themselves
        replaced = {x.key for x in extra} | ({"first_response"} if "first_token" in {x.key for x in extra} else set())
        events = [e for e in events if e.key not in replaced] + list(extra)
        events.sort(key=lambda e: (e.time is None, e.time or 0.0))
    timeline = Timeline(stamped=stamped, origin=origin, events=events)
    timeline.compile_cache = compile_cache_state(text)
    timeline.weights = weights_figures(text, events, weight_bytes)
    timeline.startup_plan = startup_plan_state(text)
    if t0 is None:
        timeline.untimed = [e.phase for e in events]
        return timeline
    prev = t0
    for event in events:
        if event.time is None:
            timeline.untimed.append(event.phase)
            continue
        if event.time < prev:
            timeline.clock_backwards.append(
                {"phase": event.phase, "line": event.line_no + 1, "seconds_back": round(prev - event.time, 3)}
            )
        gap = max(0.0, event.time - prev)
        start = prev - t0
        slack = _SLACK_S.get(event.source, 1.0)
        if event.reported_s is not None and gap > event.reported_s + slack:
            lead = gap - event.reported_s
            timeline.phases.append(Phase(UNATTRIBUTED, start, lead, event.source))
            timeline.phases.append(Phase(event.phase, start + lead, event.reported_s, "log-reported"))
        else:
            timeline.phases.append(Phase(event.phase, start, gap, event.source))
        prev = max(prev, event.time)
    if not stamped and process_start is None:
        timeline.untimed.insert(0, "process start + imports (a log without wall-clock stamps starts after them)")
    if timeline.phases and timeline.phases[0].seconds == 0 and not stamped and process_start is None:
        timeline.phases.pop(0)  # the first vLLM line is the origin: nothing before it can be timed
    timeline.phases = _merge_same(timeline.phases)
    return timeline


def _merge_same(phases: list[Phase]) -> list[Phase]:
    """Consecutive pieces of one phase (e.g. the two 'weights loaded' lines) shown as one bar."""
    out: list[Phase] = []
    for p in phases:
        if out and out[-1].name == p.name:
            out[-1].seconds = p.start_s + p.seconds - out[-1].start_s
            continue
        out.append(Phase(p.name, p.start_s, p.seconds, p.source))
    return out
