"""VolumeBinding: kube's volumebinding/volume_binding_test.go (TestVolumeBinding: PreFilter and
Filter statuses; the score cases need the StorageCapacityScoring gate, off in v1.35, and are not
ported) and binder_test.go (FindPodVolumes: bound, static matching, provisioning, topology and
capacity cases), plus the pass-level assume behaviour and the `caldera schedule` end to end."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from caldera.cli.main import cli
from caldera.framework.status import Status
from caldera.plugins.volumes.binding import find_matching_volume

from ..builders import run_filter
from .volume_helpers import HOSTNAME, claim_vols, node, pv, pvc, sc, sched_for, storage, vpod

WAIT = sc("wait-sc")
IMMEDIATE = sc("immediate-sc", mode="Immediate")
WAIT_HDD = sc("wait-hdd-sc")
BIND = "node(s) didn't find available persistent volumes to bind"
NODE = "node(s) didn't match PersistentVolume's node affinity"
NOPV = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
SPACE = "node(s) did not have enough free storage"
U = Status.unresolvable


def filt(nodes, objs, p):
    return run_filter(sched_for(nodes, [WAIT, IMMEDIATE, WAIT_HDD, *objs], plugins=("VolumeBinding",)), p)


# ---- TestVolumeBinding ----------------------------------------------------------------------
def test_pod_has_no_pvcs():
    got = filt([node("node-a")], [], vpod("pod-a"))
    assert got == {"node-a": None}


def test_all_bound():
    got = filt([node("node-a")], [pvc("pvc-a", "wait-sc", bound="pv-a"), pv("pv-a", "wait-sc", phase="Available")],
               vpod("pod-a", claim_vols("pvc-a")))
    assert got == {"node-a": None}


@pytest.mark.parametrize("objs,want", [
    ([], 'persistentvolumeclaim "pvc-a" not found'),
    ([pvc("pvc-a", "wait-sc", bound="pv-a")], 'persistentvolumeclaim "pvc-b" not found'),
], ids=["PVC does not exist", "Part of PVCs do not exist"])
def test_missing_claims(objs, want):
    got = filt([node("node-a")], objs, vpod("pod-a", claim_vols("pvc-a", "pvc-b")))
    assert got["node-a"] == U(want)


def test_immediate_claims_not_bound():
    got = filt([node("node-a")], [pvc("pvc-a", "immediate-sc")], vpod("pod-a", claim_vols("pvc-a")))
    assert got["node-a"] == U("pod has unbound immediate PersistentVolumeClaims")


def test_unbound_claims_no_matches():
    got = filt([node("node-a")], [pvc("pvc-a", "wait-sc")], vpod("pod-a", claim_vols("pvc-a")))
    assert got["node-a"] == U(BIND)


def test_bound_and_unbound_unsatisfied():
    objs = [pvc("pvc-a", "wait-sc", bound="pv-a"), pvc("pvc-b", "wait-sc"),
            pv("pv-a", "wait-sc", phase="Available", affinity={"foo": ["bar"]})]
    got = filt([node("node-a", {"foo": "barbar"})], objs, vpod("pod-a", claim_vols("pvc-a", "pvc-b")))
    assert got["node-a"] == U(NODE, BIND)


def test_pv_not_found():
    got = filt([node("node-a")], [pvc("pvc-a", "wait-sc", bound="pv-a")], vpod("pod-a", claim_vols("pvc-a")))
    assert got["node-a"] == U(NOPV)


def test_pv_not_found_claim_lost():
    got = filt([node("node-a")], [pvc("pvc-a", "wait-sc", bound="pv-a", phase="Lost")],
               vpod("pod-a", claim_vols("pvc-a")))
    assert got["node-a"] == U('persistentvolumeclaim "pvc-a" bound to non-existent persistentvolume "pv-a"')


def test_local_volumes_with_close_capacity():
    objs = [pvc("pvc-a", "wait-sc", request="50Gi"),
            pv("pv-a-0", "wait-sc", phase="Available", capacity="200Gi", affinity={HOSTNAME: ["node-a"]}),
            pv("pv-a-1", "wait-sc", phase="Available", capacity="200Gi", affinity={HOSTNAME: ["node-a"]}),
            pv("pv-b-0", "wait-sc", phase="Available", capacity="100Gi", affinity={HOSTNAME: ["node-b"]}),
            pv("pv-b-1", "wait-sc", phase="Available", capacity="100Gi", affinity={HOSTNAME: ["node-b"]})]
    got = filt([node("node-a"), node("node-b"), node("node-c")], objs, vpod("pod-a", claim_vols("pvc-a")))
    assert got == {"node-a": None, "node-b": None, "node-c": U(BIND)}


def test_local_volumes_multiple_pvcs():
    objs = [pvc("pvc-0", "wait-sc", request="50Gi"), pvc("pvc-1", "wait-hdd-sc", request="100Gi")]
    for n, big in (("a", "200Gi"), ("b", "100Gi")):
        objs += [pv(f"pv-{n}-0", "wait-sc", phase="Available", capacity=big, affinity={HOSTNAME: [f"node-{n}"]}),
                 pv(f"pv-{n}-1", "wait-sc", phase="Available", capacity=big, affinity={HOSTNAME: [f"node-{n}"]}),
                 pv(f"pv-{n}-2", "wait-hdd-sc", phase="Available", capacity=big, affinity={HOSTNAME: [f"node-{n}"]}),
                 pv(f"pv-{n}-3", "wait-hdd-sc", phase="Available", capacity=big, affinity={HOSTNAME: [f"node-{n}"]})]
    got = filt([node("node-a"), node("node-b"), node("node-c")], objs, vpod("pod-a", claim_vols("pvc-0", "pvc-1")))
    assert got == {"node-a": None, "node-b": None, "node-c": U(BIND)}


def test_zonal_volumes():
    zone = "topology.kubernetes.io/zone"
    objs = [pvc("pvc-a", "wait-sc", request="50Gi"),
            pv("pv-a-0", "wait-sc", phase="Available", capacity="200Gi", affinity={zone: ["zone-a"]}),
            pv("pv-a-1", "wait-sc", phase="Available", capacity="200Gi", affinity={zone: ["zone-a"]}),
            pv("pv-b-0", "wait-sc", phase="Available", capacity="100Gi", affinity={zone: ["zone-b"]}),
            pv("pv-b-1", "wait-sc", phase="Available", capacity="100Gi", affinity={zone: ["zone-b"]})]
    nodes = [node("zone-a-node-a", {zone: "zone-a"}), node("zone-a-node-b", {zone: "zone-a"}),
             node("zone-b-node-a", {zone: "zone-b"}), node("zone-b-node-b", {zone: "zone-b"}),
             node("zone-c-node-a", {zone: "zone-c"}), node("zone-c-node-b", {zone: "zone-c"})]
    got = filt(nodes, objs, vpod("pod-a", claim_vols("pvc-a")))
    assert [got[n.name] for n in nodes] == [None, None, None, None, U(BIND), U(BIND)]


def test_dynamic_provisioning_multiple_pvcs_same_class():
    prov = sc("wait-prov", provisioner="driver-with-storage-capacity")
    cap = {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": "driver-with-storage-capacity"},
           "spec": {"storageCapacity": True}}
    caps = [{"apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity",
             "metadata": {"name": f"cap-{n}", "namespace": "default"}, "storageClassName": "wait-prov",
             "nodeTopology": {"matchLabels": {HOSTNAME: f"node-{n}"}}, "capacity": c}
            for n, c in (("a", "100Gi"), ("b", "50Gi"))]
    objs = [prov, cap, *caps, pvc("pvc-0", "wait-prov", request="60Gi"), pvc("pvc-1", "wait-prov", request="40Gi")]
    got = filt([node("node-a"), node("node-b"), node("node-c")], objs, vpod("pod-a", claim_vols("pvc-0", "pvc-1")))
    # node-b's capacity holds pvc-1 but not pvc-0; node-c has no CSIStorageCapacity
    assert got == {"node-a": None, "node-b": U(SPACE), "node-c": U(SPACE)}


# ---- binder_test.go: FindPodVolumes -----------------------------------------------------------
@pytest.mark.parametrize("objs,claims,want", [
    # "immediate-bound-pvc" / "wait-bound-pvc": bound claims whose PV fits the node
    ([pvc("pvc-a", "immediate-sc", bound="pv-a"), pv("pv-a", "immediate-sc", claim="pvc-a",
                                                       affinity={"key1": ["node1"]})], ["pvc-a"], None),
    # "immediate-bound-pvc-node-mismatch"
    ([pvc("pvc-a", "immediate-sc", bound="pv-a"), pv("pv-a", "immediate-sc", claim="pvc-a",
                                                       affinity={"key1": ["node2"]})], ["pvc-a"], U(NODE)),
    # "unbound-pvc,pv-same-node" and "unbound-pvc,pv-different-node"
    ([pvc("pvc-a", "wait-sc", request="1G"), pv("pv-a", "wait-sc", capacity="1G", affinity={"key1": ["node1"]})],
     ["pvc-a"], None),
    ([pvc("pvc-a", "wait-sc", request="1G"), pv("pv-a", "wait-sc", capacity="1G", affinity={"key1": ["node2"]})],
     ["pvc-a"], U(BIND)),
    # "unbound-pvc,pv-too-small"
    ([pvc("pvc-a", "wait-sc", request="2G"), pv("pv-a", "wait-sc", capacity="1G")], ["pvc-a"], U(BIND)),
    # "unbound-pvc,prebound-pv": a PV already claimed by this claim is taken (and checked) first
    ([pvc("pvc-a", "wait-sc", request="1G"), pv("pv-a", "wait-sc", capacity="1G", claim="pvc-a",
                                                phase="Available")], ["pvc-a"], None),
    # "unbound-pvc,pv-claimed-by-other"
    ([pvc("pvc-a", "wait-sc", request="1G"), pv("pv-a", "wait-sc", capacity="1G", claim="other")],
     ["pvc-a"], U(BIND)),
    # "one-bound,one-unbound-no-match" on a mismatching node: both reasons
    ([pvc("pvc-a", "wait-sc", bound="pv-a"), pv("pv-a", "wait-sc", claim="pvc-a", affinity={"key1": ["node2"]}),
      pvc("pvc-b", "wait-sc")], ["pvc-a", "pvc-b"], U(NODE, BIND)),
    # provisioning: "provisioned-pvc" fits, no-provisioner and allowedTopologies do not
    ([sc("prov-sc", provisioner="example.com/p"), pvc("pvc-a", "prov-sc", request="1G")], ["pvc-a"], None),
    ([sc("prov-topo", provisioner="example.com/p", topologies=[{"key1": ["node2"]}]),
      pvc("pvc-a", "prov-topo", request="1G")], ["pvc-a"], U(BIND)),
    ([sc("prov-topo", provisioner="example.com/p", topologies=[{"key1": ["node1"]}]),
      pvc("pvc-a", "prov-topo", request="1G")], ["pvc-a"], None),
    # "provisioned-pvc,selected-node-other": the fast path
    ([sc("prov-sc", provisioner="example.com/p"),
      pvc("pvc-a", "prov-sc", annotations={"volume.kubernetes.io/selected-node": "node2"})], ["pvc-a"], U(BIND)),
], ids=["bound", "bound-node-mismatch", "unbound-pv-same-node", "unbound-pv-different-node", "pv-too-small",
        "prebound-pv", "pv-claimed-by-other", "bound-mismatch-and-unbound-no-match", "provisioning",
        "provisioning-topology-mismatch", "provisioning-topology-match", "selected-node-other"])
def test_find_pod_volumes(objs, claims, want):
    got = filt([node("node1", {"key1": "node1"})], objs, vpod("pod", claim_vols(*claims)))
    assert got["node1"] == want


def test_find_matching_volume_smallest_and_access_modes():
    """component-helpers' FindMatchingVolume: smallest fitting PV, access modes, selector, class."""
    st = storage([pvc("c", "x", request="1Gi", modes=["ReadWriteOnce"]),
                  pv("big", "x", capacity="10Gi", modes=["ReadWriteOnce"]),
                  pv("small", "x", capacity="2Gi", modes=["ReadWriteOnce"]),
                  pv("rox", "x", capacity="1Gi", modes=["ReadOnlyMany"]),
                  pv("other-class", "y", capacity="1Gi", modes=["ReadWriteOnce"]),
                  pv("released", "x", capacity="1Gi", modes=["ReadWriteOnce"], phase="Released")])
    c = st.pvcs["default/c"]
    pvs = sorted(st.pvs.values(), key=lambda p: p.name)
    assert find_matching_volume(c, pvs, {}, set(), True).name == "small"
    assert find_matching_volume(c, pvs, {}, {"small"}, True).name == "big"
    assert find_matching_volume(c, pvs, None, set(), True) is None      # delay binding without a node


