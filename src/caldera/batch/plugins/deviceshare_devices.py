"""The shared-GPU devices of Volcano's deviceshare plugin (pkg/scheduler/api/devices/nvidia).

Two device kinds, each built per node when its plugin argument enables it:

- **GpuShare** (deviceshare.GPUSharingEnable / deviceshare.GPUNumberEnable; the
  volcano-device-plugin). A node has `volcano.sh/gpu-number` GPUs (from status.capacity), each
  with capacity `volcano.sh/gpu-memory` // gpu-number of memory (integer division); the GPU ids
  in the node annotation `volcano.sh/gpu-unhealthy-ids` ("1,3") are left out. A pod asks, from
  its containers' *limits* (the larger of the containers' sum and the largest init container),
  for `volcano.sh/gpu-memory` on one GPU or `volcano.sh/gpu-number` whole GPUs. A GPU's used
  memory is the sum of the gpu-memory requests of the pods on it that are not Succeeded/Failed;
  a GPU is idle when no pod at all is on it. Memory: the GPUs with idle memory >= the request,
  lowest id first, the pod takes the first. Number: the idle GPUs, the pod takes the first n.
  The ids are written as the pod annotation `volcano.sh/gpu-index` ("0" or "0,1", with
  `volcano.sh/predicate-time`), and read back from it for pods already on the node.
- **vGPU** (deviceshare.VGPUEnable; HAMi's device plugin in hami-core mode). A node has the GPUs
  its device plugin registered in the node annotation `volcano.sh/node-vgpu-register`
  ("UUID,count,memory,type,health,mode:" per GPU; the GPU's index is its position), and only
  when its allocatable has non-zero `volcano.sh/vgpu-number`, `volcano.sh/vgpu-cores` and
  `volcano.sh/vgpu-memory`. Each container with `volcano.sh/vgpu-number` (n GPUs) or only
  `volcano.sh/vgpu-memory` (1 GPU) in its limits asks for n GPUs, each with vgpu-memory MiB
  (limit, else request; none: the whole GPU's memory) and vgpu-cores percent. A GPU takes it
  while it has a free share (used count < count), enough free memory and cores (<= 100 in all;
  100 cores wants the GPU alone; a GPU at 100 cores takes no 0-core request), a type containing
  "NVIDIA" that the pod's `nvidia.com/use-gputype` / `nvidia.com/nouse-gputype` annotations
  allow, and (pod annotation `volcano.sh/vgpu-podgroup-policy: spread`) no pod of the same
  PodGroup. GPUs are tried in the order of deviceshare.SchedulePolicy: binpack (most used
  memory first), spread (fewest pods first), else from the highest index down. The choice is
  written in `volcano.sh/vgpu-ids-new` and `volcano.sh/devices-to-allocate`
  ("UUID,NVIDIA,mem,cores:" per GPU, ";" between containers) with `volcano.sh/vgpu-node`,
  `volcano.sh/vgpu-time`, `volcano.sh/bind-time` and `volcano.sh/bind-phase: allocating`; the
  first is read back for pods already on the node.

Pure data over the pods and nodes: the plugin (deviceshare.py) keeps one object per node.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ...api.objects import Node, Pod
from ...api.podresources import parse_resources

# ---- names ---------------------------------------------------------------------------------------
GPUSHARE = "GpuShare"          # Volcano's device names (RegisteredDevices), in registration order
VGPU = "hamivgpu"

GPU_MEMORY = "volcano.sh/gpu-memory"
GPU_NUMBER = "volcano.sh/gpu-number"
GPU_INDEX = "volcano.sh/gpu-index"
PREDICATE_TIME = "volcano.sh/predicate-time"
UNHEALTHY_GPU_IDS = "volcano.sh/gpu-unhealthy-ids"

VGPU_NUMBER = "volcano.sh/vgpu-number"
VGPU_MEMORY = "volcano.sh/vgpu-memory"
VGPU_CORES = "volcano.sh/vgpu-cores"
VGPU_REGISTER = "volcano.sh/node-vgpu-register"
VGPU_IDS = "volcano.sh/vgpu-ids-new"
VGPU_TO_ALLOCATE = "volcano.sh/devices-to-allocate"
VGPU_NODE = "volcano.sh/vgpu-node"
VGPU_TIME = "volcano.sh/vgpu-time"
VGPU_BIND_TIME = "volcano.sh/bind-time"
VGPU_BIND_PHASE = "volcano.sh/bind-phase"
VGPU_MODE = "volcano.sh/vgpu-mode"
VGPU_GROUP_POLICY = "volcano.sh/vgpu-podgroup-policy"
USE_GPU_TYPE = "nvidia.com/use-gputype"
NOUSE_GPU_TYPE = "nvidia.com/nouse-gputype"
GROUP_KEYS = ("scheduling.k8s.io/group-name", "scheduling.volcano.sh/group-name")
HAMI_CORE = "hami-core"
NVIDIA = "NVIDIA"

BINPACK, SPREAD = "binpack", "spread"
_INT = re.compile(r"[+-]?[0-9]+")

# what each device kind writes on a pod when it is allocated (and removes when released)
GPUSHARE_ANNOTATIONS = (PREDICATE_TIME, GPU_INDEX)
VGPU_ANNOTATIONS = (VGPU_NODE, VGPU_TIME, VGPU_IDS, VGPU_TO_ALLOCATE, VGPU_BIND_TIME, VGPU_BIND_PHASE)


# ---- pod requests ----------------------------------------------------------------------------------
def _container_resources(pod: Pod) -> tuple[list[tuple[dict[str, int], dict[str, int]]], list[dict[str, int]]]:
    """Per app container (requests as written, limits), and per init container its limits, in
    Value() units. Cached on the pod."""
    got = pod.cache.get("deviceshare.resources")
    if got is None:
        apps: list[tuple[dict[str, int], dict[str, int]]] = []
        inits: list[dict[str, int]] = []
        for kind in ("containers", "initContainers"):
            for i, c in enumerate(pod.spec.get(kind) or []):
                res = (c.get("resources") or {}) if isinstance(c, dict) else {}
                where = f"spec.{kind}[{i}].resources"
                lim = parse_resources(res.get("limits"), where + ".limits")
                if kind == "containers":
                    apps.append((parse_resources(res.get("requests"), where + ".requests"), lim))
                else:
                    inits.append(lim)
        got = pod.cache["deviceshare.resources"] = (apps, inits)
    return got


def _pod_limit(pod: Pod, name: str) -> int:
    """The larger of the app containers' summed limit and the largest init container's."""
    apps, inits = _container_resources(pod)
    total = sum(lim.get(name, 0) for _, lim in apps)
    init = max((lim.get(name, 0) for lim in inits), default=0)
    return max(total, init)


def gpu_memory_of(pod: Pod) -> int:
    return _pod_limit(pod, GPU_MEMORY)


def gpu_number_of(pod: Pod) -> int:
    return _pod_limit(pod, GPU_NUMBER)


def gpu_index_of(pod: Pod) -> list[int]:
    """The GPU ids of the `volcano.sh/gpu-index` annotation; [] when absent or malformed."""
    v = pod.annotations.get(GPU_INDEX)
    if v is None:
        return []
    try:
        return [int(s) for s in v.split(",")]
    except ValueError:
        return []


def _annotations(node: Node) -> dict[str, str]:
    meta = node.raw.get("metadata") or {}
    ann = meta.get("annotations") or {}
    return {str(k): str(v) for k, v in ann.items()} if isinstance(ann, dict) else {}


# ---- GpuShare ----------------------------------------------------------------------------------------
class ShareGPU:
    """One GPU of a GpuShare node: its memory and the pods on it (uid -> gpu-memory they count)."""
    __slots__ = ("id", "memory", "pods")

    def __init__(self, gid: int, memory: int):
        self.id = gid
        self.memory = memory
        self.pods: dict[str, int] = {}

    @property
    def used(self) -> int:
        return sum(self.pods.values())

    @property
    def idle(self) -> bool:
        return not self.pods


class GpuShareDevices:
    kind = GPUSHARE

    def __init__(self, node: str, gpus: list[ShareGPU]):
        self.node = node
        self.gpus = {g.id: g for g in gpus}          # ascending id
        self.owner: dict[str, list[int]] = {}        # pod uid -> the GPU ids it holds

    @classmethod
    def from_node(cls, node: Node) -> GpuShareDevices | None:
        mem = node.capacity.get(GPU_MEMORY)
        num = node.capacity.get(GPU_NUMBER)
        if mem is None or num is None or num == 0:
            return None
        per = mem // num
        bad: set[int] = set()
        for s in _annotations(node).get(UNHEALTHY_GPU_IDS, "").split(","):
            if _INT.fullmatch(s):          # strconv.Atoi: an optional sign, digits, nothing else
                bad.add(int(s))
        return cls(node.name, [ShareGPU(i, per) for i in range(num) if i not in bad])

    # pods ------------------------------------------------------------------------------------
    def add(self, pod: Pod, ids: list[int]) -> None:
        """A pod holds GPUs `ids` (those the node has); it counts its gpu-memory on each,
        unless it has finished."""
        mem = 0 if pod.finished else gpu_memory_of(pod)
        held = [i for i in ids if i in self.gpus]
        for i in held:
            self.gpus[i].pods[pod.uid] = mem
        if held:
            self.owner[pod.uid] = held

    def remove(self, pod: Pod) -> None:
        for i in self.owner.pop(pod.uid, ()):
            self.gpus[i].pods.pop(pod.uid, None)

    # fit -------------------------------------------------------------------------------------
    def memory_fits(self, mem: int) -> list[int]:
        return [g.id for g in self.gpus.values() if g.memory - g.used >= mem]

    def idle_gpus(self) -> list[int]:
        return [g.id for g in self.gpus.values() if g.idle]

    def filter(self, pod: Pod, sharing: bool, number: bool) -> str | None:
        """None when the pod fits, else Volcano's reason."""
        if sharing:
            mem = gpu_memory_of(pod)
            if mem > 0 and not self.memory_fits(mem):
                return f"GpuShare no enough gpu memory on node {self.node}"
        if number:
            n = gpu_number_of(pod)
            if n > 0 and len(self.idle_gpus()) < n:
                return f"GpuNumber no enough gpu number on node {self.node}"
        return None

    def choose(self, pod: Pod) -> list[int]:
        """The GPU ids the pod gets (Allocate): a gpu-memory pod the lowest-id GPU with room, a
        gpu-number pod the first n idle GPUs; [] when nothing fits."""
        ids: list[int] = []
        mem = gpu_memory_of(pod)
        if mem > 0:
            fit = self.memory_fits(mem)
            if not fit:
                return []
            ids = fit[:1]
        n = gpu_number_of(pod)
        if n > 0:
            idle = [i for i in self.idle_gpus() if i not in ids]
            if len(idle) < n:
                return []
            ids = ids + idle[:n]
        return ids

    @staticmethod
    def annotated(pod: Pod, ids: list[int]) -> list[int]:
        """The ids the pod's gpu-index annotation ends up with: with both requests, the
        gpu-number ones (Volcano's second patch overwrites the first)."""
        return ids[1:] if gpu_memory_of(pod) > 0 and gpu_number_of(pod) > 0 else ids

    def annotations(self, pod: Pod, ids: list[int], stamp: int) -> dict[str, str]:
        shown = self.annotated(pod, ids)
        return {PREDICATE_TIME: str(stamp), GPU_INDEX: ",".join(str(i) for i in shown)}


