"""Volcano's util/scheduler_helper.go helpers shared by actions and plugins."""
from __future__ import annotations

from ..api.info import TaskInfo
from .pqueue import PriorityQueue


def victims_queue(ssn, victims, preemptor: TaskInfo) -> PriorityQueue:
    """BuildVictimsPriorityQueue: pops the task to evict first. Within a job, the reverse of
    TaskOrder; across queues, VictimQueueOrder; across jobs, the reverse of the plugins' job
    order, then the reverse of TaskOrder."""
    jobs, queues = ssn.jobs, ssn.queues

    def job_then_task(lj, rj, l, r) -> bool:
        c = ssn._compare("job_order", lj, rj)
        if c:
            return c > 0
        return not ssn.task_order_less(l, r)

    def less(l: TaskInfo, r: TaskInfo) -> bool:
        if l.job == r.job:
            return not ssn.task_order_less(l, r)
        lj, rj, pj = jobs.get(l.job), jobs.get(r.job), jobs.get(preemptor.job)
        if lj is None or rj is None:
            if lj is None and rj is None:
                return not ssn.task_order_less(l, r)
            return lj is None
        if pj is None:
            return job_then_task(lj, rj, l, r)
        if lj.queue != rj.queue:
            return ssn.victim_queue_order_less(queues.get(lj.queue), queues.get(rj.queue), queues.get(pj.queue))
        return job_then_task(lj, rj, l, r)

    return PriorityQueue(less, victims or ())
