"""`caldera run --feature-gates GenericWorkload=true,GangScheduling=true` against a real API server
(kube-apiserver v1.35.4 with scheduling.k8s.io/v1alpha1 served and GenericWorkload on, so pods keep
spec.workloadRef), under the shipped RBAC: a Workload informer; a gang of 3 (minCount 3) binds all
three when three fit, and none when two fit -- the two that fit wait on Permit and are rejected
when the gang's scheduling timeout fires, with kube's message."""
from __future__ import annotations

import logging
import re
import time

import pytest

from caldera.config import featuregates
from caldera.plugins.gangscheduling import manager

from .kube import create_node, delete_nodes, get_pod, kube_profile, live_scheduler, namespace, pod_body, tag, wait_until
from .test_rbac_live import _no_forbidden, scheduler_api  # noqa: F401  (fixture)

GATES = "GenericWorkload=true,GangScheduling=true"


@pytest.fixture
def gates():
    with featuregates.use(featuregates.parse(GATES)):
        yield


def _workload(admin, ns, min_count=3):
    admin.request("POST", f"/apis/scheduling.k8s.io/v1alpha1/namespaces/{ns}/workloads", {
        "apiVersion": "scheduling.k8s.io/v1alpha1", "kind": "Workload",
        "metadata": {"name": "job", "namespace": ns},
        "spec": {"podGroups": [{"name": "workers", "policy": {"gang": {"minCount": min_count}}}]}})


def _pods(admin, ns, sched, n=3):
    for i in range(n):
        body = pod_body(ns, f"w{i}", sched, cpu="3")
        body["spec"]["workloadRef"] = {"name": "job", "podGroup": "workers"}
        created = admin.request("POST", f"/api/v1/namespaces/{ns}/pods", body)[1]
        assert created["spec"].get("workloadRef") == {"name": "job", "podGroup": "workers"}, \
            "the API server dropped spec.workloadRef: is GenericWorkload on (scripts/control-plane)?"


def _condition(admin, ns, name):
    conds = [c for c in (get_pod(admin, ns, name).get("status") or {}).get("conditions", [])
             if c["type"] == "PodScheduled"]
    return conds[0] if conds else None


def test_gang_of_three_binds_all_when_three_fit(scheduler_api, gates, tmp_path, caplog):  # noqa: F811
    admin, api = scheduler_api
    caplog.set_level(logging.WARNING)
    t = tag()
    sched, ns = f"gang-{t}", namespace(admin, f"gang-{t}")
    nodes = [f"gang-{t}-{i}" for i in range(3)]
    for n in nodes:
        create_node(admin, n, cpu="4")
    try:
        with live_scheduler(api, kube_profile(tmp_path, sched)) as app:
            wait_until(lambda: app.ready()[0], timeout=30, what="informers synced with the shipped RBAC")
            assert "workloads.scheduling.k8s.io" in {i.name for i in app.informers}
            _pods(admin, ns, sched)          # before their Workload: gated at PreEnqueue
            time.sleep(1)
            assert all(not get_pod(admin, ns, f"w{i}")["spec"].get("nodeName") for i in range(3))
            _workload(admin, ns)             # Workload/Add moves them
            placed = wait_until(lambda: (lambda got: got if all(got) else None)(
                [get_pod(admin, ns, f"w{i}")["spec"].get("nodeName") for i in range(3)]), what="3 pods bound")
            assert sorted(placed) == sorted(nodes)
    finally:
        delete_nodes(admin, nodes)
    _no_forbidden(caplog)


def test_gang_of_three_binds_none_when_two_fit(scheduler_api, gates, tmp_path, caplog, monkeypatch):  # noqa: F811
    admin, api = scheduler_api
    caplog.set_level(logging.WARNING)
    # kube exports DefaultSchedulingTimeoutDuration for tests; 5 minutes is too long to wait here
    monkeypatch.setattr(manager, "DEFAULT_SCHEDULING_TIMEOUT", 3.0)
    t = tag()
    sched, ns = f"gang2-{t}", namespace(admin, f"gang2-{t}")
    nodes = [f"gang2-{t}-{i}" for i in range(2)]
    for n in nodes:
        create_node(admin, n, cpu="4")
    _workload(admin, ns)
    try:
        with live_scheduler(api, kube_profile(tmp_path, sched)) as app:
            wait_until(lambda: app.ready()[0], timeout=30, what="informers synced with the shipped RBAC")
            wait_until(lambda: f"{ns}/job" in app.loop.scheduler.gang_workloads, what="the Workload informed")
            _pods(admin, ns, sched)
            conds = wait_until(lambda: (lambda cs: cs if all(cs) else None)(
                [_condition(admin, ns, f"w{i}") for i in range(3)]), timeout=30, what="3 PodScheduled conditions")
            assert all(c["status"] == "False" for c in conds)
            msgs = [c["message"] for c in conds]
            # the first pod to wait sets the gang's deadline (3s); the next waits what is left of it
            # (kube prints that time.Duration as is, e.g. 2.999604276s)
            timeout_msg = re.compile(r"0/1 nodes are available: 1 rejected due to timeout after waiting "
                                     r"[0-9.]+(ms|s) at plugin GangScheduling\.")
            assert any(m == "0/1 nodes are available: 1 rejected due to timeout after waiting 3s at plugin "
                       "GangScheduling." for m in msgs), msgs
            for m in msgs:
                assert timeout_msg.fullmatch(m) or m.startswith("0/2 nodes are available: 2 Insufficient cpu."), m
            time.sleep(1)
            assert all(not get_pod(admin, ns, f"w{i}")["spec"].get("nodeName") for i in range(3))
    finally:
        delete_nodes(admin, nodes)
    _no_forbidden(caplog)


def test_shipped_rbac_lists_and_watches_workloads(scheduler_api):  # noqa: F811
    """deploy/clusterrole.yaml lets the scheduler's user list (and watch) kube's Workloads."""
    _, api = scheduler_api
    items = api.request("GET", "/apis/scheduling.k8s.io/v1alpha1/workloads")[1]
    assert items.get("kind") == "WorkloadList"
