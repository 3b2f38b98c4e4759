"""Decode the documents `reader` reads into a Cluster: Nodes, Pods, PriorityClasses, PDBs, and
the Volcano objects the batch scheduler consumes. Every error names the file, the object and
the problem.
"""
from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

from ..errors import InputError
from .dra import KINDS as DRA_KINDS
from .dra import DraObjects, pod_claim_refs
from .dra import add_object as add_dra_object
from .gputopology import check_topology
from .objects import SYSTEM_PRIORITY_CLASSES, Node, Pod, PriorityClass, check_priority_class
from .output import KIND_NOT_USED, Ignored, object_name
from .pdb import PodDisruptionBudget
from .podgroup import API_VERSION as PODGROUP_API_VERSION
from .podgroup import PodGroup
from .reader import MANIFEST_SUFFIXES, read_documents
from .resourcequota import ResourceQuota
from .storage import STORAGE_KINDS, Storage, add_storage_object, resolve_default_class
from .validation import already_exists
from .workload import API_VERSION as GANG_WORKLOAD_API_VERSION
from .workload import RESOURCE as GANG_WORKLOAD_RESOURCE
from .workload import Workload as GangWorkload
from .workload import check_workload_ref
from .workload import parse_workload as parse_gang_workload
from .workloads import KINDS as WORKLOAD_KINDS
from .workloads import Workloads, parse_workload

# the category of the `ignored` entries of Namespaces, Services, RCs, RSs and StatefulSets: only
# the kube pass reads them (for InterPodAffinity and PodTopologySpread) and drops these entries
KUBE_PROFILES_ONLY = "read only by kube-scheduler profiles"

__all__ = ["KUBE_PROFILES_ONLY", "MANIFEST_SUFFIXES", "Cluster", "load_cluster", "read_documents", "resolve_priorities"]


@dataclass
class Cluster:
    nodes: list[Node] = field(default_factory=list)
    pods: list[Pod] = field(default_factory=list)
    priority_classes: dict[str, PriorityClass] = field(default_factory=dict)
    pdbs: list[PodDisruptionBudget] = field(default_factory=list)
    # v1 ResourceQuotas: read (and validated) for Volcano's resourcequota plugin; also listed in
    # `ignored` (no kube-scheduler plugin reads them; the batch runner drops that entry when used)
    resource_quotas: list[ResourceQuota] = field(default_factory=list)
    other: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (source, doc) of kinds others consume
    # v1 PersistentVolumes/Claims, storage.k8s.io/v1 StorageClasses and CSI objects (api/storage.py)
    storage: Storage = field(default_factory=Storage)
    # scheduling.x-k8s.io PodGroups by namespace/name: read for the Coscheduling plugin; also listed
    # in `ignored` (the kube pass drops that entry when a profile enables Coscheduling)
    pod_groups: dict[str, PodGroup] = field(default_factory=dict)
    # scheduling.k8s.io/v1alpha1 Workloads by namespace/name (api/workload.py): read for the
    # GangScheduling plugin; also listed in `ignored` (`caldera schedule` drops that entry when used)
    gang_workloads: dict[str, GangWorkload] = field(default_factory=dict)
    # v1 Namespaces, Services, ReplicationControllers, apps/v1 ReplicaSets, StatefulSets (api/workloads.py)
    workloads: Workloads = field(default_factory=Workloads)
    # resource.k8s.io/v1 DeviceClasses, ResourceSlices, ResourceClaims, templates (api/dra.py)
    dra: DraObjects = field(default_factory=DraObjects)
    warnings: list[str] = field(default_factory=list)
    ignored: list[Ignored] = field(default_factory=list)    # objects read and not used, in input order
    # (kind, ns/name) -> (file, position in the input) of PDBs, Volcano objects and the like
    where: dict[tuple[str, str], tuple[str, int]] = field(default_factory=dict)
    documents: int = 0                                      # objects read (0: the input was empty)
    # the files as (first position, file) in input order: a pod's file is that of the last start
    # at or before its position (Pod.seq). Pods are not in `where`: an input may hold 150,000, and
    # where_of is asked about the few that are ignored (the index is made then).
    pod_files: list[tuple[int, str]] = field(default_factory=list)
    _pod_seq: tuple[int, dict[str, int]] = (-1, {})

    def where_of(self, kind: str, key: str) -> tuple[str, int]:
        """(file, position) of an object read from the input; ("<input>", after all) if unknown."""
        if kind == "Pod":
            if self._pod_seq[0] != len(self.pods):
                self._pod_seq = (len(self.pods), {p.key: p.seq for p in self.pods})
            seq = self._pod_seq[1].get(key)
            if seq is not None:
                k = bisect_right(self.pod_files, seq, key=lambda f: f[0]) - 1
                if k >= 0:
                    return self.pod_files[k][1], seq
        return self.where.get((kind, key), ("<input>", 1 << 62))


