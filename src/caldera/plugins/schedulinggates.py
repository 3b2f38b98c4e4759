"""SchedulingGates: a pod with non-empty spec.schedulingGates waits before entering activeQ."""
from ..framework.interface import Plugin
from ..framework.status import Status


class SchedulingGates(Plugin):
    name = "SchedulingGates"

    def pre_enqueue(self, pod):
        if not pod.scheduling_gates:
            return None
        return Status.unresolvable(f"waiting for scheduling gates: [{' '.join(pod.scheduling_gates)}]")

    def events_to_register(self):
        return ["Pod/UpdatePodSchedulingGatesEliminated"]
