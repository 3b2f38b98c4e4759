"""NodeVolumeLimits: kube's nodevolumelimits/csi_test.go (TestCSILimits), the cases on CSI
volumes counted from pods. Not ported: the VolumeAttachment cases (VolumeAttachments are not read),
the in-tree migration cases (no CSI translation) and the VolumeLimitScaling ones (alpha gate)."""
from __future__ import annotations

import pytest

from caldera.framework.status import Status

from ..builders import make_node, make_pod, run_filter
from .volume_helpers import claim_vols, csinode, pv, pvc, sc, sched_for, vpod

EBS, GCE = "ebs.csi.aws.com", "pd.csi.storage.gke.io"
EXCEEDED = Status.unschedulable("node(s) exceed max volume count")

OBJS = [sc("csi-sc", provisioner=EBS, mode="Immediate"), sc("gce-sc", provisioner=GCE, mode="Immediate")]
for i in range(4):
    OBJS += [pvc(f"csi-ebs-{i}", "csi-sc", bound=f"pv-ebs-{i}"), pv(f"pv-ebs-{i}", "csi-sc", csi=(EBS, f"vol-{i}"))]
for i in range(2):
    OBJS += [pvc(f"csi-gce-{i}", "gce-sc", bound=f"pv-gce-{i}"), pv(f"pv-gce-{i}", "gce-sc", csi=(GCE, f"g-{i}"))]
OBJS += [pvc("csi-4", "csi-sc"),                                  # pending: counted from its class
         pvc("csi-5"),                                            # no class: not counted
         {**pvc("csi-6", "csi-sc"), "spec": {"storageClassName": "csi-sc", "volumeName": "missing-pv"}}]

PODS = {
    "running": ["csi-ebs-3"], "one": ["csi-ebs-0"], "two": ["csi-ebs-1", "csi-ebs-2"], "pending": ["csi-4"],
    "pending2": ["csi-4"], "missing-pv": ["csi-6"], "no-sc": ["csi-5"], "gce-two": ["csi-gce-0", "csi-gce-1"],
}


def run(new, existing, limits):
    others = [make_pod(f"e-{n}", node="n1", spec={"volumes": claim_vols(*PODS[n])}) for n in existing]
    objs = OBJS + ([csinode("n1", limits)] if limits is not None else [])
    s = sched_for([make_node("n1")], objs, pods=others, plugins=("NodeVolumeLimits",))
    return run_filter(s, vpod("new", claim_vols(*PODS[new])))["n1"]


@pytest.mark.parametrize("new,existing,limits,want", [
    ("one", ("running", "two"), {EBS: 4}, None),
    ("one", ("running", "two"), {EBS: 2}, EXCEEDED),
    ("one", ("running", "two"), {EBS: None}, None),
    ("one", ("pending", "two"), {EBS: 2}, EXCEEDED),
    ("one", ("pending", "pending2", "two"), {EBS: 4}, None),
    ("one", ("missing-pv", "two"), {EBS: 2}, EXCEEDED),
    ("one", ("running", "no-sc"), {EBS: 2}, None),
    ("one", ("gce-two", "two"), {EBS: 2, GCE: 2}, EXCEEDED),
    ("gce-two", ("two", "running"), {EBS: 2, GCE: 2}, None),
    ("one", ("running", "two"), None, None),
    ("two", ("two",), {EBS: 2}, None),
], ids=["fits when node volume limit >= new pods CSI volume", "doesn't when node volume limit <= pods CSI volume",
        "should when driver does not support volume limits",
        "count pending PVCs towards volume limit <= pods CSI volume",
        "count multiple pending pvcs towards volume limit >= pods CSI volume",
        "should count PVCs with invalid PV name but valid SC", "don't count pvcs with missing SC towards volume limit",
        "count pvcs with the same type towards volume limit",
        "don't count pvcs with different type towards volume limit",
        "no CSINode", "volumes already attached are not new"])
def test_csi_limits(new, existing, limits, want):
    assert run(new, existing, limits) == want


def test_no_claims_skips():
    s = sched_for([make_node("n1")], OBJS + [csinode("n1", {EBS: 0})], plugins=("NodeVolumeLimits",))
    assert run_filter(s, vpod("p"))["n1"] is None


def test_missing_claim_of_new_pod():
    s = sched_for([make_node("n1")], OBJS + [csinode("n1", {EBS: 2})], plugins=("NodeVolumeLimits",))
    got = run_filter(s, vpod("p", claim_vols("nope")))["n1"]
    assert got == Status.unresolvable('looking up PVC default/nope: persistentvolumeclaim "nope" not found')
