"""`caldera run` with volumes against the real API server: the storage informers feed VolumeBinding;
for a WaitForFirstConsumer claim Caldera picks the PV whose node affinity fits, writes its claimRef
in PreBind (in the binding thread) and waits for kube's PV controller to finish the binding before
it binds the pod. No controller-manager runs here: `PVController` below plays the PV controller's
part (a PV's claimRef names a claim -> the claim gets spec.volumeName, the bind-completed and
bound-by-controller annotations and phase Bound). Without it, PreBind times out after
bindTimeoutSeconds and the pod is requeued with kube's error."""
from __future__ import annotations

import threading

import pytest

from caldera.live.client import ApiError

from .kube import (
    clean_cluster,
    create_node,
    events_for,
    get_pod,
    kube_profile,
    live_scheduler,
    namespace,
    pod_body,
    tag,
    wait_until,
)

SMP = "application/strategic-merge-patch+json"
TIMEOUT_MSG = 'running PreBind plugin "VolumeBinding": binding volumes: context deadline exceeded'


@pytest.fixture(autouse=True)
def _empty_cluster(api):
    """Start from an empty cluster and leave one (other modules count on their own nodes only)."""
    clean_cluster(api)
    yield
    clean_cluster(api)


class PVController:
    """The PV controller's binding of a claim to the PV whose claimRef names it (syncVolume ->
    bind: PV phase Bound, then the claim's volumeName and annotations, then its phase Bound)."""

    def __init__(self, api, ns: str):
        self.api, self.ns = api, ns
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(5)

    def run(self) -> None:
        while not self.stop.wait(0.2):
            try:
                self.sync()
            except ApiError:
                pass            # a conflict with the scheduler's write: the next round sees it

    def sync(self) -> None:
        for pv in self.api.request("GET", "/api/v1/persistentvolumes")[1].get("items", []):
            ref = pv["spec"].get("claimRef") or {}
            if ref.get("namespace") != self.ns or not ref.get("uid"):
                continue
            name = pv["metadata"]["name"]
            path = f"/api/v1/namespaces/{self.ns}/persistentvolumeclaims/{ref['name']}"
            pvc = self.api.request("GET", path)[1]
            if pvc["metadata"]["uid"] != ref["uid"] or pvc["spec"].get("volumeName"):
                continue
            if (pv.get("status") or {}).get("phase") != "Bound":
                self.api.request("PATCH", f"/api/v1/persistentvolumes/{name}/status",
                                 {"status": {"phase": "Bound"}}, content_type=SMP)
            pvc["spec"]["volumeName"] = name
            ann = pvc["metadata"].setdefault("annotations", {})
            ann["pv.kubernetes.io/bind-completed"] = "yes"
            ann["pv.kubernetes.io/bound-by-controller"] = "yes"
            self.api.request("PUT", path, pvc)
            self.api.request("PATCH", f"{path}/status", {"status": {"phase": "Bound"}}, content_type=SMP)


