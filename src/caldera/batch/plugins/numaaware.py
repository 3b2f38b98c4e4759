"""numa-aware: CPUs aligned on NUMA nodes for Guaranteed pods (Volcano v1.15.1 plugins/numaaware).

The nodes' NUMA layout comes from Numatopology objects (batch/api/numatopology.py), one per node:
the kubelet's cpu-manager and topology-manager policies, the free CPU ids and where each CPU sits.
Only Guaranteed pods (kube's QoS, Pod.qos) are considered; the pod's own topology policy is its
`volcano.sh/numa-topology-policy` annotation (a Volcano Job task's `topologyPolicy` sets it).

Predicate, per node:
  - a pod with a policy (not "" or "none") fails, with Volcano's reasons (code Error), a node
    without a Numatopology ("numa info is empty"), whose cpu-manager policy is not static ("cpu
    manager policy isn't static"), whose topology-manager policy differs from the pod's ("task
    topology policy[P] is different with node[Q]"), or without free CPUs ("cpu allocatable map is
    empty"; "no topo information" cannot happen here);
  - a pod without one passes a node without a Numatopology, with a non-static cpu manager, or
    with topology policy none;
  - otherwise, container by container, the CPU manager's hints (the NUMA sets holding enough
    free CPUs for the container's integer CPU request, less the reserved CPUs) are merged by the
    node's topology policy (none / best-effort admit everything; restricted and single-numa-node
    admit only a preferred hint, single-numa-node only one-node hints): a container not admitted
    fails the node with "container <name> cannot be assigned by numa" (UnschedulableAndUnresolvable);
    an admitted one is given CPUs (best hint's NUMA nodes first, by socket, core, CPU) which
    the next container cannot take. The CPUs are recorded for the task and node.
BatchNodeOrder (pods with a policy that were recorded on some node): per node, the number of
  NUMA nodes the CPUs span, normalised to 0..100 reversed (fewest NUMA nodes: 100; Volcano's
  NormalizeScore with integer arithmetic), times the `weight` argument (default 1).
Events: allocating a task on a node takes its recorded CPUs from the node's free set for the rest
  of the session; deallocating (discarded statements, evictions of tasks placed in this session)
  gives them back. At session close the CPUs of the tasks still placed are taken from the
  snapshot's Numatopology state (Volcano's UpdateSchedulerNumaInfo), which a kept snapshot
  (simulate/live) carries into the next session.
Output: a bound pod's CPUs are its binding's `cpuset` ("0-3") and `numaNodes` ([0]).

Arguments: weight (integer, default 1).
Differences from Volcano: bad Numatopology objects are input errors (see numatopology.py); the
order sockets are tried in when whole cores are taken is the sorted one (Volcano's starts from Go
map order; see numaaware_policy.py); a non-integer weight is a config error (Volcano keeps 1).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ...api.podresources import _container_resources
from ...api.qos import GUARANTEED
from ..api.fiterrors import ERROR, UNRESOLVABLE
from ..api.numatopology import (
    CPU_MANAGER_POLICY,
    TOPOLOGY_MANAGER_POLICY,
    NumatopoInfo,
    format_cpuset,
)
from .base import BatchPlugin, Predicate
from .numaaware_policy import CPU, NONE, CPUSet, CPUTopology, cpu_allocate, cpu_topology_hints, predicate

if TYPE_CHECKING:
    from ...api.objects import Pod
    from ..api.info import TaskInfo
    from ..framework.session import Session

NUMA_POLICY_KEY = "volcano.sh/numa-topology-policy"
WEIGHT = "weight"
MAX_NODE_SCORE = 100
_CONTAINERS = ("numa-aware", "containers")     # Pod.cache key


def task_policy(pod: Pod) -> str:
    """The pod's topology policy (GetPodTopologyInfo): its annotation, "" without one."""
    return pod.annotations.get(NUMA_POLICY_KEY, "")


def containers_cpu(pod: Pod) -> list[tuple[str, int | None]]:
    """(name, cpu request in nano-units or None) of the pod's containers, requests defaulted
    from limits as the API server does."""
    got = pod.cache.get(_CONTAINERS)
    if got is None:
        got = []
        for i, c in enumerate(pod.spec.get("containers") or []):
            req, _ = _container_resources(c, f"spec.containers[{i}]")
            got.append((str(c.get("name") or ""), req.get("cpu")))
        pod.cache[_CONTAINERS] = got
    return got


