"""PreBind's API work in `caldera run` (live/prebind.py, live/apicache.py), with an in-memory API:
DynamicResources' bindClaim (finalizer update, then allocation + reservedFor in resourceclaims/status,
retried on a conflict) and VolumeBinding's BindPodVolumes run in the bind thread before the Binding;
a failure undoes the reservations (devices and assumed PVs given back, the pod forgotten and
requeued with kube's error); the informer's echo of a write is not counted twice, and an older
event arriving while the write is in flight does not undo the allocation Reserve made."""
from __future__ import annotations

import copy
import threading

import yaml

from caldera.config.decode import decode_kube_config
from caldera.live.app import LiveScheduler, RunOptions
from caldera.live.client import ApiError
from caldera.plugins.registry import build_registry

from .test_cache_unit import node, pod

RES = "/apis/resource.k8s.io/v1"
CLAIM = f"{RES}/namespaces/default/resourceclaims/c1"
DRIVER = "gpu.example.com"


class FakeApi:
    """Objects by path with resourceVersions; PUT (and PUT .../status) replace them; `fail` makes a
    (method, path) raise the given errors first; `on` calls a hook after a request succeeded."""

    def __init__(self):
        self.store: dict[str, dict] = {}
        self.calls: list[tuple[str, str, object]] = []
        self.fail: dict[tuple[str, str], list[ApiError]] = {}
        self.on: dict[tuple[str, str], object] = {}
        self.rv = 100
        self.lock = threading.Lock()

    def put(self, path: str, obj: dict) -> dict:
        self.rv += 1
        obj = copy.deepcopy(obj)
        obj.setdefault("metadata", {})["resourceVersion"] = str(self.rv)
        self.store[path] = obj
        return copy.deepcopy(obj)

    def request(self, method, path, body=None, query=None, timeout=None, content_type=None):
        with self.lock:
            self.calls.append((method, path, copy.deepcopy(body)))
            errs = self.fail.get((method, path))
            if errs:
                raise errs.pop(0)
            out: dict = {}
            if method == "GET":
                out = copy.deepcopy(self.store[path])
            elif method == "PUT" and path.endswith("/status"):
                cur = copy.deepcopy(self.store[path[:-len("/status")]])
                cur["status"] = body.get("status")
                out = self.put(path[:-len("/status")], cur)
            elif method == "PUT":
                cur = self.store.get(path, {})
                new = copy.deepcopy(body)
                new["status"] = cur.get("status")
                out = self.put(path, new)
            elif method == "PATCH" and path.endswith("/status") and path.startswith(RES):
                base = path[:-len("/status")]
                cur = copy.deepcopy(self.store[base])
                drop = {r["uid"] for r in body["status"]["reservedFor"]}
                cur["status"]["reservedFor"] = [r for r in cur["status"].get("reservedFor") or []
                                                if r["uid"] not in drop]
                out = self.put(base, cur)
        hook = self.on.get((method, path))
        if hook is not None:
            hook(out)
        return 201, out

    def paths(self, method=None):
        return [(m, p) for m, p, _ in self.calls if (method is None or m == method)
                and "/events" not in p and not p.endswith("/pods/p1/status")]


def conf(bind_timeout=600):
    return decode_kube_config(yaml.safe_load(f"""apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {{leaderElect: false}}
profiles:
- schedulerName: caldera
  pluginConfig:
  - name: VolumeBinding
    args: {{bindTimeoutSeconds: {bind_timeout}}}
"""), "conf.yaml", build_registry())


def make(api, bind_timeout=600):
    app = LiveScheduler(api, conf(bind_timeout), RunOptions(metrics_addr="127.0.0.1:0", bind_workers=2))
    cache, objs = app.cache, app.cache.objects
    cache.on_node_add(node("n1"))
    objs.on_device_class({"metadata": {"name": "gpu", "resourceVersion": "1"},
                          "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}})
    objs.on_slices([{"metadata": {"name": "n1-gpus", "resourceVersion": "2"},
                     "spec": {"driver": DRIVER, "nodeName": "n1", "pool": {"name": "n1"},
                              "devices": [{"name": "gpu-0"}, {"name": "gpu-1"}]}}])
    return app, cache, objs


def add_claim(api, objs, name="c1", count=1):
    raw = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
           "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
           "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu", "count": count}}]}}}
    raw = api.put(f"{RES}/namespaces/default/resourceclaims/{name}", raw)
    objs.on_claim(raw)
    return raw


def claim_pod(name, claim="c1"):
    raw = pod(name)
    raw["spec"]["resourceClaims"] = [{"name": "gpus", "resourceClaimName": claim}]
    return raw


