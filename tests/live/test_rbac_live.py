"""The shipped RBAC (deploy/clusterrole.yaml + deploy/leader-election-role.yaml) is all `caldera
run` needs: a token bound to exactly those roles schedules, binds, writes conditions, events,
nominations, PodGroup status, preempts and holds its Lease, with no request refused."""
from __future__ import annotations

import logging

import pytest
import yaml

from caldera.batch.actions import ACTIONS
from caldera.batch.conf import parse_volcano_conf
from caldera.batch.plugins import PLUGINS
from caldera.configfile import load_config
from caldera.live.client import Api
from caldera.plugins.registry import build_registry

from .kube import (
    ROOT,
    admin_api,
    apply_manifest,
    create_node,
    create_pod,
    delete_nodes,
    events_for,
    get_pod,
    install_crds,
    live_scheduler,
    namespace,
    tag,
    wait_until,
)
from .test_run_batch_live import CONF, create_gang


def _docs(name):
    return [d for d in yaml.safe_load_all((ROOT / "deploy" / name).read_text()) if d]


@pytest.fixture
def scheduler_api(control_plane):
    admin = admin_api(control_plane)
    install_crds(admin)
    for f in ("namespace.yaml", "clusterrole.yaml", "leader-election-role.yaml"):
        for d in _docs(f):
            if d["kind"] in ("Namespace", "ClusterRole", "Role"):
                apply_manifest(admin, d)
    # the shipped bindings name the ServiceAccount; bind the same roles to the test token's user
    apply_manifest(admin, {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                           "metadata": {"name": "caldera-scheduler-test-user"},
                           "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                       "name": "caldera-scheduler"},
                           "subjects": [{"kind": "User", "name": "caldera-scheduler"}]})
    apply_manifest(admin, {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                           "metadata": {"name": "caldera-scheduler-test-user", "namespace": "caldera-system"},
                           "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                       "name": "caldera-scheduler-leader-election"},
                           "subjects": [{"kind": "User", "name": "caldera-scheduler"}]})
    api = Api.from_kubeconfig(control_plane.scheduler_kubeconfig)
    yield admin, api
    api.close()
    admin.close()


def _no_forbidden(caplog):
    bad = [r.getMessage() for r in caplog.records if "403" in r.getMessage() or "orbidden" in r.getMessage()]
    assert not bad, bad


def test_kube_profile_with_shipped_rbac(scheduler_api, tmp_path, caplog):
    admin, api = scheduler_api
    caplog.set_level(logging.WARNING)
    t = tag()
    sched = f"rbac-{t}"
    ns = namespace(admin, f"rbac-{t}")
    for name, value in ((f"low-{t}", 10), (f"high-{t}", 1000)):
        admin.request("POST", "/apis/scheduling.k8s.io/v1/priorityclasses",
                      {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                       "metadata": {"name": name}, "value": value})
    nodes = [f"rbac-{t}-0"]
    create_node(admin, nodes[0], cpu="2")
    cfg = tmp_path / "config.yaml"
    cfg.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
                   "leaderElection:\n  leaderElect: true\n  leaseDuration: 6s\n  renewDeadline: 4s\n"
                   "  retryPeriod: 1s\n  resourceName: caldera-scheduler\n  resourceNamespace: caldera-system\n"
                   f"profiles:\n- schedulerName: {sched}\n")
    try:
        with live_scheduler(api, load_config(str(cfg), build_registry())) as app:
            wait_until(app.is_leader, timeout=30, what="the Lease acquired with the shipped Role")
            create_pod(admin, ns, "low", sched, cpu="1500m", priority_class=f"low-{t}")
            wait_until(lambda: get_pod(admin, ns, "low")["spec"].get("nodeName"), what="bound")
            create_pod(admin, ns, "nofit", sched, cpu="8")
            wait_until(lambda: [e for e in events_for(admin, ns, "nofit") if e["reason"] == "FailedScheduling"],
                       what="FailedScheduling event written")
            create_pod(admin, ns, "high", sched, cpu="1500m", priority_class=f"high-{t}")
            wait_until(lambda: get_pod(admin, ns, "low") is None, timeout=30, what="victim deleted")
            wait_until(lambda: get_pod(admin, ns, "high")["spec"].get("nodeName"), timeout=30,
                       what="preemptor bound")
        lease = admin.request("GET",
                              "/apis/coordination.k8s.io/v1/namespaces/caldera-system/leases/caldera-scheduler")[1]
        assert lease["spec"].get("holderIdentity") in (None, "")      # released on stop
    finally:
        delete_nodes(admin, nodes)
    _no_forbidden(caplog)