def _describe(doc: dict[str, Any], index: int) -> str:
    kind = doc.get("kind") or "object"
    meta = doc.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
    name = meta.get("name")
    ns = meta.get("namespace")
    if name:
        return f"{kind} {f'{ns}/' if ns else ''}{name}"
    return f"document {index} ({kind})"


_RESOURCE = {"Namespace": "namespaces", "Service": "services", "ReplicationController": "replicationcontrollers",
             "ReplicaSet": "replicasets.apps", "StatefulSet": "statefulsets.apps"}
CONSUMED_ELSEWHERE = {"PodGroup", "Queue", "Job", "HyperNode", "Numatopology"}


def load_cluster(paths: list[str], before: Iterable[tuple[str, int, dict[str, Any]]] = ()) -> Cluster:
    """The Cluster of the objects `before` ((source, index, object) triples, e.g. read from an API
    server by caldera.live.fromcluster) followed by those of the manifests at `paths`."""
    c = Cluster()
    seen_nodes: set[str] = set()
    seen_pods: set[str] = set()
    seen_pdbs: set[str] = set()
    seen_quotas: set[str] = set()
    seen_workloads: set[tuple[str, str]] = set()
    for seq, (source, idx, doc) in enumerate(chain(before, read_documents(paths))):
        c.documents += 1
        kind = doc.get("kind")
        api = str(doc.get("apiVersion") or "")
        try:
            if kind is not None and not isinstance(kind, str):
                raise InputError(f"kind: must be a string, got {type(kind).__name__}")
            if kind == "Node":
                n = Node(doc, validate=True)
                check_topology(n)          # caldera.dev/gpu-topology (docs/gpu.md "GPU links")
                if n.name in seen_nodes:
                    raise InputError(already_exists("nodes", n.name))
                seen_nodes.add(n.name)
                c.nodes.append(n)
            elif kind == "Pod":
                p = Pod(doc, seq, validate=True)
                if (doc.get("spec") or {}).get("resourceClaims"):
                    pod_claim_refs(doc, "")        # spec.resourceClaims (api/dra.py)
                check_workload_ref(p.spec)         # spec.workloadRef (api/workload.py)
                if p.key in seen_pods:
                    raise InputError(already_exists("pods", p.name))
                seen_pods.add(p.key)
                c.pods.append(p)
                if not c.pod_files or c.pod_files[-1][1] != source:
                    c.pod_files.append((seq, source))
            elif kind == "PriorityClass":
                pc = PriorityClass(doc)
                check_priority_class(pc, api, c.priority_classes)
                c.priority_classes[pc.name] = pc
            elif kind == "PodDisruptionBudget" and api == "policy/v1":
                pdb = PodDisruptionBudget(doc)
                if pdb.key in seen_pdbs:
                    raise InputError(already_exists("poddisruptionbudgets.policy", pdb.name))
                seen_pdbs.add(pdb.key)
                if not pdb.has_status:
                    c.warnings.append(f"{source}: {_describe(doc, idx)}: no status.disruptionsAllowed; 0 assumed "
                                      "(preemption reads only the status the disruption controller computes)")
                c.pdbs.append(pdb)
                c.where[("PodDisruptionBudget", pdb.key)] = (source, seq)
            elif kind == "PodDisruptionBudget":
                # as for a PriorityClass (check_priority_class): what the API server does not
                # serve is refused, not passed over
                since = " (not served since Kubernetes 1.25)" if api == "policy/v1beta1" else ""
                raise InputError(f'no matches for kind "PodDisruptionBudget" in version "{api}"{since}; '
                                 "use apiVersion policy/v1")
            elif kind == "ResourceQuota" and api == "v1":
                rq = ResourceQuota(doc)
                if rq.key in seen_quotas:
                    raise InputError(already_exists("resourcequotas", rq.name))
                seen_quotas.add(rq.key)
                c.resource_quotas.append(rq)
                c.where[("ResourceQuota", rq.key)] = (source, seq)
                c.ignored.append(Ignored(kind, object_name(doc), source,
                                         "kind ResourceQuota is not used by the scheduler", KIND_NOT_USED, seq))
            elif (kind, api) in WORKLOAD_KINDS:
                wl = parse_workload(str(kind), doc)
                wkey = wl.name if kind == "Namespace" else f"{getattr(wl, 'namespace', '')}/{wl.name}"
                if (str(kind), wkey) in seen_workloads:
                    raise InputError(already_exists(_RESOURCE[str(kind)], wl.name))
                seen_workloads.add((str(kind), wkey))
                c.workloads.add(wl)
                c.where[(str(kind), wkey)] = (source, seq)
                # listed as not used; the kube pass (engine/oneshot.py), which reads them, drops the entry
                c.ignored.append(Ignored(str(kind), object_name(doc), source,
                                         f"kind {kind} is read only by kube-scheduler profiles",
                                         KUBE_PROFILES_ONLY, seq))
            elif kind == "PodGroup" and api == PODGROUP_API_VERSION:
                pg = PodGroup(doc)
                if pg.key in c.pod_groups:
                    raise InputError(already_exists("podgroups.scheduling.x-k8s.io", pg.name))
                c.pod_groups[pg.key] = pg
                c.where[("PodGroup", pg.key)] = (source, seq)
                c.ignored.append(Ignored(kind, object_name(doc), source, f"kind PodGroup ({api}) is not used by "
                                         "the scheduler (the Coscheduling plugin reads it)", KIND_NOT_USED, seq))
            elif kind == "Workload" and api == GANG_WORKLOAD_API_VERSION:
                gw = parse_gang_workload(doc)
                if gw.key in c.gang_workloads:
                    raise InputError(already_exists(GANG_WORKLOAD_RESOURCE, gw.name))
                c.gang_workloads[gw.key] = gw
                c.where[("Workload", gw.key)] = (source, seq)
                c.ignored.append(Ignored(kind, object_name(doc), source, f"kind Workload ({api}) is not used by the "
                                         "scheduler (the GangScheduling plugin reads it; --feature-gates "
                                         "GenericWorkload=true,GangScheduling=true)", KIND_NOT_USED, seq))
            elif (kind, api) in STORAGE_KINDS:    # the volume plugins' (api/storage.py)
                add_storage_object(c.storage, str(kind), doc)
                c.ignored.append(Ignored(str(kind), object_name(doc), source,
                                         f"kind {kind} is read only by kube-scheduler profiles",
                                         KUBE_PROFILES_ONLY, seq))
            elif kind in DRA_KINDS and api.startswith("resource.k8s.io/"):   # DynamicResources'
                add_dra_object(c.dra, doc, source)
                c.ignored.append(Ignored(str(kind), object_name(doc), source,
                                         f"kind {kind} is read only by kube-scheduler profiles",
                                         KUBE_PROFILES_ONLY, seq))
            elif kind in CONSUMED_ELSEWHERE and "volcano.sh" in api:
                c.other.append((source, doc))
                c.where[(kind, object_name(doc))] = (source, seq)
            else:
                kname = str(kind or "(no kind)")
                what = f"{kname} ({api})" if kind in CONSUMED_ELSEWHERE else kname
                c.ignored.append(Ignored(kname, object_name(doc), source,
                                         f"kind {what} is not used by the scheduler", KIND_NOT_USED, seq))
        except InputError as e:
            raise InputError(e.problem, source, _describe(doc, idx)) from None
    _assume_namespaces(c)
    resolve_priorities(c)
    resolve_default_class(c.storage, c.storage.pvcs.values())
    return c