def cycle(app):
    loop = app.loop
    with app.cache.lock:
        qpi = loop.queue.pop()
    assert qpi is not None
    loop.schedule(qpi)
    assert loop.binder.wait_idle(10)
    for f in list(loop.pending_writes.values()):
        f.result(timeout=5)


def used(objs) -> int:
    return int(objs.dra.used.sum())


def test_claim_allocated_and_reserved_before_the_binding():
    api = FakeApi()
    app, cache, objs = make(api)
    add_claim(api, objs)
    echoes = []

    def finalizer_echo(obj):
        # the informer delivers the finalizer update (no allocation yet) while the pod's binding is
        # in flight: the allocation Reserve made must stay
        echoes.append(obj)
        objs.on_claim(obj)
        assert objs.dra_objs.claims["default/c1"].allocation is not None and used(objs) == 1

    api.on[("PUT", CLAIM)] = finalizer_echo
    cache.on_pod_add(claim_pod("p1"))
    cycle(app)
    assert api.paths() == [("PUT", CLAIM), ("PUT", f"{CLAIM}/status"),
                           ("POST", "/api/v1/namespaces/default/pods/p1/binding")]
    fin = api.calls[0][2]
    assert fin["metadata"]["finalizers"] == ["resource.kubernetes.io/delete-protection"]
    assert not (fin.get("status") or {}).get("allocation")
    st = api.store[CLAIM]["status"]
    assert st["allocation"] == {"devices": {"results": [
        {"request": "gpu", "driver": DRIVER, "pool": "n1", "device": "gpu-0"}]},
        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}}
    assert st["reservedFor"] == [{"resource": "pods", "name": "p1", "uid": "uid-p1"}]
    assert echoes and used(objs) == 1
    # the informer's echo of the status write, then a late older event: one device, held once
    objs.on_claim(copy.deepcopy(api.store[CLAIM]))
    objs.on_claim(echoes[0])
    c = objs.dra_objs.claims["default/c1"]
    assert used(objs) == 1 and c.reserved_for == ["default/p1"] and [r.device for r in c.allocation] == ["gpu-0"]
    app.loop.writer.shutdown(wait=True)


def test_claim_allocated_by_someone_else_takes_its_devices():
    api = FakeApi()
    _, _, objs = make(api)
    raw = add_claim(api, objs)
    raw = copy.deepcopy(raw)
    raw["metadata"]["resourceVersion"] = "500"
    raw["status"] = {"allocation": {"devices": {"results": [
        {"request": "gpu", "driver": DRIVER, "pool": "n1", "device": "gpu-1"}]}}}
    objs.on_claim(raw)
    assert objs.dra.used.tolist() == [False, True]
    assert objs.dra_objs.claims["default/c1"].allocated_node == "n1"
    objs.on_claim(raw, deleted=True)
    assert used(objs) == 0 and "default/c1" not in objs.dra_objs.claims


def test_conflict_rereads_the_claim_and_retries():
    api = FakeApi()
    app, cache, objs = make(api)
    add_claim(api, objs)
    api.fail[("PUT", f"{CLAIM}/status")] = [ApiError(409, "Conflict", "the object has been modified")]
    cache.on_pod_add(claim_pod("p1"))
    cycle(app)
    assert api.paths() == [("PUT", CLAIM), ("PUT", f"{CLAIM}/status"), ("GET", CLAIM), ("PUT", f"{CLAIM}/status"),
                           ("POST", "/api/v1/namespaces/default/pods/p1/binding")]
    assert api.store[CLAIM]["status"]["reservedFor"][0]["name"] == "p1"
    app.loop.writer.shutdown(wait=True)


def test_failed_claim_write_undoes_the_reservation_and_requeues():
    api = FakeApi()
    app, cache, objs = make(api)
    add_claim(api, objs)
    api.fail[("PUT", f"{CLAIM}/status")] = [ApiError(500, "InternalError", "etcd is down")]
    cache.on_pod_add(claim_pod("p1"))
    cycle(app)
    # no Binding; the devices and the claim are back as the API has them; the pod is requeued
    assert ("POST", "/api/v1/namespaces/default/pods/p1/binding") not in api.paths()
    c = objs.dra_objs.claims["default/c1"]
    assert c.allocation is None and c.reserved_for == [] and used(objs) == 0
    assert cache.table.node_of("default/p1") is None and "default/p1" not in cache.assumed
    assert app.loop.queue.where("default/p1") == "backoff"
    msg = 'running PreBind plugin "DynamicResources": add allocation and reservation to claim default/c1: etcd is down'
    patch = next(b for m, p, b in api.calls if p.endswith("/pods/p1/status"))
    cond = patch["status"]["conditions"][0]
    assert (cond["reason"], cond["message"]) == ("SchedulerError", msg)
    # retried, it gets the device
    q = app.loop.queue
    real = q.clock
    q.clock = lambda: real() + 100             # the error backoff is over
    with cache.lock:
        q.flush_backoff_completed()
    cycle(app)
    assert ("POST", "/api/v1/namespaces/default/pods/p1/binding") in api.paths()
    assert used(objs) == 1
    app.loop.writer.shutdown(wait=True)


