"""`caldera run` with Volcano's numa-aware plugin against the real API server: the Numatopology
informer feeds the session, a Guaranteed single-numa-node pod is bound on the only node whose
Numatopology fits it, the CPUs it was given stay taken for the next sessions until the node's
Numatopology says otherwise (Volcano's UpdateSchedulerNumaInfo / RefreshNumaSchedulerInfoByCrd),
and the shipped RBAC lets the informer list and watch.

No resource exporter runs beside the test API server: the test writes the Numatopologies as it
would. The binding carries no `volcano.sh/topology-decision` annotation: Volcano v1.15.1 writes
that annotation at bind time only from the task's NumaInfo.ResMap, which nothing in the scheduler
fills (it is only read back from a pod that already has the annotation), so the kubelet's own CPU
manager chooses the CPUs."""
from __future__ import annotations

import logging

import pytest
import yaml

from caldera.batch.actions import ACTIONS
from caldera.batch.conf import parse_volcano_conf
from caldera.batch.plugins import PLUGINS

from .conftest import ROOT, install_numatopology_crd
from .kube import create_node, delete_nodes, get_pod, live_scheduler, namespace, pod_body, tag, wait_until
from .test_rbac_live import _no_forbidden, scheduler_api  # noqa: F401  (the shipped-RBAC fixture)

NUMA = "/apis/nodeinfo.volcano.sh/v1alpha1/numatopologies"
DECISION = "volcano.sh/topology-decision"
CONF = (ROOT / "examples" / "batch" / "numa" / "volcano-scheduler.conf").read_text()


def _conf():
    return parse_volcano_conf(yaml.safe_load(CONF), "test.conf", ACTIONS, PLUGINS)


def numatopology(name: str, allocatable: str) -> dict:
    """8 CPUs, NUMA 0: 0-3, NUMA 1: 4-7 (two per core), static / single-numa-node."""
    return {"apiVersion": "nodeinfo.volcano.sh/v1alpha1", "kind": "Numatopology", "metadata": {"name": name},
            "spec": {"policies": {"CPUManagerPolicy": "static", "TopologyManagerPolicy": "single-numa-node"},
                     "numares": {"cpu": {"allocatable": allocatable, "capacity": 8}},
                     "cpuDetail": {str(c): {"numa": c // 4, "socket": c // 4, "core": c // 2} for c in range(8)}}}


def guaranteed(ns: str, name: str, sched: str, cpu: int, t: str) -> dict:
    body = pod_body(ns, name, sched, cpu=str(cpu), memory="1Gi",
                    annotations={"volcano.sh/numa-topology-policy": "single-numa-node"})
    res = body["spec"]["containers"][0]["resources"]
    res["limits"] = dict(res["requests"])                  # requests = limits: Guaranteed
    body["spec"]["nodeSelector"] = {"numa-test": t}        # (the control plane is shared)
    return body


@pytest.fixture
def numa_api(api, volcano_crds):
    return api


def test_guaranteed_pod_goes_where_its_numa_node_fits(numa_api):
    api = numa_api
    t = tag()
    sched = f"numa-{t}"
    ns = namespace(api, f"numa-{t}")
    a, b, plain = f"numa-a-{t}", f"numa-b-{t}", f"plain-{t}"
    for n in (a, b, plain):
        create_node(api, n, cpu="8", memory="32Gi", labels={"numa-test": t})
    # a: 3 free CPUs on each NUMA node; b: NUMA 1 (4-7) free; plain: no Numatopology
    api.request("POST", NUMA, numatopology(a, "1-3,5-7"))
    api.request("POST", NUMA, numatopology(b, "0-1,4-7"))
    try:
        with live_scheduler(api, _conf(), scheduler_name=sched, leader_elect=False, schedule_period=0.3) as app:
            assert "numatopologies" in [i.name for i in app.informers]
            api.request("POST", f"/api/v1/namespaces/{ns}/pods", guaranteed(ns, "db", sched, 4, t))
            db = wait_until(lambda: (p := get_pod(api, ns, "db")) and p["spec"].get("nodeName") and p,
                            timeout=30, what="db bound")
            assert db["spec"]["nodeName"] == b
            assert DECISION not in (db["metadata"].get("annotations") or {})     # as Volcano v1.15.1
            # db2 needs 4 CPUs of one NUMA node too: b's NUMA 1 is db's now (kept by the scheduler
            # though b's Numatopology still says 4-7), a has 3 per NUMA node: it waits
            api.request("POST", f"/api/v1/namespaces/{ns}/pods", guaranteed(ns, "db2", sched, 4, t))
            def scheduled(p):
                return [c for c in (p["status"].get("conditions") or []) if c["type"] == "PodScheduled"]
            cond = wait_until(lambda: scheduled(get_pod(api, ns, "db2")), timeout=30, what="db2 unschedulable")
            sessions = app.loop.sessions
            wait_until(lambda: app.loop.sessions >= sessions + 3, timeout=30, what="three more sessions")
            db2 = get_pod(api, ns, "db2")
            assert not db2["spec"].get("nodeName")
            assert cond[0]["status"] == "False" and "cannot be assigned by numa" in cond[0]["message"], cond
            # the exporter: b loses 4-7 to db (fewer: merged), a gets all 8 CPUs free (more: replaces)
            api.request("PATCH", f"{NUMA}/{b}", {"spec": {"numares": {"cpu": {"allocatable": "0-1"}}}})
            api.request("PATCH", f"{NUMA}/{a}", {"spec": {"numares": {"cpu": {"allocatable": "0-7"}}}})
            db2 = wait_until(lambda: (p := get_pod(api, ns, "db2")) and p["spec"].get("nodeName") and p,
                             timeout=30, what="db2 bound")
            assert db2["spec"]["nodeName"] == a
            assert DECISION not in (db2["metadata"].get("annotations") or {})
    finally:
        delete_nodes(api, [a, b, plain])
        for n in (a, b):
            api.request("DELETE", f"{NUMA}/{n}")


def test_numa_aware_conf_with_shipped_rbac(scheduler_api, caplog):  # noqa: F811
    """A conf with numa-aware informs Numatopologies: the shipped ClusterRole lets the informer list
    and watch (the scheduler gets ready, the object is in the cache, nothing refused)."""
    admin, api = scheduler_api
    install_numatopology_crd(admin)
    caplog.set_level(logging.WARNING)
    t = tag()
    name = f"rbac-numa-{t}"
    admin.request("POST", NUMA, numatopology(name, "0-7"))
    try:
        with live_scheduler(api, _conf(), scheduler_name=f"nrbac-{t}", leader_elect=False,
                            schedule_period=0.3) as app:
            wait_until(lambda: app.ready()[0], timeout=30, what="informers synced with the shipped RBAC")
            wait_until(lambda: name in app.cache.numatopologies, what="the Numatopology informed")
    finally:
        admin.request("DELETE", f"{NUMA}/{name}")
    _no_forbidden(caplog)
