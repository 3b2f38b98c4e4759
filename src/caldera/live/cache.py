"""The live scheduler's view of the cluster, kept in step with the informers' events.

Informer threads call the on_* handlers; the scheduling loop reads under the same lock. Nodes
and assigned pods go into the engine's columnar NodeTable incrementally (add/update/remove a
node row, add/remove a pod), never rebuilt per pod; unassigned pods of our scheduler names go to
the SchedulingQueue, and cluster events move the unschedulable pods they may help, as kube's
event handlers do. Pods the scheduler has bound but the watch has not yet shown bound are
*assumed*: they stay in the table and out of the queue until the API confirms or the bind fails.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

from ..api.gputopology import node_annotation as gpu_topology_annotation
from ..api.objects import Node, Pod, PriorityClass
from ..api.pdb import PodDisruptionBudget
from ..api.resourcequota import ResourceQuota
from ..api.workloads import Workloads, parse_workload
from ..batch.api.numatopology import NumatopoInfo, parse_numatopology
from ..config import featuregates
from ..errors import InputError
from ..framework.queue.events import node_update_events
from ..plugins.gangscheduling.plugin import matching_workload_reference
from ..state.devices import PIN as GPU_PIN
from ..state.nodetable import ALLOCATABLE, LABELS, NodeTable
from .apicache import ApiObjects


class ClusterCache:
    def __init__(self, scheduler_names: Iterable[str], queue=None, on_warning: Callable[[str], None] | None = None):
        self.lock = threading.RLock()
        self.table = NodeTable()
        self.queue = queue
        self.scheduler_names = set(scheduler_names)
        self.pods: dict[str, Pod] = {}             # every pod the informer knows, by ns/name
        self.assumed: dict[str, str] = {}          # pod key -> node it was bound to by us
        self.unplaced: dict[str, set[str]] = {}    # node name -> keys of pods on it the table lacks
        self.priority_classes: dict[str, PriorityClass] = {}
        self.podgroups: dict[str, dict] = {}       # raw PodGroup objects, ns/name
        self.queues: dict[str, dict] = {}          # raw Queue objects, name
        self.hypernodes: dict[str, dict] = {}      # raw HyperNode objects (checked), name
        # policy/v1 PDBs and v1 ResourceQuotas, ns/name (informed only for a Volcano conf with the
        # pdb / resourcequota plugin)
        self.pdbs: dict[str, PodDisruptionBudget] = {}
        self.resource_quotas: dict[str, ResourceQuota] = {}
        # Namespaces, Services, RCs, ReplicaSets, StatefulSets (informed for kube profiles only):
        # the listers InterPodAffinity and PodTopologySpread read (the kube loop's scheduler.workloads)
        self.workloads = Workloads()
        # Numatopologies (numa-aware), by node name, as parsed (Volcano's NodeInfo.NumaInfo), and
        # how each changed since the batch loop last read it (NumaChgFlag: NUMA_MORE / NUMA_LESS)
        self.numatopologies: dict[str, NumatopoInfo] = {}
        self.numa_changes: dict[str, str] = {}
        self.warn = on_warning or (lambda m: None)
        # resource.k8s.io and storage objects (informed for kube profiles whose plugins read them):
        # Scheduler.dra and Scheduler.storage, with kube's assume-cache rules (apicache.py)
        self.objects = ApiObjects(self)
        self.seq = 0
        self.changed = threading.Event()           # set on every event (the batch loop waits on it)

    # ---- helpers ------------------------------------------------------------------------
    def responsible(self, pod: Pod) -> bool:
        return pod.scheduler_name in self.scheduler_names

    def _pod(self, raw: dict) -> Pod | None:
        self.seq += 1
        try:
            pod = Pod(raw, self.seq)
        except InputError as e:
            meta = raw.get("metadata") or {}
            self.warn(f"Pod {meta.get('namespace')}/{meta.get('name')}: {e}; ignored")
            return None
        if not pod.explicit_priority and pod.priority_class_name in self.priority_classes:
            pod.priority = self.priority_classes[pod.priority_class_name].value
        return pod

    def _node(self, raw: dict) -> Node | None:
        try:
            return Node(raw)
        except InputError as e:
            self.warn(f"Node {(raw.get('metadata') or {}).get('name')}: {e}; ignored")
            return None

    def _pending(self, pod: Pod) -> bool:
        return not pod.node_name and not pod.finished and not pod.terminating

    def _occupies(self, pod: Pod) -> bool:
        return bool(pod.node_name) and not pod.finished

    # ---- nodes ----------------------------------------------------------------------------
    def on_node_add(self, raw: dict) -> None:
        self.on_node_add_many([raw])

    def on_node_add_many(self, raws: list[dict]) -> None:
        """Nodes added (the informer's initial LIST delivers them all at once): new rows are
        appended to the table in one step, O(N) rather than O(N) per node; a node already in the
        table is an update."""
        with self.lock:
            fresh: dict[str, Node] = {}
            for raw in raws:
                node = self._node(raw)
                if node is None:
                    continue
                if node.name in self.table.index:
                    self.on_node_update(None, raw)
                else:
                    fresh[node.name] = node         # listed twice: the later object wins
            if not fresh:
                return
            self.table.add_nodes(fresh.values())
            self.objects.nodes_moved()
            for node in fresh.values():
                for key in self.unplaced.pop(node.name, ()):   # pods the watch delivered before their node
                    p = self.pods.get(key)
                    if p is not None and p.node_name == node.name and self._occupies(p) \
                            and self.table.node_of(key) is None:
                        self.table.add_pod(p, self.table.index[node.name])
                if self.queue is not None:
                    self.queue.move_all_to_active_or_backoff("Node/Add", None, node)
            self.changed.set()

    def on_node_update(self, old_raw, raw: dict) -> None:
        """A Node changed. One that changes nothing the scheduler reads (a kubelet heartbeat)
        only replaces the stored object; otherwise the row's columns are updated in place and
        the queue hears the Node/UpdateXxx events of the change. A change of the
        caldera.dev/gpu-topology annotation alone re-reads that row's GPU topology."""
        with self.lock:
            node = self._node(raw)
            if node is None:
                return
            i = self.table.index.get(node.name)
            if i is None:
                return self.on_node_add(raw)
            old = self.table.nodes[i]
            changed = self.table.update_node(node)
            if not changed & (ALLOCATABLE | LABELS) and \
                    gpu_topology_annotation(old) != gpu_topology_annotation(node):
                # caldera.dev/gpu-topology alone changed: the row's GPU links (island/NUMA columns)
                # anew; the GPUs the node's pods hold stay where they are
                self.table.gpu.node_changed(i, node, self.table.pods[i])
                self.changed.set()
            events = node_update_events(old, node) if self.queue is not None else []
            for ev in events:
                self.queue.move_all_to_active_or_backoff(ev, old, node)
            if changed or events:
                self.changed.set()

    def on_node_delete(self, raw: dict) -> None:
        with self.lock:
            name = (raw.get("metadata") or {}).get("name")
            if name in self.table.index:
                # its pods wait for the node to come back, as pods seen before their node do
                self.unplaced.setdefault(name, set()).update(self.table.pods[self.table.index[name]])
                self.table.remove_node(name)
                self.objects.nodes_moved()
            self.changed.set()

    # ---- pods -----------------------------------------------------------------------------
    def on_pod_add(self, raw: dict) -> None:
        with self.lock:
            pod = self._pod(raw)
            if pod is None:
                return
            prev = self.pods.get(pod.key)
            if prev is not None:
                return self._pod_update(prev, pod)
            self.pods[pod.key] = pod
            self._place(None, pod)
            self.changed.set()

    def on_pod_update(self, old_raw, raw: dict) -> None:
        with self.lock:
            pod = self._pod(raw)
            if pod is None:
                return
            prev = self.pods.get(pod.key)
            self.pods[pod.key] = pod
            if prev is None:
                self._place(None, pod)
            else:
                self._pod_update(prev, pod)
            self.changed.set()

    def on_pod_delete(self, raw: dict) -> None:
        with self.lock:
            meta = raw.get("metadata") or {}
            key = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
            prev = self.pods.pop(key, None)
            self.assumed.pop(key, None)
            if prev is not None and prev.node_name:
                self._unplace(prev.node_name, key)
            if self.table.node_of(key) is not None:
                gone = self.table.remove_pod(key)
                if self.queue is not None:
                    self.queue.assigned_pod_deleted(gone)
            elif prev is not None and self.queue is not None:
                self.queue.delete(prev)
            self.changed.set()

    def _pod_update(self, prev: Pod, pod: Pod) -> None:
        self.pods[pod.key] = pod
        i = self.table.node_of(pod.key)         # None: not in the table
        if pod.node_name:
            if pod.key in self.assumed and self.assumed.pop(pod.key) != pod.node_name:
                self.warn(f"Pod {pod.key}: bound to {pod.node_name}, not where Caldera bound it")
            if self.queue is not None and self.queue.where(pod.key) is not None:
                self.queue.delete(prev)
            if prev.node_name and (prev.node_name != pod.node_name or not self._occupies(pod)):
                self._unplace(prev.node_name, pod.key)
            if i is not None and not self._occupies(pod):
                gone = self.table.remove_pod(pod.key)
                if self.queue is not None:
                    self.queue.assigned_pod_deleted(gone)
            elif i is not None:
                old = self.table.remove_pod(pod.key)
                if GPU_PIN in old.cache:        # the GPUs it holds (chosen at Reserve) stay its own
                    pod.cache.setdefault(GPU_PIN, old.cache[GPU_PIN])
                j = self.table.index.get(pod.node_name, i)
                self.table.add_pod(pod, j)
                if self.queue is not None:
                    self.queue.assigned_pod_updated(prev, pod)
            elif self._occupies(pod):
                self._place(prev, pod)
            return
        if pod.key in self.assumed:
            return                                  # our bind is in flight: the watch lags
        if self.queue is None or not self.responsible(pod):
            return
        if self._pending(pod):
            if self.queue.where(pod.key) is None:
                self.queue.add(pod)
            else:
                self.queue.update(prev, pod)
        else:
            self.queue.delete(prev)

    def _unplace(self, node: str, key: str) -> None:
        """Forget a pod waiting for its node (deleted, or no longer occupying it)."""
        waiting = self.unplaced.get(node)
        if waiting is not None:
            waiting.discard(key)
            if not waiting:
                del self.unplaced[node]

    def _place(self, prev: Pod | None, pod: Pod) -> None:
        if self._occupies(pod):
            i = self.table.index.get(pod.node_name)
            if i is None:
                self.unplaced.setdefault(pod.node_name, set()).add(pod.key)
            elif self.table.node_of(pod.key) is None:
                self.table.add_pod(pod, i)
                if self.queue is not None:
                    self.queue.assigned_pod_added(pod)
        elif self.queue is not None and self.responsible(pod) and self._pending(pod) \
                and pod.key not in self.assumed:
            self.queue.add(pod)
            if featuregates.enabled(featuregates.GANG_SCHEDULING):     # kube's addPodToSchedulingQueue
                self.queue.move_all_to_active_or_backoff(
                    "UnschedulablePod/Add", None, pod, pre_check=lambda p: matching_workload_reference(p, pod))

    # ---- assume / forget (the scheduling loop and the binder) ------------------------------
    def assume(self, pod: Pod, node: str) -> None:
        """The engine put `pod` on `node` in the table; remember it until the watch confirms."""
        with self.lock:
            self.assumed[pod.key] = node

    def forget(self, pod: Pod) -> None:
        """A bind failed: take the pod off its node again."""
        with self.lock:
            self.assumed.pop(pod.key, None)
            if self.table.node_of(pod.key) is not None:
                self.table.remove_pod(pod.key)
            pod.node_name = ""
            if self.queue is not None:
                self.queue.move_all_to_active_or_backoff("Pod/Delete", pod, None)
            self.changed.set()

    # ---- other kinds ----------------------------------------------------------------------
    def on_priority_class(self, raw: dict, deleted: bool = False) -> None:
        with self.lock:
            try:
                pc = PriorityClass(raw)
            except InputError as e:
                self.warn(f"PriorityClass: {e}; ignored")
                return
            if deleted:
                self.priority_classes.pop(pc.name, None)
            else:
                self.priority_classes[pc.name] = pc

    def on_podgroup(self, raw: dict, deleted: bool = False) -> None:
        meta = raw.get("metadata") or {}
        key = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
        with self.lock:
            if deleted:
                self.podgroups.pop(key, None)
            else:
                self.podgroups[key] = raw
            self.changed.set()

    def on_queue(self, raw: dict, deleted: bool = False) -> None:
        name = (raw.get("metadata") or {}).get("name") or ""
        with self.lock:
            if deleted:
                self.queues.pop(name, None)
            else:
                self.queues[name] = raw
            self.changed.set()

    def on_hypernode(self, raw: dict, deleted: bool = False) -> None:
        """A HyperNode (topology.volcano.sh/v1alpha1): one that does not parse is left out of the
        sessions with a warning, as Volcano's cache skips what it cannot use."""
        from ..batch.api.hypernode import parse_hypernode
        name = (raw.get("metadata") or {}).get("name") or ""
        with self.lock:
            if deleted:
                self.hypernodes.pop(name, None)
            else:
                raw = {**raw, "kind": "HyperNode"}       # (list items may come without their kind)
                try:
                    parse_hypernode(raw)
                    self.hypernodes[name] = raw
                except InputError as e:
                    self.hypernodes.pop(name, None)
                    self.warn(f"HyperNode {name}: {e}; ignored")
            self.changed.set()

    def on_numatopology(self, raw: dict, deleted: bool = False) -> None:
        """A Numatopology (nodeinfo.volcano.sh/v1alpha1), as Volcano's cache takes it (addNumaInfo /
        deleteNumaInfo): the new object replaces the old, flagged NUMA_MORE when it is the first or
        `numa_more` holds, else NUMA_LESS; the batch loop merges it into the CPUs it keeps
        (live/loop.py BatchLoop.snapshot). One that does not parse is dropped with a warning."""
        name = str((raw.get("metadata") or {}).get("name") or "")
        with self.lock:
            info = None
            if not deleted:
                try:
                    info = parse_numatopology(raw)
                except InputError as e:
                    self.warn(f"Numatopology {name}: {e}; ignored")
            old = self.numatopologies.pop(name, None)
            self.numa_changes.pop(name, None)
            if info is not None:
                self.numatopologies[name] = info
                self.numa_changes[name] = NUMA_MORE if old is None or numa_more(old, info) else NUMA_LESS
            self.changed.set()

    def on_pdb(self, raw: dict, deleted: bool = False) -> None:
        meta = raw.get("metadata") or {}
        key = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
        with self.lock:
            if deleted:
                self.pdbs.pop(key, None)
            else:
                try:
                    self.pdbs[key] = PodDisruptionBudget(raw)
                except InputError as e:
                    self.pdbs.pop(key, None)
                    self.warn(f"PodDisruptionBudget {key}: {e}; ignored")
            self.changed.set()

    def workload_handlers(self, kind: str):
        """(on_add, on_update, on_delete) for an informer of `kind` (Namespace, Service,
        ReplicationController, ReplicaSet, StatefulSet). An object that does not parse is left
        out with a warning, as if it did not exist. No queue moves: kube-scheduler registers no
        cluster event for these kinds with InterPodAffinity or PodTopologySpread."""
        def on(raw: dict, deleted: bool = False) -> None:
            meta = raw.get("metadata") or {}
            name = str(meta.get("name") or "")
            ns = "" if kind == "Namespace" else str(meta.get("namespace") or "default")
            with self.lock:
                if not deleted:
                    try:
                        self.workloads.add(parse_workload(kind, raw))
                        return
                    except InputError as e:
                        self.warn(f"{kind} {f'{ns}/' if ns else ''}{name}: {e}; ignored")
                self.workloads.remove(kind, ns, name)
        return on, (lambda old, new: on(new)), (lambda old: on(old, deleted=True))

    def on_resource_quota(self, raw: dict, deleted: bool = False) -> None:
        meta = raw.get("metadata") or {}
        key = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
        with self.lock:
            if deleted:
                self.resource_quotas.pop(key, None)
            else:
                try:
                    self.resource_quotas[key] = ResourceQuota(raw)
                except InputError as e:
                    self.resource_quotas.pop(key, None)
                    self.warn(f"ResourceQuota {key}: {e}; ignored")
            self.changed.set()


NUMA_MORE, NUMA_LESS = "more", "less"


def numa_more(old: NumatopoInfo, new: NumatopoInfo) -> bool:
    """NumatopoInfo.Compare: True when some resource of `old` has no more free ids than in `new`
    (the kubelet's resources grew or stayed; a resource `new` lacks counts as empty there)."""
    for res, r in old.numa_res.items():
        got = new.numa_res.get(res)
        if len(r.allocatable) <= (len(got.allocatable) if got is not None else 0):
            return True
    return False