# ---- the pass: Reserve assumes, the next pod does not get the same PV ---------------------------
def test_pv_taken_by_one_pod_not_offered_to_next():
    objs = [WAIT, pvc("c0", "wait-sc"), pvc("c1", "wait-sc"), pv("only", "wait-sc", capacity="1Gi")]
    s = sched_for([node("n1")], objs)
    a0 = s.schedule_one(vpod("p0", claim_vols("c0")))
    a1 = s.schedule_one(vpod("p1", claim_vols("c1")))
    assert a0.node == "n1" and s.storage.decisions["default/p0"] == [{"claim": "default/c0", "volume": "only"}]
    assert not a1.node and a1.message == f"0/1 nodes are available: 1 {BIND}."
    assert s.storage.pvcs["default/c0"].fully_bound
    assert s.storage.pvs["only"].claim_ref.name == "c0"


def test_provisioning_sets_selected_node_for_later_pods():
    objs = [sc("prov", provisioner="example.com/p"), pvc("shared", "prov")]
    s = sched_for([node("n1"), node("n2")], objs)
    a0 = s.schedule_one(vpod("p0", claim_vols("shared")))
    assert s.storage.decisions["default/p0"] == [{"claim": "default/shared", "provision": "prov"}]
    assert s.storage.pvcs["default/shared"].annotations["volume.kubernetes.io/selected-node"] == a0.node
    for i in range(4):            # every later pod of the claim goes to the selected node
        assert s.schedule_one(vpod(f"q{i}", claim_vols("shared"))).node == a0.node


