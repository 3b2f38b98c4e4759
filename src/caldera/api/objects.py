"""Pod, Node and PriorityClass as the scheduler sees them, parsed from manifest dicts.

Parsing validates types and quantities and raises InputError naming the field; the loader adds
the file and object. Objects keep their raw dict (`raw`) so plugins can read any field they need.
"""
from __future__ import annotations

from collections.abc import Hashable, Iterable
from datetime import datetime
from typing import Any

from ..errors import InputError
from .podresources import (  # noqa: F401
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    NON_MISSING,
    _container_resources,
    aggregate_container_requests,
    default_pod_level_requests,
    is_pod_level_resource,
    parse_resources,
    parse_resources_nano,
    pod_requests,
)

DEFAULT_SCHEDULER = "default-scheduler"

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def parse_time(value: object, where: str) -> float | None:
    """RFC 3339 timestamp -> POSIX seconds (None if absent)."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value.timestamp()
    if not isinstance(value, str):
        raise InputError(f"{where}: expected an RFC 3339 timestamp, got {value!r}")
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise InputError(f"{where}: {value!r} is not an RFC 3339 timestamp") from None


def _map(d: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    v = d.get(key)
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise InputError(f"{where}.{key}: must be a mapping")
    return v


def _list(d: dict[str, Any], key: str, where: str) -> list[Any]:
    v = d.get(key)
    if v is None:
        return []
    if not isinstance(v, list):
        raise InputError(f"{where}.{key}: must be a list")
    return v


def _str_map(d: dict[str, Any], key: str, where: str) -> dict[str, str]:
    return {str(k): "" if v is None else str(v) for k, v in _map(d, key, where).items()}


def read_meta(raw: dict[str, Any], kind: str) -> tuple[dict[str, Any], str]:
    """(metadata, name) of a manifest; InputError when metadata is not a mapping or has no name."""
    meta = raw.get("metadata") or {}
    if not isinstance(meta, dict):
        raise InputError("metadata: must be a mapping")
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise InputError(f"metadata.name: a {kind} needs a name")
    return meta, name


class Taint:
    __slots__ = ("effect", "key", "value")

    def __init__(self, key: str, value: str, effect: str):
        self.key, self.value, self.effect = key, value, effect

    def __repr__(self) -> str:
        return f"Taint({self.key}={self.value}:{self.effect})"

    def __eq__(self, o: object) -> bool:
        return isinstance(o, Taint) and (self.key, self.value, self.effect) == (o.key, o.value, o.effect)

    def __hash__(self) -> int:
        return hash((self.key, self.value, self.effect))

    def display(self) -> str:
        """kube's format in FailedScheduling messages: {key: value}."""
        return f"{{{self.key}: {self.value}}}"


class Toleration:
    __slots__ = ("effect", "key", "operator", "seconds", "value")

    def __init__(self, key: str = "", operator: str = "Equal", value: str = "", effect: str = "",
                 seconds: int | None = None):
        self.key, self.operator, self.value, self.effect, self.seconds = key, operator, value, effect, seconds

    def tolerates(self, t: Taint) -> bool:
        """v1.Toleration.ToleratesTaint."""
        if self.effect and self.effect != t.effect:
            return False
        if self.key and self.key != t.key:
            return False
        if self.operator == "Exists":
            return True
        return self.value == t.value


def tolerates_all(tolerations: Iterable[Toleration], taint: Taint) -> bool:
    # a loop, not any(<genexpr>): run per taint for every pod and node, it is ~3x faster
    for tol in tolerations:  # noqa: SIM110
        if tol.tolerates(taint):
            return True
    return False


def parse_taints(items: list[Any] | None, where: str) -> tuple[Taint, ...]:
    out = []
    for i, t in enumerate(items or []):
        w = f"{where}[{i}]"
        if not isinstance(t, dict) or not isinstance(t.get("key"), str) or not t["key"]:
            raise InputError(f"{w}: a taint needs a non-empty 'key'")
        eff = t.get("effect")
        if eff not in TAINT_EFFECTS:
            raise InputError(f"{w}.effect: {eff!r} is not one of {list(TAINT_EFFECTS)}")
        out.append(Taint(t["key"], str(t.get("value") or ""), eff))
    return tuple(out)


