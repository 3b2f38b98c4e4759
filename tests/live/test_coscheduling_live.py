"""`caldera run` with the Coscheduling plugin against a real API server, under the shipped RBAC
(deploy/clusterrole.yaml): a PodGroup informer on scheduling.x-k8s.io; a 4-pod group of minMember
4 binds all four when they fit, and none when only 3 fit (the waiting pods are rejected by the
last pod's PostFilter and get kube's FailedScheduling message)."""
from __future__ import annotations

import logging
import time

from .kube import (
    _served,
    apply_manifest,
    create_node,
    delete_nodes,
    get_pod,
    kube_profile,
    live_scheduler,
    namespace,
    pod_body,
    tag,
    wait_until,
)
from .test_rbac_live import _no_forbidden, scheduler_api  # noqa: F401  (fixture)

# A minimal structural CRD for scheduler-plugins' PodGroup (group, names and scope as theirs; the
# spec is kept as given)
PODGROUP_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "podgroups.scheduling.x-k8s.io"},
    "spec": {
        "group": "scheduling.x-k8s.io", "scope": "Namespaced",
        "names": {"kind": "PodGroup", "listKind": "PodGroupList", "plural": "podgroups", "singular": "podgroup"},
        "versions": [{"name": "v1alpha1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
            "type": "object", "properties": {
                "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"},
                "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}}],
    },
}

EXTRA = """  plugins:
    multiPoint:
      enabled: [{name: Coscheduling}]
      disabled: [{name: PrioritySort}]
"""


def _gang(admin, ns, sched, nodes, t):
    apply_manifest(admin, PODGROUP_CRD)
    wait_until(lambda: _served(admin, "/apis/scheduling.x-k8s.io/v1alpha1/podgroups"), timeout=60,
               what="scheduling.x-k8s.io served")
    admin.request("POST", f"/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{ns}/podgroups", {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
        "metadata": {"name": "gang", "namespace": ns}, "spec": {"minMember": 4}})
    for n in nodes:
        create_node(admin, n, cpu="4")


def _pods(admin, ns, sched):
    for i in range(4):
        admin.request("POST", f"/api/v1/namespaces/{ns}/pods",
                      pod_body(ns, f"w{i}", sched, cpu="3", labels={"scheduling.x-k8s.io/pod-group": "gang"}))


def _condition(admin, ns, name):
    conds = [c for c in (get_pod(admin, ns, name).get("status") or {}).get("conditions", [])
             if c["type"] == "PodScheduled"]
    return conds[0] if conds else None


def test_gang_binds_all_four_when_they_fit(scheduler_api, tmp_path, caplog):  # noqa: F811
    admin, api = scheduler_api
    caplog.set_level(logging.WARNING)
    t = tag()
    sched, ns = f"cos-{t}", namespace(admin, f"cos-{t}")
    nodes = [f"cos-{t}-{i}" for i in range(4)]
    _gang(admin, ns, sched, nodes, t)
    try:
        with live_scheduler(api, kube_profile(tmp_path, sched, EXTRA)) as app:
            wait_until(lambda: app.ready()[0], timeout=30, what="informers synced with the shipped RBAC")
            assert "podgroups.scheduling.x-k8s.io" in {i.name for i in app.informers}
            wait_until(lambda: f"{ns}/gang" in app.loop.scheduler.pod_groups, what="the PodGroup informed")
            _pods(admin, ns, sched)
            placed = wait_until(lambda: (lambda got: got if all(got) else None)(
                [get_pod(admin, ns, f"w{i}")["spec"].get("nodeName") for i in range(4)]), what="4 pods bound")
            assert sorted(placed) == sorted(nodes)
    finally:
        delete_nodes(admin, nodes)
    _no_forbidden(caplog)


def test_gang_binds_none_when_three_fit(scheduler_api, tmp_path, caplog):  # noqa: F811
    admin, api = scheduler_api
    caplog.set_level(logging.WARNING)
    t = tag()
    sched, ns = f"cos3-{t}", namespace(admin, f"cos3-{t}")
    nodes = [f"cos3-{t}-{i}" for i in range(3)]
    _gang(admin, ns, sched, nodes, t)
    try:
        with live_scheduler(api, kube_profile(tmp_path, sched, EXTRA)) as app:
            wait_until(lambda: app.ready()[0], timeout=30, what="informers synced with the shipped RBAC")
            wait_until(lambda: f"{ns}/gang" in app.loop.scheduler.pod_groups, what="the PodGroup informed")
            _pods(admin, ns, sched)
            conds = wait_until(lambda: (lambda cs: cs if all(cs) else None)(
                [_condition(admin, ns, f"w{i}") for i in range(4)]), what="4 PodScheduled conditions")
            assert all(c["status"] == "False" for c in conds)
            # the group keeps retrying (the rejections' forgets and the sibling activation requeue
            # pods): each attempt ends with a member failing Filter and rejecting the waiting ones
            for c in conds:
                m = c["message"]
                assert m in ("0/1 nodes are available: 1 optimistic rejection in PostFilter.",
                             "0/1 nodes are available: 1 rejection in Unreserve.") or \
                    (f"PodGroup {ns}/gang gets rejected due to Pod " in m and m.endswith(" even after PostFilter")), m
            assert any("optimistic rejection in PostFilter" in c["message"] for c in conds)
            time.sleep(2)
            assert all(not get_pod(admin, ns, f"w{i}")["spec"].get("nodeName") for i in range(4))
    finally:
        delete_nodes(admin, nodes)
    _no_forbidden(caplog)