def test_no_storage_model_is_a_noop():
    s = sched_for([node("n1")], [], plugins=("VolumeBinding", "VolumeZone", "NodeVolumeLimits"))
    s.storage = None
    assert s.schedule_one(vpod("p", claim_vols("missing"))).node == "n1"


def test_bad_args():
    from caldera.errors import ConfigError
    from caldera.plugins.volumes import VolumeBinding
    with pytest.raises(ValueError, match="bindTimeoutSeconds"):
        VolumeBinding({"bindTimeoutSeconds": -1})
    with pytest.raises(ValueError, match="StorageCapacityScoring"):
        VolumeBinding({"shape": [{"utilization": 0, "score": 0}]})
    assert ConfigError


# ---- end to end: a StatefulSet-like set on local PVs -------------------------------------------
STS = """
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: local-storage}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
"""


def _sts_manifests(tmp_path, pvs=("a", "b", "c")):
    docs = [STS]
    for n in "abcd":
        docs.append(f"""apiVersion: v1
kind: Node
metadata: {{name: node-{n}, labels: {{kubernetes.io/hostname: node-{n}}}}}
status: {{allocatable: {{cpu: "4", memory: 8Gi, pods: "110"}}}}
""")
    for n, size in zip(pvs, ("20Gi", "10Gi", "10Gi")):
        docs.append(f"""apiVersion: v1
kind: PersistentVolume
metadata: {{name: local-pv-{n}}}
spec:
  capacity: {{storage: {size}}}
  accessModes: [ReadWriteOnce]
  storageClassName: local-storage
  local: {{path: /mnt/disks/ssd1}}
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions: [{{key: kubernetes.io/hostname, operator: In, values: [node-{n}]}}]
""")
    for i in range(3):
        docs.append(f"""apiVersion: v1
kind: PersistentVolumeClaim
metadata: {{name: data-web-{i}}}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: local-storage
  resources: {{requests: {{storage: 5Gi}}}}
""")
        docs.append(f"""apiVersion: v1
kind: Pod
metadata: {{name: web-{i}, labels: {{app: web}}}}
spec:
  containers: [{{name: c, image: nginx, resources: {{requests: {{cpu: 100m}}}}}}]
  volumes: [{{name: data, persistentVolumeClaim: {{claimName: data-web-{i}}}}}]
""")
    f = tmp_path / "sts.yaml"
    f.write_text("---\n".join(docs))
    return f


