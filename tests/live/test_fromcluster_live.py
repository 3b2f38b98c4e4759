"""`caldera schedule --from-cluster` against a real etcd + kube-apiserver: the pass over the
cluster's objects equals the pass over the same objects given as files; `-f` adds objects on top."""
from __future__ import annotations

import json

import pytest
import yaml
from click.testing import CliRunner

from caldera.cli.main import cli
from caldera.live.client import ApiError
from caldera.live.fromcluster import read_cluster

from .kube import clean_cluster, create_node, delete_nodes, namespace, pod_body, tag


def _strip_sources(out: dict) -> dict:
    out = dict(out)
    out["ignored"] = [{k: v for k, v in i.items() if k != "source"} for i in out.get("ignored", [])]
    return out


def _schedule(*args: str) -> tuple[int, dict | None, str]:
    r = CliRunner().invoke(cli, ["schedule", *args, "-o", "json"])
    data = json.loads(r.stdout) if r.exit_code == 0 else None
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception
    return r.exit_code, data, r.stderr



@pytest.fixture(autouse=True)
def _empty_cluster(api):
    """This test reads the whole cluster: it starts from an empty one (earlier modules leave
    their nodes and pods on the control plane the session shares)."""
    clean_cluster(api)

def test_from_cluster_equals_the_same_objects_as_files(api, control_plane, tmp_path):
    t = tag()
    ns = namespace(api, f"fc-{t}")
    nodes = [f"fc-{t}-big", f"fc-{t}-small"]
    create_node(api, nodes[0], cpu="2", labels={"zone": "a"})
    create_node(api, nodes[1], cpu="1", labels={"zone": "b"})
    try:
        api.request("POST", "/apis/scheduling.k8s.io/v1/priorityclasses",
                    {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                     "metadata": {"name": f"fc-{t}-high"}, "value": 1000})
        # running: 1500m of the big node's 2 CPUs
        running = pod_body(ns, "running", "default-scheduler", cpu="1500m")
        running["spec"]["nodeName"] = nodes[0]
        api.request("POST", f"/api/v1/namespaces/{ns}/pods", running)
        # pending: one fits only the small node, one fits nowhere, the high-priority one goes first
        for name, cpu, pc in (("fits", "800m", None), ("huge", "3", None), ("urgent", "900m", f"fc-{t}-high")):
            api.request("POST", f"/api/v1/namespaces/{ns}/pods",
                        pod_body(ns, name, "default-scheduler", cpu=cpu, priority_class=pc))
        # a pod of another scheduler: listed as ignored, as with files
        api.request("POST", f"/api/v1/namespaces/{ns}/pods", pod_body(ns, "other", "not-caldera"))

        code, live, err = _schedule("--from-cluster", "--kubeconfig", control_plane.admin_kubeconfig)
        assert code == 0, err
        mine = lambda key: key.startswith(f"{ns}/")  # noqa: E731 (other tests' objects may be there)
        by_pod = {b["pod"]: b["node"] for b in live["bindings"] if mine(b["pod"])}
        # urgent (priority 1000) is scheduled first and takes the small node; fits then fits nowhere
        assert by_pod == {f"{ns}/urgent": nodes[1]}
        unsched = {u["pod"]: u["message"] for u in live["unschedulable"] if mine(u["pod"])}
        assert set(unsched) == {f"{ns}/fits", f"{ns}/huge"}
        assert unsched[f"{ns}/huge"].startswith("0/2 nodes are available: 2 Insufficient cpu.")
        ignored = [i for i in live["ignored"] if mine(i["name"])]
        assert [i["name"] for i in ignored] == [f"{ns}/other"]
        assert ignored[0]["source"] == f"cluster {api.host}"

        # the same objects as files: the same pass
        docs = [d for _, _, d in read_cluster(api)]
        f = tmp_path / "cluster.yaml"
        f.write_text(yaml.safe_dump_all(docs))
        code, files, err = _schedule("-f", str(f))
        assert code == 0, err
        assert _strip_sources(files) == _strip_sources(live)

        # -f on top: a new pending pod to try
        extra = tmp_path / "extra.yaml"
        extra.write_text(yaml.safe_dump(pod_body(ns, "new", "default-scheduler", cpu="300m")))
        code, both, err = _schedule("--from-cluster", "--kubeconfig", control_plane.admin_kubeconfig,
                                    "-f", str(extra))
        assert code == 0, err
        assert {b["pod"]: b["node"] for b in both["bindings"] if mine(b["pod"])} == \
            {f"{ns}/urgent": nodes[1], f"{ns}/new": nodes[0]}

        # an object that is in the cluster already: one line, exit 2
        dup = tmp_path / "dup.yaml"
        dup.write_text(yaml.safe_dump(pod_body(ns, "fits", "default-scheduler")))
        r = CliRunner().invoke(cli, ["schedule", "--from-cluster", "--kubeconfig", control_plane.admin_kubeconfig,
                                     "-f", str(dup)])
        assert r.exit_code == 2 and "already exists" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    finally:
        delete_nodes(api, nodes)
        try:
            api.request("DELETE", f"/apis/scheduling.k8s.io/v1/priorityclasses/fc-{t}-high")
        except ApiError:
            pass
        try:
            api.request("DELETE", f"/api/v1/namespaces/{ns}")
        except ApiError:
            pass


