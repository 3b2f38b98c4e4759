"""`caldera run` with DRA against the real API server (resource.k8s.io/v1): the informers read the
DeviceClass, ResourceSlice and ResourceClaims; a pod's claim is allocated and reserved for it by
PreBind (finalizer, status.allocation, status.reservedFor) in the binding thread before the pod
is bound; the informer's echo of that write is not counted twice; a pod asking for more devices
than remain stays pending with kube's message; a pod whose template claim the resourceclaim
controller has not created waits in PreEnqueue until the claim exists and the pod's status names it.
No controller-manager runs here: the test creates the claims (and plays the resourceclaim
controller for the template) itself."""
from __future__ import annotations

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

RES = "/apis/resource.k8s.io/v1"


@pytest.fixture(autouse=True)
def _empty_cluster(api):
    """Messages count every node: start from an empty cluster (earlier modules leave nodes), and
    leave one (later modules count on their own nodes only)."""
    clean_cluster(api)
    yield
    clean_cluster(api)


def claim(ns: str, name: str, cls: str, count: int) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name, "namespace": ns},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                "deviceClassName": cls, "allocationMode": "ExactCount", "count": count}}]}}}


def claim_pod(ns: str, name: str, sched: str, claim_name: str = "", template: str = "") -> dict:
    body = pod_body(ns, name, sched)
    ref = {"name": "gpus", **({"resourceClaimName": claim_name} if claim_name else
                              {"resourceClaimTemplateName": template})}
    body["spec"]["resourceClaims"] = [ref]
    body["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpus"}]
    return body


def get_claim(api, ns: str, name: str) -> dict:
    return api.request("GET", f"{RES}/namespaces/{ns}/resourceclaims/{name}")[1]


def _delete(api, path: str) -> None:
    try:
        api.request("DELETE", path)
    except ApiError:
        pass


def _drop_claims(api, ns: str) -> None:
    """Claims keep the delete-protection finalizer the scheduler added (no kubelet frees them):
    drop it so that the namespace's claims can go."""
    for c in api.request("GET", f"{RES}/namespaces/{ns}/resourceclaims")[1].get("items", []):
        path = f"{RES}/namespaces/{ns}/resourceclaims/{c['metadata']['name']}"
        try:
            api.request("PATCH", path, {"metadata": {"finalizers": None}})
        except ApiError:
            pass
        _delete(api, path)


def gpu_node(api, node: str, driver: str, cls: str, devices: list[dict]) -> None:
    """Node `node` with a ResourceSlice `<node>-gpus` of `devices` from `driver`, and a DeviceClass
    `cls` that selects that driver's devices."""
    create_node(api, node)
    api.request("POST", f"{RES}/deviceclasses", {
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": cls},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]}})
    api.request("POST", f"{RES}/resourceslices", {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{node}-gpus"},
        "spec": {"driver": driver, "nodeName": node,
                 "pool": {"name": node, "generation": 1, "resourceSliceCount": 1}, "devices": devices}})


def test_claims_allocated_reserved_and_bound(api, tmp_path):
    t = tag()
    sched = f"dra-{t}"
    ns = namespace(api, f"dra-{t}")
    node = f"dra-{t}-n1"
    driver = f"gpu-{t}.example.com"
    cls = f"gpu-{t}"
    gpu_node(api, node, driver, cls, [{"name": f"gpu-{i}", "attributes": {"index": {"int": i}}} for i in range(2)])
    for name, count in (("one", 1), ("two", 2), ("last", 1)):
        api.request("POST", f"{RES}/namespaces/{ns}/resourceclaims", claim(ns, name, cls, count))
    cfg = kube_profile(tmp_path, sched)
    try:
        with live_scheduler(api, cfg) as app:
            assert {"deviceclasses", "resourceslices", "resourceclaims"} <= {i.name for i in app.informers}
            assert "resourceclaimtemplates" not in {i.name for i in app.informers}
            wait_until(lambda: app.ready()[0], what="informers synced")
            pod = api.request("POST", f"/api/v1/namespaces/{ns}/pods", claim_pod(ns, "a", sched, "one"))[1]
            wait_until(lambda: get_pod(api, ns, "a")["spec"].get("nodeName") == node, what="pod a bound")
            c = get_claim(api, ns, "one")
            results = c["status"]["allocation"]["devices"]["results"]
            assert [(r["request"], r["driver"], r["pool"], r["device"]) for r in results] == \
                [("gpu", driver, node, "gpu-0")]
            assert c["status"]["allocation"]["nodeSelector"] == {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [node]}]}]}
            assert c["status"]["reservedFor"] == [{"resource": "pods", "name": "a", "uid": pod["metadata"]["uid"]}]
            assert "resource.kubernetes.io/delete-protection" in c["metadata"]["finalizers"]
            # the informer's echo of the write: the claim holds its device once, not twice
            wait_until(lambda: app.cache.objects.claim_rv.get(f"{ns}/one", 0) >=
                       int(c["metadata"]["resourceVersion"]), what="the claim's echo informed")
            with app.cache.lock:
                assert int(app.cache.objects.dra.used.sum()) == 1
            # two GPUs asked, one left: pending with kube's message
            api.request("POST", f"/api/v1/namespaces/{ns}/pods", claim_pod(ns, "b", sched, "two"))
            ev = wait_until(lambda: [e for e in events_for(api, ns, "b") if e["reason"] == "FailedScheduling"],
                            what="FailedScheduling for b")
            assert ev[0]["note"] == ("0/1 nodes are available: 1 cannot allocate all claims. still not "
                                     "schedulable, preemption: 0/1 nodes are available: 1 Preemption is not "
                                     "helpful for scheduling.")
            assert not get_pod(api, ns, "b")["spec"].get("nodeName")
            assert "allocation" not in (get_claim(api, ns, "two").get("status") or {})
            # the one GPU left goes to the next pod asking for one
            api.request("POST", f"/api/v1/namespaces/{ns}/pods", claim_pod(ns, "c", sched, "last"))
            wait_until(lambda: get_pod(api, ns, "c")["spec"].get("nodeName") == node, what="pod c bound")
            got = get_claim(api, ns, "last")["status"]["allocation"]["devices"]["results"]
            assert [r["device"] for r in got] == ["gpu-1"]
    finally:
        _delete(api, f"/api/v1/namespaces/{ns}/pods?gracePeriodSeconds=0")
        _drop_claims(api, ns)
        _delete(api, f"{RES}/resourceslices/{node}-gpus")
        _delete(api, f"{RES}/deviceclasses/{cls}")


