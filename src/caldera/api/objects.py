"""Pod, Node and PriorityClass as the scheduler sees them, parsed from manifest dicts.

Parsing validates types and quantities and raises InputError naming the field; the loader adds
the file and object. Objects keep their raw dict (`raw`) so plugins can read any field they need.

Pods and Nodes read from user input are built with validate=True, which adds the API server's
validation on create (pkg/apis/core/validation) where a manifest could otherwise be scheduled
although a cluster would refuse it: names, namespaces, labels and annotations; a pod's containers
(at least one), resource names and requests against limits (pod-level too), node selector, node
affinity, scheduling gates, host ports, node name and priority class name. A PriorityClass is
always checked as pkg/apis/scheduling/validation does (reserved system- names, values, policy).
The messages are kube's field errors, several listed as "[a, b]" as the API server lists them.
Without validate (a cluster's objects, which passed it; kube's scheduler tests, which Caldera's
tests mirror and which build pods the API server would refuse) only types are checked. Not
checked at all (Caldera does not read them, or hand-written inputs routinely leave them out):
container names and images, volumes, probes, security contexts, pod (anti-)affinity terms and
topology spread constraints (kube-scheduler's own parse reports those as it would for a pod it
cannot parse).
"""
from __future__ import annotations

import math
import os
from collections.abc import Hashable, Iterable
from datetime import UTC, datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from ..errors import InputError
from .podresources import (  # noqa: F401
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    NON_MISSING,
    ContainerResources,
    _container_resources,
    aggregate_container_requests,
    default_pod_level_requests,
    is_pod_level_resource,
    parse_resources,
    parse_resources_nano,
    pod_requests,
)
from .qos import pod_qos
from .quantity import NANO
from .resourcenames import is_extended, is_native
from .selectors import node_affinity_errors
from .validation import (
    aggregate,
    already_exists,
    dns1123_subdomain_errors,
    field_duplicate,
    field_forbidden,
    field_invalid,
    field_not_supported,
    field_required,
    format_quantity,
    labels_errors,
    object_meta_errors,
    qualified_name_errors,
)

DEFAULT_SCHEDULER = "default-scheduler"

