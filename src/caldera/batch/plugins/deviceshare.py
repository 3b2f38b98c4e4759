"""deviceshare: GPUs shared between pods (pkg/scheduler/plugins/deviceshare, Volcano v1.15).

Arguments (Volcano's keys; all default off / empty / 0):
  deviceshare.GPUSharingEnable  GpuShare devices, pods asking `volcano.sh/gpu-memory` on one GPU
  deviceshare.GPUNumberEnable   GpuShare devices, pods asking `volcano.sh/gpu-number` whole GPUs
  deviceshare.VGPUEnable        HAMi vGPU devices, pods asking `volcano.sh/vgpu-number|memory|cores`
  deviceshare.SchedulePolicy    "binpack" or "spread": the order vGPUs are tried in, and the score
  deviceshare.ScheduleWeight    > 0: nodes are scored (score * weight), else every node scores 0
  deviceshare.GPUExclusiveRules a list of label sets: a vGPU pod whose labels include one gets no
                                GPU used by another pod matching the same set
GPUSharingEnable with GPUNumberEnable, or either with VGPUEnable, is a config error (Volcano exits).
deviceshare.NodeLockEnable: true, the Ascend NPU switches and the device ConfigMap name/namespace
warn when the conf is loaded (not modelled; see UNSUPPORTED).

Per node the enabled device kinds are built from the node (deviceshare_devices.py: GpuShare from
capacity, vGPU from the `volcano.sh/node-vgpu-register` annotation); pods already on a node hold
the GPUs their annotations name. For a task that requests a device kind:
  Predicate: a node without that kind's devices passes (its missing extended resource fails the
    resource fit); otherwise its devices must fit the request, else the node fails with
    Volcano's reason: "GpuShare no enough gpu memory on node <n>", "GpuNumber no enough gpu
    number on node <n>", or "hami-vgpuDeviceSharing error" (Unschedulable).
  NodeOrder: with deviceshare.ScheduleWeight > 0, round(sum of the device kinds' scores) *
    weight: GpuShare always scores 0; vGPU scores the GPUs it would take, binpack 100 * used
    memory / memory after the task, spread 0 (Volcano counts the task on the GPU before asking
    whether the GPU had no pod).
  Allocate (and pipeline): the task takes its GPUs (deviceshare_devices.choose / fit) and the pod
    gets Volcano's annotations; their ids are the binding's `devices`. Undone (and the annotations
    removed) when the allocation is discarded. As in Volcano this is the predicates plugin's
    allocate handler: without `predicates` in the conf no GPU is assigned (a warning says so).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import ConfigError
from ..api.fiterrors import UNSCHEDULABLE
from ..api.info import ALLOCATED, PIPELINED
from .base import BatchPlugin, Predicate
from .deviceshare_devices import (
    BINPACK,
    GPUSHARE,
    GPUSHARE_ANNOTATIONS,
    SPREAD,
    VGPU,
    VGPU_ANNOTATIONS,
    VGPU_IDS,
    GpuShareDevices,
    VGPUChoice,
    VGPUDevices,
    decode_pod_devices,
    devices_of_node,
    gpu_index_of,
    gpu_memory_of,
    gpu_number_of,
    has_vgpu_request,
)

if TYPE_CHECKING:
    from ...api.objects import Pod
    from ..api.info import TaskInfo
    from ..framework.session import Session

SHARING = "deviceshare.GPUSharingEnable"
NUMBER = "deviceshare.GPUNumberEnable"
VGPU_ENABLE = "deviceshare.VGPUEnable"
NODE_LOCK = "deviceshare.NodeLockEnable"
POLICY = "deviceshare.SchedulePolicy"
WEIGHT = "deviceshare.ScheduleWeight"
EXCLUSIVE = "deviceshare.GPUExclusiveRules"
_NPU = "Ascend NPUs are not modelled"
_CM = ("Caldera does not read the device ConfigMap: Volcano's default device config is used, as when the "
       "ConfigMap is missing (vGPU resource names volcano.sh/vgpu-*, MIG nodes fall back to hami-core)")
UNSUPPORTED_ARGS = {
    NODE_LOCK: "node locks are not modelled (in Volcano a locked node refuses further GPU allocations until "
               "the device plugin releases the lock)",
    "deviceshare.AscendMindClusterVNPUEnable": _NPU,
    "deviceshare.AscendHAMiVNPUEnable": _NPU,
    "deviceshare.KnownGeometriesCMName": _CM,
    "deviceshare.KnownGeometriesCMNamespace": _CM,
}


def _falsy(v: Any) -> bool:
    return v is False or (isinstance(v, str) and v.lower() == "false")


class DeviceSharePlugin(BatchPlugin):
    name = "deviceshare"
    ARGUMENTS = frozenset({SHARING, NUMBER, VGPU_ENABLE, POLICY, WEIGHT, EXCLUSIVE})
    UNSUPPORTED = UNSUPPORTED_ARGS

    @classmethod
    def arguments_read(cls, arguments):
        # NodeLockEnable: false is what Caldera does anyway; only true warns
        return cls.ARGUMENTS | ({NODE_LOCK} if _falsy(arguments.get(NODE_LOCK)) else set())

    def __init__(self, arguments=None, source="volcano conf"):
        super().__init__(arguments, source)
        self.sharing = self.arg_bool(SHARING, False)
        self.number = self.arg_bool(NUMBER, False)
        self.vgpu = self.arg_bool(VGPU_ENABLE, False)
        self.arg_bool(NODE_LOCK, False)          # validated only
        pol = self.args.get(POLICY, "")
        if not isinstance(pol, str):
            raise self._bad(POLICY, f'"{BINPACK}" or "{SPREAD}"', pol)
        self.policy = pol
        self.weight = self.arg_int(WEIGHT, 0)
        self.rules = self._exclusive_rules()
        if self.sharing and self.number:
            raise ConfigError(f"{source}: deviceshare: {SHARING} and {NUMBER} cannot both be true "
                              f"(Volcano exits: can not define true in both gpu sharing and gpu number)")
        if (self.sharing or self.number) and self.vgpu:
            raise ConfigError(f"{source}: deviceshare: {VGPU_ENABLE} cannot be used with {SHARING} or {NUMBER} "
                              f"(Volcano exits: gpu-share and vgpu can't be used together)")
        self.warnings: list[str] = []
        if pol and pol not in (BINPACK, SPREAD):
            self.warnings.append(f'{source}: deviceshare.SchedulePolicy "{pol}" is neither "{BINPACK}" nor '
                                 f'"{SPREAD}": vGPUs are tried from the highest index down and score 0')
        # registered device kinds, in Volcano's registration order
        self.kinds = [k for k, on in ((GPUSHARE, self.sharing or self.number), (VGPU, self.vgpu)) if on]
        self.devs: dict[str, list[Any]] = {}
        self.held: dict[str, tuple[int, str, Any]] = {}     # task uid -> (node row, kind, ids | choice)
        self.devices: dict[str, list[int]] = {}             # pod key -> GPU indices (for the bindings)
        self.stamp = 0
        self.matches: dict[str, frozenset[int]] = {}        # pod uid -> the exclusivity rules it matches
        self.pods: dict[str, Pod] = {}                       # uid -> pod, of the pods on nodes

    def _exclusive_rules(self) -> list[dict[str, str]]:
        """deviceshare.GPUExclusiveRules: a list of label sets; a vGPU pod whose labels include a
        set gets no GPU a pod matching the same set already uses. Empty sets are dropped."""
        raw = self.args.get(EXCLUSIVE)
        if raw is None:
            return []
        want = "a list of label maps (name: value)"
        if not isinstance(raw, list):
            raise self._bad(EXCLUSIVE, want, raw)
        rules = []
        for item in raw:
            if not isinstance(item, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                     for k, v in item.items()):
                raise self._bad(EXCLUSIVE, want, raw)
            if item:
                rules.append(dict(item))
        return rules

    def _matched(self, pod: Pod) -> frozenset[int]:
        if not self.rules:
            return frozenset()
        got = self.matches.get(pod.uid)
        if got is None:
            labels = pod.labels
            got = self.matches[pod.uid] = frozenset(
                r for r, rule in enumerate(self.rules) if all(labels.get(k) == v for k, v in rule.items()))
        return got

    def _reserved(self, dev: VGPUDevices, pod: Pod) -> frozenset[int]:
        """The GPUs used by other pods that match an exclusivity rule the pod matches."""
        mine = self._matched(pod)
        if not mine:
            return frozenset()
        return frozenset(i for i, g in dev.gpus.items()
                         if any(uid != pod.uid and uid in self.pods and self._matched(self.pods[uid]) & mine
                                for uid in g.pods))

    # ---- session ----------------------------------------------------------------------------------
    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        self.held = {}
        self.devices = {}
        self.stamp = 0
        self.matches = {}
        self.pods = {}
        if not self.kinds:
            return
        nodes = ssn.nodes
        per_node = [devices_of_node(ni.node, GPUSHARE in self.kinds, VGPU in self.kinds) for ni in nodes.infos]
        self.devs = {k: [d.get(k) for d in per_node] for k in self.kinds}
        for ni in nodes.infos:                      # pods already on the node (NodeInfo.AddTask)
            for _, task in ni.tasks.values():
                self.pods[task.pod.uid] = task.pod
                self._read_annotations(ni.i, task.pod)
        ssn.add("predicate", self.name, Predicate(self.mask, self.reason))
        ssn.add("node_order", self.name, self.node_order)
        if ssn.plugin_option("predicates") is not None:
            ssn.add_event_handler(allocate=self._allocate, deallocate=self._deallocate)
        else:
            self.warnings.append(f"{self.source}: deviceshare without the predicates plugin: Volcano assigns GPUs "
                                 f"in predicates' allocate handler, so no GPU index is assigned and GPUs "
                                 f"are not counted as used within a session")

    def on_session_close(self, ssn: Session) -> None:
        self.held = {}

    def _read_annotations(self, i: int, pod: Pod) -> None:
        share = self.devs.get(GPUSHARE)
        if share is not None and share[i] is not None and (gpu_memory_of(pod) > 0 or gpu_number_of(pod) > 0):
            share[i].add(pod, gpu_index_of(pod))
        vg = self.devs.get(VGPU)
        if vg is not None and vg[i] is not None and VGPU_IDS in pod.annotations:
            vg[i].add(pod, decode_pod_devices(pod.annotations[VGPU_IDS]))

    # ---- which device kinds a pod asks for ----------------------------------------------------------
    def _requested(self, pod: Pod) -> list[str]:
        out = []
        for k in self.kinds:
            if k == GPUSHARE:
                if (self.sharing and gpu_memory_of(pod) > 0) or (self.number and gpu_number_of(pod) > 0):
                    out.append(k)
            elif has_vgpu_request(pod):
                out.append(k)
        return out

    def _why(self, kind: str, dev: Any, pod: Pod) -> str | None:
        if kind == GPUSHARE:
            return dev.filter(pod, self.sharing, self.number)
        choice, _ = dev.fit(pod, self.policy, self._reserved(dev, pod))
        return None if choice is not None else "hami-vgpuDeviceSharing error"

    # ---- predicate ------------------------------------------------------------------------------------
    def mask(self, task: TaskInfo, idx: np.ndarray) -> np.ndarray | None:
        kinds = self._requested(task.pod)
        if not kinds:
            return None
        out = np.ones(len(idx), dtype=bool)
        for pos, i in enumerate(idx.tolist()):
            for k in kinds:
                dev = self.devs[k][i]
                if dev is not None and self._why(k, dev, task.pod) is not None:
                    out[pos] = False
                    break
        return out

    def reason(self, task: TaskInfo, i: int) -> list[tuple[str, str]]:
        for k in self._requested(task.pod):
            dev = self.devs[k][i]
            if dev is None:
                continue
            why = self._why(k, dev, task.pod)
            if why is not None:
                return [(UNSCHEDULABLE, why)]
        return []

    # ---- node order ----------------------------------------------------------------------------------
    def node_order(self, task: TaskInfo, idx: np.ndarray, detail: dict | None = None) -> np.ndarray:
        out = np.zeros(len(idx))
        if self.weight <= 0 or VGPU not in self._requested(task.pod):
            return out                   # GpuShare scores 0
        vg = self.devs[VGPU]
        for pos, i in enumerate(idx.tolist()):
            dev = vg[i]
            if dev is None:
                continue
            choice, _ = dev.fit(task.pod, self.policy, self._reserved(dev, task.pod))
            s = choice.score if choice is not None else 0.0
            out[pos] = float(np.floor(s + 0.5)) * self.weight
        return out

    # ---- allocate / release (predicates' event handler in Volcano) ------------------------------------
    def _allocate(self, task: TaskInfo) -> None:
        ni = self.ssn.nodes.by_name.get(task.node_name)
        if ni is None:
            return
        i = ni.i
        if task.status not in (ALLOCATED, PIPELINED):
            # a running task whose eviction was undone: it holds what it held before
            self.pods[task.pod.uid] = task.pod
            self._read_annotations(i, task.pod)
            return
        pod = task.pod
        self.pods[pod.uid] = pod
        for k in self._requested(pod):
            dev = self.devs[k][i]
            if dev is None:
                continue
            self.stamp += 1
            if k == GPUSHARE:
                ids = dev.choose(pod)
                if not ids:
                    continue
                dev.add(pod, ids)
                ann = dev.annotations(pod, ids, self.stamp)
                self.held[task.uid] = (i, k, ids)
                self.devices[task.key] = GpuShareDevices.annotated(pod, ids)
            else:
                choice, _ = dev.fit(pod, self.policy, self._reserved(dev, pod))
                if choice is None:
                    continue
                dev.add_choice(pod, choice)
                ann = dev.annotations(choice, self.stamp)
                self.held[task.uid] = (i, k, choice)
                if _indices(choice):
                    self.devices[task.key] = _indices(choice)
            pod.annotations = {**pod.annotations, **ann}

    def _deallocate(self, task: TaskInfo) -> None:
        pod = task.pod
        self.pods.pop(pod.uid, None)
        got = self.held.pop(task.uid, None)
        if got is None:
            # a running task being evicted: its GPUs are free for the rest of the session
            ni = self.ssn.nodes.by_name.get(task.node_name)
            if ni is not None:
                for k in self.kinds:
                    dev = self.devs[k][ni.i]
                    if dev is not None:
                        dev.remove(pod)
            return
        i, k, _ = got
        self.devs[k][i].remove(pod)
        self.devices.pop(task.key, None)
        drop = GPUSHARE_ANNOTATIONS if k == GPUSHARE else VGPU_ANNOTATIONS
        pod.annotations = {a: v for a, v in pod.annotations.items() if a not in drop}

    def devices_of(self, task: TaskInfo) -> list[int] | None:
        """The GPU indices the task was given in this session (None: no device request)."""
        return self.devices.get(task.key)


def _indices(choice: VGPUChoice) -> list[int]:
    out: list[int] = []
    for devs in choice.containers:
        for i, _, _ in devs:
            if i not in out:
                out.append(i)
    return out