def test_from_cluster_with_volcano_conf_skips_missing_crds(api, control_plane, tmp_path):
    """A Volcano session from a cluster without (or with) Volcano's CRDs: a 404 list is skipped."""
    conf = tmp_path / "volcano.conf"
    conf.write_text('actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: priority\n  - name: gang\n'
                    '- plugins:\n  - name: predicates\n  - name: nodeorder\n')
    code, _, err = _schedule("--from-cluster", "--kubeconfig", control_plane.admin_kubeconfig,
                             "--config", str(conf))
    assert code == 0, err


def test_from_cluster_with_a_token_that_may_not_list(control_plane, tmp_path):
    """A user without list permission: one line naming the resource, exit 2."""
    with open(control_plane.admin_kubeconfig) as f:
        kc = yaml.safe_load(f)
    for u in kc["users"]:
        u["user"] = {"token": "not-a-valid-token"}
    p = tmp_path / "bad-token.kubeconfig"
    p.write_text(yaml.safe_dump(kc))
    r = CliRunner().invoke(cli, ["schedule", "--from-cluster", "--kubeconfig", str(p)])
    assert r.exit_code == 2, r.output
    assert r.stderr.startswith("caldera: error: ") and len(r.stderr.strip().splitlines()) == 1
    assert "401" in r.stderr


