"""Small builders for Pods, Nodes and running plugins in tests (like kube's st.MakePod()).

    pod = make_pod("p", cpu="500m", memory="1Gi", labels={"app": "a"}, node="n1")
    node = make_node("n1", cpu="4", memory="32Gi", labels={...}, taints=[...])
    table = make_table([node, ...], [running pods...])
    fw, sched = make_scheduler(table, plugins={"filter": ["NodeAffinity"], ...}, args={...})
"""
from __future__ import annotations

import copy

import numpy as np

from caldera.api.objects import Node, Pod
from caldera.config.defaults import default_config
from caldera.config.types import PluginRef, Profile, SchedulerConfig
from caldera.engine.scheduler import Scheduler
from caldera.framework.interface import CycleState
from caldera.plugins.registry import build_registry
from caldera.state.nodetable import NodeTable

_seq = [0]


def pod_dict(name, namespace="default", *, cpu=None, memory=None, requests=None, limits=None, labels=None,
             node=None, priority=None, containers=None, init_containers=None, spec=None, phase=None,
             annotations=None, scheduler_name=None, creation=None, uid=None, tolerations=None,
             affinity=None, node_selector=None, topology_spread=None, ports=None, image="pause",
             overhead=None, nominated=None, start_time=None, preemption_policy=None):
    req = dict(requests or {})
    if cpu is not None:
        req["cpu"] = cpu
    if memory is not None:
        req["memory"] = memory
    if containers is None:
        c = {"name": "c0", "image": image}
        res = {}
        if req:
            res["requests"] = req
        if limits:
            res["limits"] = limits
        if res:
            c["resources"] = res
        if ports:
            c["ports"] = ports
        containers = [c]
    sp = {"containers": containers}
    if init_containers:
        sp["initContainers"] = init_containers
    if node:
        sp["nodeName"] = node
    if priority is not None:
        sp["priority"] = priority
    if scheduler_name:
        sp["schedulerName"] = scheduler_name
    if tolerations:
        sp["tolerations"] = tolerations
    if affinity:
        sp["affinity"] = affinity
    if node_selector:
        sp["nodeSelector"] = node_selector
    if topology_spread:
        sp["topologySpreadConstraints"] = topology_spread
    if overhead:
        sp["overhead"] = overhead
    if preemption_policy:
        sp["preemptionPolicy"] = preemption_policy
    sp.update(spec or {})
    meta = {"name": name, "namespace": namespace}
    if labels:
        meta["labels"] = labels
    if annotations:
        meta["annotations"] = annotations
    if creation:
        meta["creationTimestamp"] = creation
    if uid:
        meta["uid"] = uid
    status = {"phase": phase or ("Running" if node else "Pending")}
    if nominated:
        status["nominatedNodeName"] = nominated
    if start_time:
        status["startTime"] = start_time
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": sp, "status": status}


def make_pod(name, namespace="default", **kw) -> Pod:
    _seq[0] += 1
    p = Pod(pod_dict(name, namespace, **kw), seq=_seq[0])
    if p.preemption_policy is None:
        p.preemption_policy = "PreemptLowerPriority"
    return p


def node_dict(name, *, cpu="4", memory="32Gi", pods="110", labels=None, taints=None, unschedulable=False,
              extra=None, images=None):
    alloc = {"cpu": cpu, "memory": memory, "pods": pods}
    alloc.update(extra or {})
    alloc = {k: v for k, v in alloc.items() if v is not None}
    meta = {"name": name, "labels": dict(labels or {})}
    spec = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    status = {"allocatable": alloc, "capacity": copy.deepcopy(alloc)}
    if images:
        status["images"] = images
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta, "spec": spec, "status": status}


def make_node(name, **kw) -> Node:
    return Node(node_dict(name, **kw))


def make_table(nodes, pods=()) -> NodeTable:
    t = NodeTable(nodes)
    for p in pods:
        t.add_pod(p, t.index[p.node_name])
    return t


def make_scheduler(table, plugins=None, args=None, *, seed=0, explain=False, default=False,
                   percentage=None) -> Scheduler:
    """A Scheduler whose single profile enables `plugins` ({point: [name or (name, weight)]}),
    plus PrioritySort and DefaultBinder so the profile is valid; default=True uses kube's defaults."""
    reg = build_registry(third_party=False)
    if default:
        cfg = default_config(reg)
        cfg.profiles[0].plugin_args.update(args or {})
    else:
        pl = {"queueSort": [PluginRef("PrioritySort")], "bind": [PluginRef("DefaultBinder")]}
        for point, names in (plugins or {}).items():
            pl[point] = [PluginRef(*n) if isinstance(n, tuple) else PluginRef(n) for n in names]
        cfg = SchedulerConfig(profiles=[Profile(plugins=pl, plugin_args=dict(args or {}))])
    if percentage is not None:
        cfg.percentage_of_nodes_to_score = percentage
    return Scheduler(cfg, table, reg, seed=seed, explain=explain)


def run_filter(sched: Scheduler, pod, plugin_name: str | None = None):
    """Run PreFilter and Filter of the profile on every node: {node: Status or None(passed)}."""
    fw = sched.default_framework
    state = CycleState()
    names, s = fw.run_pre_filter(state, pod)
    table = sched.table
    if not s.is_success():
        return {n.name: s for n in table.nodes}
    idx = np.arange(len(table), dtype=np.intp)
    _, rej = fw.run_filters(state, pod, table, idx)
    st = fw.statuses(state, pod, table, rej)
    out = {}
    for i, n in enumerate(table.nodes):
        if names is not None and n.name not in names:
            out[n.name] = "excluded by PreFilter"
        else:
            out[n.name] = st.get(i)
    return out


def run_score(sched: Scheduler, pod, nodes=None):
    """PreFilter, PreScore, Score, NormalizeScore over `nodes` (default all): {plugin: {node: score}}."""
    fw = sched.default_framework
    state = CycleState()
    fw.run_pre_filter(state, pod)
    table = sched.table
    names = nodes or [n.name for n in table.nodes]
    idx = np.array([table.index[n] for n in names], dtype=np.intp)
    total, detail = fw.run_scores(state, pod, table, idx, want_detail=True)
    out = {p: {n: int(v[j]) for j, n in enumerate(names)} for p, v in detail.items()}
    out["total"] = {n: int(total[j]) for j, n in enumerate(names)}
    return out
