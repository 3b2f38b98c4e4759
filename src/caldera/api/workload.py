"""kube's Workload API (`scheduling.k8s.io/v1alpha1`, alpha in v1.35: feature gate GenericWorkload)
and the pod field that points into it, `spec.workloadRef`.

A Workload lists pod groups (`spec.podGroups[]`: a DNS-1123 label name, unique, and a policy that
is exactly one of `basic: {}` or `gang: {minCount: N}`, N >= 1; at most 8 groups) and optionally
its controller (`spec.controllerRef`: apiGroup, kind, name). A pod joins a group with
`spec.workloadRef: {name: <workload>, podGroup: <group>, podGroupReplicaKey: <key>}` (same
namespace; pods with one replica key form one instance of the group). The GangScheduling plugin
reads both (plugins/gangscheduling/).

Validation is the API server's on create (pkg/apis/scheduling/validation ValidateWorkload; core
validation validateWorkloadReference), its errors aggregated as kube lists them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import InputError
from .objects import Pod, parse_time, read_namespaced_meta
from .validation import (
    aggregate,
    dns1123_label_errors,
    dns1123_subdomain_errors,
    field_duplicate,
    field_invalid,
    field_required,
)
from .validation import optional_mapping as _mapping

API_VERSION = "scheduling.k8s.io/v1alpha1"
KIND = "Workload"
RESOURCE = "workloads.scheduling.k8s.io"
MAX_POD_GROUPS = 8                        # scheduling.WorkloadMaxPodGroups
INT32_MAX = 2**31 - 1
_PATH_SEGMENT_NOT = (".", "..")           # path.NameMayNotBe
_PATH_SEGMENT_NO = ("/", "%")             # path.NameMayNotContain


@dataclass(frozen=True)
class WorkloadRef:
    """A pod's spec.workloadRef (kube compares the whole struct: name, podGroup, replica key)."""
    name: str
    pod_group: str
    replica_key: str = ""


@dataclass(frozen=True)
class PodGroupPolicy:
    gang_min_count: int | None             # None: the `basic` policy


@dataclass
class Workload:
    name: str
    namespace: str
    pod_groups: dict[str, PodGroupPolicy]  # in spec order
    creation: float | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def policy(self, pod_group: str) -> PodGroupPolicy | None:
        """podGroupPolicy: the policy of the named group, None if the Workload has no such group."""
        return self.pod_groups.get(pod_group)


def _path_segment_errors(value: str) -> list[str]:
    """path.IsValidPathSegmentName."""
    if value in _PATH_SEGMENT_NOT:
        return [f"may not be '{value}'"]
    return [f"may not contain '{c}'" for c in _PATH_SEGMENT_NO if c in value]


def _str(v: object, where: str) -> str:
    if v is None:
        return ""
    if not isinstance(v, str):
        raise InputError(f"{where}: must be a string, got {v!r}")
    return v




def _controller_ref_errors(ref: dict[str, Any]) -> list[str]:
    w = "spec.controllerRef"
    errs: list[str] = []
    group = _str(ref.get("apiGroup"), f"{w}.apiGroup")
    if group:
        errs += [field_invalid(f"{w}.apiGroup", group, m) for m in dns1123_subdomain_errors(group)]
    for key in ("kind", "name"):
        v = _str(ref.get(key), f"{w}.{key}")
        if not v:
            errs.append(field_required(f"{w}.{key}"))
        else:
            errs += [field_invalid(f"{w}.{key}", v, m) for m in _path_segment_errors(v)]
    return errs


