"""Helpers Volcano's queue plugins share (pkg/scheduler/plugins/util and util.FormatResourceNames)."""
from __future__ import annotations

from ...api.resourcenames import is_scalar
from ..api.info import ALLOCATED_STATUS, JobInfo
from ..api.resource import Resource


def share_of(l: float, r: float) -> float:
    """helpers.Share: l / r; 0 when both are 0, 1 when only r is."""
    if r == 0:
        return 0.0 if l == 0 else 1.0
    return l / r


def allocated_task_num(job: JobInfo) -> int:
    """util.CalculateAllocatedTaskNum."""
    return job.count(ALLOCATED_STATUS)


def inqueue_resource(job: JobInfo, allocated: Resource) -> Resource:
    """util.GetInqueueResource: the part of minResources not yet allocated, per dimension the
    PodGroup's minResources names (extended resources a job has none of count in full)."""
    mr = job.pg.min_resources
    out = Resource()
    if mr is None:
        return out
    if mr.cpu - allocated.cpu > 0:
        out.cpu = mr.cpu - allocated.cpu
    if mr.memory - allocated.memory > 0:
        out.memory = mr.memory - allocated.memory
    for name, want in mr.scalars.items():
        if name == "pods":
            left = want - allocated.scalars.get("pods", 0.0)
            if left > 0:
                out.scalars["pods"] = left
            continue
        if not is_scalar(name):
            continue
        if name not in allocated.scalars:
            out.scalars[name] = want
        elif want - allocated.scalars[name] > 0:
            out.scalars[name] = want - allocated.scalars[name]
    return out


def format_resource_names(prefix: str, verb: str, names: list[str]) -> str:
    """util.FormatResourceNames."""
    if not names:
        return prefix
    return f"{prefix}: " + ", ".join(f"{verb} {n}" for n in names)
