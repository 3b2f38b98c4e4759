"""tdm: time-division multiplexing of revocable nodes (Volcano's plugins/tdm).

A node is *revocable* when it carries the label `volcano.sh/revocable-zone: <zone>`. Each zone is
lent to preemptable work during a daily time window, given in the plugin's arguments:

    tdm.revocable-zone.<zone>: "HH:MM-HH:MM"     (e.g. "10:00-21:00"; hours 0-23, two-digit minutes)
    tdm.evict.period: "1m"                       (a Go duration; default 1m)

A window whose end is not after its start ("22:00-06:00", "0:00-0:00") ends the next day. As in
Volcano the window is always the one that *starts today*: at 01:00, "22:00-06:00" is closed (today's
window opens at 22:00). Both ends are included, to the second. An argument key *containing*
`tdm.revocable-zone.` names a zone (the text after the first occurrence), as Volcano reads it.

A task may run on revocable nodes (its "revocable zone" is "*") when its pod's annotation
`volcano.sh/revocable-zone` is "*" (any other value: it may not), or, without that annotation, when
its annotation `volcano.sh/preemptable` is true (labels are not read: GetPodRevocableZone).

Registers, each gated by its conf flag as in Volcano:
- Predicate: a revocable node whose zone is not configured, or whose window is closed, fails every
  task ("revocable zone <z> not support", "current time beyond revocable zone <z>:<window>"); an
  open one fails tasks that may not use revocable nodes ("not allow to dispatch to revocable
  node"). All UnschedulableAndUnresolvable, so preempt does not consider those nodes either.
- NodeOrder: 100 (MaxNodeScore) on a revocable node whose window is open, for a task that may use
  revocable nodes; 0 otherwise.
- Preemptable: a preemptor that is preemptable (`volcano.sh/preemptable`, default true) or may use
  revocable nodes evicts nothing (Reject). Otherwise the victims are the Running, preemptable
  candidates on non-revocable nodes, per job at most its eviction budget (below), the first ones
  in the order given.
- VictimTasks (enabledVictim; the shuffle action evicts what it returns): once per evict period,
  the Running preemptable tasks on the nodes of each zone whose window is closed, per zone and job
  at most the job's eviction budget. The call's own task list is not used, as in Volcano.
- JobOrder: a non-preemptable job (PodGroup `volcano.sh/preemptable` not true) before a
  preemptable one. JobPipelined: Permit when the job is pipelined (waiting + ready + pending
  best-effort tasks >= minAvailable), else Reject. JobStarving: a preemptable job never starves;
  another starves while it has Pending tasks.

A job's eviction budget comes from its PodGroup's annotation `volcano.sh/jdb-min-available` (read
first) or `volcano.sh/jdb-max-unavailable`: an integer or a percentage of the job's tasks (rounded
up). With max-unavailable M: M minus the tasks neither Running nor finished, floored at 0. With
min-available A: Running - A when at least A run, else 1. Without either: 1. A value that does not
parse counts as 0 (Volcano logs it; Caldera warns).

Time. Volcano reads the wall clock in its local time zone. Nothing in Caldera's batch code reads
the wall clock: windows are evaluated at the session's `now` (Session.now: `caldera schedule
--now`, else the newest creationTimestamp in the input) as a time of day in UTC.

Differences from Volcano:
- Volcano remembers the last VictimTasks call in a process-wide variable (across sessions);
  Caldera's plugin is made afresh for every session, so the evict period spaces calls within a
  session only, and the first call of a session always looks for victims (with shuffle in every
  session of `caldera run`, a closed zone loses up to a budget per job each session, where
  Volcano waits an evict period between rounds).
- Volcano ranges over Go maps where Caldera has an order: zones are visited in name order, nodes
  in session order and their tasks in the order they were placed; jobs in the order their first
  task is met. Which tasks of a job beyond its budget are left is therefore deterministic here.
- A window or evict period that does not parse is a config error (Volcano: every node of that
  zone fails the predicate with the parse error; a bad period silently keeps 1m), and so is a
  value that is not a string (Volcano panics).
- NodeOrder on a revocable node whose window is closed: Volcano's NodeOrder returns an error,
  which drops that node's map scores of every plugin; Caldera scores tdm's part 0. The predicate
  removes such nodes before scoring, so this matters only with tdm's predicate disabled.
"""
from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any

