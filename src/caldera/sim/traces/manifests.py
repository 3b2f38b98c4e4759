"""Workloads written as Kubernetes and Volcano manifests: pending Pods, Volcano Jobs (expanded
into their PodGroup and pods), PodGroups, Queues, HyperNodes, PriorityClasses, Nodes as node
events, and the storage (PV, PVC, StorageClass, CSI) and DRA (resource.k8s.io/v1) objects the
kube configurations read, decoded as `caldera schedule` decodes them (a PVC annotated
simulation.caldera/remove is deleted then)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...api.dra import KINDS as DRA_KINDS
from ...api.dra import add_object as add_dra_object
from ...api.dra import pod_claim_refs
from ...api.objects import DEFAULT_SCHEDULER, Node, PriorityClass, check_priority_class, read_meta
from ...api.pdb import PodDisruptionBudget
from ...api.podgroup import API_VERSION as PODGROUP_API_VERSION
from ...api.podgroup import PodGroup as XPodGroup
from ...api.reader import read_documents
from ...api.resourcequota import ResourceQuota
from ...api.storage import STORAGE_KINDS, add_storage_object
from ...api.validation import already_exists
from ...api.workload import API_VERSION as GANG_WORKLOAD_API_VERSION
from ...api.workload import RESOURCE as GANG_WORKLOAD_RESOURCE
from ...api.workload import parse_workload as parse_gang_workload
from ...batch.api.hypernode import parse_hypernode
from ...batch.api.objects import PodGroup, Queue
from ...batch.controller.vcjob import expand_job
from ...errors import InputError
from ..model import ARRIVAL_ANNOTATION, DEFAULT_GRACE_SECONDS, DURATION_ANNOTATION, NodeEvent
from .builder import WorkloadBuilder
from .common import annotation_seconds

REMOVE_ANNOTATION = "simulation.caldera/remove"
CORDON_ANNOTATION = "simulation.caldera/cordon"
UNCORDON_ANNOTATION = "simulation.caldera/uncordon"
NODE_ACTIONS = {"cordon": CORDON_ANNOTATION, "uncordon": UNCORDON_ANNOTATION, "remove": REMOVE_ANNOTATION}
# order of events at the same time: a node joins before it is cordoned, and leaves last
ACTION_ORDER = {"add": 0, "cordon": 1, "uncordon": 2, "remove": 3}

Document = tuple[str, int, dict[str, Any]]


def read_manifest_file(path: str) -> list[Document]:
    """The documents of one manifest file (or stdin), as `caldera schedule -f` reads them."""
    return read_documents([path])


def describe(doc: dict[str, Any], index: int) -> str:
    """How an error names a document: its kind and namespace/name, else its index."""
    kind = doc.get("kind") or "object"
    meta = _mapping(doc, "metadata")
    name, ns = meta.get("name"), meta.get("namespace")
    return f"{kind} {ns + '/' if ns else ''}{name}" if name else f"document {index} ({kind})"


def read_priority_classes(docs: list[Document]) -> dict[str, PriorityClass]:
    """The PriorityClasses among the documents, by name, with the rules `caldera schedule` applies
    (api.objects.check_priority_class: scheduling.k8s.io/v1 only, no duplicate, one globalDefault)."""
    out: dict[str, PriorityClass] = {}
    for source, index, doc in docs:
        if doc.get("kind") == "PriorityClass":
            try:
                pc = PriorityClass(doc)
                check_priority_class(pc, str(doc.get("apiVersion") or ""), out)
            except InputError as e:
                raise InputError(e.problem, source, describe(doc, index)) from None
            out[pc.name] = pc
    return out


def add_manifests(b: WorkloadBuilder, docs: list[Document], pcs: Mapping[str, PriorityClass]) -> None:
    """Add every document to the workload; errors name the file and the object."""
    for source, index, doc in docs:
        what = describe(doc, index)
        try:
            _add_document(b, f"{source}: {what}", source, doc, pcs)
        except InputError as e:
            raise InputError(e.problem, source, what) from None


def _add_document(b: WorkloadBuilder, where: str, source: str, doc: dict[str, Any],
                  pcs: Mapping[str, PriorityClass]) -> None:
    """Add one document; `where` ("file: Kind name") prefixes warnings."""
    kind, api = doc.get("kind"), str(doc.get("apiVersion") or "")
    if kind == "Pod":
        _add_pod(b, where, doc)
    elif kind == "Node":
        _add_node_events(b, doc)
    elif kind == "PriorityClass":
        pass                                    # read before the pods (read_priority_classes)
    elif kind in ("PodGroup", "Queue") and "volcano.sh" in api:
        _add_volcano_object(b, source, doc)
    elif kind == "PodGroup" and api == PODGROUP_API_VERSION:     # Coscheduling's (kube configurations)
        pg = XPodGroup(doc)
        if pg.key in b.workload.pod_groups:
            raise InputError(f'podgroups.scheduling.x-k8s.io "{pg.name}" already exists')
        b.workload.pod_groups[pg.key] = pg
    elif kind == "Job" and api.startswith("batch.volcano.sh"):
        _add_volcano_job(b, source, doc, pcs)
    elif kind == "HyperNode" and api.startswith("topology.volcano.sh"):
        parse_hypernode(doc)                    # (the tree is checked with the cluster's nodes)
        b.add_volcano(source, doc)
    elif kind == "PodDisruptionBudget" and api == "policy/v1":
        b.add_pdb(where, PodDisruptionBudget(doc))
    elif kind == "ResourceQuota" and api == "v1":
        b.add_resource_quota(where, ResourceQuota(doc))
    elif (kind, api) in STORAGE_KINDS:
        _add_storage(b, str(kind), doc)
    elif kind == "Workload" and api == GANG_WORKLOAD_API_VERSION:
        gw = parse_gang_workload(doc)
        if gw.key in b.workload.gang_workloads:
            raise InputError(already_exists(GANG_WORKLOAD_RESOURCE, gw.name))
        b.workload.gang_workloads[gw.key] = gw
    elif kind in DRA_KINDS and api.startswith("resource.k8s.io/"):
        add_dra_object(b.workload.dra, doc, source)
    else:
        b.warn(f"{where}: kind {kind!r} ({api or 'no apiVersion'}) is not used by the simulation; skipped")


def _add_storage(b: WorkloadBuilder, kind: str, doc: dict[str, Any]) -> None:
    """A storage object (api/storage.py), there from t = 0; a PVC may carry
    simulation.caldera/remove: it is deleted at that time (docs/simulate.md "DRA and volumes")."""
    st = b.workload.storage
    add_storage_object(st, kind, doc)
    ann = _annotations(doc)
    for key in (ARRIVAL_ANNOTATION, DURATION_ANNOTATION, CORDON_ANNOTATION, UNCORDON_ANNOTATION):
        if key in ann:
            raise InputError(f"metadata.annotations[{key}]: storage objects are there from the start; only a "
                             f"PersistentVolumeClaim may carry {REMOVE_ANNOTATION} (when it is deleted)")
    t = annotation_seconds(ann, REMOVE_ANNOTATION)
    if t is None:
        return
    if kind != "PersistentVolumeClaim":
        raise InputError(f"metadata.annotations[{REMOVE_ANNOTATION}]: only a PersistentVolumeClaim can be "
                         "deleted during the simulation")
    meta = _mapping(doc, "metadata")
    b.workload.pvc_deletions.append((t, f"{meta.get('namespace') or 'default'}/{meta.get('name')}"))


def _mapping(parent: dict[str, Any], key: str) -> dict[str, Any]:
    """parent[key] when it is a mapping, else {} (the object parsers report a wrong type)."""
    v = parent.get(key)
    return v if isinstance(v, dict) else {}


def _annotations(doc: dict[str, Any]) -> dict[str, Any]:
    return _mapping(_mapping(doc, "metadata"), "annotations")


def _grace(spec: dict[str, Any]) -> float:
    """spec.terminationGracePeriodSeconds (default 30)."""
    v = spec.get("terminationGracePeriodSeconds")
    if v is None:
        return DEFAULT_GRACE_SECONDS
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise InputError(f"spec.terminationGracePeriodSeconds: must be an integer >= 0, got {v!r}")
    return float(v)


def _check_pending(spec: dict[str, Any]) -> None:
    node = spec.get("nodeName")
    if node:
        raise InputError(f"spec.nodeName: the pod is bound to node {node!r}, but a workload holds pods still to "
                         "be scheduled; put running pods in --cluster, or remove spec.nodeName")


def _add_pod(b: WorkloadBuilder, where: str, doc: dict[str, Any]) -> None:
    phase = _mapping(doc, "status").get("phase")
    if phase in ("Succeeded", "Failed"):
        b.warn(f"{where}: status.phase is {phase}, a finished pod; skipped")
        return
    spec = _mapping(doc, "spec")
    _check_pending(spec)
    if spec.get("resourceClaims"):
        pod_claim_refs(doc, "")        # spec.resourceClaims, checked as `caldera schedule` checks them
    if spec is doc.get("spec") and not spec.get("schedulerName") and b.scheduler != DEFAULT_SCHEDULER:
        # default_scheduler: for pods that name none (a new spec: a read pod's may be shared, api/reader.py)
        spec = doc["spec"] = {**spec, "schedulerName": b.scheduler}
    ann = _annotations(doc)
    arrival = annotation_seconds(ann, ARRIVAL_ANNOTATION)
    b.add_pod(doc, arrival or 0.0, annotation_seconds(ann, DURATION_ANNOTATION), _grace(spec), validate=True)


def _add_volcano_object(b: WorkloadBuilder, source: str, doc: dict[str, Any]) -> None:
    """A PodGroup or Queue: validated, then kept as a manifest for the Volcano replay."""
    ann = _annotations(doc)
    annotation_seconds(ann, ARRIVAL_ANNOTATION)
    annotation_seconds(ann, DURATION_ANNOTATION)
    if doc.get("kind") == "PodGroup":
        PodGroup(doc)
    else:
        Queue(doc)
    b.add_volcano(source, doc)


def _add_volcano_job(b: WorkloadBuilder, source: str, doc: dict[str, Any],
                     pcs: Mapping[str, PriorityClass]) -> None:
    """A Volcano Job: its PodGroup and pods, as the job controller creates them. The pods take
    the job's arrival and duration unless their task template sets its own."""
    ann = _annotations(doc)
    arrival = annotation_seconds(ann, ARRIVAL_ANNOTATION) or 0.0
    duration = annotation_seconds(ann, DURATION_ANNOTATION)
    podgroup, pods = expand_job(doc, {name: pc.value for name, pc in pcs.items()})
    b.add_volcano(source, podgroup)
    for pod in pods:
        try:
            _check_pending(pod["spec"])
            pann = pod["metadata"]["annotations"]
            pod_arrival = annotation_seconds(pann, ARRIVAL_ANNOTATION)
            pod_duration = annotation_seconds(pann, DURATION_ANNOTATION) if DURATION_ANNOTATION in pann else duration
            b.add_pod(pod, arrival if pod_arrival is None else pod_arrival, pod_duration, _grace(pod["spec"]),
                      validate=True)
        except InputError as e:
            raise InputError(f"pod {pod['metadata']['name']}: {e.problem}") from None


