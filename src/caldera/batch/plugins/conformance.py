"""conformance: never evict kube-system pods or pods of the system-critical priority classes
(Volcano's plugins/conformance). Registers Preemptable and Reclaimable; UnifiedEvictable is not
supported (no gangpreempt/gangreclaim actions)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..api.info import TaskInfo
from .base import PERMIT, BatchPlugin

if TYPE_CHECKING:
    from ..framework.session import Session

SYSTEM_CLUSTER_CRITICAL = "system-cluster-critical"
SYSTEM_NODE_CRITICAL = "system-node-critical"
NAMESPACE_SYSTEM = "kube-system"


def is_protected(t: TaskInfo) -> bool:
    return (t.pod.priority_class_name in (SYSTEM_CLUSTER_CRITICAL, SYSTEM_NODE_CRITICAL)
            or t.namespace == NAMESPACE_SYSTEM)


def evictable(evictor: TaskInfo | None, evictees: list[TaskInfo]):
    return [t for t in evictees if not is_protected(t)], PERMIT


class ConformancePlugin(BatchPlugin):
    name = "conformance"

    def on_session_open(self, ssn: Session) -> None:
        ssn.add("preemptable", self.name, evictable)
        ssn.add("reclaimable", self.name, evictable)
