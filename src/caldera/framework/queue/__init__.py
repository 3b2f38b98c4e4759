"""The scheduling queue (kube-scheduler's backend/queue): activeQ, backoffQ, unschedulable pool.

    from caldera.framework.queue import SchedulingQueue, hints_from_plugins
    q = SchedulingQueue(fw.less, clock, fw.run_pre_enqueue,
                        hints=hints_from_plugins(fw.instances.values()))

See scheduling_queue.py for the driver contract (the driver calls the flush loops).
"""
from .events import hints_from_plugins, matches, node_update_events, parse_event, pod_update_events
from .scheduling_queue import (
    ACTIVE,
    AFTER_BACKOFF,
    BACKOFF,
    GATED,
    IMMEDIATELY,
    IN_FLIGHT,
    SKIP,
    UNSCHEDULABLE,
    SchedulingQueue,
)

__all__ = [
    "ACTIVE",
    "AFTER_BACKOFF",
    "BACKOFF",
    "GATED",
    "IMMEDIATELY",
    "IN_FLIGHT",
    "SKIP",
    "UNSCHEDULABLE",
    "SchedulingQueue",
    "hints_from_plugins",
    "matches",
    "node_update_events",
    "parse_event",
    "pod_update_events",
]
