"""priority: order jobs by their PodGroup's priority class and tasks by pod priority; victims must
belong to a lower-priority job, or be a lower-priority task of the preemptor's own job
(Volcano's plugins/priority).

Registers TaskOrder, JobOrder, Preemptable and JobStarving. Not supported: SubJobOrder (no
subGroupPolicy) and UnifiedEvictable (no gangpreempt/gangreclaim actions). The pod's
preemptionPolicy is checked by the preempt/reclaim actions, not here (as in Volcano).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..api.info import JobInfo, TaskInfo
from .base import PERMIT, BatchPlugin

if TYPE_CHECKING:
    from ..framework.session import Session


def _higher_first(lp: int, rp: int) -> int:
    if lp == rp:
        return 0
    return -1 if lp > rp else 1


class PriorityPlugin(BatchPlugin):
    name = "priority"

    def on_session_open(self, ssn: Session) -> None:
        ssn.add("task_order", self.name, lambda l, r: _higher_first(l.priority, r.priority))
        ssn.add("job_order", self.name, lambda l, r: _higher_first(l.priority, r.priority))

        def preemptable(preemptor: TaskInfo, preemptees: list[TaskInfo]):
            pjob = ssn.jobs.get(preemptor.job)
            if pjob is None:
                return [], PERMIT           # orphaned preemptor: nothing may be preempted
            victims = []
            for t in preemptees:
                job = ssn.jobs.get(t.job)
                if job is None:
                    continue                # orphaned preemptee
                if job.uid != pjob.uid:
                    if job.priority < pjob.priority:
                        victims.append(t)
                elif t.priority < preemptor.priority:
                    victims.append(t)
            return victims, PERMIT

        ssn.add("preemptable", self.name, preemptable)
        ssn.add("job_starving", self.name, self.job_starving)

    @staticmethod
    def job_starving(job: JobInfo) -> bool:
        return job.ready_task_num() + job.waiting_task_num() < len(job.tasks)
