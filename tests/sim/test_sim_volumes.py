"""Volumes in `caldera simulate` (kube configurations): WaitForFirstConsumer claims bound at a
pod's bind and staying bound, dynamic provisioning as an external provisioner would do it, PVC
deletion and the PV's reclaimPolicy; docs/simulate.md "DRA and volumes"."""
from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from caldera.config.defaults import default_config
from caldera.plugins.registry import build_registry
from caldera.sim.controllers import pv_name
from caldera.sim.kube import KubeSim
from caldera.sim.traces import read_cluster, read_workload

CALDERA = str(Path(sys.executable).parent / "caldera")
ZONE = "topology.example.com/zone"
CSI = "topo.csi.example.com"


def node(name: str, cpu: int = 4, zone: str = "") -> str:
    labels = {"kubernetes.io/hostname": name, **({ZONE: zone} if zone else {})}
    return json.dumps({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
                       "status": {"allocatable": {"cpu": str(cpu), "memory": "64Gi", "pods": "110"}}})


def storage_class(name: str, provisioner: str, *, reclaim: str | None = None, allowed: dict | None = None) -> str:
    d: dict = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
               "provisioner": provisioner, "volumeBindingMode": "WaitForFirstConsumer"}
    if reclaim:
        d["reclaimPolicy"] = reclaim
    if allowed:
        d["allowedTopologies"] = [{"matchLabelExpressions": [{"key": k, "values": v}]} for k, v in allowed.items()]
    return json.dumps(d)


def local_pv(name: str, node_name: str, size: str = "10Gi", reclaim: str = "Retain") -> str:
    return json.dumps({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
                       "spec": {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"],
                                "storageClassName": "local", "persistentVolumeReclaimPolicy": reclaim,
                                "local": {"path": "/mnt/disk"},
                                "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                                    {"key": "kubernetes.io/hostname", "operator": "In", "values": [node_name]}]}]}}}})


def pvc(name: str, cls: str, size: str = "5Gi", remove: float | None = None) -> str:
    meta: dict = {"name": name, "namespace": "t"}
    if remove is not None:
        meta["annotations"] = {"simulation.caldera/remove": str(remove)}
    return json.dumps({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta,
                       "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": cls,
                                "resources": {"requests": {"storage": size}}}})


def csinode(name: str, keys: list[str]) -> str:
    return json.dumps({"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": name},
                       "spec": {"drivers": [{"name": CSI, "nodeID": name, "topologyKeys": keys}]}})


def pod(name: str, arrival: float, duration: float | None, claim: str, cpu: str = "1") -> str:
    ann = {"simulation.caldera/arrival": str(arrival)}
    if duration is not None:
        ann["simulation.caldera/duration"] = str(duration)
    return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "t",
                                                                       "annotations": ann},
                       "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}],
                                "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]}})


def run(tmp_path, cluster: list[str], workload: list[str]):
    c, w = tmp_path / "cluster.yaml", tmp_path / "workload.yaml"
    c.write_text("\n---\n".join(cluster))
    w.write_text("\n---\n".join(workload))
    cl = read_cluster([str(c)])
    reg = build_registry()
    sim = KubeSim("default", cl, read_workload([str(w)], priority_classes=cl.priority_classes),
                  default_config(reg), registry=reg)
    r = sim.run()
    return {rec.pod: rec for rec in r.records}, r, sim


def test_statefulset_like_pods_keep_their_local_volumes(tmp_path):
    # Two local PVs, one per node (WaitForFirstConsumer, no provisioner). web-0 and web-1 (3 CPU of
    # 4 each) bind at 0, each with its claim bound to the PV of the node it landed on (one node
    # each: CPU). They end at 10; their claims stay bound. web-0b and web-1b (at 20) reuse the
    # claims: each must go to its claim's PV's node (VolumeBinding: the bound PV's node affinity).
    cluster = [node("n1"), node("n2"), storage_class("local", "kubernetes.io/no-provisioner"),
               local_pv("pv-n1", "n1"), local_pv("pv-n2", "n2")]
    workload = [pvc("data-web-0", "local"), pvc("data-web-1", "local"),
                pod("web-0", 0, 10, "data-web-0", cpu="3"), pod("web-1", 0, 10, "data-web-1", cpu="3"),
                pod("web-0b", 20, 5, "data-web-0", cpu="3"), pod("web-1b", 20, 5, "data-web-1", cpu="3")]
    recs, r, sim = run(tmp_path, cluster, workload)
    w0, w1 = recs["t/web-0"], recs["t/web-1"]
    assert (w0.start, w1.start) == (0, 0) and {w0.node, w1.node} == {"n1", "n2"}
    assert w0.volumes == f"data-web-0=pv-{w0.node}" and w1.volumes == f"data-web-1=pv-{w1.node}"
    for again, first in (("t/web-0b", w0), ("t/web-1b", w1)):
        assert recs[again].start == 20 and recs[again].node == first.node and recs[again].volumes == first.volumes
    st = sim.ctl.storage
    assert st.pvcs["t/data-web-0"].volume_name == f"pv-{w0.node}" and st.pvcs["t/data-web-0"].fully_bound
    assert r.controllers["volumes_bound"] == 2 and r.controllers["volumes_provisioned"] == 0


