"""DefaultBinder: binds through the scheduler's binder (a recorder in one-pass and simulate
modes, the pods/binding subresource in live mode)."""
from ..framework.interface import Plugin


class DefaultBinder(Plugin):
    name = "DefaultBinder"

    def bind(self, state, pod, node_name: str):
        return self.handle.scheduler.binder(pod, node_name)
