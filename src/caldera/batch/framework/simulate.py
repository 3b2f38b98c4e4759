"""What the Simulate* hooks work on (Volcano's SimulateRemoveTaskFn / SimulateAddTaskFn /
SimulatePredicateFn / SimulateAllocatableFn, used by preempt's topology-aware dry run).

Volcano clones the candidate node's NodeInfo and the preemptor's CycleState for each node it
tries, removes and re-adds victims on the clone, and lets plugins keep their own copy of the
queue attributes in the cycle state. Caldera does not copy the node: a `SimNode` is a view of one
node row that remembers the tasks taken off it (and the FutureIdle that results), and a
`SimState` is a plain dict per node attempt in which a plugin keeps what it simulates, under its
name (the plugins fill it from their live state when first asked, which is what Volcano's
PrePredicate snapshot holds at that point: nothing changes the live state during a dry run).
Nothing here changes the session.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np

if TYPE_CHECKING:
    from ..api.info import TaskInfo
    from ..api.nodes import BatchNodes

SimState: TypeAlias = dict[str, Any]
"""A plugin's simulated state by plugin name (Volcano's cloned CycleState)."""


class SimNode:
    """One node with some of its tasks removed (Volcano's cloned NodeInfo in SelectVictimsOnNode)."""

    __slots__ = ("fidle", "i", "name", "nodes", "removed")

    def __init__(self, nodes: BatchNodes, i: int):
        self.nodes = nodes
        self.i = i
        self.name = nodes.infos[i].name
        self.removed: dict[str, TaskInfo] = {}     # task key -> task, in removal order
        self.fidle = nodes.future_idle(np.array([i], dtype=np.intp))   # (1, D), a copy

    def remove_task(self, t: TaskInfo) -> None:
        """NodeInfo.RemoveTask of a Running/Bound task: what it used becomes idle."""
        if t.key in self.removed:
            return
        self.removed[t.key] = t
        self.fidle[0, t.dims] += t.vec

    def add_task(self, t: TaskInfo) -> None:
        """NodeInfo.AddTask of a task removed before."""
        if self.removed.pop(t.key, None) is not None:
            self.fidle[0, t.dims] -= t.vec

    def fits(self, task: TaskInfo) -> bool:
        """task.InitResreq.LessEqual(FutureIdle, Zero) on the simulated node."""
        return bool(self.nodes.fits(task, self.fidle)[0])
