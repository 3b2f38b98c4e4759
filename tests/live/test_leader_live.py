"""Leader election against a real etcd + kube-apiserver (fixture `control_plane` in conftest.py).

Each test uses its own Lease name, so tests do not see each other's elections."""
from __future__ import annotations

import threading
import time
import uuid
from datetime import datetime

import pytest

from caldera.live.client import ApiError, connect
from caldera.live.leader import LeaderElectionConfig, LeaderElector

NS = "kube-system"
FAST = dict(lease_duration=2, renew_deadline=1.5, retry_period=0.25)


def wait_until(cond, timeout=30.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def lease_name(api):
    name = f"caldera-test-{uuid.uuid4().hex[:8]}"
    yield name
    try:
        api.request("DELETE", f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases/{name}")
    except ApiError:
        pass


def lease(api, name):
    return api.request("GET", f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases/{name}")[1]


class Events:
    def __init__(self):
        self.log, self.lock = [], threading.Lock()

    def add(self, what):
        with self.lock:
            self.log.append((what, time.monotonic()))

    def count(self, what):
        with self.lock:
            return sum(1 for w, _ in self.log if w == what)

    def kw(self):
        return dict(on_started_leading=lambda: self.add("started"),
                    on_stopped_leading=lambda: self.add("stopped"))


def elector(api, name, ident, ev=None, **cfg):
    c = LeaderElectionConfig(namespace=NS, name=name, identity=ident, **{**FAST, **cfg})
    return LeaderElector(api, c, **(ev.kw() if ev else {}))


def parse_micro(s):
    return datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ")


def test_create_renew_release_and_handover(api, lease_name):
    ea, eb = Events(), Events()
    a = elector(api, lease_name, "host-a_1", ea).start()
    try:
        wait_until(a.is_leader, 10, "a to lead")
        b = elector(api, lease_name, "host-b_2", eb).start()
        spec = lease(api, lease_name)["spec"]
        assert spec["holderIdentity"] == "host-a_1"
        assert spec["leaseDurationSeconds"] == 2
        assert spec.get("leaseTransitions", 0) == 0
        first_renew = parse_micro(spec["renewTime"])
        acquired = spec["acquireTime"]
        wait_until(lambda: parse_micro(lease(api, lease_name)["spec"]["renewTime"]) > first_renew, 5, "a renew")
        spec = lease(api, lease_name)["spec"]
        assert spec["acquireTime"] == acquired and spec["holderIdentity"] == "host-a_1"
        # b stays a follower for several lease durations while a renews
        for _ in range(30):
            assert not b.is_leader()
            time.sleep(0.1)
        assert b.leader() == "host-a_1"
        a.stop()
        assert ea.count("stopped") == 1 and not a.is_leader()
        t0 = time.monotonic()
        wait_until(b.is_leader, 10, "b to take over")
        # a released (empty holder): b need not wait a lease duration
        assert time.monotonic() - t0 < 1.5
        spec = lease(api, lease_name)["spec"]
        assert spec["holderIdentity"] == "host-b_2" and spec["leaseTransitions"] == 1
        assert spec["leaseDurationSeconds"] == 2
        b.stop()
        spec = lease(api, lease_name)["spec"]
        assert spec["holderIdentity"] in ("", None) and spec["leaseDurationSeconds"] == 1
    finally:
        a.stop()


def test_abandoned_lease_is_taken_only_after_a_full_lease_duration_by_our_clock(api, lease_name):
    # an old holder that died without releasing; its renewTime is far in the future
    api.request("POST", f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases", {
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": lease_name, "namespace": NS},
        "spec": {"holderIdentity": "ghost", "leaseDurationSeconds": 3,
                 "acquireTime": "2099-01-01T00:00:00.000000Z", "renewTime": "2099-01-01T00:00:00.000000Z",
                 "leaseTransitions": 4}})
    t0 = time.monotonic()
    b = elector(api, lease_name, "host-b_3").start()
    try:
        wait_until(b.is_leader, 15, "b to take over")
        assert time.monotonic() - t0 >= 3.0
        spec = lease(api, lease_name)["spec"]
        assert spec["holderIdentity"] == "host-b_3" and spec["leaseTransitions"] == 5
    finally:
        b.stop()


def test_stale_resource_version_is_a_conflict_and_the_elector_recovers(api, lease_name):
    a = elector(api, lease_name, "host-a_4").start()
    try:
        wait_until(a.is_leader, 10, "a to lead")
        obj = lease(api, lease_name)
        stale = dict(obj, metadata=dict(obj["metadata"]))
        wait_until(lambda: lease(api, lease_name)["metadata"]["resourceVersion"]
                   != obj["metadata"]["resourceVersion"], 5, "a renew")
        with pytest.raises(ApiError) as e:
            api.request("PUT", f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases/{lease_name}",
                        dict(stale, spec={**stale["spec"], "holderIdentity": "thief"}))
        assert e.value.status == 409
        # someone overwrites the holder with a fresh resourceVersion: a sees it and stops at once
        cur = lease(api, lease_name)
        api.request("PUT", f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases/{lease_name}",
                    dict(cur, spec={**cur["spec"], "holderIdentity": "thief"}))
        wait_until(lambda: not a.is_leader(), 3, "a to notice the new holder")
        assert a.leader() == "thief"
    finally:
        a.stop()
    assert lease(api, lease_name)["spec"]["holderIdentity"] == "thief"   # not released: not ours


def test_create_get_update_on_one_named_lease_is_all_the_rbac_it_needs(control_plane, api):
    """With only deploy/'s leader-election Role (create leases; get/update the one named Lease),
    the scheduler's own credentials can acquire, renew and release; another name is refused."""
    ns = f"caldera-le-{uuid.uuid4().hex[:6]}"
    api.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    rbac = f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}"
    api.request("POST", rbac + "/roles", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "le", "namespace": ns},
        "rules": [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
                  {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                   "resourceNames": ["caldera-scheduler"], "verbs": ["get", "update"]}]})
    api.request("POST", rbac + "/rolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "le", "namespace": ns},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "le"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "caldera-scheduler"}]})
    sapi = connect(control_plane.scheduler_kubeconfig)
    ok = LeaderElector(sapi, LeaderElectionConfig(namespace=ns, name="caldera-scheduler", identity="sched_1", **FAST))
    other = LeaderElector(sapi, LeaderElectionConfig(namespace=ns, name="other", identity="sched_2", **FAST))
    try:
        ok.start()
        wait_until(ok.is_leader, 15, "the scheduler identity to lead")   # RBAC may take a moment
        time.sleep(1.0)                                                  # several renews
        assert ok.is_leader()
        for _ in range(3):
            other.step()
        assert not other.is_leader()
        ok.stop()
        spec = api.request("GET", f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/caldera-scheduler")[1]["spec"]
        assert spec["holderIdentity"] in ("", None) and spec["leaseDurationSeconds"] == 1
    finally:
        ok.stop()
        sapi.close()
        api.request("DELETE", f"/api/v1/namespaces/{ns}")


class RecordingApi:
    """The real Api, logging when each successful write (acquire/renew) was sent."""

    def __init__(self, api):
        self.api, self.writes, self.lock = api, [], threading.Lock()

    def request(self, method, path, body=None, query=None, timeout=None):
        t = time.monotonic()
        out = self.api.request(method, path, body, query, timeout=timeout)
        if method in ("PUT", "POST"):
            with self.lock:
                self.writes.append(t)
        return out

    def last_write_before(self, t):
        with self.lock:
            return max((w for w in self.writes if w <= t), default=None)


def test_leader_gives_up_while_the_api_server_is_down_and_comes_back(control_plane, api, lease_name):
    ev = Events()
    rapi = RecordingApi(connect(control_plane.admin_kubeconfig))
    a = elector(rapi, lease_name, "host-a_5", ev).start()
    samples = []                       # (t, is_leader, term)
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            t = time.monotonic()              # taken before asking: load only makes t earlier
            samples.append((t, a.is_leader(), a.transitions))
            time.sleep(0.01)

    th = threading.Thread(target=sample, daemon=True)
    try:
        wait_until(a.is_leader, 10, "a to lead")
        term = a.transitions
        th.start()
        time.sleep(0.5)
        t_down = time.monotonic()
        control_plane.restart_apiserver()
        wait_until(a.is_leader, 30, "a to lead again")
        assert lease(api, lease_name)["spec"]["holderIdentity"] == "host-a_5"
        # the restart outlasted the renew deadline (1.5s): leadership was given up and taken again
        assert ev.count("stopped") >= 1 and a.transitions > term
        assert any(not leader and tr == term for t, leader, tr in samples if t > t_down)
        # never leader more than renew_deadline after the last successful renew was *sent*
        checked = 0
        for t, leader, tr in samples:
            if leader and tr == term:
                assert t < rapi.last_write_before(t) + 1.5, t - rapi.last_write_before(t)
                checked += 1
        assert checked > 10
    finally:
        stop.set()
        a.stop()
        rapi.api.close()
