"""`caldera run` with Volcano's resourcequota and pdb plugins against the real API server: the
ResourceQuota and PodDisruptionBudget informers feed the session.

No kube-controller-manager runs beside the test API server, so neither the resource-quota
controller nor the disruption controller writes status: the tests write it through the status
subresource, as those controllers would. The API server's own ResourceQuota admission plugin is
on (it is one of kube-apiserver's defaults): once a quota has `status.hard`, every pod created in
the namespace is checked against it and charged to `status.used` by the API server itself. The
quota test works with that: the held-back PodGroup's pod is small (it is its PodGroup's
minResources, 4 CPU, that exceeds the 3 CPU quota), so admission lets both pods in."""
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
    events_for,
    get_pod,
    live_scheduler,
    namespace,
    pod_body,
    tag,
    wait_until,
)

PG = "/apis/scheduling.volcano.sh/v1beta1"
MERGE = "application/merge-patch+json"


pytestmark = pytest.mark.usefixtures("volcano_crds")     # (conftest.py)


def _conf(text: str):
    return parse_volcano_conf(yaml.safe_load(text), "test.conf", ACTIONS, PLUGINS)


def _queue(api, name: str, reclaimable: bool = False) -> None:
    api.request("POST", f"{PG}/queues", {
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name},
        "spec": {"weight": 1, "reclaimable": reclaimable}, "status": {"state": "Open"}})


def _group(api, ns: str, name: str, queue: str, min_member: int, min_cpu: str, pods: list[tuple[str, str, dict]],
           sched: str, node_selector: dict | None = None) -> None:
    """A PodGroup with minResources cpu `min_cpu`, and its pods: (name, cpu, labels), kept to the
    nodes `node_selector` picks (the control plane is shared: other tests' nodes may be left)."""
    api.request("POST", f"{PG}/namespaces/{ns}/podgroups", {
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"minMember": min_member, "queue": queue, "minResources": {"cpu": min_cpu}},
        "status": {"phase": "Pending"}})
    for pname, cpu, labels in pods:
        body = pod_body(ns, pname, sched, cpu=cpu, labels=labels, annotations={"scheduling.k8s.io/group-name": name})
        if node_selector:
            body["spec"]["nodeSelector"] = dict(node_selector)
        api.request("POST", f"/api/v1/namespaces/{ns}/pods", body)


QUOTA_CONF = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
  - name: resourcequota
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"""


def test_resource_quota_holds_back_a_podgroup(api):
    t = tag()
    sched = f"volcano-{t}"
    ns = namespace(api, f"quota-{t}")
    queue = f"q-{t}"
    _queue(api, queue)
    path = f"/api/v1/namespaces/{ns}/resourcequotas"
    api.request("POST", path, {"apiVersion": "v1", "kind": "ResourceQuota",
                               "metadata": {"name": "compute", "namespace": ns}, "spec": {"hard": {"cpu": "3"}}})
    # what the resource-quota controller would write (none runs here)
    api.request("PATCH", f"{path}/compute/status", {"status": {"hard": {"cpu": "3"}, "used": {"cpu": "0"}}},
                content_type=MERGE)
    nodes = [f"quota-{t}-0"]
    create_node(api, nodes[0], cpu="8")
    try:
        with live_scheduler(api, _conf(QUOTA_CONF), scheduler_name=sched, leader_elect=False,
                            schedule_period=0.3) as app:
            assert "resourcequotas" in [i.name for i in app.informers]
            wait_until(lambda: f"{ns}/compute" in app.cache.resource_quotas, what="the quota informed")
            _group(api, ns, "big", queue, 1, "4", [("big-0", "1", {})], sched)      # 4 CPU > the quota's 3
            _group(api, ns, "small", queue, 1, "1", [("small-0", "1", {})], sched)
            wait_until(lambda: get_pod(api, ns, "small-0")["spec"].get("nodeName"), timeout=30,
                       what="the small PodGroup's pod bound")
            # the API server's quota admission charged both pods to status.used
            used = api.request("GET", f"{path}/compute")[1]["status"]["used"]
            assert used == {"cpu": "2"}, used
            wait_until(lambda: app.cache.resource_quotas[f"{ns}/compute"].used == {"cpu": 2 * 10**9},
                       what="the informer saw status.used")
            time.sleep(1.5)       # several more sessions: big stays Pending, its pod unbound
            assert not get_pod(api, ns, "big-0")["spec"].get("nodeName")
            big = api.request("GET", f"{PG}/namespaces/{ns}/podgroups/big")[1]
            assert (big.get("status") or {}).get("phase", "Pending") == "Pending"
            # resourcequota's refusal is a PodGroup event, as Volcano's RecordPodGroupEvent writes it
            ev = wait_until(lambda: [e for e in events_for(api, ns, "big") if e["reason"] == "Unschedulable"],
                            what="the PodGroup event")
            assert ev[0]["regarding"]["kind"] == "PodGroup" and ev[0]["type"] == "Normal"
            assert ev[0]["regarding"]["apiVersion"] == "scheduling.volcano.sh/v1beta1"
            assert "resource quota insufficient" in ev[0]["note"], ev[0]["note"]
            assert len(ev) == 1, "written once while the session keeps recording it"
            # the session saw the quota: the enqueue action was refused by resourcequota
            res = app.loop.snapshot()
            # (other tests of the session may have left quotas in their own namespaces)
            assert [q.key for q in res.resource_quotas if q.key.startswith(f"{ns}/")] == [f"{ns}/compute"]
            # raising the quota lets it in
            api.request("PATCH", f"{path}/compute", {"spec": {"hard": {"cpu": "8"}}}, content_type=MERGE)
            api.request("PATCH", f"{path}/compute/status", {"status": {"hard": {"cpu": "8"}}}, content_type=MERGE)
            wait_until(lambda: get_pod(api, ns, "big-0")["spec"].get("nodeName"), timeout=30,
                       what="big bound once the quota allows it")
            assert app.loop.binder.failed == 0
    finally:
        delete_nodes(api, nodes)


# Volcano's tiers decide victims: a plugin answering "no victims" ends its tier and a later
# tier's voter decides instead, while an earlier tier with a set decides before pdb is asked
# (tests/batch/test_pdb_plugin.py::test_a_pdb_veto_falls_through_to_the_next_tier). With
# proportion voting in tier 2, reclaim on the node without etl-7 would evict one of proportion's
# picks; in tier 1 beside pdb, proportion's pick (the first candidate that keeps batch at its
# deserved share) need not be etl-7, leaving no victim at all. So proportion does not vote here.
PDB_CONF = """
actions: "enqueue, allocate, reclaim"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
  - name: pdb
