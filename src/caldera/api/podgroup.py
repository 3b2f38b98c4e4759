"""PodGroup of the scheduler-plugins Coscheduling plugin (`scheduling.x-k8s.io/v1alpha1`).

Pods join a group with the label `scheduling.x-k8s.io/pod-group: <group name>` (same namespace).
Read: spec.minMember (int32, >= 1 when set; 0 when absent, as the CRD's omitempty field),
spec.scheduleTimeoutSeconds (int32, optional), spec.minResources (a ResourceList, optional) and
metadata.creationTimestamp (Coscheduling's QueueSort orders groups by it). Status is not read
(the PodGroup controller writes it; the scheduler plugin never reads it). The Volcano PodGroup
(`scheduling.volcano.sh`) is a different object, read by the batch scheduler.
"""
from __future__ import annotations

from typing import Any

from ..errors import InputError
from .objects import parse_time, read_namespaced_meta
from .quantity import QuantityError, resource_value

API_GROUP = "scheduling.x-k8s.io"
API_VERSION = "scheduling.x-k8s.io/v1alpha1"
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
INT32_MAX = 2**31 - 1


def _int32(v: object, where: str, minimum: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise InputError(f"{where}: must be an integer, got {v!r}")
    if v < minimum or v > INT32_MAX:
        raise InputError(f"{where}: must be between {minimum} and {INT32_MAX}, got {v}")
    return v


class PodGroup:
    __slots__ = ("creation", "key", "min_member", "min_resources", "name", "namespace", "raw",
                 "schedule_timeout_seconds")

    def __init__(self, raw: dict[str, Any]):
        self.raw = raw
        meta, self.name, self.namespace = read_namespaced_meta(raw, "PodGroup")
        self.key = f"{self.namespace}/{self.name}"
        self.creation = parse_time(meta.get("creationTimestamp"), "metadata.creationTimestamp")
        spec = raw.get("spec")
        if spec is None:
            spec = {}
        if not isinstance(spec, dict):
            raise InputError("spec: must be a mapping")
        mm = spec.get("minMember")
        self.min_member = 0 if mm is None else _int32(mm, "spec.minMember", 1)
        st = spec.get("scheduleTimeoutSeconds")
        self.schedule_timeout_seconds: int | None = None if st is None else \
            _int32(st, "spec.scheduleTimeoutSeconds", 0)
        self.min_resources: dict[str, int] | None = None
        mr = spec.get("minResources")
        if mr is not None:
            if not isinstance(mr, dict):
                raise InputError("spec.minResources: must be a mapping of resource name to quantity")
            out: dict[str, int] = {}
            for k, v in mr.items():
                try:
                    out[str(k)] = resource_value(str(k), v)
                except QuantityError as e:
                    raise InputError(f"spec.minResources.{k}: {e}") from None
            self.min_resources = out

    def __repr__(self) -> str:
        return f"PodGroup({self.key}, minMember={self.min_member})"
