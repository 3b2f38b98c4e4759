"""The Scheduling Framework: extension points, Status, CycleState, registry, runtime, queue."""
from .interface import (CycleState, Plugin, PostFilterResult, PreFilterResult, QueuedPodInfo)
from .status import Code, Status

__all__ = ["Code", "Status", "CycleState", "Plugin", "PreFilterResult", "PostFilterResult", "QueuedPodInfo"]
