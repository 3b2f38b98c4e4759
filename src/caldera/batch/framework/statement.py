"""Statement: allocate / pipeline / evict inside a session, committed or discarded as a unit.

Every operation changes the snapshot at once (job task index, node columns, plugin state via
the event handlers) so later decisions in the session see it; `discard` undoes them in reverse
order, so a gang that cannot fully fit leaves no trace; `commit` turns allocations into binds
and evictions into deletions (Volcano's cache.Bind / cache.Evict).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..api.info import ALLOCATED, BINDING, PENDING, PIPELINED, RELEASING, RUNNING, TaskInfo

if TYPE_CHECKING:
    from .session import Session

EVICT, PIPELINE, ALLOCATE = 0, 1, 2


class Statement:
    __slots__ = ("ops", "ssn")

    def __init__(self, ssn: Session):
        self.ssn = ssn
        self.ops: list[tuple[int, TaskInfo, str]] = []

    def __len__(self):
        return len(self.ops)

    # operations ---------------------------------------------------------------------------
    def evict(self, task: TaskInfo, reason: str) -> None:
        ssn = self.ssn
        job = ssn.jobs.get(task.job)
        if job is not None:
            job.update_task_status(task, RELEASING)
        else:
            task.status = RELEASING
        ni = ssn.nodes.by_name.get(task.node_name)
        if ni is not None:
            ssn.nodes.update_task(ni.i, task)
            if ssn.nodes.table.node_of(task.pod.key) is not None:
                ssn.nodes.table.remove_pod(task.pod.key)
        ssn.fire_deallocate(task)
        self.ops.append((EVICT, task, reason))

    def _unevict(self, task: TaskInfo) -> None:
        ssn = self.ssn
        job = ssn.jobs.get(task.job)
        if job is not None:
            job.update_task_status(task, RUNNING)
        else:
            task.status = RUNNING
        ni = ssn.nodes.by_name.get(task.node_name)
        if ni is not None:
            ssn.nodes.update_task(ni.i, task)
        ssn.fire_allocate(task)

    def _place(self, task: TaskInfo, i: int, status: int) -> None:
        ssn = self.ssn
        job = ssn.jobs[task.job]
        job.update_task_status(task, status)
        ssn.nodes.add_task(i, task)
        ssn.fire_allocate(task)

    def allocate(self, task: TaskInfo, i: int) -> None:
        self._place(task, i, ALLOCATED)
        self.ops.append((ALLOCATE, task, ""))

    def pipeline(self, task: TaskInfo, i: int, eviction_occurred: bool = False) -> None:
        task.eviction_occurred = eviction_occurred
        self._place(task, i, PIPELINED)
        self.ops.append((PIPELINE, task, ""))

    def _unplace(self, task: TaskInfo) -> None:
        ssn = self.ssn
        ssn.jobs[task.job].update_task_status(task, PENDING)
        ni = ssn.nodes.by_name.get(task.node_name)
        if ni is not None:
            ssn.nodes.remove_task(ni.i, task)
        ssn.fire_deallocate(task)
        task.node_name = ""

    def unpipeline(self, task: TaskInfo) -> None:
        self._unplace(task)
        self.ops = [op for op in self.ops if op[1] is not task]

    # outcome ------------------------------------------------------------------------------
    def discard(self) -> None:
        for op, task, _ in reversed(self.ops):
            task.last_tx = (task.status, task.node_name)
            if op == EVICT:
                self._unevict(task)
            else:
                self._unplace(task)
        self.ops = []

    def commit(self) -> None:
        ssn = self.ssn
        for op, task, reason in self.ops:
            task.last_tx = None
            if op == EVICT:
                ssn.evicted.append((task, reason))
            elif op == ALLOCATE:
                ssn.jobs[task.job].update_task_status(task, BINDING)
                ssn.bound.append((task, task.node_name))
        self.ops = []

    def merge(self, *others: Statement) -> None:
        for o in others:
            self.ops.extend(o.ops)
            o.ops = []
