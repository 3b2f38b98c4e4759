"""predicates: kube's Filter plugins as Volcano predicates (pkg/scheduler/plugins/predicates).

PrePredicate runs the PreFilter of NodeAffinity, NodePorts, InterPodAffinity and
PodTopologySpread (those enabled) in that order; a Skip marks the plugin's Filter off for the task
(for the rest of the session: the per-task cycle state keeps its skip set, as Volcano's), any
other failure is the error "plugin <name> pre-predicates failed <message>".

Predicate, per node, collects statuses in this order:
  1. "node(s) pod number exceeded" (Unschedulable) when the node's allocatable pods <= the pods
     already on it (does not stop the checks);
  2. the stable filters NodeUnschedulable (always on), NodeAffinity (with nodeSelector),
     TaintToleration; an UnschedulableAndUnresolvable or Error status ends the checks;
  3. NodePorts, InterPodAffinity, PodTopologySpread, with the same stopping rule;
  4. Caldera's GPUDevices (GPUs as devices, docs/gpu.md "From a Volcano tier"): for a task with
     GPU demand (nvidia.com/gpu, alibabacloud.com/gpu-milli), a share of one GPU needs one GPU of
     the node with enough free milli, k whole GPUs k fully free GPUs, over the table's `gpu`
     devices ("Insufficient GPU devices"; UnschedulableAndUnresolvable when the node has fewer
     GPUs than asked). It runs only for tasks with GPU demand (without its PreFilter, which would
     only skip the others), so for every other task nothing changes.
A node with any status fails; its reasons are the statuses' messages in that order (built when
a message is asked for, from the node table at that time).

The kube plugins run on the session's node table (kube.SessionHandle). Each task keeps its cycle
state for the session, as Volcano's ssn.GetCycleState; once the task is placed only its skip set is
kept. A plain pod (no selector, affinity, host ports or spread constraints) costs the four Skips
of its first PrePredicate, then per node set one check of free pod slots (kept current from the
table's pod journal), NodeUnschedulable and TaintToleration, each nothing when no node is
cordoned, tainted or full.

For preempt's topology-aware dry run: SimulateRemoveTask / SimulateAddTask record which pods the
dry run took away (InterPodAffinity's RemovePod / AddPod on the preemptor's PreFilter state), and
SimulatePredicate runs InterPodAffinity's Filter without them (both only when InterPodAffinity is
enabled and not skipped for the task). Volcano's SimulatePredicate also asks the registered
devices (deviceshare's GPU share / vGPU) whether they fit, which is not modelled.

Arguments: predicate.NodeAffinityEnable, predicate.NodePortsEnable,
predicate.TaintTolerationEnable, predicate.PodAffinityEnable, predicate.PodTopologySpreadEnable
(default true), and Caldera's predicate.GPUDevicesEnable (default true; Volcano has no such key:
false leaves GPU demand to the allocate action's fit on the node's sums). Either way the GPUs a
task takes are chosen when the session places it (gpupolicy_devices.py) and reported by
`devices_of` (bindings[].devices).
predicate.NodeVolumeLimitsEnable, predicate.VolumeZoneEnable,
predicate.VolumeBindingEnable, predicate.DynamicResourceAllocationEnable and
predicate.CacheEnable are accepted: Caldera has no volumes or resource claims (their plugins would
skip every pod), and the predicate cache by role is the action's PredicateHelper. The keys of
UNSUPPORTED_ARGS (Volcano's proportional predicate, volume binding and DRA settings) warn when the
conf is loaded, as does any key nothing reads; predicate.GPUSharingEnable / GPUNumberEnable (read
by predicates before Volcano v1.9) warn with a pointer to the deviceshare plugin's keys.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...api.gpu import pod_gpu_demand
from ...framework.interface import CycleState
from ...framework.status import Status
from ...state.nodetable import PODS
from ..api.fiterrors import ERROR, NODE_POD_NUMBER_EXCEEDED, UNSCHEDULABLE
from .base import BatchPlugin, Predicate
from .gpupolicy_devices import SessionGpus, attach
from .kube import SessionHandle, build, filter_mask, filter_status, should_abort, volcano_code

if TYPE_CHECKING:
    from ..framework.session import Session

GPU_DEVICES_ENABLE = "predicate.GPUDevicesEnable"
ENABLE_ARGS = {
    "predicate.NodeAffinityEnable": "NodeAffinity",
    "predicate.NodePortsEnable": "NodePorts",
    "predicate.TaintTolerationEnable": "TaintToleration",
    "predicate.PodAffinityEnable": "InterPodAffinity",
    "predicate.PodTopologySpreadEnable": "PodTopologySpread",
    GPU_DEVICES_ENABLE: "GPUDevices",          # Caldera's own (GPUs as devices)
}
# accepted, nothing to do in Caldera
NOOP_ARGS = ("predicate.NodeVolumeLimitsEnable", "predicate.VolumeZoneEnable", "predicate.VolumeBindingEnable",
             "predicate.DynamicResourceAllocationEnable", "predicate.CacheEnable")

# read by Volcano's predicates (some only by older releases), not modelled by Caldera: key -> what it is
PROPORTIONAL_RESOURCES = "predicate.resources"
_PROPORTIONAL = "the proportional predicate (CPU/memory kept free per GPU) is not modelled"
_VOLUMES = "Caldera does not model volumes"
# read by predicates before Volcano v1.9 only; GPU sharing is now the deviceshare plugin (deviceshare.py)
MOVED_TO_DEVICESHARE = {"predicate.GPUSharingEnable": "deviceshare.GPUSharingEnable",
                        "predicate.GPUNumberEnable": "deviceshare.GPUNumberEnable"}
UNSUPPORTED_ARGS = {
    "predicate.ProportionalEnable": _PROPORTIONAL, PROPORTIONAL_RESOURCES: _PROPORTIONAL,
    "volumebinding.bindTimeoutSeconds": _VOLUMES, "volumebinding.weight": _VOLUMES, "volumebinding.shape": _VOLUMES,
    "dynamicresources.filterTimeoutSeconds": "Caldera does not model resource claims (DRA)",
}
UNSUPPORTED_PREFIX_ARGS = {PROPORTIONAL_RESOURCES + ".": _PROPORTIONAL}   # predicate.resources.<name>.cpu|memory

STABLE = ("NodeUnschedulable", "NodeAffinity", "TaintToleration")
OTHERS = ("NodePorts", "InterPodAffinity", "PodTopologySpread")
PRE_FILTERS = ("NodeAffinity", "NodePorts", "InterPodAffinity", "PodTopologySpread")
GPU_DEVICES = "GPUDevices"    # Caldera's own filter, after Volcano's, for tasks with GPU demand only
# PreFilters whose Skip depends on the pod only (InterPodAffinity's also on the cluster's pods)
POD_ONLY_PRE_FILTERS = frozenset({"NodeAffinity", "NodePorts", "PodTopologySpread"})
_ERR = "volcano.predicates.prepredicate"      # cycle-state key: the last PrePredicate error
# kube Args Volcano passes (NodeAffinity: an empty addedAffinity; PodTopologySpread: System defaulting)
ARGS = {"NodeAffinity": {}, "InterPodAffinity": {}, "PodTopologySpread": {"defaultingType": "System"}}


class PredicatesPlugin(BatchPlugin):
    name = "predicates"
    ARGUMENTS = frozenset([*ENABLE_ARGS, *NOOP_ARGS])
    UNSUPPORTED = UNSUPPORTED_ARGS
    UNSUPPORTED_PREFIXES = UNSUPPORTED_PREFIX_ARGS

    @classmethod
    def unread_hint(cls, key, arguments):
        moved = MOVED_TO_DEVICESHARE.get(key)
        if moved is not None:
            return (f'predicates reads it only before Volcano v1.9; GPU sharing is the deviceshare plugin\'s '
                    f'"{moved}"')
        return None

    def __init__(self, arguments=None, source="volcano conf"):
        super().__init__(arguments, source)
        self.enabled = {"NodeUnschedulable"}
        for key, plugin in ENABLE_ARGS.items():
            if self.arg_bool(key, True):
                self.enabled.add(plugin)
        for key in NOOP_ARGS:
            self.arg_bool(key, False)      # validated only
        self.states: dict[str, CycleState] = {}
        self.gpus: SessionGpus | None = None

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        handle = SessionHandle(ssn)
        kube = {n: build(n, ARGS.get(n), handle) for n in (*STABLE, *OTHERS, GPU_DEVICES) if n in self.enabled}
        self.stable = [kube[n] for n in STABLE if n in kube]
        self.others = [kube[n] for n in OTHERS if n in kube]
        self.pre = [kube[n] for n in PRE_FILTERS if n in kube]
        self.filters = self.stable + self.others
        # GPUDevices runs without its PreFilter (which only skips tasks without GPU demand, and
        # would add to the skip set Volcano's plugins share): mask and reason add it per task
        self.gpu = kube.get(GPU_DEVICES)
        self.gpu_filters = [*self.filters, self.gpu] if self.gpu is not None else self.filters
        self.states = {}
        self.slots = PodSlots(ssn.nodes.max_tasks)
        ssn.add("pre_predicate", self.name, self.pre_predicate)
        ssn.add_event_handler(allocate=self._placed)
        ssn.add("predicate", self.name, Predicate(self.mask, self.reason))
        ssn.add("simulate_predicate", self.name, self.simulate_predicate)
        ssn.add("simulate_remove_task", self.name, lambda st, p, t, _n: self._sim_account(st, p, t, -1))
        ssn.add("simulate_add_task", self.name, lambda st, p, t, _n: self._sim_account(st, p, t, 1))
        self.gpus = attach(ssn)            # the GPUs a task takes when placed (gpupolicy_devices.py)

    def _gpu_demand(self, pod) -> bool:
        return self.gpu is not None and pod_gpu_demand(pod)[0] > 0

    def devices_of(self, task) -> tuple[int, ...] | None:
        """The GPU indices a task with GPU demand holds on its node (bindings[].devices)."""
        return self.gpus.devices_of(task) if self.gpus is not None else None

    # ---- PrePredicate ---------------------------------------------------------------------------
    def pre_predicate(self, task) -> str | None:
        state = self.states.get(task.uid)
        if state is None:
            state = self.states[task.uid] = CycleState()
        pod = task.pod
        err = None
        skipped = state.skip_filter
        for p in self.pre:
            if p.name in skipped and p.name in POD_ONLY_PRE_FILTERS:
                continue       # Skip again: decided by the pod alone, and the skip set is kept
            s = p.pre_filter(state, pod)
            if s is None or s.__class__ is not Status or s.is_success():
                continue       # (a PreFilterResult's node restriction is ignored, as Volcano does)
            if s.is_skip():
                state.skip_filter.add(p.name)
            else:
                err = f"plugin {p.name} pre-predicates failed {s.message()}"
                break
        state.write(_ERR, err)
        return err

    def _placed(self, task) -> None:
        """A placed task keeps only its skip set: its PreFilter data (per-node arrays for
        affinity, spread, ports) is rebuilt by the next PrePredicate if it is tried again."""
        state = self.states.get(task.uid)
        if state is not None and len(state.skip_filter) < len(self.pre):
            light = self.states[task.uid] = CycleState()
            light.skip_filter = state.skip_filter
            light.write(_ERR, state.get(_ERR))

    def _state(self, task) -> tuple[CycleState, str | None]:
        state = self.states.get(task.uid)
        if state is None:                  # a caller that did not run PrePredicate first
            self.pre_predicate(task)
            state = self.states[task.uid]
        return state, state.get(_ERR)

    # ---- Predicate ------------------------------------------------------------------------------
    def mask(self, task, idx: np.ndarray) -> np.ndarray | None:
        state, err = self._state(task)
        if err:
            return np.zeros(idx.size, dtype=bool)
        table = self.ssn.nodes.table
        pods_ok, all_ok = self.slots.get(table)
        ok = None if all_ok else pods_ok[idx]
        pod = task.pod
        skip = state.skip_filter
        for p in (self.gpu_filters if self._gpu_demand(pod) else self.filters):
            if p.name in skip:
                continue
            m = filter_mask(p, state, pod, table, idx)
            if m is not None:
                ok = m if ok is None else ok & m
        return ok

    def reason(self, task, i: int) -> list[tuple[str, str]]:
        state, err = self._state(task)
        if err:
            return [(ERROR, err)]
        table = self.ssn.nodes.table
        out: list[tuple[str, str]] = []
        if not self.slots.get(table)[0][i]:
            out.append((UNSCHEDULABLE, NODE_POD_NUMBER_EXCEEDED))
        pod = task.pod
        gpu = [self.gpu] if self.gpu is not None and self._gpu_demand(pod) else []
        for group in (self.stable, self.others, gpu):
            for p in group:
                if p.name in state.skip_filter:
                    continue
                s = filter_status(p, state, pod, table, i)
                if s is None:
                    continue
                code = volcano_code(s)
                out.append((code, s.message()))
                if should_abort(code):
                    return out
        return out


    # ---- Simulate* (preempt's topology-aware dry run) -------------------------------------------
    def _affinity(self, task):
        """InterPodAffinity, when enabled and not skipped by the task's PrePredicate."""
        affinity = next((p for p in self.others if p.name == "InterPodAffinity"), None)
        if affinity is None:
            return None
        state, err = self._state(task)
        if err or affinity.name in state.skip_filter:
            return None
        return affinity

    def _sim_account(self, sim: dict, preemptor, task, sign: int) -> str | None:
        """SimulateRemoveTask / SimulateAddTask: InterPodAffinity's RemovePod / AddPod on the
        preemptor's PreFilter state, here the set of pods taken off the table for its Filter."""
        if self._affinity(preemptor) is None:
            return None
        removed = sim.setdefault(self.name, {})
        if sign < 0:
            removed[task.pod.key] = task.pod
        else:
            removed.pop(task.pod.key, None)
        return None

    def simulate_predicate(self, sim: dict, task, node) -> str | None:
        """SimulatePredicate: InterPodAffinity's Filter on the node, without the pods this
        plugin's SimulateRemoveTask took away (taken off the node table for the check, then put
        back). Like Volcano's PreFilter state, it knows of a removal only when the plugin's
        SimulateRemoveTask ran (enablePreemptable or enableAllocatable)."""
        affinity = self._affinity(task)
        if affinity is None:
            return None
        table = self.ssn.nodes.table
        taken: list[tuple] = []
        for key, pod in sim.get(self.name, {}).items():
            i = table.node_of(key)
            if i is not None:
                taken.append((pod, i))
        for pod, _ in taken:
            table.remove_pod(pod.key)
        try:
            s = filter_status(affinity, CycleState(), task.pod, table, node.i)
        finally:
            for pod, i in taken:
                table.add_pod(pod, i)
        if s is None:
            return None
        return f"failed to filter pod on node {node.name}: {s.message()}"


class PodSlots:
    """Per node: is there room for one more pod (allocatable pods > pods on the node)? Kept
    current from the table's pod journal; `get` also says whether every node has room."""
    __slots__ = ("bad", "cursor", "gen", "max_tasks", "ok")

    def __init__(self, max_tasks: np.ndarray):
        self.max_tasks = max_tasks
        self.ok: np.ndarray | None = None
        self.bad = 0
        self.cursor = -1
        self.gen = -1

    def get(self, table) -> tuple[np.ndarray, bool]:
        changes, end = table.journal_since(self.cursor)
        if self.ok is None or changes is None or self.gen != table.node_generation or len(changes) > 256:
            self.ok = self.max_tasks > table.req[:, PODS]
            self.bad = int(self.ok.size - np.count_nonzero(self.ok))
            self.gen = table.node_generation
        else:
            ok, req, mx = self.ok, table.req, self.max_tasks
            for _, i, _ in changes:
                now = mx.item(i) > req.item(i, PODS)
                if now != ok.item(i):
                    ok[i] = now
                    self.bad += -1 if now else 1
        self.cursor = end
        return self.ok, self.bad == 0