def test_volcano_conf_with_shipped_rbac(scheduler_api, caplog):
    admin, api = scheduler_api
    caplog.set_level(logging.WARNING)
    t = tag()
    sched = f"vrbac-{t}"
    ns = namespace(admin, f"vrbac-{t}")
    queue = f"vq-{t}"
    admin.request("POST", "/apis/scheduling.volcano.sh/v1beta1/queues", {
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": queue},
        "spec": {"weight": 1}, "status": {"state": "Open"}})
    nodes = [f"vrbac-{t}-0"]
    create_node(admin, nodes[0], cpu="4")
    conf = parse_volcano_conf(yaml.safe_load(CONF), "test.conf", ACTIONS, PLUGINS)
    try:
        with live_scheduler(api, conf, scheduler_name=sched, leader_elect=False, schedule_period=0.3):
            create_gang(admin, ns, "g", queue, 2, 2, 1, sched)
            create_gang(admin, ns, "big", queue, 2, 2, 3, sched)
            wait_until(lambda: all(get_pod(admin, ns, f"g-{k}")["spec"].get("nodeName") for k in range(2)),
                       timeout=30, what="gang bound")
            big = f"/apis/scheduling.volcano.sh/v1beta1/namespaces/{ns}/podgroups/big"
            wait_until(lambda: (admin.request("GET", big)[1].get("status") or {}).get("conditions"), timeout=30,
                       what="PodGroup status written")
    finally:
        delete_nodes(admin, nodes)
    _no_forbidden(caplog)


POLICY_CONF = CONF.replace("  - name: conformance\n", "  - name: conformance\n  - name: pdb\n  - name: resourcequota\n")


def test_volcano_pdb_and_resourcequota_with_shipped_rbac(scheduler_api, caplog):
    """A conf with the pdb and resourcequota plugins informs PDBs and ResourceQuotas: the shipped
    ClusterRole lets both informers list and watch (the scheduler gets ready, nothing refused)."""
    admin, api = scheduler_api
    caplog.set_level(logging.WARNING)
    t = tag()
    ns = namespace(admin, f"prbac-{t}")
    admin.request("POST", f"/api/v1/namespaces/{ns}/resourcequotas", {
        "apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q", "namespace": ns},
        "spec": {"hard": {"cpu": "3"}}})
    admin.request("POST", f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets", {
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "p", "namespace": ns},
        "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "x"}}}})
    conf = parse_volcano_conf(yaml.safe_load(POLICY_CONF), "test.conf", ACTIONS, PLUGINS)
    with live_scheduler(api, conf, scheduler_name=f"prbac-{t}", leader_elect=False, schedule_period=0.3) as app:
        assert {"poddisruptionbudgets", "resourcequotas"} <= {i.name for i in app.informers}
        wait_until(lambda: app.ready()[0], timeout=30, what="informers synced with the shipped RBAC")
        wait_until(lambda: f"{ns}/q" in app.cache.resource_quotas and f"{ns}/p" in app.cache.pdbs,
                   what="the quota and the PDB informed")
    _no_forbidden(caplog)


def test_dra_and_volumes_with_shipped_rbac(scheduler_api, tmp_path, caplog):
    """The DRA and storage informers list and watch, DynamicResources' PreBind writes the claim
    (finalizer, status) and VolumeBinding's writes the PV's claimRef, all with the shipped role."""
    from .kube import kube_profile
    from .test_dra_live import RES, _drop_claims, claim, claim_pod, get_claim
    from .test_volumes_live import PVController, cleanup, storage, volume_pod

    admin, api = scheduler_api
    caplog.set_level(logging.WARNING)
    t = tag()
    sched = f"srbac-{t}"
    ns = namespace(admin, f"srbac-{t}")
    node = f"srbac-{t}-0"
    create_node(admin, node)
    driver, cls = f"gpu-{t}.example.com", f"gpu-{t}"
    admin.request("POST", f"{RES}/deviceclasses", {
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": cls},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]}})
    admin.request("POST", f"{RES}/resourceslices", {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{node}-gpus"},
        "spec": {"driver": driver, "nodeName": node, "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                 "devices": [{"name": "gpu-0"}]}})
    admin.request("POST", f"{RES}/namespaces/{ns}/resourceclaims", claim(ns, "c", cls, 1))
    sc = storage(admin, t, ns, node)
    try:
        with live_scheduler(api, kube_profile(tmp_path, sched)) as app:
            wait_until(lambda: app.ready()[0], timeout=30, what="informers synced with the shipped RBAC")
            admin.request("POST", f"/api/v1/namespaces/{ns}/pods", claim_pod(ns, "gpu", sched, "c"))
            wait_until(lambda: get_pod(admin, ns, "gpu")["spec"].get("nodeName") == node, what="DRA pod bound")
            assert get_claim(admin, ns, "c")["status"]["reservedFor"][0]["name"] == "gpu"
            with PVController(admin, ns):
                admin.request("POST", f"/api/v1/namespaces/{ns}/pods", volume_pod(ns, "vol", sched))
                wait_until(lambda: get_pod(admin, ns, "vol")["spec"].get("nodeName") == node, what="volume pod bound")
    finally:
        _drop_claims(admin, ns)
        cleanup(admin, t, ns, sc)
        for path in (f"{RES}/resourceslices/{node}-gpus", f"{RES}/deviceclasses/{cls}"):
            try:
                admin.request("DELETE", path)
            except Exception:
                pass
        delete_nodes(admin, [node])
    _no_forbidden(caplog)
