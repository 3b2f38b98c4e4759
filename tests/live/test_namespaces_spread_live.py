"""`caldera run` with the Namespace, Service and controller informers (issue 12), under the
shipped RBAC (deploy/clusterrole.yaml): a namespace label added while running changes what an
InterPodAffinity namespaceSelector matches, and a ReplicaSet's pods spread over zones by
PodTopologySpread's system default constraints."""
from __future__ import annotations

import logging
from collections import Counter

import pytest

from .kube import (
    clean_cluster,
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

ZONE = "topology.kubernetes.io/zone"



@pytest.fixture(autouse=True)
def _empty_cluster(api):
    """This test reads the whole cluster: it starts from an empty one (earlier modules leave
    their nodes and pods on the control plane the session shares)."""
    clean_cluster(api)

def test_namespace_label_change_applies_to_anti_affinity(scheduler_api, tmp_path, caplog):  # noqa: F811
    admin, api = scheduler_api
    caplog.set_level(logging.WARNING)
    t = tag()
    sched = f"ns-{t}"
    ns = namespace(admin, f"nsaff-{t}")
    nodes = [f"nsaff-{t}-0"]
    create_node(admin, nodes[0], labels={ZONE: f"z-{t}"})
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
        "labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": ZONE,
        "namespaceSelector": {"matchLabels": {"tier": f"gold-{t}"}}}]}}
    try:
        with live_scheduler(api, kube_profile(tmp_path, sched)) as app:
            assert {"namespaces", "services", "replicasets", "statefulsets", "replicationcontrollers"} <= \
                {i.name for i in app.informers}
            db = pod_body(ns, "db", "other-scheduler", labels={"app": "db"})
            db["spec"]["nodeName"] = nodes[0]
            admin.request("POST", f"/api/v1/namespaces/{ns}/pods", db)
            wait_until(lambda: app.ready()[0], timeout=30, what="informers synced with the shipped RBAC")
            wait_until(lambda: (app.cache.workloads.namespace_labels(ns) or {}).get("kubernetes.io/metadata.name")
                       == ns, what="the namespace informed")
            first = pod_body(ns, "first", sched)
            first["spec"]["affinity"] = anti
            admin.request("POST", f"/api/v1/namespaces/{ns}/pods", first)
            wait_until(lambda: get_pod(admin, ns, "first")["spec"].get("nodeName") == nodes[0],
                       what="first bound: its namespace has no tier label yet")
            admin.request("PATCH", f"/api/v1/namespaces/{ns}", {"metadata": {"labels": {"tier": f"gold-{t}"}}})
            wait_until(lambda: (app.cache.workloads.namespace_labels(ns) or {}).get("tier") == f"gold-{t}",
                       what="the label change informed")
            second = pod_body(ns, "second", sched)
            second["spec"]["affinity"] = anti
            admin.request("POST", f"/api/v1/namespaces/{ns}/pods", second)
            cond = wait_until(lambda: [c for c in (get_pod(admin, ns, "second").get("status") or {})
                                       .get("conditions", []) if c["type"] == "PodScheduled"],
                              what="second's PodScheduled condition")
            assert cond[0]["status"] == "False"
            assert "didn't match pod anti-affinity rules" in cond[0]["message"]
    finally:
        delete_nodes(admin, nodes)
    _no_forbidden(caplog)


def test_replicaset_pods_spread_over_zones(scheduler_api, tmp_path, caplog):  # noqa: F811
    admin, api = scheduler_api
    caplog.set_level(logging.WARNING)
    t = tag()
    sched = f"spread-{t}"
    ns = namespace(admin, f"spread-{t}")
    nodes = [f"spread-{t}-{z}" for z in "abc"]
    for n, z, cpu in zip(nodes, "abc", ("64", "8", "8")):   # LeastAllocated alone prefers the big node
        create_node(admin, n, cpu=cpu, memory="64Gi", labels={ZONE: f"{z}-{t}"})
    rs = admin.request("POST", f"/apis/apps/v1/namespaces/{ns}/replicasets", {
        "apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web", "namespace": ns},
        "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}}})[1]
    try:
        with live_scheduler(api, kube_profile(tmp_path, sched)) as app:
            wait_until(lambda: app.ready()[0], timeout=30, what="informers synced with the shipped RBAC")
            wait_until(lambda: ("ReplicaSet", ns, "web") in app.cache.workloads.controllers, what="the RS informed")
            for i in range(6):
                body = pod_body(ns, f"web-{i}", sched, cpu="1", memory="64Mi", labels={"app": "web"})
                body["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web",
                                                        "uid": rs["metadata"]["uid"], "controller": True}]
                admin.request("POST", f"/api/v1/namespaces/{ns}/pods", body)
            placed = wait_until(lambda: (lambda got: got if all(got) else None)(
                [get_pod(admin, ns, f"web-{i}")["spec"].get("nodeName") for i in range(6)]),
                what="6 pods bound")
            assert Counter(placed) == Counter(dict.fromkeys(nodes, 2))
    finally:
        delete_nodes(admin, nodes)
    _no_forbidden(caplog)
