"""The Scheduling Framework: extension points, Status, CycleState, registry, runtime, queue."""
from .interface import CycleState, Plugin, PostFilterResult, PreFilterResult, QueuedPodInfo
from .status import Code, Status

__all__ = ["Code", "CycleState", "Plugin", "PostFilterResult", "PreFilterResult", "QueuedPodInfo", "Status"]
