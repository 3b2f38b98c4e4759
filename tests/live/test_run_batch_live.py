"""`caldera run` with a Volcano configuration against the real API server: gangs are bound only
when whole, PodGroup phases are written back."""
from __future__ import annotations

import time

import pytest
import yaml

from caldera.batch.actions import ACTIONS
from caldera.batch.conf import parse_volcano_conf
from caldera.batch.plugins import PLUGINS

from .kube import (
    create_node,
    delete_nodes,
    get_pod,
    live_scheduler,
    namespace,
    pod_body,
    tag,
    wait_until,
)

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
"""


pytestmark = pytest.mark.usefixtures("volcano_crds")     # (conftest.py)


def create_gang(api, ns, name, queue, size, min_member, cpu, sched):
    api.request("POST", f"/apis/scheduling.volcano.sh/v1beta1/namespaces/{ns}/podgroups", {
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"minMember": min_member, "queue": queue, "minResources": {"cpu": str(cpu * min_member)}},
        "status": {"phase": "Pending"}})
    for k in range(size):
        api.request("POST", f"/api/v1/namespaces/{ns}/pods",
                    pod_body(ns, f"{name}-{k}", sched, cpu=str(cpu),
                             annotations={"scheduling.k8s.io/group-name": name}))


def test_gang_bound_only_when_whole(api):
    t = tag()
    sched = f"volcano-{t}"
    ns = namespace(api, f"gang-{t}")
    queue = f"q-{t}"
    api.request("POST", "/apis/scheduling.volcano.sh/v1beta1/queues", {
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": queue},
        "spec": {"weight": 1}, "status": {"state": "Open"}})
    nodes = [f"gang-{t}-{i}" for i in range(3)]
    for n in nodes:
        create_node(api, n, cpu="5", labels={"gang-test": t})
    conf = parse_volcano_conf(yaml.safe_load(CONF), "test.conf", ACTIONS, PLUGINS)
    try:
        with live_scheduler(api, conf, scheduler_name=sched, leader_elect=False, schedule_period=0.3) as app:
            # 4 x 3 CPU on three 5-CPU nodes: only 3 fit, so none may be bound
            create_gang(api, ns, "too-big", queue, 4, 4, 3, sched)
            # 3 x 1 CPU: fits
            create_gang(api, ns, "fits", queue, 3, 3, 1, sched)
            wait_until(lambda: all(get_pod(api, ns, f"fits-{k}")["spec"].get("nodeName") for k in range(3)),
                       timeout=30, what="the fitting gang bound")
            time.sleep(1.5)   # several more sessions
            assert all(not get_pod(api, ns, f"too-big-{k}")["spec"].get("nodeName") for k in range(4))
            pg = api.request("GET", f"/apis/scheduling.volcano.sh/v1beta1/namespaces/{ns}/podgroups/too-big")[1]
            assert pg["status"]["phase"] in ("Pending", "Inqueue")
            conds = [c for c in pg["status"].get("conditions", []) if c.get("type") == "Unschedulable"]
            assert conds and "tasks in gang unschedulable" in conds[0]["message"]
            # the bound gang's PodGroup turns Running once its pods show up bound
            fits = f"/apis/scheduling.volcano.sh/v1beta1/namespaces/{ns}/podgroups/fits"
            wait_until(lambda: api.request("GET", fits)[1]["status"].get("phase") == "Running", timeout=30,
                       what="PodGroup fits Running")
            assert app.loop.binder.failed == 0
    finally:
        delete_nodes(api, nodes)


RECLAIM_CONF = """
actions: "enqueue, allocate, reclaim"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  - name: nodeorder
"""


def test_reclaim_evicts_as_volcano_does(api):
    """examples/batch/reclaim live: the victims get Volcano's Warning "Evict" event and
    PodReady=False (reason Evict) saying why, not a kube "Preempted by" event naming themselves."""
    from .kube import events_for
    t = tag()
    sched = f"volcano-{t}"
    ns = namespace(api, f"reclaim-{t}")
    batch, interactive = f"batch-{t}", f"interactive-{t}"
    for q in (batch, interactive):
        api.request("POST", "/apis/scheduling.volcano.sh/v1beta1/queues", {
            "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": q},
            "spec": {"weight": 1, "reclaimable": True}, "status": {"state": "Open"}})
    nodes = [f"reclaim-{t}-{i}" for i in range(2)]
    for n in nodes:
        create_node(api, n, cpu="8", memory="32Gi")
    conf = parse_volcano_conf(yaml.safe_load(RECLAIM_CONF), "test.conf", ACTIONS, PLUGINS)
    try:
        with live_scheduler(api, conf, scheduler_name=sched, leader_elect=False, schedule_period=0.3):
            create_gang(api, ns, "etl", batch, 8, 2, 2, sched)
            wait_until(lambda: all(get_pod(api, ns, f"etl-{k}")["spec"].get("nodeName") for k in range(8)),
                       timeout=30, what="etl bound")
            for k in range(8):      # no kubelet here: say they run
                api.request("PATCH", f"/api/v1/namespaces/{ns}/pods/etl-{k}/status",
                            {"status": {"phase": "Running"}}, content_type="application/merge-patch+json")
            create_gang(api, ns, "notebook", interactive, 2, 2, 2, sched)
            evicted = wait_until(lambda: [k for k in range(8) if (get_pod(api, ns, f"etl-{k}") or {"metadata": {
                "deletionTimestamp": "gone"}})["metadata"].get("deletionTimestamp")], timeout=30, what="victims")
            victim = f"etl-{evicted[0]}"
            ev = wait_until(lambda: [e for e in events_for(api, ns, victim) if e["reason"] == "Evict"],
                            what="an Evict event")
            assert ev[0]["type"] == "Warning" and ev[0]["note"] == "Pod is evicted, because of reclaim"
            assert not [e for e in events_for(api, ns, victim) if e["reason"] == "Preempted"]
    finally:
        delete_nodes(api, nodes)