def storage(api, t: str, ns: str, node: str) -> str:
    """A WaitForFirstConsumer class, a local PV on `node`, a claim; the class name."""
    sc = f"local-{t}"
    api.request("POST", "/apis/storage.k8s.io/v1/storageclasses", {
        "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": sc},
        "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "WaitForFirstConsumer"})
    api.request("POST", "/api/v1/persistentvolumes", {
        "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": f"pv-{t}"},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                 "persistentVolumeReclaimPolicy": "Retain", "storageClassName": sc, "local": {"path": "/mnt/data"},
                 "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                     {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}}}})
    # the PV controller makes a new PV Available (the API server creates it Pending)
    api.request("PATCH", f"/api/v1/persistentvolumes/pv-{t}/status", {"status": {"phase": "Available"}},
                content_type=SMP)
    api.request("POST", f"/api/v1/namespaces/{ns}/persistentvolumeclaims", {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": ns},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": sc,
                 "resources": {"requests": {"storage": "1Gi"}}}})
    return sc


def volume_pod(ns: str, name: str, sched: str) -> dict:
    body = pod_body(ns, name, sched)
    body["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]
    return body


def cleanup(api, t: str, ns: str, sc: str) -> None:
    for path in (f"/api/v1/namespaces/{ns}/pods?gracePeriodSeconds=0",
                 f"/api/v1/namespaces/{ns}/persistentvolumeclaims/data", f"/api/v1/persistentvolumes/pv-{t}",
                 f"/apis/storage.k8s.io/v1/storageclasses/{sc}"):
        try:
            api.request("DELETE", path)
        except ApiError:
            pass


def test_wait_for_first_consumer_claim_bound_then_pod(api, tmp_path):
    t = tag()
    sched = f"vol-{t}"
    ns = namespace(api, f"vol-{t}")
    nodes = [f"vol-{t}-a", f"vol-{t}-b"]
    for n in nodes:
        create_node(api, n)
    sc = storage(api, t, ns, nodes[1])
    try:
        with live_scheduler(api, kube_profile(tmp_path, sched)) as app:
            names = {i.name for i in app.informers}
            assert {"persistentvolumes", "persistentvolumeclaims", "storageclasses", "csinodes", "csidrivers",
                    "csistoragecapacities"} <= names
            wait_until(lambda: app.ready()[0], what="informers synced")
            with PVController(api, ns):
                api.request("POST", f"/api/v1/namespaces/{ns}/pods", volume_pod(ns, "p", sched))
                wait_until(lambda: get_pod(api, ns, "p")["spec"].get("nodeName"), what="pod bound")
            assert get_pod(api, ns, "p")["spec"]["nodeName"] == nodes[1]        # the PV's node
            pv = api.request("GET", f"/api/v1/persistentvolumes/pv-{t}")[1]
            assert pv["spec"]["claimRef"]["name"] == "data" and pv["spec"]["claimRef"]["namespace"] == ns
            assert pv["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"
            pvc = api.request("GET", f"/api/v1/namespaces/{ns}/persistentvolumeclaims/data")[1]
            assert pv["spec"]["claimRef"]["uid"] == pvc["metadata"]["uid"]
            assert pvc["spec"]["volumeName"] == f"pv-{t}"
    finally:
        cleanup(api, t, ns, sc)


def test_prebind_times_out_without_the_pv_controller_and_the_pod_is_retried(api, tmp_path):
    t = tag()
    sched = f"volt-{t}"
    ns = namespace(api, f"volt-{t}")
    node = f"volt-{t}-a"
    create_node(api, node)
    sc = storage(api, t, ns, node)
    extra = "  pluginConfig:\n  - name: VolumeBinding\n    args:\n      bindTimeoutSeconds: 2\n"
    try:
        with live_scheduler(api, kube_profile(tmp_path, sched, extra)) as app:
            wait_until(lambda: app.ready()[0], what="informers synced")
            api.request("POST", f"/api/v1/namespaces/{ns}/pods", volume_pod(ns, "p", sched))
            # PreBind wrote the claimRef, then waited in vain: the pod is not bound ...
            wait_until(lambda: (api.request("GET", f"/api/v1/persistentvolumes/pv-{t}")[1]["spec"]
                                .get("claimRef") or {}).get("name") == "data", what="claimRef written")
            ev = wait_until(lambda: [e for e in events_for(api, ns, "p") if e["reason"] == "FailedScheduling"],
                            timeout=20, what="FailedScheduling after bindTimeoutSeconds")
            assert ev[0]["note"] == TIMEOUT_MSG
            pod = get_pod(api, ns, "p")
            assert not pod["spec"].get("nodeName")
            cond = next(c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled")
            assert (cond["status"], cond["reason"], cond["message"]) == ("False", "SchedulerError", TIMEOUT_MSG)
            # ... forgotten and requeued (error backoff): it is attempted again, and times out again
            wait_until(lambda: len([e for e in events_for(api, ns, "p") if e["reason"] == "FailedScheduling"]) >= 2,
                       timeout=20, what="a second attempt")
            # with the PV controller running, a later attempt binds it
            with PVController(api, ns):
                wait_until(lambda: get_pod(api, ns, "p")["spec"].get("nodeName") == node, timeout=30,
                           what="pod bound on a later attempt")
    finally:
        cleanup(api, t, ns, sc)
