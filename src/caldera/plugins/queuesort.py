"""PrioritySort: higher priority first, then earlier queue timestamp (kube's queuesort plugin)."""
from ..framework.interface import Plugin, QueuedPodInfo


class PrioritySort(Plugin):
    name = "PrioritySort"

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        pa, pb = a.pod.priority, b.pod.priority
        return pa > pb or (pa == pb and (a.timestamp, a.seq) < (b.timestamp, b.seq))

    def sort_key(self, q: QueuedPodInfo):
        """A key equivalent to `less`, so queues can use heapq/sorted directly."""
        return (-q.pod.priority, q.timestamp, q.seq)