def test_bound_volume_node_full_waits_for_it(tmp_path):
    # data's only matching PV is on n1. filler (no volume, nodeSelector n1) takes n1's CPU from 0 to
    # 30; user (at 1) waits although n2 is free: n2 has no PV for its WaitForFirstConsumer claim
    # ("didn't find available persistent volumes to bind"). At 30 filler's Pod/Delete moves it and
    # it binds on n1, its claim bound to pv-n1.
    cluster = [node("n1"), node("n2"), storage_class("local", "kubernetes.io/no-provisioner"), local_pv("pv-n1", "n1")]
    filler = json.loads(pod("filler", 0, 30, "x", cpu="4"))
    del filler["spec"]["volumes"]
    filler["spec"]["nodeSelector"] = {"kubernetes.io/hostname": "n1"}
    recs, r, _ = run(tmp_path, cluster, [pvc("data", "local"), json.dumps(filler), pod("user", 1, 5, "data")])
    assert recs["t/filler"].node == "n1"
    assert (recs["t/user"].start, recs["t/user"].node, recs["t/user"].volumes) == (30, "n1", "data=pv-n1")
    assert r.controllers["volumes_bound"] == 1


def test_dynamic_provisioning_uses_the_selected_nodes_topology(tmp_path):
    # topo.csi.example.com reports topologyKeys [zone] in the CSINodes: the PV provisioned for
    # "data" at p1's bind gets node affinity zone In [p1's zone], capacity = the request (5Gi), the
    # class's reclaimPolicy, the claim's access modes; the claim is bound to it. p2 (at 20) reuses
    # the claim: it goes to a node of that zone (n1 and n3 share zone a; n2 is zone b).
    cluster = [node("n1", zone="a"), node("n2", zone="b"), node("n3", zone="a"),
               csinode("n1", [ZONE]), csinode("n2", [ZONE]), csinode("n3", [ZONE]),
               storage_class("fast", CSI, reclaim="Retain")]
    recs, r, sim = run(tmp_path, cluster, [pvc("data", "fast"), pod("p1", 0, 10, "data"), pod("p2", 20, 5, "data")])
    st = sim.ctl.storage
    claim = st.pvcs["t/data"]
    name = pv_name(claim)
    assert claim.volume_name == name and claim.fully_bound
    pv = st.pvs[name]
    zone = {"n1": "a", "n2": "b", "n3": "a"}[recs["t/p1"].node]
    assert pv.capacity == 5 * 1024 ** 3 and pv.access_modes == ("ReadWriteOnce",) and pv.storage_class == "fast"
    assert pv.raw["spec"]["persistentVolumeReclaimPolicy"] == "Retain" and pv.csi == (CSI, name)
    assert pv.raw["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"] == [
        {"matchExpressions": [{"key": ZONE, "operator": "In", "values": [zone]}]}]
    assert pv.bound_to(claim) and pv.phase == "Bound"
    assert recs["t/p1"].volumes == recs["t/p2"].volumes == f"data={name}"
    assert {"n1": "a", "n2": "b", "n3": "a"}[recs["t/p2"].node] == zone and recs["t/p2"].start == 20
    assert r.controllers["volumes_provisioned"] == 1 and r.controllers["volumes_bound"] == 0


def test_provisioning_without_topology_keys_takes_allowed_topologies(tmp_path):
    # no CSINode topology keys: the PV's node affinity is the class's allowedTopologies (zone b
    # only, where Filter already sent p1)
    cluster = [node("n1", zone="a"), node("n2", zone="b"),
               storage_class("fast", CSI, allowed={ZONE: ["b"]})]
    recs, _, sim = run(tmp_path, cluster, [pvc("data", "fast"), pod("p1", 0, 10, "data")])
    assert recs["t/p1"].node == "n2"
    pv = sim.ctl.storage.pvs[sim.ctl.storage.pvcs["t/data"].volume_name]
    assert pv.raw["spec"]["persistentVolumeReclaimPolicy"] == "Delete"     # the class's default
    assert pv.raw["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"] == [
        {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["b"]}]}]


