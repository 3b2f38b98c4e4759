"""The workload under construction: pods in input order with increasing `seq`, unique keys."""
from __future__ import annotations

from typing import Any

from ...api.objects import DEFAULT_SCHEDULER, Pod
from ...api.pdb import PodDisruptionBudget
from ...api.resourcequota import ResourceQuota
from ...errors import InputError
from ..model import DEFAULT_GRACE_SECONDS, SimPod, Workload


class WorkloadBuilder:
    """Collects the pods, Volcano objects and node events of all inputs."""

    def __init__(self, default_scheduler: str | None):
        self.workload = Workload()
        self.scheduler = default_scheduler or DEFAULT_SCHEDULER
        self._keys: set[str] = set()
        self.added_nodes: set[str] = set()     # names of nodes that join during the run
        self._volcano_keys: set[str] = set()
        self._policy_keys: set[str] = set()

    def add_pod(self, doc: dict[str, Any], arrival: float, duration: float | None,
                grace: float = DEFAULT_GRACE_SECONDS, *, validate: bool = False) -> SimPod:
        """Parse a pending Pod manifest and append it; InputError names the field (the caller
        adds the file and the object). `validate`: apply the API server's checks on create, as
        `caldera schedule` does for its input (a user's manifests; pods the trace readers make
        from CSV rows are well formed by construction)."""
        pod = Pod(doc, len(self.workload.pods), validate=validate)
        if pod.key in self._keys:
            raise InputError(f"duplicate Pod {pod.key}: every pod of the workload needs its own namespace/name")
        self._keys.add(pod.key)
        sim = SimPod(pod, arrival, duration, grace)
        self.workload.pods.append(sim)
        return sim

    def add_volcano(self, source: str, doc: dict[str, Any]) -> None:
        """Append a PodGroup or Queue manifest; a second one with the same name is an error."""
        meta = doc.get("metadata") or {}
        kind, name = doc.get("kind"), meta.get("name")
        key = f"{kind} {name}" if kind == "Queue" else f"{kind} {meta.get('namespace') or 'default'}/{name}"
        if key in self._volcano_keys:
            raise InputError(f"duplicate {key}: it is already defined earlier in the workload")
        self._volcano_keys.add(key)
        self.workload.volcano_objects.append((source, doc))

    def add_pdb(self, where: str, pdb: PodDisruptionBudget) -> None:
        """A policy/v1 PodDisruptionBudget (in force from t = 0, with the status it is written with)."""
        self._unique(f"PodDisruptionBudget {pdb.key}")
        if not pdb.has_status:
            self.warn(f"{where}: no status.disruptionsAllowed; 0 assumed (preemption reads only the status the "
                      "disruption controller computes)")
        self.workload.pdbs.append(pdb)

    def add_resource_quota(self, where: str, rq: ResourceQuota) -> None:
        """A v1 ResourceQuota (in force from t = 0; its status is not recomputed during the replay)."""
        self._unique(f"ResourceQuota {rq.key}")
        self.workload.resource_quotas.append(rq)

    def _unique(self, key: str) -> None:
        if key in self._policy_keys:
            raise InputError(f"duplicate {key}: it is already defined earlier in the workload")
        self._policy_keys.add(key)

    def warn(self, message: str) -> None:
        self.workload.warnings.append(message)