def sort_node_events(events: list[NodeEvent]) -> None:
    """Order node events by time; at one time: add, cordon, uncordon, remove (stable otherwise)."""
    events.sort(key=lambda e: (e.time, ACTION_ORDER[e.action]))


def _add_node_events(b: WorkloadBuilder, doc: dict[str, Any]) -> None:
    """A Node with simulation.caldera/arrival joins then; remove/cordon/uncordon act on a node by name."""
    meta, name = read_meta(doc, "Node")
    ann = _mapping(meta, "annotations")
    arrival = annotation_seconds(ann, ARRIVAL_ANNOTATION)
    times = {action: annotation_seconds(ann, key) for action, key in NODE_ACTIONS.items()}
    if arrival is None and all(t is None for t in times.values()):
        raise InputError(f"a Node in the workload is a node event: annotate it with {ARRIVAL_ANNOTATION} (when it "
                         f"joins), {REMOVE_ANNOTATION}, {CORDON_ANNOTATION} or {UNCORDON_ANNOTATION} (seconds); "
                         "put the nodes the simulation starts with in --cluster")
    events = b.workload.node_events
    if arrival is not None:
        if name in b.added_nodes:
            raise InputError(f"duplicate Node {name!r}: it already joins earlier in the workload")
        b.added_nodes.add(name)
        events.append(NodeEvent(arrival, "add", name, Node(doc)))
    for action, t in times.items():
        if t is None:
            continue
        if arrival is not None and t < arrival:
            raise InputError(f"metadata.annotations[{NODE_ACTIONS[action]}]: {t:g} is before the node joins "
                             f"({ARRIVAL_ANNOTATION} {arrival:g})")
        events.append(NodeEvent(t, action, name))