def _policy(raw: object, where: str, errs: list[str]) -> PodGroupPolicy:
    pol = _mapping(raw, where)
    basic, gang = pol.get("basic"), pol.get("gang")
    set_fields = [f for f, v in (("`basic`", basic), ("`gang`", gang)) if v is not None]
    if not set_fields:
        errs.append(field_required(where, "exactly one of `basic`, `gang` is required"))
        return PodGroupPolicy(None)
    if len(set_fields) > 1:
        errs.append(field_invalid(where, "{" + ", ".join(set_fields) + "}",
                                  "exactly one of `basic`, `gang` is required, but multiple fields are set"))
        return PodGroupPolicy(None)
    if basic is not None:
        _mapping(basic, f"{where}.basic")
        return PodGroupPolicy(None)
    g = _mapping(gang, f"{where}.gang")
    mc = g.get("minCount", 0)
    if isinstance(mc, bool) or not isinstance(mc, int) or not -INT32_MAX - 1 <= mc <= INT32_MAX:
        raise InputError(f"{where}.gang.minCount: must be an int32, got {mc!r}")
    if mc <= 0:
        errs.append(field_invalid(f"{where}.gang.minCount", mc, "must be greater than zero"))
    return PodGroupPolicy(mc)


def parse_workload(raw: dict[str, Any]) -> Workload:
    """A v1alpha1 Workload manifest, validated as the API server does on create (InputError)."""
    meta, name, namespace = read_namespaced_meta(raw, KIND)
    spec = _mapping(raw.get("spec"), "spec")
    errs: list[str] = []
    if spec.get("controllerRef") is not None:
        errs += _controller_ref_errors(_mapping(spec["controllerRef"], "spec.controllerRef"))
    groups_raw = spec.get("podGroups")
    if groups_raw is not None and not isinstance(groups_raw, list):
        raise InputError("spec.podGroups: must be a list")
    groups_raw = groups_raw or []
    groups: dict[str, PodGroupPolicy] = {}
    if not groups_raw:
        errs.append(field_required("spec.podGroups", "must have at least one item"))
    elif len(groups_raw) > MAX_POD_GROUPS:
        errs.append(f"spec.podGroups: Too many: {len(groups_raw)}: must have at most {MAX_POD_GROUPS} items")
    else:
        for i, g in enumerate(groups_raw):
            w = f"spec.podGroups[{i}]"
            g = _mapping(g, w)
            gname = _str(g.get("name"), f"{w}.name")
            errs += [field_invalid(f"{w}.name", gname, m) for m in dns1123_label_errors(gname)]
            policy = _policy(g.get("policy"), f"{w}.policy", errs)
            if gname in groups:
                errs.append(field_duplicate(f"{w}.name", gname))
            else:
                groups[gname] = policy
    if errs:
        raise InputError(aggregate(errs))
    return Workload(name, namespace, groups, parse_time(meta.get("creationTimestamp"), "metadata.creationTimestamp"))


_REF_KEY = "workload.ref"


def workload_ref(pod: Pod) -> WorkloadRef | None:
    """The pod's spec.workloadRef (cached on the pod), None when it has none. Call
    check_workload_ref first on input pods: this assumes the field is well formed."""
    if _REF_KEY in pod.cache:
        cached: WorkloadRef | None = pod.cache[_REF_KEY]
        return cached
    raw = pod.spec.get("workloadRef")
    ref = None if not isinstance(raw, dict) else WorkloadRef(
        str(raw.get("name") or ""), str(raw.get("podGroup") or ""), str(raw.get("podGroupReplicaKey") or ""))
    pod.cache[_REF_KEY] = ref
    return ref


def check_workload_ref(spec: dict[str, Any]) -> None:
    """validateWorkloadReference over a pod spec's workloadRef, if it has one (InputError)."""
    raw = spec.get("workloadRef")
    if raw is None:
        return
    w = "spec.workloadRef"
    ref = _mapping(raw, w)
    name = _str(ref.get("name"), f"{w}.name")
    group = _str(ref.get("podGroup"), f"{w}.podGroup")
    key = _str(ref.get("podGroupReplicaKey"), f"{w}.podGroupReplicaKey")
    errs = [field_invalid(f"{w}.name", name, m) for m in dns1123_subdomain_errors(name)]
    errs += [field_invalid(f"{w}.podGroup", group, m) for m in dns1123_label_errors(group)]
    if key:
        errs += [field_invalid(f"{w}.podGroupReplicaKey", key, m) for m in dns1123_label_errors(key)]
    if errs:
        raise InputError(aggregate(errs))
