"""Informers against a real etcd + kube-apiserver (fixture `control_plane` in conftest.py).

Every test works on objects labelled with its own run id, so it tolerates other tests' objects."""
from __future__ import annotations

import threading
import time
import uuid

import pytest

from caldera.live.client import ApiError, connect
from caldera.live.informer import Backoff, Informer, object_key, wait_for_sync


def wait_until(cond, timeout=30.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


class Recorder:
    """Handler calls as (kind, key, resourceVersion) plus the last state each key was seen in."""

    def __init__(self):
        self.calls, self.last, self.lock = [], {}, threading.Lock()

    def _rec(self, kind, obj):
        with self.lock:
            key = object_key(obj)
            self.calls.append((kind, key, obj["metadata"]["resourceVersion"]))
            self.last[key] = None if kind == "delete" else obj

    def on_add(self, o):
        self._rec("add", o)

    def on_update(self, old, new):
        assert object_key(old) == object_key(new)
        self._rec("update", new)

    def on_delete(self, o):
        self._rec("delete", o)

    def kinds(self, key):
        with self.lock:
            return [c[0] for c in self.calls if c[1] == key]

    def alive(self):
        with self.lock:
            return {k: v for k, v in self.last.items() if v is not None}


@pytest.fixture
def run_id():
    return uuid.uuid4().hex[:8]


def make_node(api, name, run_id, **labels):
    body = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"caldera-test": run_id, **labels}},
            "spec": {}}
    return api.request("POST", "/api/v1/nodes", body)[1]


