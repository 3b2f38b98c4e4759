"""sla: a job's service-level waiting time (Volcano's plugins/sla, `sla-waiting-time`).

A job's waiting time is its PodGroup's annotation `volcano.sh/sla-waiting-time`, else its
annotation `sla-waiting-time` (a Volcano Job's annotations are copied to its PodGroup), else the
plugin's global argument `sla-waiting-time`, else none (JobInfo.extractWaitingTime). Values are Go
durations (time.ParseDuration: "1h2m3s", "90m", "1.5h", units ns, us/µs, ms, s, m, h) and must
be positive. A job's deadline is its PodGroup's creationTimestamp plus its waiting time. A pod
without a PodGroup gets only the global waiting time: the group Volcano's podgroup controller
makes for it inherits `volcano.sh/` annotations from the pod's owner (a Deployment, ...), which a
set of manifests does not resolve, and Caldera's implicit group carries none.

Registers, each gated by its conf flag as in Volcano:
- JobOrder (enableJobOrder): a job with a waiting time before one without; between two with,
  the earlier deadline first; otherwise no opinion (the next plugin decides). This orders by
  deadline whether or not it has passed: an older job with the same waiting time goes first.
- JobEnqueueable (enableJobEnqueued) and JobPipelined (enableJobPipelined): Permit once the job
  has waited at least its waiting time (now - creationTimestamp >= waiting time), else Abstain;
  never Reject. Under the session's vote a Permit decides at the end of its tier unless a plugin
  rejects (any Reject stops the vote): so a job past its SLA is admitted by enqueue / kept
  pipelined by allocate over the checks of *later* tiers (proportion's or capacity's queue room,
  overcommit's cluster room, gang's pipelined check), not over a reject in its own tier.
  Volcano's sla registers no JobStarving function: its "reserve resources for the starving job"
  is this pipelined permit.

Time. Volcano compares with time.Now(). Nothing in Caldera's batch code reads the wall clock:
the plugin uses the session's `now` (Session.now): what the driver sets (`open_snapshot(now=)`),
else the newest creationTimestamp in the snapshot (its PodGroups, pods and Queues), i.e.
`caldera schedule` decides at the moment of its input, as its kube pass puts pending pods in the
queue at their creation times. A PodGroup without a creationTimestamp counts as created at the
epoch (as Caldera's job order treats it); with no timestamps at all, now is 0 and no job has
waited. Durations and times are compared in whole nanoseconds (timestamps to the microsecond).

Argument errors. Volcano logs an unparseable or non-positive global `sla-waiting-time` (or a
non-string one) and runs without it; Caldera makes it a config error, as for every plugin
argument that does not parse. A bad per-job annotation is, as in Volcano, ignored (the next
source applies) and reported as a warning.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...api.goduration import DurationError, parse_go_duration
from ...errors import ConfigError
from .base import ABSTAIN, PERMIT, BatchPlugin

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ..api.info import JobInfo
    from ..framework.session import Session

JOB_WAITING_TIME = "sla-waiting-time"                          # argument and annotation (api.JobWaitingTime)
JOB_WAITING_TIME_ANNOTATION = "volcano.sh/sla-waiting-time"    # v1beta1.JobWaitingTime, read first

def _ns(seconds: float | None) -> int:
    """POSIX seconds -> nanoseconds, to the microsecond (None: the epoch)."""
    return 0 if seconds is None else round(seconds * 1_000_000) * 1_000


def job_waiting_time(annotations: Mapping[str, str]) -> tuple[int | None, list[str]]:
    """(waiting time in ns or None, [problems]) from a PodGroup's annotations, as
    JobInfo.SetPodGroup reads them: volcano.sh/sla-waiting-time, then sla-waiting-time; a value
    that does not parse or is not positive is skipped."""
    problems = []
    for key in (JOB_WAITING_TIME_ANNOTATION, JOB_WAITING_TIME):
        if key not in annotations:
            continue
        try:
            ns = parse_go_duration(annotations[key])
        except DurationError as e:
            problems.append(f'annotation {key}: {e}')
            continue
        if ns <= 0:
            problems.append(f'annotation {key}: invalid sla waiting time {annotations[key]!r} (must be positive)')
            continue
        return ns, problems
    return None, problems


class SlaPlugin(BatchPlugin):
    name = "sla"
    ARGUMENTS = frozenset({JOB_WAITING_TIME})

    @classmethod
    def unread_hint(cls, key: str, arguments: Mapping[str, Any]) -> str | None:
        if key == "SLA-WaitingTime":
            return f'Volcano renamed it "{JOB_WAITING_TIME}"'
        return None

    def __init__(self, arguments=None, source="volcano conf"):
        super().__init__(arguments, source)
        self.warnings: list[str] = []
        self.job_waiting_time = self._global_waiting_time()     # ns, or None
        self.waiting: dict[str, int | None] = {}                # job uid -> its waiting time (ns)

    def _global_waiting_time(self) -> int | None:
        if JOB_WAITING_TIME not in self.args:
            return None
        v = self.args[JOB_WAITING_TIME]
        want = "a positive Go duration such as 30m, 1h or 1h30m (units ns, us, ms, s, m, h)"
        if not isinstance(v, str):
            raise self._bad(JOB_WAITING_TIME, want + " as a string", v)
        try:
            ns = parse_go_duration(v)
        except DurationError as e:
            raise ConfigError(f"{self.source}: {self.name}.arguments.{JOB_WAITING_TIME}: {e}; must be {want}") from None
        if ns <= 0:
            raise self._bad(JOB_WAITING_TIME, want, v)
        return ns

    def on_session_open(self, ssn: Session) -> None:
        self.waiting = {}
        for uid in sorted(ssn.jobs):
            job = ssn.jobs[uid]
            ns, problems = job_waiting_time(job.pg.annotations)
            self.waiting[uid] = ns
            self.warnings += [f"PodGroup {job.pg.key}: {p}; ignored" for p in problems]
        ssn.add("job_order", self.name, self.job_order)
        ssn.add("job_enqueueable", self.name, self.permitable)
        ssn.add("job_pipelined", self.name, self.permitable)

    def waiting_time(self, job: JobInfo) -> int | None:
        """readJobWaitingTime: the job's own waiting time, else the global one (ns)."""
        own = self.waiting.get(job.uid) if job.uid in self.waiting else job_waiting_time(job.pg.annotations)[0]
        return self.job_waiting_time if own is None else own

    def job_order(self, l: JobInfo, r: JobInfo) -> int:
        lw, rw = self.waiting_time(l), self.waiting_time(r)
        if lw is None:
            return 0 if rw is None else 1
        if rw is None:
            return -1
        ld, rd = _ns(l.creation) + lw, _ns(r.creation) + rw
        if ld < rd:
            return -1
        if ld > rd:
            return 1
        return 0

    def permitable(self, job: JobInfo) -> int:
        jwt = self.waiting_time(job)
        if jwt is None:
            return ABSTAIN
        if _ns(self.ssn.now) - _ns(job.creation) < jwt:
            return ABSTAIN
        return PERMIT
