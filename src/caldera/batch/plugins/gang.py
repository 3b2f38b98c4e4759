"""gang: all-or-nothing scheduling of a PodGroup's minMember tasks (Volcano's plugins/gang).

Registers JobValid, JobReady, JobPipelined, JobStarving, JobOrder, Preemptable and Reclaimable.
On session close every job with tasks that is still not ready gets the PodGroup condition
Unschedulable/NotEnoughResources with the text "<unready>/<tasks> tasks in gang unschedulable:
<FitError>", recorded in `ssn.unschedulable_jobs` (which makes the session's phase update see
the condition); ready jobs get the Scheduled condition.

Not supported: the SubJob* hooks (Caldera has no subGroupPolicy; a job's sub-job checks are
vacuously true) and UnifiedEvictable (no gangpreempt/gangreclaim actions).
"""
from __future__ import annotations

from ..info import ALLOCATED, ALLOCATED_STATUS, PENDING, PIPELINED, RELEASING, STATUS_NAMES, JobInfo, TaskInfo
from .base import PERMIT, REJECT, BatchPlugin

# volcano.sh/apis scheduling v1beta1 constants
NOT_ENOUGH_PODS_OF_TASK_REASON = "NotEnoughPodsOfTask"
NOT_ENOUGH_PODS_REASON = "NotEnoughTasks"
NOT_ENOUGH_RESOURCES_REASON = "NotEnoughResources"
POD_GROUP_READY = "pod group is ready"
POD_GROUP_NOT_READY = "pod group is not ready"
UNSCHEDULABLE_CONDITION = "Unschedulable"
SCHEDULED_CONDITION = "Scheduled"
SCHEDULED_CONDITION_REASON = "tasks in gang are ready to be scheduled"
# pkg/scheduler/api pod condition reasons
POD_REASON_UNSCHEDULABLE = "Unschedulable"
POD_REASON_SCHEDULABLE = "Schedulable"


# --- JobInfo helpers Volcano keeps on the job (job_info.go) --------------------------------------
def _tx(t: TaskInfo) -> tuple[int, str]:
    """The task's last transaction (set when a statement discarded it), else its current one."""
    return t.last_tx if t.last_tx else (t.status, t.node_name)


def task_scheduling_reason(job: JobInfo, t: TaskInfo) -> tuple[str, str]:
    """TaskSchedulingReason: (reason, message) for a task, from its last transaction."""
    status, node = _tx(t)
    if status == ALLOCATED:
        return POD_REASON_SCHEDULABLE, (f"Pod {t.namespace}/{t.name} can possibly be assigned to {node}, "
                                        "once minAvailable is satisfied")
    if status == PIPELINED:
        return POD_REASON_UNSCHEDULABLE, (f"Pod {t.namespace}/{t.name} can possibly be assigned to {node}, "
                                          "once resource is released and minAvailable is satisfied")
    if status == PENDING:
        fe = job.fit_errors.get(t.uid)
        if fe is not None:
            return POD_REASON_UNSCHEDULABLE, fe.message()
        return POD_REASON_UNSCHEDULABLE, job.job_fit_errors
    return STATUS_NAMES.get(status, "Unknown"), job.job_fit_errors


def _histogram(counts: dict[str, int]) -> str:
    return ", ".join(sorted(f"{v} {k}" for k, v in counts.items()))


def job_fit_error(job: JobInfo) -> str:
    """JobInfo.FitError: readiness, the task-status histogram with minAvailable, the pending
    tasks' reasons, and the original failure (the job's own, else the first failed task's).

    Volcano picks the "origin" task by ranging over a Go map (arbitrary when several tasks
    failed); here it is the first task that failed in this session."""
    counts: dict[str, int] = {}
    for status, tasks in job.index.items():
        name = STATUS_NAMES.get(status, "Unknown")
        counts[name] = counts.get(name, 0) + len(tasks)
    counts["minAvailable"] = job.min_available
    ready = POD_GROUP_READY if job.is_ready() else POD_GROUP_NOT_READY
    msg = f"{ready}, {_histogram(counts)}"
    pending: dict[str, int] = {}
    for t in job.index.get(PENDING, {}).values():
        reason = task_scheduling_reason(job, t)[0]
        pending[reason] = pending.get(reason, 0) + 1
    if pending:
        msg += f"; Pending: {_histogram(pending)}"
    if job.job_fit_errors:
        msg += ". Origin reason is: " + job.job_fit_errors
    else:
        for uid, fe in job.fit_errors.items():
            t = job.tasks.get(uid)
            if t is not None and fe is not None:
                msg += f". Origin reason is {t.name}: {fe.message()}"
                break
    return msg