def make_pod(api, ns, name, run_id):
    body = {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "labels": {"caldera-test": run_id}},
            "spec": {"schedulerName": "caldera-test",
                     "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}
    return api.request("POST", f"/api/v1/namespaces/{ns}/pods", body)[1]


def server_state(api, path, run_id):
    items = api.get(path, {"labelSelector": f"caldera-test={run_id}"})["items"]
    return {object_key(o): o["metadata"]["resourceVersion"] for o in items}


def informer(api, resource, run_id, rec):
    return Informer(api, resource, label_selector=f"caldera-test={run_id}",
                    on_add=rec.on_add, on_update=rec.on_update, on_delete=rec.on_delete,
                    backoff=Backoff(initial=0.2, cap=2.0), page_size=2)


def cleanup_nodes(api, run_id):
    for key in server_state(api, "/api/v1/nodes", run_id):
        try:
            api.request("DELETE", f"/api/v1/nodes/{key}")
        except ApiError:
            pass


def test_nodes_and_pods_add_update_delete(api, run_id):
    ns = f"inf-{run_id}"
    api.request("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
    for i in range(3):                                           # listed (pages of 2)
        make_node(api, f"n{i}-{run_id}", run_id)
    nodes_rec, pods_rec = Recorder(), Recorder()
    nodes = informer(api, "nodes", run_id, nodes_rec).start()
    pods = informer(api, "pods", run_id, pods_rec).start()
    try:
        assert wait_for_sync([nodes, pods], 30)
        assert sorted(nodes.store.keys()) == sorted(f"n{i}-{run_id}" for i in range(3))
        assert nodes.store.get(f"n0-{run_id}")["kind"] == "Node"
        n3 = f"n3-{run_id}"
        make_node(api, n3, run_id)
        api.request("PATCH", f"/api/v1/nodes/{n3}", {"metadata": {"labels": {"zone": "a"}}})
        api.request("DELETE", f"/api/v1/nodes/n0-{run_id}")
        make_pod(api, ns, "p1", run_id)
        api.request("POST", f"/api/v1/namespaces/{ns}/pods/p1/binding",
                    {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p1"},
                     "target": {"apiVersion": "v1", "kind": "Node", "name": n3}})
        make_pod(api, ns, "p2", run_id)
        api.request("DELETE", f"/api/v1/namespaces/{ns}/pods/p2", query={"gracePeriodSeconds": 0})

        wait_until(lambda: nodes_rec.kinds(f"n0-{run_id}") == ["add", "delete"], what="node delete")
        wait_until(lambda: pods_rec.kinds(f"{ns}/p2")[-1:] == ["delete"], what="pod delete")
        wait_until(lambda: (pods_rec.alive().get(f"{ns}/p1") or {}).get("spec", {}).get("nodeName") == n3,
                   what="binding seen")
        wait_until(lambda: ((nodes_rec.alive().get(n3) or {}).get("metadata", {})
                            .get("labels", {}).get("zone")) == "a", what="label patch seen")
        assert nodes_rec.kinds(n3) == ["add", "update"]
        assert pods_rec.kinds(f"{ns}/p1")[0] == "add" and "update" in pods_rec.kinds(f"{ns}/p1")
        assert pods_rec.kinds(f"{ns}/p2")[0] == "add"
        assert server_state(api, "/api/v1/nodes", run_id) == {
            k: v["metadata"]["resourceVersion"] for k, v in nodes_rec.alive().items()}
        assert nodes.resource_version and int(nodes.resource_version) >= int(
            nodes_rec.alive()[n3]["metadata"]["resourceVersion"])
    finally:
        assert nodes.stop(5) and pods.stop(5)
        cleanup_nodes(api, run_id)


def test_watch_recovers_after_apiserver_restart_without_losing_events(api, control_plane, run_id):
    for name in ("a", "b", "keep"):
        make_node(api, f"{name}-{run_id}", run_id)
    rec = Recorder()
    nodes = informer(api, "nodes", run_id, rec).start()
    try:
        assert nodes.wait_synced(30)
        make_node(api, f"before-{run_id}", run_id)
        wait_until(lambda: f"before-{run_id}" in nodes.store, what="event before restart")

        control_plane.restart_apiserver()
        # changes right after the restart, likely before the informer has reconnected
        api.request("PATCH", f"/api/v1/nodes/a-{run_id}", {"metadata": {"labels": {"v": "2"}}})
        api.request("DELETE", f"/api/v1/nodes/b-{run_id}")
        make_node(api, f"c-{run_id}", run_id)

        def converged():
            want = server_state(api, "/api/v1/nodes", run_id)
            have = {k: v["metadata"]["resourceVersion"] for k, v in rec.alive().items()}
            return want == have

        wait_until(converged, 60, "informer to converge with the server after the restart")
        assert rec.kinds(f"b-{run_id}") == ["add", "delete"]
        assert rec.kinds(f"c-{run_id}") == ["add"]
        assert rec.kinds(f"a-{run_id}") == ["add", "update"]
        assert rec.alive()[f"a-{run_id}"]["metadata"]["labels"]["v"] == "2"
        assert rec.kinds(f"keep-{run_id}") == ["add"]               # no spurious update/delete
        assert nodes.store.snapshot().keys() == rec.alive().keys()

        # and it keeps watching afterwards
        api.request("DELETE", f"/api/v1/nodes/c-{run_id}")
        wait_until(lambda: rec.kinds(f"c-{run_id}") == ["add", "delete"], what="event after recovery")
    finally:
        assert nodes.stop(5)
        cleanup_nodes(api, run_id)


def test_too_old_resource_version_is_410(api, run_id):
    make_node(api, f"old-{run_id}", run_id)
    try:
        try:
            stream = api.watch("/api/v1/nodes", {"resourceVersion": "1"}, timeout_seconds=5)
        except ApiError as e:
            code = e.status                     # the API server refuses the watch outright ...
        else:
            with stream:
                first = next(iter(stream))
            assert first[0] == "ERROR", first   # ... or sends the Status as the stream's first event
            code = first[1].get("code")
        assert code == 410
    finally:
        cleanup_nodes(api, run_id)


def test_crd_not_served_is_synced_and_idle(api):
    if "scheduling.volcano.sh" in str(api.get("/apis")):
        pytest.skip("Volcano CRDs are installed on this control plane")
    inf = Informer(api, "queues").start()
    try:
        assert inf.wait_synced(10) and inf.not_served and len(inf.store) == 0
    finally:
        assert inf.stop(5)


def test_scheduler_credentials_sync_the_scheduler_informers(control_plane, api, run_id):
    """What `caldera run` starts with its own identity and deploy/clusterrole.yaml's rules
    (granted under a unique name for this test): nodes, non-terminal pods, priorityclasses
    (the built-in system-* classes are always there) and the Volcano resources (not served here
    unless the CRDs are installed: synced either way)."""
    from pathlib import Path

    import yaml

    from caldera.live.informer import POD_NON_TERMINAL

    rules = yaml.safe_load((Path(__file__).parents[2] / "deploy" / "clusterrole.yaml").read_text())["rules"]
    rbac, name = "/apis/rbac.authorization.k8s.io/v1", f"caldera-informer-{run_id}"
    api.request("POST", rbac + "/clusterroles", {"metadata": {"name": name}, "rules": rules})
    api.request("POST", rbac + "/clusterrolebindings", {
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "caldera-scheduler"}]})
    sapi = connect(control_plane.scheduler_kubeconfig)
    fast = dict(backoff=Backoff(initial=0.1, cap=0.5))
    infs = [Informer(sapi, "nodes", **fast), Informer(sapi, "pods", field_selector=POD_NON_TERMINAL, **fast),
            Informer(sapi, "priorityclasses", **fast), Informer(sapi, "podgroups", **fast),
            Informer(sapi, "queues", **fast)]
    for inf in infs:
        inf.start()
    try:
        assert wait_for_sync(infs, 30), [inf.last_error for inf in infs]
        assert "system-node-critical" in infs[2].store
        assert infs[3].not_served == infs[4].not_served                # CRDs come as a pair
        make_node(api, f"w-{run_id}", run_id)                             # the watch works too
        wait_until(lambda: f"w-{run_id}" in infs[0].store, what="node seen by the scheduler's watch")
    finally:
        assert all(inf.stop(5) for inf in infs)
        sapi.close()
        cleanup_nodes(api, run_id)
        api.request("DELETE", f"{rbac}/clusterrolebindings/{name}")
        api.request("DELETE", f"{rbac}/clusterroles/{name}")