import numpy as np

from ...api.goduration import DurationError, parse_go_duration
from ...errors import ConfigError
from ..api.fiterrors import UNRESOLVABLE
from ..api.info import FAILED, PENDING, RUNNING, SUCCEEDED
from ..api.objects import PREEMPTABLE_KEY, parse_go_bool
from .base import PERMIT, REJECT, BatchPlugin, Predicate
from .sla import _ns

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ..api.info import JobInfo, TaskInfo
    from ..framework.session import Session

REVOCABLE_ZONE = "volcano.sh/revocable-zone"            # node label; pod / PodGroup annotation
JDB_MIN_AVAILABLE = "volcano.sh/jdb-min-available"
JDB_MAX_UNAVAILABLE = "volcano.sh/jdb-max-unavailable"
ZONE_PREFIX = "tdm.revocable-zone."
EVICT_PERIOD = "tdm.evict.period"
DEFAULT_EVICT_PERIOD = 60 * 1_000_000_000              # 1m, in ns
DEFAULT_POD_EVICT_NUM = 1
MAX_NODE_SCORE = 100.0
NOT_ALLOWED = "not allow to dispatch to revocable node"

_CLOCK = re.compile(r"([0-9]{1,2}):([0-9]{2})")
_INT32 = re.compile(r"[+-]?[0-9]+")
_INT64_MAX = (1 << 63) - 1


class ZoneError(ValueError):
    pass


def parse_clock(s: str) -> tuple[int, int]:
    """time.Parse("15:04", s): (hour, minute); a 1- or 2-digit hour 0-23, a 2-digit minute."""
    m = _CLOCK.fullmatch(s)
    if m is None or int(m.group(1)) >= 24 or int(m.group(2)) >= 60:
        raise ZoneError(f"{s!r} is not a time of day H:MM or HH:MM (hour 0-23, minute 00-59)")
    return int(m.group(1)), int(m.group(2))


def parse_window(raw: str) -> tuple[tuple[int, int], tuple[int, int]]:
    """A zone's "HH:MM-HH:MM" (surrounding white space ignored): ((h1, m1), (h2, m2))."""
    parts = raw.strip().split("-")
    if len(parts) != 2:
        raise ZoneError(f"revocable zone {raw} format error")
    return parse_clock(parts[0]), parse_clock(parts[1])


def window_at(raw: str, now: float) -> tuple[int, int]:
    """parseRevocableZone: the window that starts on the (UTC) day of `now`, as POSIX seconds
    (start, end); it ends the next day unless its end is after its start."""
    (h1, m1), (h2, m2) = parse_window(raw)
    now_s = math.floor(now)
    midnight = now_s - now_s % 86400
    start = midnight + h1 * 3600 + m1 * 60
    end = midnight + h2 * 3600 + m2 * 60
    if (h1, m1) >= (h2, m2):
        end += 86400
    return start, end


def task_revocable_zone(pod) -> str:
    """GetPodRevocableZone: "*" if the pod may run on revocable nodes, else ""."""
    ann = pod.annotations
    if REVOCABLE_ZONE in ann:
        return "*" if ann[REVOCABLE_ZONE] == "*" else ""
    if PREEMPTABLE_KEY in ann and parse_go_bool(ann[PREEMPTABLE_KEY]) is True:
        return "*"
    return ""


def parse_int_or_percent(value: str, total: int) -> tuple[int, str | None]:
    """tdm's parseIntStr (intstr.Parse, then GetValueFromIntOrPercent rounding up): (value,
    problem); a value that does not parse is 0 with the reason."""
    if _INT32.fullmatch(value) and -(1 << 31) <= int(value) < (1 << 31):
        return int(value), None
    if not value.endswith("%"):
        return 0, "invalid type: string is not a percentage"
    num = value[:-1]
    if not _INT32.fullmatch(num) or not -_INT64_MAX - 1 <= int(num) <= _INT64_MAX:
        return 0, f"invalid value {value!r}"
    return math.ceil(float(int(num)) * float(total) / 100), None