# ---- vGPU (HAMi, hami-core) --------------------------------------------------------------------------
@dataclass
class VGPUDevice:
    id: int
    uuid: str
    number: int
    memory: int
    type: str
    health: bool
    used_num: int = 0
    used_mem: int = 0
    used_core: int = 0
    pods: dict[str, tuple[int, int, str]] = field(default_factory=dict)   # uid -> (mem, cores, group key)


@dataclass
class ContainerRequest:
    nums: int
    mem: int
    mem_percentage: int
    cores: int


@dataclass
class VGPUChoice:
    """Per container, [(GPU index, memory, cores)]; the score of the choice under the policy."""
    containers: list[list[tuple[int, int, int]]]
    score: float


def _group_key(pod: Pod) -> str:
    for k in GROUP_KEYS:
        g = pod.annotations.get(k)
        if g:
            return f"{pod.namespace}/{g}"
    return ""


def vgpu_requests(pod: Pod) -> list[ContainerRequest]:
    """One request per app container that has vgpu-number or vgpu-memory in its limits."""
    got = pod.cache.get("deviceshare.vgpu")
    if got is not None:
        return list(got)
    out = []
    apps, _ = _container_resources(pod)
    for req, lim in apps:
        if VGPU_NUMBER in lim:
            n = lim[VGPU_NUMBER]
        elif VGPU_MEMORY in lim:
            n = 1
        else:
            continue
        mem = lim.get(VGPU_MEMORY, req.get(VGPU_MEMORY, 0))
        pct = 100 if mem == 0 else 101        # 101: no percentage given (the default config names none)
        cores = lim.get(VGPU_CORES, req.get(VGPU_CORES, 0))
        out.append(ContainerRequest(n, mem, pct, cores))
    pod.cache["deviceshare.vgpu"] = tuple(out)
    return out


