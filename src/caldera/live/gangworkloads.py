"""scheduling.k8s.io/v1alpha1 Workloads for the GangScheduling plugin in `caldera run`: an informer's
handlers keep the parsed objects by namespace/name in the dict the scheduler reads
(`Scheduler.gang_workloads`). A new Workload moves the unschedulable pods that point to it
(kube's Workload/Add event, GangScheduling's isSchedulableAfterWorkloadAdded hint). A Workload
that does not parse is skipped with a warning (the API server would not have admitted it).
Started by app.py only when the GenericWorkload gate is on, as kube-scheduler registers the
informer (eventhandlers.go); RBAC: deploy/clusterrole.yaml."""
from __future__ import annotations

from collections.abc import Callable

from ..api.workload import Workload, parse_workload
from ..errors import InputError
from ..plugins.gangscheduling.plugin import refers_to_workload
from .informer import RESOURCES


class GangWorkloads:
    def __init__(self, workloads: dict[str, Workload], cache) -> None:
        self.workloads = workloads
        self.cache = cache
        self.warn: Callable[[str], None] = getattr(cache, "warn", lambda msg: None)

    def _parse(self, raw: dict) -> Workload | None:
        try:
            return parse_workload(raw)
        except InputError as e:
            meta = raw.get("metadata") or {}
            self.warn(f"Workload {meta.get('namespace') or 'default'}/{meta.get('name')}: {e}; ignored")
            return None

    def on_add(self, raw: dict) -> None:
        wl = self._parse(raw)
        if wl is None:
            return
        with self.cache.lock:
            self.workloads[wl.key] = wl
            q = self.cache.queue
            if q is not None:
                q.move_all_to_active_or_backoff("Workload/Add", None, wl,
                                                pre_check=lambda pod: refers_to_workload(pod, wl))
            self.cache.changed.set()

    def on_update(self, old: dict, raw: dict) -> None:
        wl = self._parse(raw)          # podGroups are immutable: no event, the object is kept current
        if wl is None:
            return
        with self.cache.lock:
            self.workloads[wl.key] = wl

    def on_delete(self, raw: dict) -> None:
        meta = raw.get("metadata") or {}
        with self.cache.lock:
            self.workloads.pop(f"{meta.get('namespace') or 'default'}/{meta.get('name')}", None)


RESOURCE = RESOURCES["workloads"]