def job_budget(annotations: Mapping[str, str]) -> tuple[str, str]:
    """extractBudget: (min-available, max-unavailable), at most one of them set ("": unset)."""
    if JDB_MIN_AVAILABLE in annotations:
        return annotations[JDB_MIN_AVAILABLE], ""
    if JDB_MAX_UNAVAILABLE in annotations:
        return "", annotations[JDB_MAX_UNAVAILABLE]
    return "", ""


def max_pod_evict_num(job: JobInfo) -> int:
    """getMaxPodEvictNum: how many of the job's tasks tdm may evict (its budget)."""
    running = len(job.index.get(RUNNING, ()))
    total = len(job.tasks)
    min_available, max_unavailable = job_budget(job.pg.annotations)
    if max_unavailable:
        mu = parse_int_or_percent(max_unavailable, total)[0]
        finished = len(job.index.get(SUCCEEDED, ())) + len(job.index.get(FAILED, ()))
        unavailable = total - finished - running
        return 0 if unavailable >= mu else mu - unavailable
    if min_available:
        ma = parse_int_or_percent(min_available, total)[0]
        if running >= ma:
            return running - ma
    return DEFAULT_POD_EVICT_NUM


def max_victims(job: JobInfo, victims: list[TaskInfo]) -> list[TaskInfo]:
    return victims[:max(0, min(max_pod_evict_num(job), len(victims)))]


