"""What one scheduling pass decided, in the shape `caldera schedule -o json` prints (the output
contract shared by the kube and the Volcano drivers; each adds its own fields)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Why an input object was not used, by short category (the stderr summary groups by these).
KIND_NOT_USED = "kind not used by the scheduler"
NO_VOLCANO_CONF = "Volcano object without a volcano-scheduler.conf"
NOT_FOR_VOLCANO = "not used by the Volcano scheduler"
SCHEDULER_NAME = "schedulerName not served"
UNKNOWN_NODE = "bound to a node not in the input"
BEING_DELETED = "pending and being deleted"

# Kinds without a namespace (their `name` in `ignored` is the bare name); any other kind given
# without metadata.namespace is in `default`, as the API server would put it.
CLUSTER_SCOPED = frozenset({
    "Namespace", "Node", "PersistentVolume", "PriorityClass", "StorageClass", "CSIDriver", "CSINode",
    "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "APIService", "IngressClass",
    "RuntimeClass", "VolumeAttachment", "CertificateSigningRequest", "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
    "FlowSchema", "PriorityLevelConfiguration", "ComponentStatus", "DeviceClass", "ResourceSlice",
    "Queue", "HyperNode", "Numatopology",
})


@dataclass
class Ignored:
    """One input object the pass did not use: `category` groups it in the stderr summary, the
    rest is its entry in the output's `ignored` list."""
    kind: str
    name: str
    source: str
    reason: str
    category: str
    order: int = 0          # the object's position in the input (the output lists them in input order)

    def to_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "name": self.name, "source": self.source, "reason": self.reason}


def object_name(doc: dict[str, Any]) -> str:
    """`namespace/name` of a manifest (`name` for cluster-scoped kinds; `(no name)` when unset)."""
    meta = doc.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
    name = str(meta.get("name") or "(no name)")
    ns = meta.get("namespace")
    if ns:
        return f"{ns}/{name}"
    return name if doc.get("kind") in CLUSTER_SCOPED else f"default/{name}"


def ignored_summary(ignored: list[Ignored], hint: str | None = None, kinds_shown: int = 5) -> str | None:
    """The one stderr line that counts the ignored objects, by category and kind, or None when
    there are none: 'ignored 3 objects: 2 Service, 1 ConfigMap (kind not used by the scheduler);
    ... (hint)'."""
    if not ignored:
        return None
    by_cat: dict[str, dict[str, int]] = {}
    for i in ignored:
        kinds = by_cat.setdefault(i.category, {})
        kinds[i.kind] = kinds.get(i.kind, 0) + 1
    parts = []
    for cat, kinds in by_cat.items():
        shown = [f"{n} {k}" for k, n in list(kinds.items())[:kinds_shown]]
        rest = list(kinds.values())[kinds_shown:]
        if rest:
            shown.append(f"{sum(rest)} of {len(rest)} other kinds")
        parts.append(f"{', '.join(shown)} ({cat})")
    n = len(ignored)
    return f"ignored {n} object{'' if n == 1 else 's'}: {'; '.join(parts)}{f' ({hint})' if hint else ''}"


@dataclass
class PassOutput:
    bindings: list[dict[str, Any]] = field(default_factory=list)
    unschedulable: list[dict[str, Any]] = field(default_factory=list)
    evictions: list[dict[str, Any]] = field(default_factory=list)
    explain: dict[str, dict[str, Any]] | None = None
    warnings: list[str] = field(default_factory=list)
    ignored: list[Ignored] = field(default_factory=list)

    def output(self, *, nominations: list[dict[str, Any]] | None = None,
               pod_groups: list[dict[str, Any]] | None = None,
               pipelined: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """The output document: every key of the contract, `pipelined` only when there are any."""
        d: dict[str, Any] = {"bindings": self.bindings, "unschedulable": self.unschedulable,
                             "evictions": self.evictions, "nominations": nominations or [],
                             "podGroups": pod_groups or [],
                             "ignored": [i.to_dict() for i in sorted(self.ignored, key=lambda i: i.order)]}
        if pipelined:
            d["pipelined"] = pipelined
        if self.explain is not None:
            d["explain"] = self.explain
        return d