- plugins:
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
    enableReclaimable: false
  - name: nodeorder
"""


def test_pdb_protects_reclaim_victims(api):
    """examples/batch/reclaim with a PDB: 8 etl pods (2 CPU) fill two 8-CPU nodes for the batch
    queue; a 2-CPU notebook of the interactive queue reclaims one of them. A PDB with 0
    disruptions allowed covers etl-0..6, so the only victim reclaim may take is etl-7."""
    t = tag()
    sched = f"volcano-{t}"
    ns = namespace(api, f"pdb-{t}")
    batch, interactive = f"batch-{t}", f"interactive-{t}"
    for q in (batch, interactive):
        _queue(api, q, reclaimable=True)
    path = f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets"
    api.request("POST", path, {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                               "metadata": {"name": "etl", "namespace": ns},
                               "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"pdb": "etl"}}}})
    # what the disruption controller would write (none runs here)
    api.request("PATCH", f"{path}/etl/status", {"status": {
        "disruptionsAllowed": 0, "currentHealthy": 7, "desiredHealthy": 7, "expectedPods": 7}}, content_type=MERGE)
    nodes = [f"pdb-{t}-{i}" for i in range(2)]
    only = {"pdb-test": t}
    for n in nodes:
        create_node(api, n, cpu="8", memory="32Gi", labels=only)
    try:
        with live_scheduler(api, _conf(PDB_CONF), scheduler_name=sched, leader_elect=False,
                            schedule_period=0.3) as app:
            wait_until(lambda: f"{ns}/etl" in app.cache.pdbs, what="the PDB informed")
            assert app.cache.pdbs[f"{ns}/etl"].disruptions_allowed == 0
            _group(api, ns, "etl", batch, 2, "4",
                   [(f"etl-{k}", "2", {"app": "etl", **({"pdb": "etl"} if k < 7 else {})}) for k in range(8)], sched,
                   only)
            wait_until(lambda: all(get_pod(api, ns, f"etl-{k}")["spec"].get("nodeName") for k in range(8)),
                       timeout=30, what="etl bound")
            for k in range(8):      # no kubelet here: say they run
                api.request("PATCH", f"/api/v1/namespaces/{ns}/pods/etl-{k}/status",
                            {"status": {"phase": "Running"}}, content_type=MERGE)
            _group(api, ns, "notebook", interactive, 1, "2", [("notebook-0", "2", {"app": "notebook"})], sched, only)

            def gone(k):
                p = get_pod(api, ns, f"etl-{k}")
                return p is None or p["metadata"].get("deletionTimestamp")
            wait_until(lambda: gone(7), timeout=30, what="etl-7 evicted")
            ev = wait_until(lambda: [e for e in events_for(api, ns, "etl-7") if e["reason"] == "Evict"],
                            what="an Evict event")
            assert ev[0]["note"] == "Pod is evicted, because of reclaim"
            wait_until(lambda: get_pod(api, ns, "notebook-0")["spec"].get("nodeName"), timeout=30,
                       what="the notebook bound")
            time.sleep(1.0)
            assert not [k for k in range(7) if gone(k)], "a PDB-protected pod was evicted"
    finally:
        delete_nodes(api, nodes)