# The most pods Caldera creates from one input: a Volcano Job's replicas, a trace row's tasks, and
# all of them together. Kubernetes sets no such limit, but every pod is an etcd object and the
# tested scalability envelope is 150,000 pods per cluster, so a million is far beyond any real
# cluster; here a million pods already take some 4 GB. A larger count is a typo or a unit
# mistake, and stopping before expansion turns minutes of swapping and a MemoryError into one line.
MAX_PODS = 1_000_000
POD_BYTES = 4000          # memory one expanded pod takes at least (its manifest and Pod object)
PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")     # ValidatePreemptionPolicy's order

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def physical_memory() -> int | None:
    """This machine's memory in bytes (None where the OS does not tell)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


def expansion_error(count: int, before: int, bytes_per_pod: int, unit: str) -> str:
    """Why `count` more pods (after `before` already created from the input) cannot be created,
    "" when they can: over MAX_PODS, or more memory than the machine has (the estimate is a lower
    bound, so a refused input could never have run). `unit` names what the count is made of."""
    total = before + count
    if total > MAX_PODS:
        already = f" (with the {before} pods before it, {total})" if before else ""
        return (f"{count} pods{already} are more than the {MAX_PODS} pods Caldera creates from one input "
                f"(no real cluster holds that many); lower the {unit}")
    mem = physical_memory()
    need = count * bytes_per_pod
    if mem is not None and need > mem:
        return (f"{count} pods would need at least {need / 2**30:.1f} GiB, more than the {mem / 2**30:.1f} GiB "
                f"of memory of this machine; lower the {unit}")
    return ""


def format_time(posix: float) -> str:
    """POSIX seconds -> RFC 3339 in whole seconds (the fraction dropped), as the API server
    writes a metav1.Time such as creationTimestamp (parse_time's inverse at that precision)."""
    return datetime.fromtimestamp(math.floor(posix), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


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


# One empty mapping for every pod without labels, annotations or a node selector (see Pod).
_NONE: dict[str, str] = {}


def _str_view(d: dict[str, Any], key: str, where: str) -> dict[str, str]:
    """`_str_map` without the copy: the manifest's own mapping when its keys and values are all
    strings (as a parser reads nearly every one), `_NONE` when it is absent or empty."""
    m = _map(d, key, where)
    if not m:
        return _NONE
    for k, v in m.items():
        if type(k) is not str or type(v) is not str:
            return _str_map(d, key, where)
    return m


def read_meta(raw: dict[str, Any], kind: str) -> tuple[dict[str, Any], str]:
    """(metadata, name) of a manifest; InputError when metadata is not a mapping or has no name."""
    meta = raw.get("metadata") or {}
    if not isinstance(meta, dict):
        raise InputError("metadata: must be a mapping")
    name = meta.get("name")
    if name is None or name == "":
        raise InputError(field_required("metadata.name", "name or generateName is required"))
    if not isinstance(name, str):
        raise InputError(f"metadata.name: a {kind} name must be a string, got {name!r}")
    return meta, name


def read_namespaced_meta(raw: dict[str, Any], kind: str) -> tuple[dict[str, Any], str, str]:
    """(metadata, name, namespace) of a namespaced manifest (namespace "default" when absent),
    with the API server's name, namespace, label and annotation checks as one InputError."""
    meta, name = read_meta(raw, kind)
    namespace = str(meta.get("namespace") or "default")
    errs = object_meta_errors(name, namespace, _str_map(meta, "labels", "metadata"),
                              _str_map(meta, "annotations", "metadata"))
    if errs:
        raise InputError(aggregate(errs))
    return meta, name, namespace


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


# ---- the API server's checks of a pod spec (pkg/apis/core/validation) ------------------------------
# IsStandardResourceName / IsStandardContainerResourceName (pkg/apis/core/helper)
_STANDARD_RESOURCES = frozenset((
    "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory", "requests.ephemeral-storage",
    "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods", "resourcequotas", "services",
    "replicationcontrollers", "secrets", "configmaps", "persistentvolumeclaims", "storage", "requests.storage",
    "services.nodeports", "services.loadbalancers"))
_STANDARD_CONTAINER_RESOURCES = frozenset(("cpu", "memory", "ephemeral-storage"))


@lru_cache(maxsize=1024)
def _container_resource_name_errors(name: str) -> tuple[str, ...]:
    """validateContainerResourceName's messages for resource `name` (each an Invalid of the name)."""
    errs = qualified_name_errors(name)
    if not errs and "/" not in name and name not in _STANDARD_RESOURCES and not name.startswith(
            ("hugepages-", "requests.hugepages-")):
        errs = ["must be a standard resource type or fully qualified"]
    if "/" not in name:
        if name not in _STANDARD_CONTAINER_RESOURCES and not name.startswith("hugepages-"):
            errs.append("must be a standard resource for containers")
    elif not is_native(name) and not is_extended(name):
        errs.append("doesn't follow extended resource name standard")
    return tuple(errs)


def _overcommit_allowed(name: str) -> bool:
    """IsOvercommitAllowed: native resources other than hugepages."""
    return is_native(name) and not name.startswith("hugepages-")


def resource_requirements_errors(path: str, raw: dict[str, Any], requests: dict[str, int], limits: dict[str, int],
                                 container: bool) -> list[str]:
    """validateResourceRequirements at `path` (a container's resources, or spec.resources): resource
    names (containers only: pod-level names are checked by the PodLevelResources rules, not
    modelled), extended resources in whole units, and each request against its limit: at most
    the limit, equal to it for a resource that cannot be overcommitted (extended resources,
    hugepages), whose request also needs a limit. `requests` are after the API server's defaulting
    (a limit without a request is its request), in nano-units as `limits`; `raw` gives the
    quantities as written, which the messages print as kube does (Quantity.String)."""
    errs: list[str] = []
    raw_req = {str(k): v for k, v in (raw.get("requests") or {}).items()}     # keyed as parsed
    raw_lim = {str(k): v for k, v in (raw.get("limits") or {}).items()}
    for kind, values, raws in (("limits", limits, raw_lim), ("requests", requests, raw_req)):
        for name, v in values.items():
            key = f"{path}.{kind}[{name}]"
            if container and name not in _STANDARD_CONTAINER_RESOURCES:
                errs += [field_invalid(key, name, m) for m in _container_resource_name_errors(name)]
            if v % NANO and is_extended(name):                    # IsIntegerResourceName
                errs.append(field_invalid(key, format_quantity(raws.get(name, raw_lim.get(name))), "must be an integer",
                                          quote=False))
            if kind == "limits":
                continue
            if name in limits:
                lim = limits[name]
                if v != lim and not _overcommit_allowed(name):
                    errs.append(field_invalid(f"{path}.requests", format_quantity(raws.get(name, raw_lim[name])),
                                              f"must be equal to {name} limit of {format_quantity(raw_lim[name])}"))
                elif v > lim:
                    errs.append(field_invalid(f"{path}.requests", format_quantity(raws[name]),
                                              f"must be less than or equal to {name} limit of "
                                              f"{format_quantity(raw_lim[name])}"))
            elif not _overcommit_allowed(name):
                errs.append(field_required(f"{path}.limits", "Limit must be set for non overcommitable resources"))
    return errs


def pod_resources_consistency_errors(requests: dict[str, int], limits: dict[str, int],
                                     containers: list[ContainerResources],
                                     inits: list[tuple[ContainerResources, bool]]) -> list[str]:
    """validatePodResourceConsistency: pod-level requests (after defaulting) at least the
    containers' aggregated requests, and no container limit above the pod-level limit. Only the
    resources the pod level requests are compared: whether kube also holds an unset pod-level
    request to the containers' sum has changed between releases, and Caldera then uses the
    containers' sum anyway. The quantities are printed in the decimal canonical form (kube prints
    a sum in the format of its first term, which the sum no longer shows)."""
    errs: list[str] = []
    agg = aggregate_container_requests([c[0] for c in containers], [(c[0], s) for c, s in inits])
    for name, total in agg.items():
        pod = requests.get(name)
        if pod is not None and total > pod:     # (only resources the pod level sets: see the docstring)
            errs.append(field_invalid(f"spec.resources.requests[{name}]", format_quantity(f"{pod}n"),
                                      f"must be greater than or equal to aggregate container requests of "
                                      f"{format_quantity(f'{total}n')}"))
    for i, (_, clim) in enumerate(containers):
        for name, v in clim.items():
            if name in limits and v > limits[name]:
                errs.append(field_invalid(f"spec.resources.containers[{i}][{name}].limits", format_quantity(f"{v}n"),
                                          f"must be less than or equal to pod limits of "
                                          f"{format_quantity(f'{limits[name]}n')}"))
    return errs


_NODE_AFFINITY = "spec.affinity.nodeAffinity"
_NODE_AFFINITY_ERRORS: dict[str, tuple[str, ...]] = {}    # by repr: pods of one workload share their affinity


def _node_affinity_errors(na: object) -> list[str]:
    key = repr(na)
    got = _NODE_AFFINITY_ERRORS.get(key)
    if got is None:
        got = tuple(node_affinity_errors(na, _NODE_AFFINITY))
        if len(_NODE_AFFINITY_ERRORS) >= 4096:
            _NODE_AFFINITY_ERRORS.clear()
        _NODE_AFFINITY_ERRORS[key] = got
    return list(got)


def _scheduling_gates(gates: list[Any], errs: list[str] | None) -> tuple[str, ...]:
    """The gates' names; validateSchedulingGates' errors (qualified names, no duplicates) go to
    errs (None: not validated)."""
    names: list[str] = []
    for i, g in enumerate(gates):
        if not isinstance(g, dict):
            raise InputError(f"spec.schedulingGates[{i}]: must be a mapping with a name")
        name = "" if g.get("name") is None else str(g["name"])
        if errs is not None:
            errs += [field_invalid(f"spec.schedulingGates[{i}]", name, m) for m in qualified_name_errors(name)]
            if name in names:
                errs.append(field_duplicate(f"spec.schedulingGates[{i}]", name))
        names.append(name)
    return tuple(names)


def _pod_spec_errors(pod: Pod, node_affinity: object, gate_errs: list[str]) -> list[str]:
    """ValidatePodSpec's checks after the containers, in its order: nodeSelector labels, node
    affinity, scheduling gates, nodeName, priorityClassName (preemptionPolicy comes last)."""
    errs: list[str] = []
    if pod.node_selector:
        errs += labels_errors(pod.node_selector, "spec.nodeSelector")
    if node_affinity is not None:
        errs += _node_affinity_errors(node_affinity)
    errs += gate_errs
    if pod.node_name:
        errs += [field_invalid("spec.nodeName", pod.node_name, m) for m in dns1123_subdomain_errors(pod.node_name)]
    if pod.priority_class_name:
        errs += [field_invalid("spec.priorityClassName", pod.priority_class_name, m)
                 for m in dns1123_subdomain_errors(pod.priority_class_name)]
    return errs


def _has_host_ports(containers: list[Any], inits: list[Any], validate: bool) -> bool:
    """Does any container declare a hostPort? The ports must be mappings with an integer hostPort
    (NodePorts reads them when scheduling); validated, in 1..65535 when set (validateContainerPorts)."""
    found = False
    for kind, lst in (("containers", containers), ("initContainers", inits)):
        for ci, c in enumerate(lst):
            ports = c.get("ports")
            if not ports:
                continue
            if not isinstance(ports, list):
                raise InputError(f"spec.{kind}[{ci}].ports: must be a list")
            for pi, p in enumerate(ports):
                w = f"spec.{kind}[{ci}].ports[{pi}]"
                if not isinstance(p, dict):
                    raise InputError(f"{w}: must be a mapping")
                hp = p.get("hostPort")
                if hp is None or hp == 0:
                    continue
                if not isinstance(hp, int) or isinstance(hp, bool):
                    raise InputError(f"{w}.hostPort: must be an integer, got {hp!r}")
                if validate and not 1 <= hp <= 65535:
                    raise InputError(field_invalid(f"{w}.hostPort", hp, "must be between 1 and 65535, inclusive"))
                found = True
    return found


# A pod's requests are computed (and, with validate, its containers' resources checked) once per
# distinct shape of its resource fields (`_resources_shape`): a big input repeats a few shapes.
_RESOURCES_BY_SHAPE: dict[tuple[Any, ...], tuple[dict[str, int], int, int]] = {}
_SHAPES_MAX = 4096
_IMAGES: dict[tuple[str, ...], tuple[str, ...]] = {}     # pods' image lists, each kept once


def _remember(memo: dict[Any, Any], key: Any, value: Any) -> Any:
    """memo[key] = value in one of the shape memos, which start over past _SHAPES_MAX entries (a
    cluster repeats a few shapes); returns value."""
    if len(memo) >= _SHAPES_MAX:
        memo.clear()
    memo[key] = value
    return value


def _one_images(images: tuple[str, ...]) -> tuple[str, ...]:
    got = _IMAGES.get(images)
    return _remember(_IMAGES, images, images) if got is None else got


# Pods' tolerations by the repr of spec.tolerations (a cluster's pods have a few lists: the two
# every pod gets from DefaultTolerationSeconds, plus a workload's own), parsed once each.
_TOLERATIONS: dict[str, tuple[Toleration, ...]] = {}


def _pod_tolerations(items: list[Any]) -> tuple[Toleration, ...]:
    if not items:
        return ()
    text = repr(items)
    got = _TOLERATIONS.get(text)
    if got is None:
        got = _remember(_TOLERATIONS, text, parse_tolerations(items, "spec.tolerations"))
    return got


def _quantities_shape(res: object) -> tuple[Any, ...] | None:
    """A hashable copy of a resources mapping ({requests: {name: quantity}, limits: ...}) holding
    only string names and str/int quantities; None for anything else (then not memoised)."""
    if res is None:
        return ()
    if type(res) is not dict:
        return None
    out: list[Any] = []
    for part, rl in res.items():
        if rl is None:
            out.append((part, None))
            continue
        if type(part) is not str or type(rl) is not dict:
            return None
        for name, q in rl.items():
            if type(name) is not str or (type(q) is not str and type(q) is not int):
                return None
        out.append((part, tuple(rl.items())))
    return tuple(out)


def _resources_shape(containers: list[Any], inits: list[Any], spec: dict[str, Any],
                     validate: bool) -> tuple[Any, ...] | None:
    """Everything a pod's requests and its resource checks are computed from: validate, each
    container's resources (an init container's with whether it is a sidecar), spec.overhead and
    spec.resources; None when one is not plain (it is then computed, and worded, as always)."""
    parts: list[Any] = [validate, len(containers)]
    for lst, init in ((containers, False), (inits, True)):
        for c in lst:
            if type(c) is not dict:
                return None
            shape = _quantities_shape(c.get("resources"))
            if shape is None:
                return None
            parts.append((shape, c.get("restartPolicy") == "Always") if init else shape)
    overhead = _quantities_shape({"overhead": spec.get("overhead")})
    pod_level = _quantities_shape(spec.get("resources"))
    if overhead is None or pod_level is None:
        return None
    parts += (overhead, pod_level)
    return tuple(parts)


class Pod:
    """A pod as the scheduler sees it. `key` is "namespace/name".

    `labels`, `annotations`, `node_selector` and `requests` are shared, not copied, so that a
    cluster of many pods costs memory for what differs between them: the maps are the manifest's
    own (or one empty mapping), the requests are those of every pod with the same resources
    (`_RESOURCES_BY_SHAPE`), and a big input's pods share equal sub-trees of their manifests
    (reader._shared_pod). Read them; never modify them, nor anything below a pod's `raw`
    metadata, spec or status: assign a new mapping instead. `cache` (derived data plugins keep
    on the pod) is made on first use, and `uid`, when the manifest has none, is made on first use
    from namespace and name.
    """

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

    def __init__(self, raw: dict[str, Any], seq: int = 0, *, validate: bool = False):
        """Decode `raw`; with validate, also apply the API server's checks on create (for pods
        read from user input: a cluster's pods have passed them, and kube's scheduler tests, which
        Caldera's mirror, build pods that would not)."""
        where = "spec"
        self.raw = raw
        meta, self.name = read_meta(raw, "Pod")
        self.namespace = str(meta.get("namespace") or "default")
        self.key = f"{self.namespace}/{self.name}"
        uid = meta.get("uid")
        if uid:
            self.uid = str(uid)      # else made when first read (__getattr__)
        self.labels = _str_view(meta, "labels", "metadata")
        self.annotations = _str_view(meta, "annotations", "metadata")
        # the API server's errors, listed together as kube does (raised once the spec is read)
        errs = object_meta_errors(self.name, self.namespace, self.labels, self.annotations) if validate else []
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
        status = raw.get("status") or {}
        if not isinstance(status, dict):
            raise InputError("status: must be a mapping")
        self.phase = str(status.get("phase") or "Pending")
        self.nominated_node_name = str(status.get("nominatedNodeName") or "")
        self.start_time = parse_time(status.get("startTime"), "status.startTime")

        containers = _list(spec, "containers", where)
        inits = _list(spec, "initContainers", where)
        if validate and not containers:
            errs.append(field_required("spec.containers"))
        shape = _resources_shape(containers, inits, spec, validate)
        known = _RESOURCES_BY_SHAPE.get(shape) if shape is not None else None
        if known is not None:       # the same resources as a pod before: the same requests, no errors
            self.requests = known[0]        # (shared: see the class docstring)
            self.nonzero_cpu, self.nonzero_mem = known[1], known[2]
            self.images = _one_images(tuple(str(c["image"]) for lst in (containers, inits) for c in lst
                                            if c.get("image")))
        else:
            n_errs = len(errs)
            self._read_resources(spec, containers, inits, validate, errs)
            if shape is not None and len(errs) == n_errs:
                _remember(_RESOURCES_BY_SHAPE, shape, (self.requests, self.nonzero_cpu, self.nonzero_mem))
        self.tolerations = _pod_tolerations(_list(spec, "tolerations", where))
        self.node_selector = _str_view(spec, "nodeSelector", where)
        gate_errs: list[str] = []
        gates = _list(spec, "schedulingGates", where)
        self.scheduling_gates = _scheduling_gates(gates, gate_errs if validate else None)
        aff = spec.get("affinity") or {}
        if not isinstance(aff, dict):
            raise InputError("spec.affinity: must be a mapping")
        self.has_affinity = bool(aff.get("podAffinity"))
        self.has_anti_affinity = bool(aff.get("podAntiAffinity"))
        self.has_ports = _has_host_ports(containers, inits, validate)
        if validate:
            errs += _pod_spec_errors(self, aff.get("nodeAffinity"), gate_errs)
        if self.preemption_policy is not None and self.preemption_policy not in PREEMPTION_POLICIES:
            errs.append(field_not_supported("spec.preemptionPolicy", str(self.preemption_policy), PREEMPTION_POLICIES))
        if errs:
            raise InputError(aggregate(errs))      # in ValidatePodCreate's order

    if TYPE_CHECKING:
        cache: dict[Hashable, Any]
        uid: str
    else:
        def __getattr__(self, name: str) -> Any:
            """`cache` and a `uid` the manifest does not give, made when first read (a big
            input's pods are mostly only counted on their nodes and never need either); once
            set, they are plain slots. (Hidden from type checkers, which would otherwise let
            any attribute of a Pod pass.)"""
            if name == "cache":
                self.cache = {}
                return self.cache
            if name == "uid":
                self.uid = f"{self.namespace}-{self.name}"
                return self.uid
            raise AttributeError(f"'Pod' object has no attribute {name!r}")

    def _read_resources(self, spec: dict[str, Any], containers: list[Any], inits: list[Any], validate: bool,
                        errs: list[str]) -> None:
        """requests, nonzero_cpu/_mem and images from the containers, spec.overhead and
        spec.resources; with validate, their API-server errors added to `errs`."""
        creqs: list[dict[str, int]] = []
        ireqs: list[tuple[dict[str, int], bool]] = []
        images: list[str] = []
        # (requests, limits) per container, for pod-level defaulting
        cres: list[tuple[dict[str, int], dict[str, int]]] = []
        ires: list[tuple[tuple[dict[str, int], dict[str, int]], bool]] = []
        for kind, lst in (("containers", containers), ("initContainers", inits)):
            for i, c in enumerate(lst):
                w = f"spec.{kind}[{i}]"
                if not isinstance(c, dict):
                    raise InputError(f"{w}: must be a mapping")
                r, lim = _container_resources(c, w)
                if validate and (r or lim):
                    errs += resource_requirements_errors(f"{w}.resources", c["resources"], r, lim, container=True)
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
                if validate:
                    errs += resource_requirements_errors("spec.resources", pres, pod_level, plim, container=False)
                    errs += pod_resources_consistency_errors(pod_level, plim, cres, ires)
        self.requests = pod_requests(creqs, ireqs, overhead, pod_level=pod_level)
        nz = pod_requests(creqs, ireqs, overhead, nonmissing=True, pod_level=pod_level)
        self.nonzero_cpu = nz.get("cpu", 0)
        self.nonzero_mem = nz.get("memory", 0)
        self.images = _one_images(tuple(images))

    @property
    def affinity(self) -> dict[str, Any]:
        aff: dict[str, Any] = self.spec.get("affinity") or {}
        return aff

    @property
    def qos(self) -> str:
        """The pod's QoS class, Guaranteed / Burstable / BestEffort, as kube's GetPodQOS computes
        it (api/qos.py); computed on first use, then cached."""
        return pod_qos(self)

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

    def __init__(self, raw: dict[str, Any], *, validate: bool = False):
        """Decode `raw`; with validate, also check its name, labels and annotations as the API
        server does (kube's scheduler tests, which Caldera's mirror, use names it would refuse)."""
        self.raw = raw
        meta, self.name = read_meta(raw, "Node")
        self.labels = _str_map(meta, "labels", "metadata")
        if validate:
            errs = object_meta_errors(self.name, None, self.labels, _str_map(meta, "annotations", "metadata"))
            if errs:
                raise InputError(aggregate(errs))
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


# Built-in PriorityClasses every cluster has (pkg/apis/scheduling).
SYSTEM_PRIORITY_CLASSES = {"system-cluster-critical": 2000000000, "system-node-critical": 2000001000}
HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
PRIORITY_CLASS_API = "scheduling.k8s.io/v1"


class PriorityClass:
    """A PriorityClass, validated as ValidatePriorityClass does on create: a DNS-subdomain name, a
    32-bit value of at most 1000000000 unless the class is one of the built-in system- classes
    (whose names, values and globalDefault are fixed), a known preemptionPolicy. Uniqueness and
    the single globalDefault are the loader's (check_priority_class)."""

    __slots__ = ("global_default", "name", "preemption_policy", "value")

    def __init__(self, raw: dict[str, Any]):
        meta, self.name = read_meta(raw, "PriorityClass")
        v = raw.get("value")
        if not isinstance(v, int) or isinstance(v, bool):
            raise InputError(f"value: must be an integer, got {v!r}")
        if not -(2**31) <= v < 2**31:
            raise InputError(f"value: must be a 32-bit integer, got {v}")
        self.value = v
        self.global_default = bool(raw.get("globalDefault"))
        pp = raw.get("preemptionPolicy")
        self.preemption_policy = str(pp or "PreemptLowerPriority")
        errs = object_meta_errors(self.name, None, _str_map(meta, "labels", "metadata"),
                                  _str_map(meta, "annotations", "metadata"))
        if self.name.startswith("system-"):
            problem = _system_class_problem(self.name, v, self.global_default)
            if problem:
                errs.append(field_forbidden("metadata.name", "priority class names with 'system-' prefix are reserved "
                                                             f"for system use only. error: {problem}"))
        elif v > HIGHEST_USER_DEFINABLE_PRIORITY:
            errs.append(field_forbidden("value", "maximum allowed value of a user defined priority is "
                                                 f"{HIGHEST_USER_DEFINABLE_PRIORITY}"))
        if pp is not None and pp not in PREEMPTION_POLICIES:
            errs.append(field_not_supported("preemptionPolicy", str(pp), PREEMPTION_POLICIES))
        if errs:
            raise InputError(aggregate(errs))


def _system_class_problem(name: str, value: int, global_default: bool) -> str:
    """IsKnownSystemPriorityClass's error ("" for a built-in class as the cluster has it)."""
    want = SYSTEM_PRIORITY_CLASSES.get(name)
    if want is None:
        return f"{name} is not a known system priority class"
    if value != want:
        return f"value of {name} PriorityClass must be {want}"
    if global_default:
        return f"globalDefault of {name} PriorityClass must be false"
    return ""


def check_priority_class(pc: PriorityClass, api_version: str, classes: dict[str, PriorityClass]) -> None:
    """What the API server and the Priority admission plugin refuse when `pc` is created after
    `classes` (by name): an apiVersion other than scheduling.k8s.io/v1 (v1beta1 is not served
    since 1.22, v1alpha1, an alpha version, not at all), a second object of the same name, a
    second globalDefault. A built-in system- class that matches its bootstrapped copy is accepted
    (a dump of a cluster lists them)."""
    if api_version != PRIORITY_CLASS_API:
        since = " (not served since Kubernetes 1.22)" if api_version == "scheduling.k8s.io/v1beta1" else ""
        raise InputError(f'no matches for kind "PriorityClass" in version "{api_version}"{since}; '
                         f"use apiVersion {PRIORITY_CLASS_API}")
    if pc.name in classes:
        raise InputError(already_exists("priorityclasses.scheduling.k8s.io", pc.name))
    if pc.global_default:
        for other in classes.values():
            if other.global_default:
                raise InputError(f'priorityclasses.scheduling.k8s.io "{pc.name}" is forbidden: PriorityClass '
                                 f"{other.name} is already marked as default. Only one default can exist")
