"""scheduling.x-k8s.io PodGroups for the Coscheduling plugin in `caldera run`: an informer's
handlers keep the parsed objects by namespace/name in the dict the scheduler reads
(`Scheduler.pod_groups`). A PodGroup that does not parse is skipped with a warning (the plugin
then sees no group: its pods fail Permit with "PodGroup not found"). Started by app.py only when
a profile enables Coscheduling (RBAC: deploy/clusterrole.yaml)."""
from __future__ import annotations

from collections.abc import Callable

from ..api.podgroup import PodGroup
from ..errors import InputError
from .informer import Resource

RESOURCE = Resource("podgroups", "scheduling.x-k8s.io/v1alpha1", True, "PodGroup")


class XPodGroups:
    def __init__(self, groups: dict[str, PodGroup], cache) -> None:
        self.groups = groups
        self.cache = cache
        self.warn: Callable[[str], None] = getattr(cache, "warn", lambda msg: None)

    def on_add(self, raw: dict) -> None:
        try:
            pg = PodGroup(raw)
        except InputError as e:
            meta = raw.get("metadata") or {}
            self.warn(f"PodGroup {meta.get('namespace') or 'default'}/{meta.get('name')}: {e}; ignored")
            return
        with self.cache.lock:
            self.groups[pg.key] = pg
            self.cache.changed.set()

    def on_update(self, old: dict, raw: dict) -> None:
        self.on_add(raw)

    def on_delete(self, raw: dict) -> None:
        meta = raw.get("metadata") or {}
        with self.cache.lock:
            self.groups.pop(f"{meta.get('namespace') or 'default'}/{meta.get('name')}", None)
