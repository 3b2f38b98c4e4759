"""Building Volcano test situations the way Volcano's Go tests do (util.BuildPod, BuildPodGroup,
BuildQueue, BuildNode), as manifests, and running one session over them."""
from __future__ import annotations

import os
import tempfile

import yaml

from caldera.api.loader import load_cluster
from caldera.batch.actions import ACTIONS
from caldera.batch.conf import parse_volcano_conf
from caldera.batch.plugins import PLUGINS
from caldera.batch.runner import close_session, run_session
from caldera.batch.runner import open_session as _open


def rl(cpu=None, mem=None, extra: dict | None = None) -> dict:
    """A ResourceList: rl("1", "1G"), rl("2", "4Gi", {"nvidia.com/gpu": "1"})."""
    out = {}
    if cpu is not None:
        out["cpu"] = str(cpu)
    if mem is not None:
        out["memory"] = str(mem)
    for k, v in (extra or {}).items():
        out[k] = str(v)
    return out


def pod(ns, name, node="", phase="Pending", req=None, group="", labels=None, selector=None,
        priority=None, annotations=None, scheduler="volcano", uid=None, creation=None, **spec_extra) -> dict:
    """util.BuildPod: ns, name, nodeName, phase, requests, group name, labels, node selector."""
    ann = dict(annotations or {})
    if group:
        ann["scheduling.k8s.io/group-name"] = group
    meta = {"name": name, "namespace": ns}
    if ann:
        meta["annotations"] = ann
    if labels:
        meta["labels"] = dict(labels)
    if uid:
        meta["uid"] = uid
    if creation:
        meta["creationTimestamp"] = creation
    resources: dict = {"requests": dict(req or {})}
    # resources that cannot be overcommitted (extended ones, hugepages) need a limit equal to the
    # request, or the API server refuses the pod (Volcano's BuildPod leaves them out)
    fixed = {k: v for k, v in (req or {}).items()
             if ("/" in k and "kubernetes.io/" not in k) or k.startswith("hugepages-")}
    if fixed:
        resources["limits"] = fixed
    spec = {"schedulerName": scheduler,
            "containers": [{"name": "main", "image": "busybox", "resources": resources}]}
    if node:
        spec["nodeName"] = node
    if selector:
        spec["nodeSelector"] = dict(selector)
    if priority is not None:
        spec["priority"] = priority
    spec.update(spec_extra)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": {"phase": phase}}


def podgroup(ns, name, min_member=0, queue="default", phase="Inqueue", min_resources=None,
             priority_class="", min_task_member=None, annotations=None, labels=None, creation=None) -> dict:
    meta = {"name": name, "namespace": ns}
    if annotations:
        meta["annotations"] = dict(annotations)
    if labels:
        meta["labels"] = dict(labels)
    if creation:
        meta["creationTimestamp"] = creation
    spec = {"minMember": min_member, "queue": queue}
    if min_resources is not None:
        spec["minResources"] = dict(min_resources)
    if priority_class:
        spec["priorityClassName"] = priority_class
    if min_task_member:
        spec["minTaskMember"] = dict(min_task_member)
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": meta,
            "spec": spec, "status": {"phase": phase}}


def queue(name, weight=1, capability=None, deserved=None, guarantee=None, parent=None, state="Open",
          reclaimable=None, annotations=None, priority=None, creation=None) -> dict:
    spec: dict = {"weight": weight}
    if capability is not None:
        spec["capability"] = dict(capability)
    if deserved is not None:
        spec["deserved"] = dict(deserved)
    if guarantee is not None:
        spec["guarantee"] = {"resource": dict(guarantee)}
    if parent:
        spec["parent"] = parent
    if reclaimable is not None:
        spec["reclaimable"] = reclaimable
    if priority is not None:
        spec["priority"] = priority
    meta = {"name": name}
    if annotations:
        meta["annotations"] = dict(annotations)
    if creation:
        meta["creationTimestamp"] = creation
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": meta, "spec": spec,
            "status": {"state": state}}


def node(name, alloc: dict, labels=None, taints=None, unschedulable=False) -> dict:
    """util.BuildNode: allocatable = capacity; `pods` defaults to 110 when not given."""
    a = dict(alloc)
    a.setdefault("pods", "110")
    spec = {}
    if taints:
        spec["taints"] = list(taints)
    if unschedulable:
        spec["unschedulable"] = True
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": dict(labels or {})},
            "spec": spec, "status": {"capacity": a, "allocatable": a}}


def priority_class(name, value, global_default=False) -> dict:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
            "value": value, "globalDefault": global_default}


def conf(text_or_dict) -> object:
    doc = yaml.safe_load(text_or_dict) if isinstance(text_or_dict, str) else text_or_dict
    return parse_volcano_conf(doc, "test.conf", ACTIONS, PLUGINS)


def cluster(docs: list[dict]):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "m.yaml")
        with open(path, "w") as f:
            yaml.safe_dump_all(docs, f)
        return load_cluster([path])


def run(docs: list[dict], conf_text, **kw):
    """One whole session (open, the conf's actions, close): a SessionResult."""
    return run_session(cluster(docs), conf(conf_text), **kw)


def open_session(docs: list[dict], conf_text, **kw):
    """An open session (plugins registered, no action run yet), for plugin-level tests."""
    ssn, _ = _open(cluster(docs), conf(conf_text), **kw)
    return ssn


def outcome(res) -> dict:
    d = res.to_dict()
    return {"bind": {b["pod"]: b["node"] for b in d["bindings"]},
            "evict": sorted(e["pod"] for e in d["evictions"]),
            "pipeline": {p["pod"]: p["node"] for p in d.get("pipelined", [])},
            "phase": {g["name"]: g["phase"] for g in d["podGroups"]}}


__all__ = [
    "close_session",
    "cluster",
    "conf",
    "node",
    "open_session",
    "outcome",
    "pod",
    "podgroup",
    "priority_class",
    "queue",
    "rl",
    "run",
]
