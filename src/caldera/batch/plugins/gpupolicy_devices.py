"""GPUs as devices in a Volcano session (docs/gpu.md, "From a Volcano tier"): which GPUs a task
takes when the session places it, over the session's core NodeTable (`ssn.nodes.table.gpu`).

The session keeps the table in step with its Statements (batch/api/nodes.py, statement.py): a task
allocated or pipelined on a node is added to the table, which gives a task with GPU demand GPU
indices there (state/devices.py); a discarded allocation and an eviction take it off the table,
which gives its GPUs back; an undone eviction puts it back on the GPUs it held. What the table does
not know is that a placement is *new*: it would give the task the GPUs it held on that node before
(a discarded gang, an earlier session's pipelining) when they still fit. `SessionGpus.placed`, an
allocate event handler, re-chooses the GPUs of a task the session has just allocated or pipelined,
as kube's scheduler does for a pod it assumes (devices.py `fresh`, then GPUDevices' Reserve):

- a share of one GPU: the GPU of the session's selection rule -- FGD's (the GPU whose trial gives
  the best FGD score, lowest index on ties) when gpupolicy scores with fgd.weight > 0, else
  Random's (drawn uniformly from the GPUs that fit) when it does with random.weight > 0, else
  `best` (the tightest GPU that fits, lowest index on ties);
- k whole GPUs: the lowest-indexed fully free ones (on a node with GPU links, one island where
  possible: state/gputopology.py).

One handler per session, whichever of predicates (wrapping GPUDevices) and gpupolicy attaches it
first. A task that is put back by an undone eviction (status Running) keeps its GPUs.
"""
from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from ...framework.interface import CycleState
from ..api.info import ALLOCATED, PIPELINED

if TYPE_CHECKING:
    from ..api.info import TaskInfo
    from ..framework.session import Session

GPUPOLICY = "gpupolicy"
_FRESH = ALLOCATED | PIPELINED
_ATTACHED: weakref.WeakKeyDictionary[Session, SessionGpus] = weakref.WeakKeyDictionary()


class SessionGpus:
    """The session's GPU placement handler (see the module doc)."""

    def __init__(self, ssn: Session):
        self.ssn = ssn

    def rule(self) -> Any:
        """The kube score plugin whose GPU selection rule applies (FGD or Random, from gpupolicy),
        or None for `best`."""
        plugin = self.ssn.plugins.get(GPUPOLICY)
        return getattr(plugin, "selection", None) if plugin is not None else None

    def placed(self, task: TaskInfo) -> None:
        if not task.status & _FRESH:
            return                      # (an undone eviction: the task keeps the GPUs it held)
        rule = self.rule()
        pick = (lambda i: rule.select_gpu(CycleState(), task.pod, i)) if rule is not None else None
        self.ssn.nodes.table.gpu.choose_again(task.pod, task.node_name, pick)

    def devices_of(self, task: TaskInfo) -> tuple[int, ...] | None:
        return self.ssn.nodes.table.gpu.devices_of(task.pod.key)


def attach(ssn: Session) -> SessionGpus:
    """The session's SessionGpus, its allocate event handler registered on first use."""
    got = _ATTACHED.get(ssn)
    if got is None:
        got = _ATTACHED[ssn] = SessionGpus(ssn)
        ssn.add_event_handler(allocate=got.placed)
    return got
