"""VolumeRestrictions: kube's volumerestrictions/volume_restrictions_test.go (TestGCEDiskConflicts,
TestAWSDiskConflicts, TestRBDDiskConflicts, TestISCSIDiskConflicts, TestAccessModeConflicts)."""
from __future__ import annotations

import pytest

from caldera.framework.status import Status

from ..builders import make_node, make_pod, run_filter
from .volume_helpers import claim_vols, pvc, sched_for, vpod

DISK = Status.unschedulable("node(s) had no available disk")
RWOP = Status.unschedulable("node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode "
                            "already in-use by another pod")


def _vol(kind, **kw):
    return [{"name": "v", kind: kw}]


CASES = {
    "gce": (_vol("gcePersistentDisk", pdName="foo"), _vol("gcePersistentDisk", pdName="bar")),
    "aws": (_vol("awsElasticBlockStore", volumeID="foo"), _vol("awsElasticBlockStore", volumeID="bar")),
    "rbd": (_vol("rbd", monitors=["a", "b"], pool="foo", image="bar", fsType="ext4"),
            _vol("rbd", monitors=["c", "d"], pool="foo", image="bar", fsType="ext4")),
    "iscsi": (_vol("iscsi", targetPortal="127.0.0.1:3260", iqn="iqn.2016-12.server:storage.target01", lun=0),
              _vol("iscsi", targetPortal="127.0.0.1:3260", iqn="iqn.2017-12.server:storage.target01", lun=0)),
}


@pytest.mark.parametrize("kind", list(CASES))
@pytest.mark.parametrize("existing,pod,conflict", [
    ((), 1, False), ((1,), 1, True), ((2,), 1, False), ((2,), 2, True)],
    ids=["nothing", "one state", "two states, no conflict", "two states, conflict"])
def test_disk_conflicts(kind, existing, pod, conflict):
    vs = CASES[kind]
    others = [make_pod(f"e{i}", node="n1", spec={"volumes": vs[v - 1]}) for i, v in enumerate(existing)]
    s = sched_for([make_node("n1")], pods=others, plugins=("VolumeRestrictions",))
    got = run_filter(s, vpod("p", vs[pod - 1]))["n1"]
    assert got == (DISK if conflict else None)


def test_read_only_gce_disks_do_not_conflict():
    ro = [{"name": "v", "gcePersistentDisk": {"pdName": "foo", "readOnly": True}}]
    s = sched_for([make_node("n1")], pods=[make_pod("e", node="n1", spec={"volumes": ro})],
                  plugins=("VolumeRestrictions",))
    assert run_filter(s, vpod("p", ro))["n1"] is None


PVCS = [pvc("claim-with-rwop-1", modes=["ReadWriteOncePod"]), pvc("claim-with-rwop-2", modes=["ReadWriteOncePod"]),
        pvc("claim-with-rwx", modes=["ReadWriteMany"])]


@pytest.mark.parametrize("claims,existing,pvcs,want", [
    ((), (), PVCS, None),
    (("claim-with-rwop-1",), (), (), Status.unresolvable('persistentvolumeclaim "claim-with-rwop-1" not found')),
    (("claim-with-rwop-1",), (("claim-with-rwx",),), PVCS, None),
    (("claim-with-rwop-1",), (("claim-with-rwop-1",), ("claim-with-rwx",)), PVCS, RWOP),
    (("claim-with-rwop-1", "claim-with-rwop-2"), (("claim-with-rwop-1", "claim-with-rwop-2"), ("claim-with-rwx",)),
     PVCS, RWOP),
], ids=["nothing", "failed to get PVC", "no access mode conflict", "access mode conflict, unschedulable",
        "two conflicts, unschedulable"])
def test_access_mode_conflicts(claims, existing, pvcs, want):
    others = [make_pod(f"e{i}", node="n1", spec={"volumes": claim_vols(*c)}) for i, c in enumerate(existing)]
    s = sched_for([make_node("n1"), make_node("n2")], list(pvcs), pods=others, plugins=("VolumeRestrictions",))
    got = run_filter(s, vpod("p", claim_vols(*claims)))
    assert got == {"n1": want, "n2": want}      # a claim in use anywhere fails every node