def releasing_scheduled_task_num(job: JobInfo) -> int:
    """Releasing tasks that had been placed on a node (they still hold their gang slot)."""
    return sum(1 for t in job.index.get(RELEASING, {}).values() if t.node_name)


def should_skip_unschedulable_for_releasing(job: JobInfo) -> bool:
    """An unready job whose scheduled plus still-placed releasing tasks reach minAvailable, with
    nothing pending or pipelined, is terminating, not unschedulable: no condition."""
    releasing = releasing_scheduled_task_num(job)
    if releasing == 0:
        return False
    if job.index.get(PENDING) or job.index.get(PIPELINED):
        return False
    return job.scheduled_task_num() + releasing >= job.min_available


def update_pod_group_condition(job: JobInfo, cond: dict) -> None:
    """UpdatePodGroupCondition: replace the condition of the same type, else append."""
    conds = job.pg.conditions
    for i, c in enumerate(conds):
        if c.get("type") == cond["type"]:
            conds[i] = cond
            return
    conds.append(cond)


def gang_unschedulable_message(job: JobInfo) -> str:
    """The Unschedulable condition message gang writes on close."""
    schedulable = sum(1 for t in job.index.get(PENDING, {}).values() if _tx(t)[0] & ALLOCATED_STATUS)
    unready = job.min_available - (schedulable + job.ready_task_num())
    return f"{unready}/{len(job.tasks)} tasks in gang unschedulable: {job_fit_error(job)}"


def gang_event_message(job: JobInfo) -> str | None:
    """The Warning event Volcano's cache records for the PodGroup after the session
    (RecordJobStatusEvent): the pending-task count, not gang's unready count; only while the
    PodGroup's phase is Unknown, Pending or Inqueue (None otherwise)."""
    if job.pg.phase not in ("Unknown", "Pending", "Inqueue"):
        return None
    return f"{len(job.index.get(PENDING, ()))}/{len(job.tasks)} tasks in gang unschedulable: {job_fit_error(job)}"


# --- the plugin ------------------------------------------------------------------------------------
class GangPlugin(BatchPlugin):
    name = "gang"

    def on_session_open(self, ssn) -> None:
        ssn.add("job_valid", self.name, self.job_valid)

        def victims(preemptor: TaskInfo, preemptees: list[TaskInfo]):
            # a job gives up tasks only while it keeps more than minAvailable ready ones
            occupied: dict[str, int] = {}
            out = []
            for t in preemptees:
                job = ssn.jobs.get(t.job)
                if job is None:
                    continue        # orphaned task: its PodGroup is gone
                if job.uid not in occupied:
                    occupied[job.uid] = job.ready_task_num()
                if occupied[job.uid] > job.min_available:
                    occupied[job.uid] -= 1
                    out.append(t)
            return out, PERMIT

        ssn.add("reclaimable", self.name, victims)
        ssn.add("preemptable", self.name, victims)
        ssn.add("job_order", self.name, self.job_order)
        ssn.add("job_ready", self.name, lambda job: job.check_task_ready() and job.is_ready())
        ssn.add("job_pipelined", self.name,
                lambda job: PERMIT if job.check_task_pipelined() and job.is_pipelined() else REJECT)
        # preemption looks at the job's minAvailable only, not minTaskMember
        ssn.add("job_starving", self.name, lambda job: job.is_starving())

    @staticmethod
    def job_valid(job: JobInfo):
        if not job.check_task_valid():
            return (False, NOT_ENOUGH_PODS_OF_TASK_REASON,
                    "Not enough valid pods of each task for gang-scheduling")
        vtn = job.valid_task_num()
        if vtn < job.min_available:
            return (False, NOT_ENOUGH_PODS_REASON,
                    f"Not enough valid tasks for gang-scheduling, valid: {vtn}, min: {job.min_available}")
        return None

    @staticmethod
    def job_order(l: JobInfo, r: JobInfo) -> int:
        lr, rr = l.is_ready(), r.is_ready()
        if lr == rr:
            return 0
        return 1 if lr else -1

    def on_session_close(self, ssn) -> None:
        for job in ssn.jobs.values():
            if not job.tasks:
                continue
            if job.is_ready():
                update_pod_group_condition(job, {"type": SCHEDULED_CONDITION, "status": "True",
                                                 "reason": SCHEDULED_CONDITION_REASON, "message": ""})
                continue
            if should_skip_unschedulable_for_releasing(job):
                continue
            msg = gang_unschedulable_message(job)
            ssn.unschedulable_jobs[job.uid] = msg
            update_pod_group_condition(job, {"type": UNSCHEDULABLE_CONDITION, "status": "True",
                                             "reason": NOT_ENOUGH_RESOURCES_REASON, "message": msg})
