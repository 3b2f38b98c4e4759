"""DefaultBinder: binds through the scheduler's binder (a recorder in one-pass and simulate
modes, the pods/binding subresource in live mode)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..framework.interface import Plugin

if TYPE_CHECKING:
    from ..framework.protocols import BinderHandle


class DefaultBinder(Plugin):
    name = "DefaultBinder"
    handle: BinderHandle

    def bind(self, state, pod, node_name: str):
        return self.handle.scheduler.binder(pod, node_name)