VOLCANO_CONF = """
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


def test_from_cluster_volcano_session_equals_files(api, control_plane, volcano_crds, tmp_path):
    """Queues and PodGroups come from the cluster's CRDs: a gang that does not fit stays pending,
    one that fits is placed; the same objects as files give the same session."""
    from .test_run_batch_live import create_gang
    t = tag()
    sched = f"volcano-{t}"
    ns = namespace(api, f"fcv-{t}")
    queue = f"q-{t}"
    api.request("POST", "/apis/scheduling.volcano.sh/v1beta1/queues", {
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": queue},
        "spec": {"weight": 1}, "status": {"state": "Open"}})
    nodes = [f"fcv-{t}-{i}" for i in range(3)]
    for n in nodes:
        create_node(api, n, cpu="5")
    conf = tmp_path / "volcano.conf"
    conf.write_text(VOLCANO_CONF)
    try:
        create_gang(api, ns, "too-big", queue, 4, 4, 3, sched)
        create_gang(api, ns, "fits", queue, 3, 3, 1, sched)
        args = ("--config", str(conf), "--scheduler-name", sched)
        code, live, err = _schedule("--from-cluster", "--kubeconfig", control_plane.admin_kubeconfig, *args)
        assert code == 0, err
        placed = {b["pod"] for b in live["bindings"] if b["pod"].startswith(f"{ns}/")}
        assert placed == {f"{ns}/fits-{k}" for k in range(3)}
        docs = [d for _, _, d in read_cluster(api, volcano=True)]
        assert {"Queue", "PodGroup"} <= {d["kind"] for d in docs}
        f = tmp_path / "cluster.yaml"
        f.write_text(yaml.safe_dump_all(docs))
        code, files, err = _schedule("-f", str(f), *args)
        assert code == 0, err
        assert _strip_sources(files) == _strip_sources(live)
    finally:
        delete_nodes(api, nodes)


def test_from_cluster_reads_volumes_and_dra_objects(api, control_plane):
    """Issue 12: every object the kube plugins read comes from the cluster: a WaitForFirstConsumer
    claim goes to its PV's node, a DRA claim to the node whose ResourceSlice has the device."""
    t = tag()
    ns = namespace(api, f"fcs-{t}")
    a, b = f"fcs-{t}-a", f"fcs-{t}-b"
    create_node(api, a, labels={"kubernetes.io/hostname": a})
    create_node(api, b, labels={"kubernetes.io/hostname": b})
    sc, dc = f"local-{t}", f"gpu-{t}.example.com"
    objs = [
        ("/apis/storage.k8s.io/v1/storageclasses",
         {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": sc},
          "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "WaitForFirstConsumer"}),
        ("/api/v1/persistentvolumes",
         {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": f"pv-{t}"},
          "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": sc,
                   "local": {"path": "/mnt/d"},
                   "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                       {"key": "kubernetes.io/hostname", "operator": "In", "values": [a]}]}]}}}}),
        (f"/api/v1/namespaces/{ns}/persistentvolumeclaims",
         {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": ns},
          "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": sc,
                   "resources": {"requests": {"storage": "5Gi"}}}}),
        ("/apis/resource.k8s.io/v1/deviceclasses",
         {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": dc},
          "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{dc}"'}}]}}),
        ("/apis/resource.k8s.io/v1/resourceslices",
         {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{b}-gpus"},
          "spec": {"driver": dc, "nodeName": b, "pool": {"name": b, "generation": 1, "resourceSliceCount": 1},
                   "devices": [{"name": "gpu-0"}]}}),
        (f"/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims",
         {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "gpu", "namespace": ns},
          "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": dc}}]}}}),
    ]
    for path, body in objs:
        api.request("POST", path, body)
    # no PV controller runs here: the PV is Pending until marked Available, as it would mark it (a
    # Pending PV is not matched, as in kube's FindMatchingVolume)
    api.request("PATCH", f"/api/v1/persistentvolumes/pv-{t}/status", {"status": {"phase": "Available"}},
                content_type="application/merge-patch+json")
    db = pod_body(ns, "db", "default-scheduler")
    db["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]
    trainer = pod_body(ns, "trainer", "default-scheduler")
    trainer["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "gpu"}]
    trainer["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    for p in (db, trainer):
        api.request("POST", f"/api/v1/namespaces/{ns}/pods", p)
    try:
        code, out, err = _schedule("--from-cluster", "--kubeconfig", control_plane.admin_kubeconfig)
        assert code == 0, err
        got = {x["pod"]: x for x in out["bindings"]}
        assert set(got) == {f"{ns}/db", f"{ns}/trainer"}, out["unschedulable"]
        assert got[f"{ns}/db"]["node"] == a
        assert got[f"{ns}/db"]["volumes"] == [{"claim": f"{ns}/data", "volume": f"pv-{t}"}]
        assert got[f"{ns}/trainer"]["node"] == b
        assert [d["device"] for c in got[f"{ns}/trainer"]["claims"] for d in c["devices"]] == ["gpu-0"]
    finally:
        clean_cluster(api)
        api.request("DELETE", f"/api/v1/namespaces/{ns}")


def test_from_cluster_reads_workloads_with_the_gate(api, control_plane):
    """kube's Workload API (alpha; the test control plane serves it): with --feature-gates
    GenericWorkload=true,GangScheduling=true a gang of two binds whole; without them the
    Workload is not read."""
    t = tag()
    ns = namespace(api, f"fcw-{t}")
    create_node(api, f"fcw-{t}", cpu="2")
    api.request("POST", f"/apis/scheduling.k8s.io/v1alpha1/namespaces/{ns}/workloads",
                {"apiVersion": "scheduling.k8s.io/v1alpha1", "kind": "Workload", "metadata": {"name": "job"},
                 "spec": {"podGroups": [{"name": "g", "policy": {"gang": {"minCount": 2}}}]}})
    for i in range(2):
        p = pod_body(ns, f"w{i}", "default-scheduler", cpu="1")
        p["spec"]["workloadRef"] = {"name": "job", "podGroup": "g"}
        api.request("POST", f"/api/v1/namespaces/{ns}/pods", p)
    try:
        gates = "GenericWorkload=true,GangScheduling=true"
        code, out, err = _schedule("--from-cluster", "--kubeconfig", control_plane.admin_kubeconfig,
                                   "--feature-gates", gates)
        assert code == 0, err
        assert sorted(x["pod"] for x in out["bindings"]) == [f"{ns}/w0", f"{ns}/w1"]
        code, out, err = _schedule("--from-cluster", "--kubeconfig", control_plane.admin_kubeconfig)
        assert code == 0, err
        assert not any(i["kind"] == "Workload" for i in out.get("ignored", []))
    finally:
        clean_cluster(api)
        api.request("DELETE", f"/api/v1/namespaces/{ns}")