def parse_tolerations(items: list[Any] | None, where: str) -> tuple[Toleration, ...]:
    out = []
    for i, t in enumerate(items or []):
        w = f"{where}[{i}]"
        if not isinstance(t, dict):
            raise InputError(f"{w}: a toleration must be a mapping")
        op = t.get("operator") or "Equal"
        if op not in ("Equal", "Exists"):
            raise InputError(f"{w}.operator: {op!r} is not Equal or Exists")
        eff = t.get("effect") or ""
        if eff and eff not in TAINT_EFFECTS:
            raise InputError(f"{w}.effect: {eff!r} is not one of {list(TAINT_EFFECTS)}")
        key = str(t.get("key") or "")
        if not key and op != "Exists":
            raise InputError(f"{w}: an empty key requires operator Exists")
        out.append(Toleration(key, op, str(t.get("value") or ""), eff, t.get("tolerationSeconds")))
    return tuple(out)


class Pod:
    """A pod as the scheduler sees it. `key` is "namespace/name"."""

    __slots__ = (
        "__weakref__",
        "annotations",
        "cache",
        "creation",
        "explicit_priority",
        "has_affinity",
        "has_anti_affinity",
        "has_ports",
        "images",
        "key",
        "labels",
        "name",
        "namespace",
        "node_name",
        "node_selector",
        "nominated_node_name",
        "nonzero_cpu",
        "nonzero_mem",
        "phase",
        "preemption_policy",
        "priority",
        "priority_class_name",
        "qos",
        "raw",
        "requests",
        "scheduler_name",
        "scheduling_gates",
        "seq",
        "spec",
        "start_time",
        "terminating",
        "tolerations",
        "uid",
    )

    def __init__(self, raw: dict[str, Any], seq: int = 0):
        where = "spec"
        self.raw = raw
        meta, self.name = read_meta(raw, "Pod")
        self.namespace = str(meta.get("namespace") or "default")
        self.key = f"{self.namespace}/{self.name}"
        self.uid = str(meta.get("uid") or f"{self.namespace}-{self.name}")
        self.labels = _str_map(meta, "labels", "metadata")
        self.annotations = _str_map(meta, "annotations", "metadata")
        self.creation = parse_time(meta.get("creationTimestamp"), "metadata.creationTimestamp")
        self.terminating = meta.get("deletionTimestamp") is not None
        self.seq = seq
        spec = raw.get("spec") or {}
        if not isinstance(spec, dict):
            raise InputError("spec: must be a mapping")
        self.spec = spec
        self.node_name = str(spec.get("nodeName") or "")
        self.scheduler_name = str(spec.get("schedulerName") or DEFAULT_SCHEDULER)
        prio = spec.get("priority")
        if prio is not None and (not isinstance(prio, int) or isinstance(prio, bool)):
            raise InputError(f"spec.priority: must be an integer, got {prio!r}")
        self.explicit_priority = prio is not None
        self.priority = int(prio or 0)
        self.priority_class_name = str(spec.get("priorityClassName") or "")
        self.preemption_policy: str | None = spec.get("preemptionPolicy")
        if self.preemption_policy not in (None, "Never", "PreemptLowerPriority"):
            raise InputError(f"spec.preemptionPolicy: {self.preemption_policy!r} is not Never or PreemptLowerPriority")
        status = raw.get("status") or {}
        if not isinstance(status, dict):
            raise InputError("status: must be a mapping")
        self.phase = str(status.get("phase") or "Pending")
        self.nominated_node_name = str(status.get("nominatedNodeName") or "")
        self.start_time = parse_time(status.get("startTime"), "status.startTime")

        containers = _list(spec, "containers", where)
        inits = _list(spec, "initContainers", where)
        creqs: list[dict[str, int]] = []
        ireqs: list[tuple[dict[str, int], bool]] = []
        images: list[str] = []
        # (requests, limits) per container, for pod-level defaulting
        cres: list[tuple[dict[str, int], dict[str, int]]] = []
        ires: list[tuple[tuple[dict[str, int], dict[str, int]], bool]] = []
        qos_all_guaranteed, any_set = True, False
        for kind, lst in (("containers", containers), ("initContainers", inits)):
            for i, c in enumerate(lst):
                w = f"spec.{kind}[{i}]"
                if not isinstance(c, dict):
                    raise InputError(f"{w}: must be a mapping")
                r, lim = _container_resources(c, w)
                if r or lim:
                    any_set = True
                for k in ("cpu", "memory"):
                    if k not in lim or lim.get(k) != r.get(k):
                        qos_all_guaranteed = False
                if c.get("image"):
                    images.append(str(c["image"]))
                if kind == "containers":
                    creqs.append(r)
                    cres.append((r, lim))
                else:
                    sidecar = c.get("restartPolicy") == "Always"
                    ireqs.append((r, sidecar))
                    ires.append(((r, lim), sidecar))
        overhead = parse_resources_nano(spec.get("overhead"), "spec.overhead")
        pod_level = None
        pres = spec.get("resources")
        if pres is not None:
            if not isinstance(pres, dict):
                raise InputError("spec.resources: must be a mapping")
            preq = parse_resources_nano(pres.get("requests"), "spec.resources.requests")
            plim = parse_resources_nano(pres.get("limits"), "spec.resources.limits")
            if preq or plim:
                pod_level = default_pod_level_requests(preq, plim, cres, ires)
        self.requests = pod_requests(creqs, ireqs, overhead, pod_level=pod_level)
        nz = pod_requests(creqs, ireqs, overhead, nonmissing=True, pod_level=pod_level)
        self.nonzero_cpu = nz.get("cpu", 0)
        self.nonzero_mem = nz.get("memory", 0)
        self.images = tuple(images)
        self.qos = "BestEffort" if not any_set else ("Guaranteed" if qos_all_guaranteed and containers else "Burstable")
        self.tolerations = parse_tolerations(_list(spec, "tolerations", where), "spec.tolerations")
        self.node_selector = _str_map(spec, "nodeSelector", where)
        gates = _list(spec, "schedulingGates", where)
        self.scheduling_gates = tuple(str(g.get("name")) if isinstance(g, dict) else str(g) for g in gates)
        aff = spec.get("affinity") or {}
        if not isinstance(aff, dict):
            raise InputError("spec.affinity: must be a mapping")
        self.has_affinity = bool(aff.get("podAffinity"))
        self.has_anti_affinity = bool(aff.get("podAntiAffinity"))
        self.has_ports = any(p.get("hostPort") for c in containers + inits if isinstance(c, dict)
                             for p in (c.get("ports") or []) if isinstance(p, dict))
        self.cache: dict[Hashable, Any] = {}

    @property
    def affinity(self) -> dict[str, Any]:
        aff: dict[str, Any] = self.spec.get("affinity") or {}
        return aff

    @property
    def bound(self) -> bool:
        return bool(self.node_name)

    @property
    def finished(self) -> bool:
        return self.phase in ("Succeeded", "Failed")

    def __repr__(self) -> str:
        return f"Pod({self.key})"