def _assume_namespaces(c: Cluster) -> None:
    """The namespaces of the input's pods exist (the API server's NamespaceLifecycle admission
    rejects a pod in a namespace that does not): one without a Namespace manifest gets only the
    label every namespace has, kubernetes.io/metadata.name (a warning when the input has Namespace
    objects, so the omission is likely an oversight)."""
    wl = c.workloads
    had_any = bool(wl.namespaces)
    missing = sorted({p.namespace for p in c.pods} - set(wl.namespaces))
    if missing and had_any:
        c.warnings.append(f"namespace(s) {', '.join(missing)} of the input's pods have no Namespace object in "
                          "the input; assumed to exist with only the label kubernetes.io/metadata.name")
    wl.assume_namespaces(missing)


def resolve_priorities(c: Cluster) -> None:
    """What the Priority admission plugin does: spec.priority from priorityClassName or globalDefault
    (of several globalDefault classes, which only a race lets a cluster have, the lowest value)."""
    default: PriorityClass | None = None
    for pc in c.priority_classes.values():
        if pc.global_default and (default is None or pc.value < default.value):
            default = pc
    for p in c.pods:
        if p.explicit_priority:
            if p.preemption_policy is None:
                cls = c.priority_classes.get(p.priority_class_name)
                p.preemption_policy = cls.preemption_policy if cls else "PreemptLowerPriority"
            continue
        name = p.priority_class_name
        if name:
            cls = c.priority_classes.get(name)
            if cls is not None:
                p.priority = cls.value
                p.preemption_policy = p.preemption_policy or cls.preemption_policy
            elif name in SYSTEM_PRIORITY_CLASSES:
                p.priority = SYSTEM_PRIORITY_CLASSES[name]
            else:
                c.warnings.append(f"Pod {p.key}: PriorityClass {name!r} not found; priority 0 assumed "
                                  "(the API server would reject this pod)")
        elif default is not None:
            p.priority = default.value
            p.preemption_policy = p.preemption_policy or default.preemption_policy
        p.preemption_policy = p.preemption_policy or "PreemptLowerPriority"