def test_template_claim_waits_for_the_resourceclaim_controller(api, tmp_path):
    t = tag()
    sched = f"drat-{t}"
    ns = namespace(api, f"drat-{t}")
    node = f"drat-{t}-n1"
    driver = f"gpu-{t}.example.com"
    cls = f"gpu-{t}"
    gpu_node(api, node, driver, cls, [{"name": "gpu-0"}])
    tmpl = claim(ns, "tmpl", cls, 1)
    api.request("POST", f"{RES}/namespaces/{ns}/resourceclaimtemplates",
                {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                 "metadata": {"name": "tmpl", "namespace": ns}, "spec": {"spec": tmpl["spec"]}})
    cfg = kube_profile(tmp_path, sched)
    try:
        with live_scheduler(api, cfg) as app:
            wait_until(lambda: app.ready()[0], what="informers synced")
            pod = api.request("POST", f"/api/v1/namespaces/{ns}/pods", claim_pod(ns, "p", sched, template="tmpl"))[1]
            # PreEnqueue: no claim yet -> gated, never attempted (no FailedScheduling)
            wait_until(lambda: app.loop.queue.where(f"{ns}/p") == "gated", what="pod gated")
            assert not events_for(api, ns, "p")
            # the resourceclaim controller's work: the claim (controlled by the pod), then the pod's status
            body = claim(ns, "p-gpus-x7k2q", cls, 1)
            body["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": "p",
                                                    "uid": pod["metadata"]["uid"], "controller": True,
                                                    "blockOwnerDeletion": True}]
            api.request("POST", f"{RES}/namespaces/{ns}/resourceclaims", body)
            api.request("PATCH", f"/api/v1/namespaces/{ns}/pods/p/status",
                        {"status": {"resourceClaimStatuses": [{"name": "gpus", "resourceClaimName": "p-gpus-x7k2q"}]}},
                        content_type="application/strategic-merge-patch+json")
            wait_until(lambda: get_pod(api, ns, "p")["spec"].get("nodeName") == node, what="pod bound")
            c = get_claim(api, ns, "p-gpus-x7k2q")
            assert [r["device"] for r in c["status"]["allocation"]["devices"]["results"]] == ["gpu-0"]
            assert [r["name"] for r in c["status"]["reservedFor"]] == ["p"]
    finally:
        _delete(api, f"/api/v1/namespaces/{ns}/pods?gracePeriodSeconds=0")
        _drop_claims(api, ns)
        _delete(api, f"{RES}/resourceslices/{node}-gpus")
        _delete(api, f"{RES}/deviceclasses/{cls}")