def test_cli_statefulset_on_local_pvs(tmp_path):
    f = _sts_manifests(tmp_path)
    r = CliRunner().invoke(cli, ["schedule", "-f", str(f), "-o", "json", "--explain"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    placed = {b["pod"]: (b["node"], b["volumes"]) for b in out["bindings"]}
    assert len(placed) == 3 and not out["unschedulable"] and not out["ignored"]
    for pod, (nd, vols) in placed.items():
        (v,) = vols
        assert v["claim"] == "default/data-" + pod.split("/")[1]
        assert v["volume"] == "local-pv-" + nd[-1]          # each pod sits where its PV is
    assert len({nd for nd, _ in placed.values()}) == 3
    first = out["explain"]["default/web-0"]["filtered"]
    assert first["node-d"] == BIND
    from tests.fuzz.harness import schema_errors
    assert schema_errors(out, "kube") == []
    bad = json.loads(r.stdout)
    bad["bindings"][0]["volumes"][0]["provision"] = "also"      # volume and provision: one of them
    assert schema_errors(bad, "kube")


def test_cli_missing_storage_class_and_claim(tmp_path):
    f = tmp_path / "m.yaml"
    f.write_text("""apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: c}
spec: {storageClassName: nope, resources: {requests: {storage: 1Gi}}}
---
apiVersion: v1
kind: Pod
metadata: {name: p1}
spec:
  containers: [{name: c, image: x}]
  volumes: [{name: d, persistentVolumeClaim: {claimName: c}}]
---
apiVersion: v1
kind: Pod
metadata: {name: p2}
spec:
  containers: [{name: c, image: x}]
  volumes: [{name: d, persistentVolumeClaim: {claimName: gone}}]
""")
    r = CliRunner().invoke(cli, ["schedule", "-f", str(f), "-o", "json"])
    assert r.exit_code == 0, r.output
    msgs = {u["pod"]: u["message"] for u in json.loads(r.stdout)["unschedulable"]}
    # (the PostFilter part of the message is the PostFilter plugins' own)
    assert msgs["default/p1"].startswith(
        "0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims. "), msgs
    assert msgs["default/p2"].startswith('0/1 nodes are available: persistentvolumeclaim "gone" not found. '), msgs


def test_cli_malformed_pv(tmp_path):
    f = tmp_path / "bad.yaml"
    f.write_text("""apiVersion: v1
kind: PersistentVolume
metadata: {name: pv1}
spec: {capacity: {storage: lots}}
""")
    r = CliRunner().invoke(cli, ["schedule", "-f", str(f)])
    assert r.exit_code == 2
    assert "PersistentVolume pv1" in r.output and "spec.capacity.storage" in r.output
    assert "Traceback" not in r.output


@pytest.mark.parametrize("doc,want", [
    ("kind: PersistentVolumeClaim\napiVersion: v1\nmetadata: {name: c}\nspec: {accessModes: [Sometimes]}",
     "spec.accessModes[0]: unsupported access mode 'Sometimes'"),
    ("kind: StorageClass\napiVersion: storage.k8s.io/v1\nmetadata: {name: s}", "provisioner: Required value"),
    ("kind: StorageClass\napiVersion: storage.k8s.io/v1\nmetadata: {name: s}\nprovisioner: p\n"
     "volumeBindingMode: Later", "volumeBindingMode: must be Immediate or WaitForFirstConsumer"),
    ("kind: CSINode\napiVersion: storage.k8s.io/v1\nmetadata: {name: n}\nspec: {drivers: [{name: d, "
     "allocatable: {count: -1}}]}", "spec.drivers[0].allocatable.count: must be a non-negative integer"),
    ("kind: PersistentVolumeClaim\napiVersion: v1\nmetadata: {name: c}\n---\n"
     "kind: PersistentVolumeClaim\napiVersion: v1\nmetadata: {name: c}", 'persistentvolumeclaims "c" already exists'),
], ids=["access mode", "no provisioner", "binding mode", "csinode count", "duplicate claim"])
def test_cli_bad_storage_objects(tmp_path, doc, want):
    f = tmp_path / "bad.yaml"
    f.write_text(doc)
    r = CliRunner().invoke(cli, ["schedule", "-f", str(f)])
    assert r.exit_code == 2, r.output
    assert want in r.output and "Traceback" not in r.output


def test_generic_ephemeral_volume():
    """podHasPVCs for `ephemeral` volumes: the claim <pod>-<volume> must exist and be the pod's."""
    objs = [pv("pv", "wait-sc", capacity="1Gi")]
    p = vpod("eph", claim_vols(ephemeral=["scratch"]), uid="uid-1")
    got = filt([node("n1")], objs, p)
    assert got["n1"] == U('waiting for ephemeral volume controller to create the persistentvolumeclaim '
                          '"eph-scratch"')
    got = filt([node("n1")], [*objs, pvc("eph-scratch", "wait-sc")], p)
    assert got["n1"] == U("PVC default/eph-scratch was not created for pod default/eph (pod is not owner)")
    got = filt([node("n1")], [*objs, pvc("eph-scratch", "wait-sc", owner_uid="uid-1")], p)
    assert got["n1"] is None


def test_default_storage_class_is_assigned():
    default = {**sc("std", provisioner="example.com/p"),
               "metadata": {"name": "std", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}}}
    st = storage([default, pvc("no-class"), pvc("empty-class", "")])
    assert st.pvcs["default/no-class"].storage_class == "std"
    assert st.pvcs["default/empty-class"].storage_class == ""


def test_volcano_mode_lists_storage_objects_as_ignored(tmp_path):
    from caldera.api.loader import KUBE_PROFILES_ONLY, load_cluster
    f = _sts_manifests(tmp_path)
    c = load_cluster([str(f)])
    kinds = {i.kind for i in c.ignored if i.category == KUBE_PROFILES_ONLY}
    assert {"StorageClass", "PersistentVolume", "PersistentVolumeClaim"} <= kinds


def test_pass_does_not_change_the_cluster(tmp_path):
    """run_pass assumes into a copy of the Cluster's storage objects."""
    from caldera.api.loader import load_cluster
    from caldera.config.defaults import default_config
    from caldera.engine.oneshot import run_pass
    from caldera.plugins.registry import build_registry
    c = load_cluster([str(_sts_manifests(tmp_path))])
    cfg = default_config(build_registry())
    assert len(run_pass(c, cfg).bindings) == 3
    assert not any(p.fully_bound for p in c.storage.pvcs.values())
    assert all(p.claim_ref is None for p in c.storage.pvs.values())


def test_indexed_candidates_agree_with_find_matching_volume():
    """The per-claim index VolumeBinding's Filter uses picks what FindMatchingVolume picks."""
    import random

    from caldera.plugins.volumes.binding import Candidates
    rng = random.Random(7)
    for trial in range(200):
        objs = [pvc("c", "x", request=f"{rng.randint(1, 5)}Gi", modes=rng.choice([["ReadWriteOnce"], []]))]
        for i in range(rng.randint(0, 12)):
            aff = rng.choice([None, {HOSTNAME: [f"n{rng.randint(0, 3)}"]},
                              {HOSTNAME: [f"n{rng.randint(0, 3)}", f"n{rng.randint(0, 3)}"]}, {"zone": ["a"]},
                              {"zone": ["a"], HOSTNAME: ["n1"]}])
            objs.append(pv(f"pv{i:02d}", rng.choice(["x", "x", "y"]), capacity=f"{rng.randint(1, 6)}Gi",
                           affinity=aff, modes=rng.choice([["ReadWriteOnce"], ["ReadOnlyMany"]]),
                           claim=rng.choice([None, None, None, "c", "other"]),
                           phase=rng.choice(["Available", "Available", "Released"])))
        st = storage(objs)
        c = st.pvcs["default/c"]
        pvs = st.pvs_of_class("x")
        cands = Candidates(c, pvs)
        for n in range(4):
            labels = {HOSTNAME: f"n{n}", **({"zone": "a"} if n % 2 else {})}
            excluded = {f"pv{rng.randint(0, 12):02d}"}
            want = find_matching_volume(c, pvs, labels, excluded, True)
            got = cands.best(labels, excluded)
            prebound = [p for p in pvs if p.bound_to(c)]
            if len(prebound) > 1 or any(p.name in excluded for p in prebound):
                continue             # (several PVs pre-bound to one claim: not modelled by the index)
            assert (got.name if got else None) == (want.name if want else None), (trial, n)


def test_cli_dynamic_provisioning_with_allowed_topologies(tmp_path):
    f = tmp_path / "prov.yaml"
    f.write_text("""apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: fast}
provisioner: ebs.csi.aws.com
volumeBindingMode: WaitForFirstConsumer
allowedTopologies:
- matchLabelExpressions: [{key: topology.kubernetes.io/zone, values: [zone-b]}]
---
apiVersion: v1
kind: Node
metadata: {name: a1, labels: {topology.kubernetes.io/zone: zone-a}}
status: {allocatable: {cpu: "8", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: b1, labels: {topology.kubernetes.io/zone: zone-b}}
status: {allocatable: {cpu: "1", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec: {accessModes: [ReadWriteOnce], storageClassName: fast, resources: {requests: {storage: 1Gi}}}
---
apiVersion: v1
kind: Pod
metadata: {name: db}
spec:
  containers: [{name: c, image: x, resources: {requests: {cpu: 100m}}}]
  volumes: [{name: d, persistentVolumeClaim: {claimName: data}}]
""")
    r = CliRunner().invoke(cli, ["schedule", "-f", str(f), "-o", "json", "--explain"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["bindings"] == [{"pod": "default/db", "node": "b1",
                                "volumes": [{"claim": "default/data", "provision": "fast"}]}]
    assert out["explain"]["default/db"]["filtered"] == {"a1": BIND}
    from tests.fuzz.harness import schema_errors
    assert schema_errors(out, "kube") == []