class TdmPlugin(BatchPlugin):
    name = "tdm"

    @classmethod
    def arguments_read(cls, arguments: Mapping[str, Any]) -> frozenset[str]:
        return frozenset({EVICT_PERIOD} | {str(k) for k in arguments if ZONE_PREFIX in str(k)})

    def __init__(self, arguments=None, source="volcano conf"):
        super().__init__(arguments, source)
        self.warnings: list[str] = []
        self.zones: dict[str, str] = {}          # zone -> its window, as given
        for k in sorted(self.args, key=str):
            key = str(k)
            if ZONE_PREFIX not in key:
                continue
            v = self.args[k]
            want = 'a daily window "HH:MM-HH:MM" as a string (quote it in YAML)'
            if not isinstance(v, str):
                raise self._bad(key, want, v)
            try:
                parse_window(v)
            except ZoneError as e:
                raise ConfigError(f"{self.source}: {self.name}.arguments.{key}: {e}; must be {want}") from None
            self.zones[key.replace(ZONE_PREFIX, "", 1)] = v
        self.evict_period = DEFAULT_EVICT_PERIOD
        if EVICT_PERIOD in self.args:
            v = self.args[EVICT_PERIOD]
            want = "a Go duration such as 30s, 1m or 1h30m (units ns, us, ms, s, m, h)"
            if not isinstance(v, str):
                raise self._bad(EVICT_PERIOD, want + " as a string", v)
            try:
                self.evict_period = parse_go_duration(v)
            except DurationError as e:
                raise ConfigError(f"{self.source}: {self.name}.arguments.{EVICT_PERIOD}: {e}; must be {want}") from None
        self.last_evict_at: int | None = None       # ns; Volcano's lastEvictAt (zero time: never)

    def zone_error(self, zone: str, now: float) -> str | None:
        """availableRevocableZone: None if the zone's window is open at `now`, else why not."""
        raw = self.zones.get(zone)
        if raw is None:
            return f"revocable zone {zone} not support"
        start, end = window_at(raw, now)
        now_s = math.floor(now)
        if now_s < start or now_s > end:
            return f"current time beyond revocable zone {zone}:{raw}"
        return None

    def on_session_open(self, ssn: Session) -> None:
        now = ssn.now
        infos = ssn.nodes.infos
        node_zone = [ni.node.labels.get(REVOCABLE_ZONE, "") for ni in infos]
        errors = {z: self.zone_error(z, now) for z in sorted(set(node_zone) - {""})}
        revocable = np.array([z != "" for z in node_zone], dtype=bool)
        active = np.array([z != "" and errors[z] is None for z in node_zone], dtype=bool)
        any_revocable = bool(revocable.any())
        for uid in sorted(ssn.jobs):
            job = ssn.jobs[uid]
            for key, v in zip((JDB_MIN_AVAILABLE, JDB_MAX_UNAVAILABLE), job_budget(job.pg.annotations)):
                problem = parse_int_or_percent(v, len(job.tasks))[1] if v else None
                if problem:
                    self.warnings.append(f"PodGroup {job.pg.key}: annotation {key}: {problem}; "
                                         f"tdm counts it as 0")
        rz_of: dict[str, str] = {}

        def rz(task: TaskInfo) -> str:
            got = rz_of.get(task.uid)
            if got is None:
                got = rz_of[task.uid] = task_revocable_zone(task.pod)
            return got

        def mask(task: TaskInfo, idx: np.ndarray) -> np.ndarray | None:
            if not any_revocable:
                return None
            if rz(task):
                return ~revocable[idx] | active[idx]
            return ~revocable[idx]

        def reason(task: TaskInfo, i: int) -> list[tuple[str, str]]:
            err = errors.get(node_zone[i])
            return [(UNRESOLVABLE, err if err is not None else NOT_ALLOWED)]

        def node_order(task: TaskInfo, idx: np.ndarray, detail: dict | None) -> np.ndarray | None:
            if not any_revocable or not rz(task):
                return None
            return np.where(active[idx], MAX_NODE_SCORE, 0.0)

        def preemptable(preemptor: TaskInfo, preemptees: list[TaskInfo]) -> tuple[list[TaskInfo] | None, int]:
            if preemptor.preemptable or rz(preemptor):
                return None, REJECT
            by_job: dict[str, list[TaskInfo]] = {}
            by_name = ssn.nodes.by_name
            for t in preemptees:
                if not t.preemptable or t.status != RUNNING:
                    continue
                ni = by_name.get(t.node_name)
                if ni is None or revocable[ni.i]:
                    continue
                by_job.setdefault(t.job, []).append(t)
            victims: list[TaskInfo] = []
            for jid, tasks in by_job.items():
                job = ssn.jobs.get(jid)
                if job is not None:
                    victims += max_victims(job, tasks)
            return victims, PERMIT

        def victim_tasks(tasks: list[TaskInfo]) -> list[TaskInfo]:
            now_ns = _ns(ssn.now)
            if self.last_evict_at is not None and self.last_evict_at + self.evict_period > now_ns:
                return []
            victims: list[TaskInfo] = []
            for zone in sorted(self.zones):
                if self.zone_error(zone, ssn.now) is None:
                    continue
                by_job: dict[str, list[TaskInfo]] = {}
                for i, ni in enumerate(infos):
                    if node_zone[i] != zone:
                        continue
                    for _, t in ni.tasks.values():
                        if t.preemptable and t.status == RUNNING:
                            by_job.setdefault(t.job, []).append(t)
                for jid, ts in by_job.items():
                    job = ssn.jobs.get(jid)
                    if job is not None:
                        victims += max_victims(job, ts)
            self.last_evict_at = now_ns
            return victims

        def job_order(l: JobInfo, r: JobInfo) -> int:
            if l.preemptable == r.preemptable:
                return 0
            return 1 if l.preemptable else -1

        def job_pipelined(job: JobInfo) -> int:
            return PERMIT if job.is_pipelined() else REJECT

        def job_starving(job: JobInfo) -> bool:
            if job.preemptable:
                return False
            return len(job.index.get(PENDING, ())) > 0

        ssn.add("predicate", self.name, Predicate(mask, reason))
        ssn.add("node_order", self.name, node_order)
        ssn.add("preemptable", self.name, preemptable)
        ssn.add("victim_tasks", self.name, victim_tasks)
        ssn.add("job_order", self.name, job_order)
        ssn.add("job_pipelined", self.name, job_pipelined)
        ssn.add("job_starving", self.name, job_starving)
