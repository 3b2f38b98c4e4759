"""Why a task or job is not scheduled, in Volcano's words (JobInfo.TaskSchedulingReason and
JobInfo.FitError in pkg/scheduler/api/job_info.go): used for PodGroup conditions (gang) and for
the message reported on each pending pod."""
from __future__ import annotations

from .info import ALLOCATED, PENDING, PIPELINED, STATUS_NAMES, JobInfo, TaskInfo

ALL_NODES_UNAVAILABLE = "all nodes are unavailable"
POD_GROUP_READY = "pod group is ready"
POD_GROUP_NOT_READY = "pod group is not ready"
# pkg/scheduler/api pod condition reasons
POD_REASON_UNSCHEDULABLE = "Unschedulable"
POD_REASON_SCHEDULABLE = "Schedulable"


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
            task = job.tasks.get(uid)
            if task is not None and fe is not None:
                msg += f". Origin reason is {task.name}: {fe.message()}"
                break
    return msg


def pod_message(job: JobInfo, t: TaskInfo, memo: dict | None = None) -> str:
    """The pod condition message Volcano's cache writes (RecordJobStatusEvent): the task's own
    reason, else the job's FitError, else "all nodes are unavailable". `memo` keeps each job's
    FitError once computed (it is the same for all its tasks)."""
    msg = task_scheduling_reason(job, t)[1]
    if msg:
        return msg
    if memo is None:
        return job_fit_error(job) or ALL_NODES_UNAVAILABLE
    if job.uid not in memo:
        memo[job.uid] = job_fit_error(job) or ALL_NODES_UNAVAILABLE
    return memo[job.uid]
