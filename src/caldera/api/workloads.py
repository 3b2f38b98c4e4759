"""Namespaces and the pod owners kube-scheduler reads: v1 Namespace, v1 Service, v1
ReplicationController, apps/v1 ReplicaSet and apps/v1 StatefulSet.

- Namespaces carry the labels InterPodAffinity's `namespaceSelector` is matched against. The API
  server sets `kubernetes.io/metadata.name: <name>` on every namespace (and overwrites any other
  value), so that label is always present here too.
- Services, RCs, RSs and StatefulSets give PodTopologySpread's default constraints their selector
  (kube's helper.DefaultSelector, `Workloads.default_selector`).

`Workloads` is the scheduler's view of all of them (kube's Namespace/Service/RC/RS/SS listers).
Namespace look-ups follow kube's NamespaceLister: a namespace not known is not found
(`namespace_labels` returns None). `assume_namespaces` registers namespaces that must exist
without a manifest for them (`caldera schedule`: the namespaces of the input's pods, which the API
server's NamespaceLifecycle admission guarantees exist) with only the automatic label.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import InputError
from .objects import Pod, read_meta, read_namespaced_meta
from .selectors import LabelSelector, Requirement, parse_label_selector
from .validation import aggregate, object_meta_errors

NS_NAME_LABEL = "kubernetes.io/metadata.name"

__all__ = ["NS_NAME_LABEL", "Namespace", "Owner", "Workloads", "parse_workload"]


def _labels(meta: dict[str, Any], field_: str = "labels") -> dict[str, str]:
    v = meta.get(field_)
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise InputError(f"metadata.{field_}: must be a mapping of strings")
    return {str(k): "" if x is None else str(x) for k, x in v.items()}


def _spec(raw: dict[str, Any]) -> dict[str, Any]:
    spec = raw.get("spec") or {}
    if not isinstance(spec, dict):
        raise InputError("spec: must be a mapping")
    return spec


def _str_map_selector(v: object, where: str) -> dict[str, str] | None:
    """A map-style selector (Service, RC): None when absent."""
    if v is None:
        return None
    if not isinstance(v, dict):
        raise InputError(f"{where}: must be a mapping of label keys to values")
    return {str(k): "" if x is None else str(x) for k, x in v.items()}


class Namespace:
    __slots__ = ("labels", "name")

    def __init__(self, raw: dict[str, Any]):
        meta, self.name = read_meta(raw, "Namespace")
        labels = _labels(meta)
        errs = object_meta_errors(self.name, None, labels, _labels(meta, "annotations"))
        if errs:
            raise InputError(aggregate(errs))
        labels[NS_NAME_LABEL] = self.name     # what the API server's defaulting does
        self.labels = labels


class Owner:
    """A Service (map selector, None = selects nothing), ReplicationController (map selector,
    defaulted from the pod template's labels as the API server does) or ReplicaSet / StatefulSet
    (LabelSelector)."""

    __slots__ = ("kind", "map_selector", "name", "namespace", "selector")

    def __init__(self, kind: str, raw: dict[str, Any]):
        _, self.name, self.namespace = read_namespaced_meta(raw, kind)
        self.kind = kind
        spec = _spec(raw)
        self.map_selector: dict[str, str] | None = None
        self.selector: LabelSelector | None = None
        if kind == "Service":
            self.map_selector = _str_map_selector(spec.get("selector"), "spec.selector")
        elif kind == "ReplicationController":
            sel = _str_map_selector(spec.get("selector"), "spec.selector")
            if not sel:
                tmpl = spec.get("template") or {}
                tmeta = tmpl.get("metadata") if isinstance(tmpl, dict) else None
                sel = _labels(tmeta) if isinstance(tmeta, dict) else {}
            self.map_selector = sel
        else:
            self.selector = parse_label_selector(spec.get("selector"), "spec.selector")
            if self.selector is None:
                raise InputError("spec.selector: Required value (apps/v1 requires a label selector)")

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


# (kind, apiVersion) of the objects read, as a manifest spells them
KINDS = {("Namespace", "v1"), ("Service", "v1"), ("ReplicationController", "v1"),
         ("ReplicaSet", "apps/v1"), ("StatefulSet", "apps/v1")}


def parse_workload(kind: str, raw: dict[str, Any]) -> Namespace | Owner:
    return Namespace(raw) if kind == "Namespace" else Owner(kind, raw)


def _equals(labels: Mapping[str, str]) -> tuple[Requirement, ...]:
    """labels.Set(...).AsSelector(): one `key = value` requirement per key, sorted by key."""
    return tuple(Requirement(k, "In", (labels[k],)) for k in sorted(labels))


_EMPTY = LabelSelector(())


class Workloads:
    """Listers for namespaces and pod owners. `generation` grows with every change, so callers
    may cache what they derive from them."""

    def __init__(self) -> None:
        self.namespaces: dict[str, dict[str, str]] = {}
        self.services: dict[str, dict[str, Owner]] = {}          # namespace -> name -> Service
        self.controllers: dict[tuple[str, str, str], Owner] = {}  # (kind, ns, name) -> RC/RS/SS
        self.generation = 0

    # ---- updates ------------------------------------------------------------------------------
    def add(self, obj: Namespace | Owner) -> None:
        self.generation += 1
        if isinstance(obj, Namespace):
            self.namespaces[obj.name] = obj.labels
        elif obj.kind == "Service":
            self.services.setdefault(obj.namespace, {})[obj.name] = obj
        else:
            self.controllers[(obj.kind, obj.namespace, obj.name)] = obj

    def remove(self, kind: str, namespace: str, name: str) -> None:
        self.generation += 1
        if kind == "Namespace":
            self.namespaces.pop(name, None)
        elif kind == "Service":
            s = self.services.get(namespace)
            if s is not None:
                s.pop(name, None)
                if not s:
                    del self.services[namespace]
        else:
            self.controllers.pop((kind, namespace, name), None)

    def assume_namespaces(self, names: Iterable[str]) -> None:
        """Namespaces known to exist without a manifest: only the automatic label."""
        for n in names:
            if n not in self.namespaces:
                self.namespaces[n] = {NS_NAME_LABEL: n}
                self.generation += 1

    # ---- NamespaceLister ------------------------------------------------------------------------
    def namespace_labels(self, ns: str) -> dict[str, str] | None:
        """The labels of namespace `ns`, None when the lister does not find it."""
        return self.namespaces.get(ns)

    @property
    def empty(self) -> bool:
        return not (self.services or self.controllers)

    def pod_services(self, pod: Pod) -> list[Owner]:
        """helper.GetPodServices: the Services of the pod's namespace whose selector (not nil)
        matches the pod's labels, in input order."""
        svcs = self.services.get(pod.namespace)
        if not svcs:
            return []
        labels = pod.labels
        return [s for s in svcs.values() if s.map_selector is not None      # nil selects nothing
                and all(labels.get(k) == v for k, v in s.map_selector.items())]

    # ---- helper.DefaultSelector -----------------------------------------------------------------
    def default_selector(self, pod: Pod) -> LabelSelector:
        """The conjunction of the selectors of the Services in the pod's namespace whose
        (non-nil) selector matches the pod's labels, and of the pod's controller (ownerReference
        with controller: true) when it is a v1 ReplicationController or an apps/v1 ReplicaSet or
        StatefulSet found by name in the pod's namespace. Empty when nothing selects the pod."""
        label_set: dict[str, str] = {}
        for s in self.pod_services(pod):
            label_set.update(s.map_selector or {})
        owner = controller_of(pod) if self.controllers else None
        if owner is None:
            return LabelSelector(_equals(label_set)) if label_set else _EMPTY
        api, kind, name = owner
        reqs = _equals(label_set)
        if (api, kind) == ("v1", "ReplicationController"):
            rc = self.controllers.get((kind, pod.namespace, name))
            if rc is not None and rc.map_selector is not None:
                label_set.update(rc.map_selector)
                reqs = _equals(label_set)
        elif (api, kind) in (("apps/v1", "ReplicaSet"), ("apps/v1", "StatefulSet")):
            o = self.controllers.get((kind, pod.namespace, name))
            if o is not None and o.selector is not None:
                reqs = reqs + o.selector.requirements
        return LabelSelector(reqs) if reqs else _EMPTY


def controller_of(pod: Pod) -> tuple[str, str, str] | None:
    """(apiVersion, kind, name) of the pod's controller ownerReference (metav1.GetControllerOf)."""
    meta = pod.raw.get("metadata") if isinstance(pod.raw, dict) else None
    refs = meta.get("ownerReferences") if isinstance(meta, dict) else None
    if not isinstance(refs, list):
        return None
    for r in refs:
        if isinstance(r, dict) and r.get("controller") is True:
            return str(r.get("apiVersion") or ""), str(r.get("kind") or ""), str(r.get("name") or "")
    return None
