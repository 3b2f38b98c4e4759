"""What the scheduler writes back to the API server besides bindings: PodScheduled conditions,
nominatedNodeName, events.k8s.io/v1 Events (Scheduled, FailedScheduling, Preempted; Volcano's Evict), victim
deletions and PodGroup status — shaped as kube-scheduler and Volcano write them."""
from __future__ import annotations

import datetime as dt
import socket
import uuid
from typing import Any

SMP = "application/strategic-merge-patch+json"
MERGE = "application/merge-patch+json"


def now_rfc3339(micro: bool = False) -> str:
    t = dt.datetime.now(dt.UTC)
    if micro:
        return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def pod_path(pod, sub: str = "") -> str:
    return f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}" + (f"/{sub}" if sub else "")


class StatusWriter:
    """`api`: live.client.Api. `reporter`: the scheduler name events are reported under."""

    def __init__(self, api, reporter: str, instance: str | None = None):
        self.api = api
        self.reporter = reporter
        self.instance = instance or f"{reporter}-{socket.gethostname()}"

    # ---- pods -----------------------------------------------------------------------------
    def unschedulable(self, pod, message: str, nominated: str = "", reason: str = "Unschedulable") -> None:
        """PodScheduled=False with kube's reason and message (and the nominated node, if any),
        then a FailedScheduling event."""
        status: dict[str, Any] = {"conditions": [{"type": "PodScheduled", "status": "False", "reason": reason,
                                                  "message": message, "lastProbeTime": None,
                                                  "lastTransitionTime": now_rfc3339()}]}
        if nominated:
            status["nominatedNodeName"] = nominated
        self.api.request("PATCH", pod_path(pod, "status"), {"status": status}, content_type=SMP)
        self.event(pod, "Warning", "FailedScheduling", "Scheduling", message)

    def nominate(self, pod, node: str) -> None:
        self.api.request("PATCH", pod_path(pod, "status"), {"status": {"nominatedNodeName": node}},
                         content_type=SMP)

    def scheduled(self, pod, node: str) -> None:
        self.event(pod, "Normal", "Scheduled", "Binding",
                   f"Successfully assigned {pod.namespace}/{pod.name} to {node}")

    def preempt(self, victim, preemptor, node: str) -> None:
        """Delete the victim with its own grace period and say why (kube's Preempted event)."""
        self.event(victim, "Normal", "Preempted", "Preempting",
                   f"Preempted by pod {preemptor.uid} on node {node}")
        self._delete(victim)

    def evict(self, victim, reason: str) -> None:
        """Volcano's defaultEvictor.Evict: a Warning "Evict" event and PodReady=False (reason Evict)
        saying why ("preempt", "reclaim"), then delete with the pod's own grace period."""
        msg = f"Pod is evicted, because of {reason}"
        self.event(victim, "Warning", "Evict", "Evict", msg)
        self.api.request("PATCH", pod_path(victim, "status"),
                         {"status": {"conditions": [{"type": "Ready", "status": "False", "reason": "Evict",
                                                     "message": msg, "lastTransitionTime": now_rfc3339()}]}},
                         content_type=SMP)
        self._delete(victim)

    def _delete(self, victim) -> None:
        grace = (victim.spec or {}).get("terminationGracePeriodSeconds")
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if _real_uid(victim):
            body["preconditions"] = {"uid": victim.uid}
        if grace is not None:
            body["gracePeriodSeconds"] = int(grace)
        self.api.request("DELETE", pod_path(victim), body)

    # ---- events ---------------------------------------------------------------------------
    def event(self, obj, type_: str, reason: str, action: str, note: str, kind: str = "Pod",
              api_version: str = "v1") -> None:
        ns = obj.namespace or "default"
        ev = {
            "apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": f"{obj.name}.{uuid.uuid4().hex[:16]}", "namespace": ns},
            "eventTime": now_rfc3339(micro=True),
            "reportingController": self.reporter, "reportingInstance": self.instance,
            "action": action, "reason": reason, "type": type_, "note": note[:1024],
            "regarding": {"apiVersion": api_version, "kind": kind, "namespace": ns, "name": obj.name,
                          **({"uid": obj.uid} if _real_uid(obj) else {})},
        }
        self.api.request("POST", f"/apis/events.k8s.io/v1/namespaces/{ns}/events", ev)

    # ---- PodGroups ------------------------------------------------------------------------
    def podgroup_status(self, namespace: str, name: str, status: dict) -> None:
        # Volcano's PodGroup CRD has no status subresource: status is patched on the object itself
        self.api.request("PATCH", f"/apis/scheduling.volcano.sh/v1beta1/namespaces/{namespace}/podgroups/{name}",
                         {"status": status}, content_type=MERGE)


def _real_uid(obj) -> bool:
    """Caldera gives manifests without a uid `<ns>-<name>`; only API-server uids are real."""
    uid = getattr(obj, "uid", "") or ""
    return len(uid) == 36 and uid.count("-") == 4