def test_failed_binding_after_claim_write_unreserves_the_claim():
    """Bind fails after PreBind wrote the claim: Unreserve patches the pod out of reservedFor."""
    api = FakeApi()
    app, cache, objs = make(api)
    add_claim(api, objs)
    api.fail[("POST", "/api/v1/namespaces/default/pods/p1/binding")] = [ApiError(500, "InternalError", "no")]
    api.store["/api/v1/namespaces/default/pods/p1"] = {"spec": {}}
    cache.on_pod_add(claim_pod("p1"))
    cycle(app)
    m, p, body = api.calls[-1] if api.calls[-1][1].startswith(RES) else \
        next(c for c in reversed(api.calls) if c[0] == "PATCH" and c[1].startswith(RES))
    assert (m, p) == ("PATCH", f"{CLAIM}/status")
    assert body == {"metadata": {"uid": "uid-c1"}, "status": {"reservedFor": [{"$patch": "delete", "uid": "uid-p1"}]}}
    # kube keeps the allocation (no deallocation in Unreserve): the claim holds its device, for no pod
    c = objs.dra_objs.claims["default/c1"]
    assert api.store[CLAIM]["status"]["reservedFor"] == [] and c.allocation is not None and used(objs) == 1
    assert cache.table.node_of("default/p1") is None and app.loop.queue.where("default/p1") == "backoff"
    app.loop.writer.shutdown(wait=True)


# ---- volumes ------------------------------------------------------------------------------------
PV = "/api/v1/persistentvolumes/pv1"
PVC = "/api/v1/namespaces/default/persistentvolumeclaims/data"


def storage(api, objs):
    objs.on_storage_class({"metadata": {"name": "local", "resourceVersion": "1"},
                           "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "WaitForFirstConsumer"})
    pv = api.put(PV, {"metadata": {"name": "pv1"},
                      "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                               "storageClassName": "local", "local": {"path": "/d"},
                               "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                                   {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1"]}]}]}}},
                      "status": {"phase": "Available"}})
    pvc = api.put(PVC, {"metadata": {"name": "data", "namespace": "default", "uid": "uid-data"},
                        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "local",
                                 "resources": {"requests": {"storage": "1Gi"}}}, "status": {"phase": "Pending"}})
    objs.on_pv(pv)
    objs.on_pvc(pvc)


def volume_pod(name):
    raw = pod(name)
    raw["spec"]["volumes"] = [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]
    return raw


def make_volumes(api, bind_timeout):
    app, cache, objs = make(api, bind_timeout)
    cache.on_node_update(None, node("n1", labels={"kubernetes.io/hostname": "n1"}))
    storage(api, objs)
    return app, cache, objs