def has_vgpu_request(pod: Pod) -> bool:
    apps, _ = _container_resources(pod)
    return any(VGPU_MEMORY in lim or VGPU_NUMBER in lim for _, lim in apps)


def _type_allowed(annotations: dict[str, str], card: str) -> bool:
    card = card.upper()
    use = annotations.get(USE_GPU_TYPE)
    if use is not None:
        return any(v.upper() in card for v in use.split(","))
    nouse = annotations.get(NOUSE_GPU_TYPE)
    if nouse is not None:
        return not any(v.upper() in card for v in nouse.split(","))
    return True


def decode_pod_devices(value: str) -> list[list[tuple[str, int, int]]]:
    """`volcano.sh/vgpu-ids-new`: per container [(uuid, memory, cores)]."""
    out = []
    for part in value.split(";") if value else []:
        devs = []
        for d in part.split(":"):
            items = d.split(",")
            if len(items) < 4:
                continue
            try:
                devs.append((items[0], int(items[2]), int(items[3])))
            except ValueError:
                continue
        out.append(devs)
    return out


class VGPUDevices:
    kind = VGPU

    def __init__(self, node: str, gpus: list[VGPUDevice], mode: str):
        self.node = node
        self.gpus = {g.id: g for g in gpus}
        self.mode = mode

    @classmethod
    def from_node(cls, node: Node) -> VGPUDevices | None:
        reg = _annotations(node).get(VGPU_REGISTER)
        if reg is None:
            return None
        if any(not node.allocatable.get(r) for r in (VGPU_NUMBER, VGPU_CORES, VGPU_MEMORY)):
            return None
        if ":" not in reg:
            return None
        gpus = []
        for index, entry in enumerate(reg.split(":")):
            if "," not in entry:
                continue
            items = entry.split(",")
            if len(items) < 6:
                return None          # Volcano drops the whole node's devices

            def num(s: str) -> int:
                try:
                    return int(s)
                except ValueError:
                    return 0
            gpus.append(VGPUDevice(index, items[0], num(items[1]), num(items[2]), items[3],
                                   items[4].lower() in ("1", "t", "true")))
        if not gpus:
            return None
        # "mig" needs the geometries of the device ConfigMap, which Caldera does not read: as in
        # Volcano without that ConfigMap, every node falls back to hami-core
        return cls(node.name, gpus, HAMI_CORE)

    # pods ------------------------------------------------------------------------------------
    def add(self, pod: Pod, containers: list[list[tuple[str, int, int]]]) -> None:
        """A pod holds what its vgpu-ids annotation says (a GPU counts a pod once)."""
        key = _group_key(pod)
        for devs in containers:
            for uuid, mem, cores in devs:
                for g in self.gpus.values():
                    if g.uuid and g.uuid in uuid:
                        if pod.uid not in g.pods:
                            g.pods[pod.uid] = (mem, cores, key)
                            g.used_num += 1
                            g.used_mem += mem
                            g.used_core += cores
                        break

    def add_choice(self, pod: Pod, choice: VGPUChoice) -> None:
        """Allocate: every chosen GPU counts (a GPU chosen twice, twice), as the pod map adds up."""
        key = _group_key(pod)
        for devs in choice.containers:
            for i, mem, cores in devs:
                g = self.gpus[i]
                g.used_num += 1
                g.used_mem += mem
                g.used_core += cores
                m, c, _ = g.pods.get(pod.uid, (0, 0, key))
                g.pods[pod.uid] = (m + mem, c + cores, key)

    def remove(self, pod: Pod) -> None:
        for g in self.gpus.values():
            got = g.pods.pop(pod.uid, None)
            if got is not None:
                g.used_num -= 1
                g.used_mem -= got[0]
                g.used_core -= got[1]

    # fit -------------------------------------------------------------------------------------
    def order(self, policy: str, used: dict[int, list[int]]) -> list[int]:
        ids = sorted(self.gpus)
        if policy == BINPACK:
            return sorted(ids, key=lambda i: (-used[i][1], i))
        if policy == SPREAD:
            return sorted(ids, key=lambda i: (used[i][0], i))
        return ids[::-1]

    def fit(self, pod: Pod, policy: str, excluded: frozenset[int] = frozenset()) -> tuple[VGPUChoice | None, str]:
        """The GPUs the pod would get and the score under `policy`, or (None, why); GPUs in
        `excluded` (reserved by an exclusivity rule the pod matches) take no new pod."""
        mode = pod.annotations.get(VGPU_MODE)
        if mode is not None and mode != self.mode:
            return None, f"pod required sharing mode {mode} is not the same as the node mode {self.mode}"
        reqs = vgpu_requests(pod)
        # tentative usage: [num, mem, cores] per GPU
        used = {i: [g.used_num, g.used_mem, g.used_core] for i, g in self.gpus.items()}
        group = _group_key(pod) if pod.annotations.get(VGPU_GROUP_POLICY) == SPREAD else ""
        score = 0.0
        chosen: list[list[tuple[int, int, int]]] = []
        for r in reqs:
            if r.nums > len(self.gpus):
                return None, f"no enough gpu cards on node {self.node}"
            want = r.nums
            devs: list[tuple[int, int, int]] = []
            for i in self.order(policy, used):
                g = self.gpus[i]
                u = used[i]
                if g.number <= u[0] or i in excluded:
                    continue
                if group and any(k == group and (m > 0 or c > 0) for m, c, k in g.pods.values()):
                    continue
                mem = int(g.memory * r.mem_percentage / 100.0) if r.mem_percentage != 101 else r.mem
                if g.memory - u[1] < mem:
                    continue
                if u[2] + r.cores > 100:
                    continue
                if r.cores == 100 and u[0] > 0:
                    continue
                if u[2] == 100 and r.cores == 0:
                    continue
                if NVIDIA not in g.type or not _type_allowed(pod.annotations, g.type):
                    continue
                u[0] += 1
                u[1] += mem
                u[2] += r.cores
                if want > 0:
                    want -= 1
                    devs.append((i, mem, r.cores))
                    # scored after the GPU took the request (so spread, "no pod yet", never scores)
                    if policy == BINPACK:
                        score += 100 * (u[1] / g.memory) if g.memory else 0.0
                    elif policy == SPREAD and u[0] == 0:
                        score += 100
                if want == 0:
                    break
            if want > 0:
                return None, "not enough gpu fitted on this node"
            chosen.append(devs)
        return VGPUChoice(chosen, score), ""

    def annotations(self, choice: VGPUChoice, stamp: int) -> dict[str, str]:
        ids = ";".join("".join(f"{self.gpus[i].uuid},{NVIDIA},{m},{c}:" for i, m, c in devs)
                       for devs in choice.containers)
        return {VGPU_NODE: self.node, VGPU_TIME: str(stamp), VGPU_IDS: ids, VGPU_TO_ALLOCATE: ids,
                VGPU_BIND_PHASE: "allocating", VGPU_BIND_TIME: str(stamp)}


def devices_of_node(node: Node, gpushare: bool, vgpu: bool) -> dict[str, Any]:
    """Volcano's NodeInfo.Others for one node: device kind -> devices (None: the node has none)."""
    out: dict[str, Any] = {}
    if gpushare:
        out[GPUSHARE] = GpuShareDevices.from_node(node)
    if vgpu:
        out[VGPU] = VGPUDevices.from_node(node)
    return out

