"""Small helpers for live tests: create nodes/pods/namespaces through the real API, wait for
conditions, run a LiveScheduler in-process."""
from __future__ import annotations

import time
import uuid
from contextlib import contextmanager

from caldera.live.client import Api, ApiError


def tag() -> str:
    return uuid.uuid4().hex[:6]


def admin_api(control_plane) -> Api:
    return Api.from_kubeconfig(control_plane.admin_kubeconfig)


def namespace(api: Api, name: str) -> str:
    try:
        api.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                    "metadata": {"name": name}})
    except ApiError as e:
        if e.status != 409:
            raise
    return name


def create_node(api: Api, name: str, cpu="4", memory="8Gi", pods="110", labels=None, extra=None):
    alloc = {"cpu": str(cpu), "memory": str(memory), "pods": str(pods), **(extra or {})}
    api.request("POST", "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node",
                                          "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name,
                                                                                **(labels or {})}}})
    api.request("PATCH", f"/api/v1/nodes/{name}/status",
                {"status": {"capacity": alloc, "allocatable": alloc,
                            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                            "message": "test node"}]}})


def delete_nodes(api: Api, names):
    for n in names:
        try:
            api.request("DELETE", f"/api/v1/nodes/{n}")
        except ApiError:
            pass


def clean_cluster(api: Api) -> None:
    """Delete every Node and every Pod outside kube-system (force, grace 0: no kubelet runs
    here): for the tests that read the whole cluster (--from-cluster, default spreading) on the
    control plane the session shares, after earlier modules have left their objects behind."""
    api.request("DELETE", "/api/v1/nodes")
    # the storage and DRA objects a pass reads too (cluster-scoped ones here, claims per namespace)
    for path in ("/api/v1/persistentvolumes", "/apis/storage.k8s.io/v1/storageclasses",
                 "/apis/storage.k8s.io/v1/csinodes", "/apis/resource.k8s.io/v1/resourceslices",
                 "/apis/resource.k8s.io/v1/deviceclasses"):
        api.request("DELETE", path)
    for ns in api.request("GET", "/api/v1/namespaces")[1].get("items", []):
        name = ns["metadata"]["name"]
        if name != "kube-system":
            api.request("DELETE", f"/api/v1/namespaces/{name}/pods?gracePeriodSeconds=0")
            api.request("DELETE", f"/api/v1/namespaces/{name}/persistentvolumeclaims")
            api.request("DELETE", f"/apis/resource.k8s.io/v1/namespaces/{name}/resourceclaims")
    end = time.monotonic() + 30
    while time.monotonic() < end:
        pods = [p for p in api.request("GET", "/api/v1/pods")[1].get("items", [])
                if p["metadata"]["namespace"] != "kube-system"]
        if not pods and not api.request("GET", "/api/v1/nodes")[1].get("items"):
            return
        time.sleep(0.2)
    raise AssertionError("the cluster did not empty in 30 s")


def pod_body(ns: str, name: str, scheduler: str, cpu="100m", memory="64Mi", priority_class=None,
             annotations=None, labels=None, grace=0) -> dict:
    spec = {"schedulerName": scheduler, "terminationGracePeriodSeconds": grace,
            "automountServiceAccountToken": False,
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                            "resources": {"requests": {"cpu": str(cpu), "memory": str(memory)}}}]}
    if priority_class:
        spec["priorityClassName"] = priority_class
    meta = {"name": name, "namespace": ns}
    if annotations:
        meta["annotations"] = dict(annotations)
    if labels:
        meta["labels"] = dict(labels)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def create_pod(api: Api, ns: str, name: str, scheduler: str, **kw) -> dict:
    return api.request("POST", f"/api/v1/namespaces/{ns}/pods", pod_body(ns, name, scheduler, **kw))[1]


def get_pod(api: Api, ns: str, name: str) -> dict | None:
    try:
        return api.request("GET", f"/api/v1/namespaces/{ns}/pods/{name}")[1]
    except ApiError as e:
        if e.status == 404:
            return None
        raise


def list_pods(api: Api, ns: str) -> list[dict]:
    return api.request("GET", f"/api/v1/namespaces/{ns}/pods")[1].get("items", [])


def events_for(api: Api, ns: str, name: str) -> list[dict]:
    items = api.request("GET", f"/apis/events.k8s.io/v1/namespaces/{ns}/events")[1].get("items", [])
    return [e for e in items if (e.get("regarding") or {}).get("name") == name]


def wait_until(pred, timeout=30.0, interval=0.2, what="condition"):
    end = time.monotonic() + timeout
    last = None
    while time.monotonic() < end:
        last = pred()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


def kube_config(scheduler_name: str, extra: str = "") -> str:
    return (f"apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
            f"leaderElection:\n  leaderElect: false\nprofiles:\n- schedulerName: {scheduler_name}\n{extra}")


def kube_profile(tmp_path, scheduler_name: str, extra: str = ""):
    """A loaded KubeSchedulerConfiguration with one profile (no leader election)."""
    from caldera.configfile import load_config
    from caldera.plugins.registry import build_registry
    p = tmp_path / "config.yaml"
    p.write_text(kube_config(scheduler_name, extra))
    return load_config(str(p), build_registry())


@contextmanager
def live_scheduler(api: Api, config, **opts):
    """A LiveScheduler running in this process (threads) for the duration of the block."""
    from caldera.live.app import LiveScheduler, RunOptions
    o = RunOptions(metrics_addr="127.0.0.1:0", **opts)
    app = LiveScheduler(api, config, o).start()
    try:
        yield app
    finally:
        app.stop()


ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]


def apply_manifest(api: Api, doc: dict) -> None:
    """Create `doc` (kinds used by deploy/), or leave it if it exists."""
    kind, meta = doc["kind"], doc["metadata"]
    ns = meta.get("namespace")
    paths = {
        "Namespace": "/api/v1/namespaces",
        "ServiceAccount": f"/api/v1/namespaces/{ns}/serviceaccounts",
        "ClusterRole": "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        "ClusterRoleBinding": "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
        "Role": f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
        "RoleBinding": f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
        "CustomResourceDefinition": "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        "ConfigMap": f"/api/v1/namespaces/{ns}/configmaps",
    }
    try:
        api.request("POST", paths[kind], doc)
    except ApiError as e:
        if e.status != 409:
            raise


def install_crds(api: Api) -> None:
    """Volcano's PodGroup, Queue and HyperNode CRDs from deploy/crds, established."""
    import yaml
    names = []
    for f in sorted((ROOT / "deploy" / "crds").glob("*.yaml")):
        for doc in yaml.safe_load_all(f.read_text()):
            if doc:
                apply_manifest(api, doc)
                names.append(doc["metadata"]["name"])

    def established():
        for n in names:
            crd = api.request("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{n}")[1]
            conds = {c["type"]: c["status"] for c in (crd.get("status") or {}).get("conditions") or []}
            if conds.get("Established") != "True":
                return False
        return True
    wait_until(established, timeout=60, what="CRDs established")
    # discovery needs a moment after Established before the resources are served
    wait_until(lambda: _served(api, "/apis/scheduling.volcano.sh/v1beta1/queues"), timeout=60,
               what="scheduling.volcano.sh served")
    wait_until(lambda: _served(api, "/apis/topology.volcano.sh/v1alpha1/hypernodes"), timeout=60,
               what="topology.volcano.sh served")


def _served(api: Api, path: str) -> bool:
    from caldera.live.client import ApiUnavailable
    try:
        api.request("GET", path)
        return True
    except (ApiError, ApiUnavailable):   # a just-established CRD answers 404/429/503 for a moment
        return False