def test_pv_claim_ref_written_then_waits_for_the_pv_controller():
    api = FakeApi()
    app, cache, objs = make_volumes(api, 10)

    def pv_controller(written):
        # the informer echoes the PV; the PV controller binds the claim (and the informer brings it)
        def later():
            objs.on_pv(copy.deepcopy(written))
            pvc = copy.deepcopy(api.store[PVC])
            pvc["spec"]["volumeName"] = "pv1"
            pvc["metadata"]["annotations"] = {"pv.kubernetes.io/bind-completed": "yes"}
            objs.on_pvc(api.put(PVC, pvc))
        threading.Timer(0.2, later).start()

    api.on[("PUT", PV)] = pv_controller
    cache.on_pod_add(volume_pod("p1"))
    cycle(app)
    assert api.paths() == [("PUT", PV), ("POST", "/api/v1/namespaces/default/pods/p1/binding")]
    ref = api.calls[0][2]["spec"]["claimRef"]
    assert {k: ref[k] for k in ("kind", "namespace", "name", "uid", "apiVersion")} == \
        {"kind": "PersistentVolumeClaim", "namespace": "default", "name": "data", "uid": "uid-data", "apiVersion": "v1"}
    assert api.calls[0][2]["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"
    assert objs.storage.pvs["pv1"].claim_ref is not None
    app.loop.writer.shutdown(wait=True)


def test_bind_timeout_reverts_the_assumed_pv_and_requeues():
    api = FakeApi()
    app, cache, objs = make_volumes(api, 0)
    cache.on_pod_add(volume_pod("p1"))
    cycle(app)
    assert ("POST", "/api/v1/namespaces/default/pods/p1/binding") not in api.paths()
    # the assumed PV is the API's again (the informer has not brought the write: no claimRef)
    assert objs.storage.pvs["pv1"].claim_ref is None
    assert cache.table.node_of("default/p1") is None and app.loop.queue.where("default/p1") == "backoff"
    patch = next(b for m, p, b in api.calls if p.endswith("/pods/p1/status"))
    assert patch["status"]["conditions"][0]["message"] == \
        'running PreBind plugin "VolumeBinding": binding volumes: context deadline exceeded'
    app.loop.writer.shutdown(wait=True)


def test_informers_only_for_enabled_plugins():
    cfg = decode_kube_config(yaml.safe_load("""apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
profiles:
- schedulerName: caldera
  plugins:
    multiPoint:
      disabled: [{name: DynamicResources}, {name: VolumeBinding}, {name: NodeVolumeLimits}, {name: VolumeZone}]
"""), "conf.yaml", build_registry())
    app = LiveScheduler(FakeApi(), cfg, RunOptions(metrics_addr="127.0.0.1:0"))
    names = {i.name for i in app.informers}
    assert "persistentvolumeclaims" in names            # VolumeRestrictions reads claims
    assert not names & {"persistentvolumes", "storageclasses", "csinodes", "deviceclasses", "resourceslices",
                        "resourceclaims"}
    assert app.loop.scheduler.dra is None and app.loop.scheduler.storage is app.cache.objects.storage


def test_pod_waits_for_its_claim_then_a_claim_event_moves_it():
    """PreEnqueue: a pod whose claim does not exist is gated (kube's lister NotFound text); the
    claim's Add event re-runs PreEnqueue and the pod is scheduled."""
    api = FakeApi()
    app, cache, objs = make(api)
    cache.on_pod_add(claim_pod("p1"))
    q = app.loop.queue
    assert q.where("default/p1") == "gated" and q.get("default/p1").gating_plugin == "DynamicResources"
    s = app.loop.scheduler.default_framework.run_pre_enqueue(cache.pods["default/p1"])
    assert s.message() == 'resourceclaim.resource.k8s.io "c1" not found'
    add_claim(api, objs)
    assert q.where("default/p1") == "active"
    cycle(app)
    assert ("POST", "/api/v1/namespaces/default/pods/p1/binding") in api.paths()
    app.loop.writer.shutdown(wait=True)


def test_node_rows_moving_keep_devices_on_their_node():
    """A node leaving shifts the table's rows: the slice's devices still map to their node."""
    api = FakeApi()
    app, cache, objs = make(api)
    cache.on_node_add(node("n2"))                  # rows: n1, n2
    add_claim(api, objs, "c0")
    cache.on_pod_add(claim_pod("p0", "c0"))
    cycle(app)                                     # the devices were mapped to rows here
    cache.on_node_delete(node("n1"))
    cache.on_node_add(node("n1"))                  # rows: n2, n1 (as many as before)
    add_claim(api, objs, "c1")
    cache.on_pod_add(claim_pod("p1", "c1"))
    cycle(app)
    binding = next(b for m, p, b in api.calls if p.endswith("/pods/p1/binding"))
    assert binding["target"]["name"] == "n1"
    app.loop.writer.shutdown(wait=True)


def test_postfilter_deallocates_an_unavailable_claim_in_the_api():
    """A claim allocated on a node the pod does not fit, reserved for nobody: PostFilter clears its
    allocation with an update of resourceclaims/status (kube's PostFilter), and the devices are free."""
    api = FakeApi()
    app, cache, objs = make(api)
    cache.on_node_add(node("n2", cpu="16"))
    raw = add_claim(api, objs)
    raw = copy.deepcopy(raw)
    raw["metadata"]["finalizers"] = ["resource.kubernetes.io/delete-protection"]
    raw["status"] = {"allocation": {"devices": {"results": [
        {"request": "gpu", "driver": DRIVER, "pool": "n1", "device": "gpu-0"}]},
        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}}}
    objs.on_claim(api.put(CLAIM, raw))
    assert used(objs) == 1
    big = claim_pod("p1")
    big["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "8"
    cache.on_pod_add(big)
    cycle(app)
    put = [b for m, p, b in api.calls if (m, p) == ("PUT", f"{CLAIM}/status")]
    assert len(put) == 1 and "allocation" not in put[0]["status"] and "reservedFor" not in put[0]["status"]
    assert "allocation" not in api.store[CLAIM]["status"]
    assert objs.dra_objs.claims["default/c1"].allocation is None and used(objs) == 0
    msg = next(b for m, p, b in api.calls if p.endswith("/pods/p1/status"))["status"]["conditions"][0]["message"]
    assert "deallocation of ResourceClaim completed" in msg
    app.loop.writer.shutdown(wait=True)