class Node:
    __slots__ = (
        "allocatable",
        "cache",
        "capacity",
        "creation",
        "images",
        "labels",
        "name",
        "raw",
        "taints",
        "unschedulable",
    )

    def __init__(self, raw: dict[str, Any]):
        self.raw = raw
        meta, self.name = read_meta(raw, "Node")
        self.labels = _str_map(meta, "labels", "metadata")
        self.creation = parse_time(meta.get("creationTimestamp"), "metadata.creationTimestamp")
        spec = raw.get("spec") or {}
        status = raw.get("status") or {}
        if not isinstance(spec, dict) or not isinstance(status, dict):
            raise InputError("spec/status: must be mappings")
        self.taints = parse_taints(_list(spec, "taints", "spec"), "spec.taints")
        self.unschedulable = bool(spec.get("unschedulable"))
        self.capacity = parse_resources(status.get("capacity"), "status.capacity")
        alloc = status.get("allocatable")
        self.allocatable = parse_resources(alloc, "status.allocatable") if alloc is not None else dict(self.capacity)
        imgs = []
        for i, im in enumerate(_list(status, "images", "status")):
            if not isinstance(im, dict):
                raise InputError(f"status.images[{i}]: must be a mapping with names and sizeBytes")
            names = im.get("names") or []
            size = im.get("sizeBytes") or 0
            if not isinstance(size, int):
                raise InputError(f"status.images[{i}].sizeBytes: must be an integer")
            imgs.append((tuple(str(n) for n in names), size))
        self.images = tuple(imgs)
        self.cache: dict[Hashable, Any] = {}

    def __repr__(self) -> str:
        return f"Node({self.name})"


class PriorityClass:
    __slots__ = ("global_default", "name", "preemption_policy", "value")

    def __init__(self, raw: dict[str, Any]):
        _, self.name = read_meta(raw, "PriorityClass")
        v = raw.get("value")
        if not isinstance(v, int) or isinstance(v, bool):
            raise InputError(f"value: must be an integer, got {v!r}")
        if v > 1_000_000_000 and not self.name.startswith("system-"):
            raise InputError(f"value: {v} exceeds 1000000000 (reserved for system- classes)")
        self.value = v
        self.global_default = bool(raw.get("globalDefault"))
        self.preemption_policy = raw.get("preemptionPolicy") or "PreemptLowerPriority"


# Built-in PriorityClasses every cluster has (pkg/apis/scheduling).
SYSTEM_PRIORITY_CLASSES = {"system-cluster-critical": 2000000000, "system-node-critical": 2000001000}