def normalize_reverse(counts: list[int], max_score: int = MAX_NODE_SCORE) -> list[int]:
    """util.NormalizeScore(max, reverse=true, ...) with Go's integer arithmetic."""
    top = max(counts, default=0)
    if top == 0:
        return [max_score] * len(counts)
    return [max_score - max_score * c // top for c in counts]


class NumaAwarePlugin(BatchPlugin):
    name = "numa-aware"
    ARGUMENTS = frozenset({WEIGHT})

    def __init__(self, arguments=None, source="volcano conf"):
        super().__init__(arguments, source)
        self.weight = self.arg_int(WEIGHT, 1)
        self._reset()

    def _reset(self) -> None:
        self.info: dict[str, NumatopoInfo] = {}
        self.topo: dict[str, CPUTopology] = {}
        self.numa_nodes: dict[str, list[int]] = {}
        self.res_sets: dict[str, dict[str, CPUSet]] = {}           # node -> resource -> free ids
        self.assign: dict[str, dict[str, dict[str, CPUSet]]] = {}  # task uid -> node -> resource -> ids
        self.bound_to: dict[str, str] = {}                         # task uid -> node (allocated)
        self.why: dict[tuple[str, int], tuple[str, str]] = {}      # (task uid, node row) -> (code, reason)
        # nodes of the same layout (policies, cpuDetail, resReserved) share a shape id and a topology;
        # the NUMA check is a function of (shape, containers, free ids), memoised per session
        self.shape: dict[str, int] = {}
        self.memo: dict[tuple, tuple[tuple[str, str] | None, dict[str, CPUSet]]] = {}
        self.has_info = np.zeros(0, dtype=bool)

    # ---- session -----------------------------------------------------------------------------------
    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        self._reset()
        numa: dict[str, NumatopoInfo] = getattr(ssn, "numa_info", None) or {}
        nodes = ssn.nodes
        self.has_info = np.array([n in numa for n in nodes.names], dtype=bool)
        shapes: dict[tuple, tuple[int, CPUTopology]] = {}
        for name in nodes.names:
            info = numa.get(name)
            if info is None:
                continue
            self.info[name] = info
            layout = (tuple(sorted(info.policies.items())), tuple(sorted(info.cpu_detail.items())),
                      tuple(sorted(info.res_reserved_milli.items())))
            got = shapes.get(layout)
            if got is None:
                got = shapes[layout] = (len(shapes), CPUTopology(info.cpu_detail))
            self.shape[name], self.topo[name] = got
            self.numa_nodes[name] = sorted(info.cpu_detail.numa_nodes())
            self.res_sets[name] = dict(info.res_sets())
        ssn.add_event_handler(allocate=self._allocate, deallocate=self._deallocate)
        ssn.add("predicate", self.name, Predicate(self.mask, self.reason))
        ssn.add("batch_node_order", self.name, self.batch_node_order)

    def on_session_close(self, ssn: Session) -> None:
        per_node: dict[str, dict[str, set[int]]] = {}
        for uid, node in self.bound_to.items():
            given = self.assign.get(uid, {}).get(node)
            if given is None:
                continue
            acc = per_node.setdefault(node, {})
            for res, ids in given.items():
                acc.setdefault(res, set()).update(ids)
        for node, sets in per_node.items():
            info = self.info.get(node)
            if info is not None:
                info.allocate({k: frozenset(v) for k, v in sets.items()})

    # ---- events ------------------------------------------------------------------------------------
    def _allocate(self, task: TaskInfo) -> None:
        sets = self.assign.get(task.uid, {}).get(task.node_name)
        if sets is None:
            return
        free = self.res_sets.get(task.node_name)
        if free is not None:
            for res, ids in sets.items():
                if res in free:
                    free[res] = free[res] - ids
        self.bound_to[task.uid] = task.node_name

    def _deallocate(self, task: TaskInfo) -> None:
        sets = self.assign.get(task.uid, {}).get(task.node_name)
        if sets is None:
            return
        self.bound_to.pop(task.uid, None)
        free = self.res_sets.get(task.node_name)
        if free is not None:
            for res, ids in sets.items():
                if res in free:
                    free[res] = free[res] | ids

    # ---- predicate ---------------------------------------------------------------------------------
    def _policy_error(self, policy: str, name: str) -> tuple[bool, str | None]:
        """filterNodeByPolicy: (go on to the NUMA check, the error that fails the node)."""
        info = self.info.get(name)
        if policy not in ("", NONE):
            if info is None:
                return False, "numa info is empty"
            if info.policies.get(CPU_MANAGER_POLICY, "") != "static":
                return False, "cpu manager policy isn't static"
            node_policy = info.policies.get(TOPOLOGY_MANAGER_POLICY, "")
            if policy != node_policy:
                return False, f"task topology policy[{policy}] is different with node[{node_policy}]"
            if not self.res_sets[name].get(CPU):
                return False, "cpu allocatable map is empty"
            return True, None
        if info is None or info.policies.get(CPU_MANAGER_POLICY, "") != "static":
            return False, None
        if info.policies.get(TOPOLOGY_MANAGER_POLICY, "") in ("", NONE):
            return False, None
        return True, None

    def _check(self, task: TaskInfo, name: str) -> tuple[str, str] | None:
        """The predicate on one node: None when it passes (recording the task's CPUs there)."""
        policy = task_policy(task.pod)
        go_on, err = self._policy_error(policy, name)
        if not go_on:
            return (ERROR, err) if err is not None else None
        containers = containers_cpu(task.pod)
        key = (self.shape[name], tuple(containers), tuple(sorted(self.res_sets[name].items())))
        memo = self.memo.get(key)
        if memo is None:
            memo = self.memo[key] = self._numa_fit(name, containers)
        failed, assigned = memo
        if failed is None:
            self.assign.setdefault(task.uid, {})[name] = assigned
        return failed

    def _numa_fit(self, name: str, containers: list[tuple[str, int | None]]
                  ) -> tuple[tuple[str, str] | None, dict[str, CPUSet]]:
        """The node's topology policy over the containers: (the failure, or None and the CPUs)."""
        info, topo = self.info[name], self.topo[name]
        free = dict(self.res_sets[name])
        node_policy = info.policies.get(TOPOLOGY_MANAGER_POLICY, "")
        numa_nodes = self.numa_nodes[name]
        assigned: dict[str, CPUSet] = {}
        for cname, cpu in containers:
            hints = cpu_topology_hints(cpu, info, topo, free)
            best, admit = predicate(node_policy, numa_nodes, [hints])
            if not admit:
                return (UNRESOLVABLE, f"container {cname} cannot be assigned by numa"), {}
            for res, ids in cpu_allocate(cpu, best, info, topo, free).items():
                assigned[res] = assigned.get(res, frozenset()) | ids
                free[res] = free.get(res, frozenset()) - ids
        return None, assigned

    def mask(self, task: TaskInfo, idx: np.ndarray) -> np.ndarray | None:
        if task.pod.qos != GUARANTEED:
            return None
        has = self.has_info[idx]
        policy = task_policy(task.pod)
        if not has.any():
            if policy in ("", NONE):
                return None
            return np.zeros(len(idx), dtype=bool)      # "numa info is empty" everywhere
        out = has.copy() if policy not in ("", NONE) else np.ones(len(idx), dtype=bool)
        names = self.ssn.nodes.names
        for pos in np.flatnonzero(has).tolist():
            i = int(idx[pos])
            got = self._check(task, names[i])
            if got is not None:
                out[pos] = False
                self.why[(task.uid, i)] = got
        return out

    def reason(self, task: TaskInfo, i: int) -> list[tuple[str, str]]:
        if task.pod.qos != GUARANTEED:
            return []
        got = self.why.get((task.uid, i))
        if got is None:
            got = self._check(task, self.ssn.nodes.names[i])
        return [got] if got is not None else []

    # ---- node order --------------------------------------------------------------------------------
    def batch_node_order(self, task: TaskInfo, idx: np.ndarray,
                         detail: dict[str, Any] | None = None) -> np.ndarray | None:
        mine = self.assign.get(task.uid)
        if mine is None or task_policy(task.pod) in ("", NONE):
            return None
        names = self.ssn.nodes.names
        counts = []
        for i in idx.tolist():
            name = names[i]
            info = self.info.get(name)
            cpus = mine.get(name, {}).get(CPU, frozenset())
            counts.append(len({info.cpu_detail[c].numa if c in info.cpu_detail else 0 for c in cpus})
                          if info is not None else 0)
        return np.array(normalize_reverse(counts), dtype=float) * self.weight

    # ---- output --------------------------------------------------------------------------------------
    def cpus_of(self, task: TaskInfo) -> tuple[str, list[int]] | None:
        """(cpuset, NUMA node ids) of the CPUs the task was given on its node, None if none."""
        node = self.bound_to.get(task.uid)
        if node is None:
            return None
        cpus = self.assign.get(task.uid, {}).get(node, {}).get(CPU)
        info = self.info.get(node)
        if not cpus or info is None:
            return None
        return format_cpuset(cpus), sorted({info.cpu_detail[c].numa if c in info.cpu_detail else 0 for c in cpus})