@pytest.mark.parametrize("reclaim, phase", [("Delete", None), ("Retain", "Released"), ("Recycle", "Available")])
def test_deleted_pvc_frees_its_pv_per_reclaim_policy(tmp_path, reclaim, phase):
    # "data" is deleted at 5 while p1 (0..10) uses it: it stays (pvc-protection) but is being
    # deleted, so p2 (at 6) is rejected by VolumeBinding's PreFilter; at 10, with p1 gone, the claim
    # is removed and pv-n1 follows its reclaimPolicy. p2 never starts; p3 (at 20), with another
    # claim of the class, gets pv-n1 only when the PV is Available again (Recycle).
    cluster = [node("n1"), storage_class("local", "kubernetes.io/no-provisioner"), local_pv("pv-n1", "n1",
                                                                                            reclaim=reclaim)]
    recs, r, sim = run(tmp_path, cluster, [pvc("data", "local", remove=5), pvc("other", "local"),
                                           pod("p1", 0, 10, "data"), pod("p2", 6, 5, "data"),
                                           pod("p3", 20, 5, "other")])
    st = sim.ctl.storage
    assert recs["t/p1"].end == 10 and recs["t/p2"].start is None
    assert "t/data" not in st.pvcs
    if phase is None:
        assert "pv-n1" not in st.pvs and r.controllers["volumes_deleted"] == 1
        assert recs["t/p3"].start is None
    elif phase == "Released":
        assert st.pvs["pv-n1"].phase == "Released" and r.controllers["volumes_released"] == 1
        assert recs["t/p3"].start is None
    else:
        assert recs["t/p3"].start == 20 and recs["t/p3"].volumes == "other=pv-n1"


def test_pvc_removal_is_refused_on_other_kinds(tmp_path):
    (tmp_path / "c.yaml").write_text(node("n1"))
    sc = json.loads(storage_class("x", CSI))
    sc["metadata"]["annotations"] = {"simulation.caldera/remove": "5"}
    (tmp_path / "w.yaml").write_text(json.dumps(sc))
    p = subprocess.run([CALDERA, "simulate", "--cluster", str(tmp_path / "c.yaml"), "--workload",
                        str(tmp_path / "w.yaml"), "--out", str(tmp_path / "o")], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "StorageClass x" in p.stderr and "only a PersistentVolumeClaim can be deleted" in p.stderr


def test_cli_pods_csv_volumes_and_summary(tmp_path):
    (tmp_path / "c.yaml").write_text("\n---\n".join([node("n1", zone="a"), csinode("n1", [ZONE]),
                                                     storage_class("fast", CSI)]))
    (tmp_path / "w.yaml").write_text("\n---\n".join([pvc("data", "fast"), pod("p1", 0, 10, "data")]))
    out = tmp_path / "o"
    p = subprocess.run([CALDERA, "simulate", "--cluster", str(tmp_path / "c.yaml"), "--workload",
                        str(tmp_path / "w.yaml"), "--out", str(out), "--jobs", "1"], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    assert "not used by the simulation" not in p.stderr and "CSINode" not in p.stderr
    with open(out / "default" / "pods.csv") as f:
        rows = list(csv.DictReader(f))
    assert rows[0]["volumes"].startswith("data=pvc-") and rows[0]["start"] == "0"
    s = json.loads((out / "default" / "summary.json").read_text())
    assert s["controllers"]["volumes_provisioned"] == 1


@pytest.mark.parametrize("doc, needle", [
    (pvc("x", "local").replace("ReadWriteOnce", "ReadWriteSome"), "spec.accessModes[0]: unsupported access mode"),
    (json.dumps({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "s"}}),
     "provisioner: Required value"),
    (pvc("x", "local", remove=-1), "simulation.caldera/remove"),
])
def test_bad_storage_object_in_the_workload_is_a_one_line_error(tmp_path, doc, needle):
    (tmp_path / "c.yaml").write_text(node("n1"))
    (tmp_path / "w.yaml").write_text(doc)
    p = subprocess.run([CALDERA, "simulate", "--cluster", str(tmp_path / "c.yaml"), "--workload",
                        str(tmp_path / "w.yaml"), "--out", str(tmp_path / "o")], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    line = p.stderr.strip().splitlines()[-1]
    assert "w.yaml" in line and needle in line
