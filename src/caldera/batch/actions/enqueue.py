"""enqueue: admit Pending PodGroups (phase Pending -> Inqueue), round-robin over queues in
QueueOrder, one job per turn in JobOrder. A job with no minResources is always admitted;
otherwise the JobEnqueueable vote decides (proportion/capacity: queue room, overcommit:
cluster room), and JobEnqueued lets plugins book its minResources as inqueue."""
from __future__ import annotations

from ..util.pqueue import PriorityQueue


def execute(ssn) -> None:
    # Not common.jobs_by_queue, on purpose (enqueue.go): this is the one action that keeps Pending
    # jobs instead of skipping them, it does not consult JobValid (a vcjob's pods are created only
    # once its PodGroup is Inqueue, so gang's too-few-tasks verdict would keep it Pending for
    # ever), and it pushes the queue of every job, Pending or not.
    queues = PriorityQueue(ssn.queue_order_less)
    seen: set[str] = set()
    jobs_map: dict[str, PriorityQueue] = {}
    for uid in sorted(ssn.jobs):
        job = ssn.jobs[uid]
        queue = ssn.queues.get(job.queue)
        if queue is None:
            continue
        if queue.uid not in seen:
            seen.add(queue.uid)
            queues.push(queue)
        if job.is_pending():
            jobs_map.setdefault(job.queue, PriorityQueue(ssn.job_order_less)).push(job)
    while not queues.empty():
        queue = queues.pop()
        jobs = jobs_map.get(queue.uid)
        if jobs is None or jobs.empty():
            continue
        job = jobs.pop()
        if job.pg.min_resources is None or ssn.job_enqueueable(job):
            ssn.job_enqueued(job)
            job.pg.phase = "Inqueue"
        queues.push(queue)
