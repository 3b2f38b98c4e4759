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

from typing import TYPE_CHECKING

from ..api.info import ALLOCATED_STATUS, PENDING, PIPELINED, JobInfo, TaskInfo
from ..api.reasons import _tx, job_fit_error
from .base import PERMIT, REJECT, BatchPlugin

if TYPE_CHECKING:
    from ..framework.session import Session

NOT_ENOUGH_PODS_OF_TASK_REASON = "NotEnoughPodsOfTask"
NOT_ENOUGH_PODS_REASON = "NotEnoughTasks"
NOT_ENOUGH_RESOURCES_REASON = "NotEnoughResources"
UNSCHEDULABLE_CONDITION = "Unschedulable"
SCHEDULED_CONDITION = "Scheduled"
SCHEDULED_CONDITION_REASON = "tasks in gang are ready to be scheduled"


def should_skip_unschedulable_for_releasing(job: JobInfo) -> bool:
    """An unready job whose scheduled plus still-placed releasing tasks reach minAvailable, with
    nothing pending or pipelined, is terminating, not unschedulable: no condition."""
    releasing = job.releasing_scheduled_task_num()
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

    def on_session_open(self, ssn: Session) -> None:
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

    def on_session_close(self, ssn: Session) -> None:
        for job in ssn.jobs.values():
            if not job.tasks:
                continue
            # volcano_unschedule_task_count{job_id}: Volcano sets it for every job at close
            ssn.unready_tasks[job.name] = 0 if job.is_ready() else job.min_available - job.ready_task_num()
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
