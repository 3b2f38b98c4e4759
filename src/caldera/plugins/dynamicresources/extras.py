"""DynamicResources' v1.35 parts beyond plain allocation: Score (prioritized lists), the
admin-access namespace rule, allocated claims' node selectors and the allocator's CEL runtime
errors (kube v1.35.4 pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go,
pkg/registry/resource/utils.go)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ...api.dra import ADMIN_NS_LABEL, FIRST_AVAILABLE_MAX, DeviceResult, ResourceClaim
from ...framework.status import Status

FILTER_ERROR = 'running "DynamicResources" filter plugin: '


def admin_access_refused(workloads: Any, claims: list[ResourceClaim]) -> Status | None:
    """AuthorizedForAdmin: the API server refuses a claim (or template) with an adminAccess
    request in a namespace without the `resource.kubernetes.io/admin-access: "true"` label, so
    the pod waits as for a claim that was never created (the status says why). Namespaces
    unknown (no lister): not checked."""
    if workloads is None:
        return None
    for c in claims:
        if c.allocation is not None:
            continue
        for k, r in enumerate(c.requests):
            if r.admin_access and not r.subrequests:
                labels = workloads.namespace_labels(c.namespace) or {}
                if labels.get(ADMIN_NS_LABEL) != "true":
                    return Status.unresolvable(
                        f'ResourceClaim.resource.k8s.io "{c.name}" is invalid: spec.devices.requests[{k}].adminAccess: '
                        f"Forbidden: admin access to devices requires the `{ADMIN_NS_LABEL}: true` label on the "
                        "containing namespace")
                break
    return None


def filter_error(dra: Any, table: Any, to_alloc: list[ResourceClaim]) -> str:
    """The Error kube's Filter returns when a selector fails at run time on a device its
    allocator checks: `running "DynamicResources" filter plugin: claim <ns>/<name>: selector #<i>:
    CEL runtime error: <error>` (or `class <name>: ...` for a DeviceClass selector); '' if none."""
    idx = np.arange(len(table), dtype=np.intp)
    err = dra.first_error(table, to_alloc, idx) if len(table) else ""
    return FILTER_ERROR + err if err else ""


def nodes_matching(table: Any, c: ResourceClaim, idx: np.ndarray) -> np.ndarray:
    """Per entry of idx: is the allocated claim available there (status.allocation.nodeSelector;
    without one, the node of its devices, else every node)?"""
    if c.available_on is not None:
        from ..nodeaffinity.masks import selector_mask
        return selector_mask(table, c.available_on)[idx]
    if c.allocated_node is not None:
        return idx == table.index.get(c.allocated_node, -1)
    return np.ones(idx.size, dtype=bool)


def compute_scores(claims: list[ResourceClaim], to_alloc: list[ResourceClaim],
                   node_alloc: dict[int, list[list[DeviceResult]]], idx: np.ndarray,
                   choice: dict[int, int] | None = None) -> tuple[np.ndarray, str]:
    """computeScore for each node of idx, and kube's error when it has one. kube pairs the i-th
    of all the pod's claims with the i-th allocation result, which exist only for the claims it
    allocates: a pod with an allocated claim besides one to allocate fails Score with
    "number of allocations N is smaller than number of claims". `choice`: for a pod whose one
    claim has one firstAvailable request, the subrequest chosen per node (Filter did not search)."""
    out = np.zeros(idx.size, dtype=np.int64)
    for j, i in enumerate(idx.tolist()):
        results = node_alloc.get(int(i))      # None: Filter's count was exact, no subrequests
        n = len(to_alloc) if results is None else len(results)
        score = 0
        for k, c in enumerate(claims):
            if k >= n:
                return out, f"number of allocations {n} is smaller than number of claims"
            if results is None:
                if choice and int(i) in choice:
                    score += FIRST_AVAILABLE_MAX - choice[int(i)]
                continue
            chosen = {x.request for x in results[k] if "/" in x.request}
            for r in c.requests:
                for m, sub in enumerate(r.subrequests):
                    if f"{r.name}/{sub.name}" in chosen:
                        score += FIRST_AVAILABLE_MAX - m
        out[j] = score
    return out, ""
