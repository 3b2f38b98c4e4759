"""`caldera schedule --from-cluster`: read a live cluster's scheduling state through the API, read-only.

read_cluster(api, volcano=...) LISTs (paginated, limit/continue, as an informer's first LIST)
the objects a pass uses and returns them as (source, index, object) triples in the shape
manifests have (each item gets the List's kind and apiVersion back), so api.loader.load_cluster
decodes and validates them exactly as it does files, and `-f` files can be added on top:

  - always: Nodes, Pods (not terminal: `status.phase!=Succeeded,status.phase!=Failed`, the field
    selector of kube-scheduler's pod informer; the pod fields no one reads are dropped as when
    manifests are read), PriorityClasses, policy/v1 PodDisruptionBudgets (DefaultPreemption);
  - with a KubeSchedulerConfiguration, what only kube profiles read: Namespaces, Services,
    ReplicationControllers, ReplicaSets, StatefulSets (api/workloads.py), PersistentVolumes and
    Claims, StorageClasses, CSINodes, CSIDrivers, CSIStorageCapacities (api/storage.py),
    scheduling.x-k8s.io PodGroups (Coscheduling), resource.k8s.io/v1 DeviceClasses, ResourceSlices,
    ResourceClaims and ResourceClaimTemplates (DynamicResources; api/dra.py), and with
    `--feature-gates GenericWorkload=true` scheduling.k8s.io/v1alpha1 Workloads (GangScheduling);
  - with a volcano-scheduler.conf (`volcano=True`), what Volcano's session reads: v1
    ResourceQuotas and the Volcano CRDs' PodGroups, Queues (scheduling.volcano.sh/v1beta1),
    HyperNodes (topology.volcano.sh/v1alpha1) and Numatopologies (nodeinfo.volcano.sh/v1alpha1).
A 404 on a CRD's list (the CRD is not installed) or on an API group the server does not serve
(resource.k8s.io/v1 before kube 1.34, an alpha group) skips that kind; on a core kind it is an error.

Not read: Volcano Jobs (their controller has already made the PodGroup and Pods they stand for;
reading both would count those pods twice); with a kube configuration the Volcano objects and
ResourceQuotas, with a Volcano one the kube-only kinds (`-f` would list them as ignored; read from
a cluster they would only be noise in every answer).

Errors are one line (a CalderaError, exit 2): an unreachable server is ApiUnavailable from the
client; a refused LIST (401/403/other non-2xx) is a ConfigError naming the resource and the server.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..api.reader import _slim_pod as slim_pod
from ..config import featuregates
from ..errors import ConfigError
from .client import Api, ApiError
from .informer import POD_NON_TERMINAL

PAGE = 500      # items per LIST page (client-go's pager default)


@dataclass(frozen=True)
class Listed:
    kind: str
    api_version: str
    path: str               # the collection's path (all namespaces)
    optional: bool = False  # a CRD: 404 means not installed, skip it
    query: tuple[tuple[str, str], ...] = ()


KUBE = (
    Listed("Node", "v1", "/api/v1/nodes"),
    Listed("PriorityClass", "scheduling.k8s.io/v1", "/apis/scheduling.k8s.io/v1/priorityclasses"),
    Listed("PodDisruptionBudget", "policy/v1", "/apis/policy/v1/poddisruptionbudgets"),
)
# what only kube profiles read: namespaces and pod owners (InterPodAffinity's namespaceSelector,
# PodTopologySpread's system defaults; api/workloads.py), storage (the volume plugins;
# api/storage.py), scheduling.x-k8s.io PodGroups (Coscheduling; a CRD)
KUBE_ONLY = (
    Listed("Namespace", "v1", "/api/v1/namespaces"),
    Listed("Service", "v1", "/api/v1/services"),
    Listed("ReplicationController", "v1", "/api/v1/replicationcontrollers"),
    Listed("ReplicaSet", "apps/v1", "/apis/apps/v1/replicasets"),
    Listed("StatefulSet", "apps/v1", "/apis/apps/v1/statefulsets"),
    Listed("PersistentVolume", "v1", "/api/v1/persistentvolumes"),
    Listed("PersistentVolumeClaim", "v1", "/api/v1/persistentvolumeclaims"),
    Listed("StorageClass", "storage.k8s.io/v1", "/apis/storage.k8s.io/v1/storageclasses"),
    Listed("CSINode", "storage.k8s.io/v1", "/apis/storage.k8s.io/v1/csinodes"),
    Listed("CSIDriver", "storage.k8s.io/v1", "/apis/storage.k8s.io/v1/csidrivers"),
    Listed("CSIStorageCapacity", "storage.k8s.io/v1", "/apis/storage.k8s.io/v1/csistoragecapacities"),
    Listed("PodGroup", "scheduling.x-k8s.io/v1alpha1", "/apis/scheduling.x-k8s.io/v1alpha1/podgroups", True),
    # DynamicResources (api/dra.py); resource.k8s.io/v1 is served from kube 1.34 (older servers: skipped)
    Listed("DeviceClass", "resource.k8s.io/v1", "/apis/resource.k8s.io/v1/deviceclasses", True),
    Listed("ResourceSlice", "resource.k8s.io/v1", "/apis/resource.k8s.io/v1/resourceslices", True),
    Listed("ResourceClaim", "resource.k8s.io/v1", "/apis/resource.k8s.io/v1/resourceclaims", True),
    Listed("ResourceClaimTemplate", "resource.k8s.io/v1", "/apis/resource.k8s.io/v1/resourceclaimtemplates", True),
)
# kube's Workloads (GangScheduling; api/workload.py): an alpha API, read with --feature-gates GenericWorkload=true
# (a server that does not serve it: skipped)
GANG_WORKLOADS = Listed("Workload", "scheduling.k8s.io/v1alpha1", "/apis/scheduling.k8s.io/v1alpha1/workloads", True)
VOLCANO = (
    Listed("ResourceQuota", "v1", "/api/v1/resourcequotas"),
    Listed("Queue", "scheduling.volcano.sh/v1beta1", "/apis/scheduling.volcano.sh/v1beta1/queues", True),
    Listed("PodGroup", "scheduling.volcano.sh/v1beta1", "/apis/scheduling.volcano.sh/v1beta1/podgroups", True),
    Listed("HyperNode", "topology.volcano.sh/v1alpha1", "/apis/topology.volcano.sh/v1alpha1/hypernodes", True),
    Listed("Numatopology", "nodeinfo.volcano.sh/v1alpha1", "/apis/nodeinfo.volcano.sh/v1alpha1/numatopologies",
           True),
)
PODS = Listed("Pod", "v1", "/api/v1/pods", query=(("fieldSelector", POD_NON_TERMINAL),))


def source_name(api: Api) -> str:
    """How objects read from `api` are named in messages and in `ignored`: cluster <server URL>."""
    return f"cluster {api.host}"


def _auth_hint(e: ApiError) -> str:
    if e.status == 401:
        return "; the kubeconfig's credentials were not accepted: fix them or pass another --kubeconfig"
    if e.status == 403:
        return "; the kubeconfig's user needs get/list permission on it"
    return ""


def list_all(api: Api, what: Listed) -> list[dict[str, Any]] | None:
    """Every item of one collection, page by page; None when an optional CRD is not served."""
    items: list[dict[str, Any]] = []
    query: dict[str, Any] = dict(what.query)
    query["limit"] = PAGE
    while True:
        try:
            body = api.get(what.path, query)
        except ApiError as e:
            if e.status == 404 and what.optional:
                return None
            if e.status == 410 and query.get("continue"):
                # the continue token expired (compaction) mid-listing: start over, as client-go's pager
                items.clear()
                query.pop("continue", None)
                continue
            raise ConfigError(f"{source_name(api)}: cannot list {what.path}: {e}{_auth_hint(e)}") from None
        page = body.get("items") or []
        if not isinstance(page, list):
            raise ConfigError(f"{source_name(api)}: LIST {what.path} answered without an items list")
        items.extend(i for i in page if isinstance(i, dict))
        token = (body.get("metadata") or {}).get("continue")
        if not token:
            return items
        query["continue"] = token


def read_cluster(api: Api, *, volcano: bool = False) -> list[tuple[str, int, dict[str, Any]]]:
    """The cluster's objects as (source, index, object) for api.loader.load_cluster, in the order
    of iter_kinds: Nodes, PriorityClasses, PDBs; then what kube profiles read (workloads, storage,
    Coscheduling PodGroups) or, with `volcano`, what a Volcano session reads (ResourceQuotas and the
    Volcano CRDs' objects that are served); the Pods last."""
    source = source_name(api)
    try:
        api.check()                  # an unreachable server: one line (ApiUnavailable) before any LIST
    except ApiError as e:
        raise ConfigError(f"{source}: GET /version: {e}{_auth_hint(e)}") from None
    out: list[tuple[str, int, dict[str, Any]]] = []
    for what in iter_kinds(volcano):
        items = list_all(api, what)
        if items is None:
            continue
        for obj in items:
            obj["kind"] = what.kind          # list items come without them
            obj["apiVersion"] = what.api_version
            if what is PODS:
                slim_pod(obj)                # what no one reads goes, as when manifests are read
            out.append((source, len(out), obj))
    return out


def iter_kinds(volcano: bool) -> Iterator[Listed]:
    """The collections read_cluster lists, in order (the pods last)."""
    yield from KUBE
    yield from VOLCANO if volcano else KUBE_ONLY
    if not volcano and featuregates.enabled(featuregates.GENERIC_WORKLOAD):
        yield GANG_WORKLOADS
    yield PODS
