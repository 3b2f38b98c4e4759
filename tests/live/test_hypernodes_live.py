"""`caldera run` with a Volcano configuration over HyperNodes (topology.volcano.sh/v1alpha1)
informed from the real API server: a hard-topology gang lands inside one leaf HyperNode."""
from __future__ import annotations

import pytest
import yaml

from caldera.batch.actions import ACTIONS
from caldera.batch.conf import parse_volcano_conf
from caldera.batch.plugins import PLUGINS

from .kube import create_node, delete_nodes, get_pod, live_scheduler, namespace, pod_body, tag, wait_until

CONF = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: network-topology-aware
"""
HN = "/apis/topology.volcano.sh/v1alpha1/hypernodes"
PG = "/apis/scheduling.volcano.sh/v1beta1"

pytestmark = pytest.mark.usefixtures("volcano_crds")     # (conftest.py; the HyperNode CRD too)


def hypernode(name: str, tier: int, kind: str, members: list[str]) -> dict:
    return {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": name},
            "spec": {"tier": tier, "members": [{"type": kind, "selector": {"exactMatch": {"name": m}}}
                                               for m in members]}}


def test_hard_topology_gang_lands_in_one_leaf(api):
    t = tag()
    sched = f"volcano-{t}"
    ns = namespace(api, f"hn-{t}")
    # leaf a: two 2-CPU nodes (room for the whole gang of 4 x 1 CPU); leaf b: two 1-CPU nodes
    # (room for half of it); a spine over both. nodeorder's least-requested alone would spread
    # the gang over all four nodes.
    a = [f"hn-{t}-a{i}" for i in range(2)]
    b = [f"hn-{t}-b{i}" for i in range(2)]
    for n in a:
        create_node(api, n, cpu="2", labels={"hn-test": t})
    for n in b:
        create_node(api, n, cpu="1", labels={"hn-test": t})
    hns = [hypernode(f"leaf-a-{t}", 1, "Node", a), hypernode(f"leaf-b-{t}", 1, "Node", b),
           hypernode(f"spine-{t}", 2, "HyperNode", [f"leaf-a-{t}", f"leaf-b-{t}"])]
    for h in hns:
        api.request("POST", HN, h)
    api.request("POST", f"{PG}/queues", {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                                         "metadata": {"name": f"q-{t}"}, "spec": {"weight": 1},
                                         "status": {"state": "Open"}})
    conf = parse_volcano_conf(yaml.safe_load(CONF), "test.conf", ACTIONS, PLUGINS)
    try:
        with live_scheduler(api, conf, scheduler_name=sched, leader_elect=False, schedule_period=0.3) as app:
            wait_until(lambda: len(app.cache.hypernodes) >= 3, timeout=30, what="HyperNodes informed")
            api.request("POST", f"{PG}/namespaces/{ns}/podgroups", {
                "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                "metadata": {"name": "train", "namespace": ns},
                "spec": {"minMember": 4, "queue": f"q-{t}", "minResources": {"cpu": "4"},
                         "networkTopology": {"mode": "hard", "highestTierAllowed": 1}},
                "status": {"phase": "Pending"}})
            for k in range(4):
                body = pod_body(ns, f"train-{k}", sched, cpu="1",
                                annotations={"scheduling.k8s.io/group-name": "train"})
                body["spec"]["nodeSelector"] = {"hn-test": t}
                api.request("POST", f"/api/v1/namespaces/{ns}/pods", body)
            wait_until(lambda: all(get_pod(api, ns, f"train-{k}")["spec"].get("nodeName") for k in range(4)),
                       timeout=30, what="the gang bound")
            where = sorted(get_pod(api, ns, f"train-{k}")["spec"]["nodeName"] for k in range(4))
            assert set(where) == set(a), where
            assert where == sorted(a * 2)
            assert app.loop.binder.failed == 0
    finally:
        delete_nodes(api, a + b)
        for h in hns:
            try:
                api.request("DELETE", f"{HN}/{h['metadata']['name']}")
            except Exception:
                pass
