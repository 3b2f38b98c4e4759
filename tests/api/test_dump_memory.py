"""Memory of a big dump of small pods (issue 14): what a read pod costs, and that the sharing
which makes it cheap never lets a change of one pod reach another.

A big input's pods share equal sub-trees of their manifests (reader._shared_pod, on from
reader.SHARE_FROM_BYTES; the tests turn it on for small files, and cut kubectl Lists in small
slices so that the items go through it), share their labels, annotations and node selector with
the manifest, their requests with the pods of the same resources, and the node table keeps one
request vector per shape. Nothing in Caldera writes into those; the last tests run the paths that
build on read pods (a kube pass with preemption, a Volcano session with reclaim, kube and Volcano
simulations) and check that every shared part reads as it did.
"""
from __future__ import annotations

import copy
import gc
import json
import pickle
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
import yaml

from caldera.api import parse, reader
from caldera.api.loader import load_cluster
from caldera.api.objects import Pod
from caldera.api.reader import read_documents
from caldera.state.nodetable import NodeTable

from ..builders import make_node, pod_dict

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "batch"


@pytest.fixture
def sharing(monkeypatch):
    """Sharing on for any file, and kubectl Lists read a few items at a time (as a big dump is)."""
    monkeypatch.setattr(reader, "SHARE_FROM_BYTES", 0)
    monkeypatch.setattr(parse, "SLICE_CHARS", 1 << 10)


def write_list(path: Path, items: list[dict]) -> str:
    """`items` as one kubectl List in YAML (block style, items at column 0, no anchors)."""
    items = json.loads(json.dumps(items))       # (fresh objects: PyYAML writes anchors for shared ones)
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}, sort_keys=False))
    return str(path)


def node_doc(i: int) -> dict:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": f"node-{i}", "labels": {"kubernetes.io/hostname": f"node-{i}",
                                                         "topology.kubernetes.io/zone": f"z{i % 3}"}},
            "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "250"}}}


def small_pod(i: int, nodes: int, pending: bool = False) -> dict:
    """A pod as benchmarks/load_dump.py's `small` dump has them."""
    spec: dict = {"containers": [{"image": "registry.k8s.io/pause:3.10", "name": "c",
                                  "resources": {"requests": {"cpu": f"{(10, 50, 100)[i % 3]}m", "memory": "64Mi"}}}]}
    if not pending:
        spec["nodeName"] = f"node-{i % nodes}"
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"labels": {"app": f"a{i % 100}"}, "name": f"pod-{i}", "namespace": f"ns-{i % 20}"},
            "spec": spec, "status": {"phase": "Pending" if pending else "Running"}}


def small_dump(tmp_path: Path, n: int, nodes: int = 50) -> str:
    return write_list(tmp_path / "dump.yaml", [node_doc(i) for i in range(nodes)]
                      + [small_pod(i, nodes, pending=i >= n - n // 50) for i in range(n)])


# ---- what a pod costs ----------------------------------------------------------------------------

def test_a_read_pod_retains_little_memory(tmp_path, sharing):
    # A pod of the small dump cost ~2,800 B: its parsed tree (~1,500 B even with its strings made
    # one), copies of its labels and requests, an empty cache, its uid, its entry in
    # Cluster.where. Now its own mappings (the pod, metadata, spec), the Pod and its key: ~1,050 B.
    n = 3000
    path = small_dump(tmp_path, n)
    load_cluster([path])           # (the decoders' memos filled, as for any input after its first pods)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        cluster = load_cluster([path])
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(cluster.pods) == n
    assert kept / n < 1250, f"{kept / n:.0f} bytes a pod"


def test_the_node_table_keeps_one_request_vector_per_shape():
    # pod_vector kept two small arrays and a key in each pod's cache (~570 B a pod, most of what
    # scheduling a big dump added); now one pair for each distinct requests, in the table.
    table = NodeTable([make_node(f"n{i}", cpu="64", memory="256Gi", pods="250") for i in range(10)])
    pods = [Pod(pod_dict(f"p{i}", cpu=f"{(10, 50, 100)[i % 3]}m", memory="64Mi"), i) for i in range(2000)]
    first = table.pod_vector(pods[0])
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i, p in enumerate(pods):
            table.add_pod(p, i % 10)
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert kept / len(pods) < 200, f"{kept / len(pods):.0f} bytes a pod"     # (its entries in pods, pod_node)
    assert table.pod_vector(pods[3]) is first and table.pod_vector(pods[1]) is not first
    cols, vals = first
    assert cols.tolist() == [0, 1, 3] and vals.tolist() == [10, 64 << 20, 1]     # cpu, memory, pods
    assert not cols.flags.writeable and not vals.flags.writeable       # shared: read only
    assert table.req[:, 0].sum() == sum((10, 50, 100)[i % 3] for i in range(2000))
    for p in pods:
        table.remove_pod(p.key)
    assert not table.req.any()


def test_request_vectors_follow_new_columns():
    # a pod that brings a new resource adds a column; vectors made before keep their columns
    table = NodeTable([make_node("n1", cpu="8", memory="8Gi", pods="10", extra={"example.com/foo": "4"})])
    a = Pod(pod_dict("a", cpu="1"), 1)
    b = Pod(pod_dict("b", cpu="1", requests={"example.com/bar": "2"}, limits={"example.com/bar": "2"}), 2)
    va = table.pod_vector(a)
    width = len(table.res_names)
    cols, vals = table.pod_vector(b)
    assert len(table.res_names) == width + 1
    assert dict(zip((table.res_names[c] for c in cols.tolist()), vals.tolist())) == {
        "cpu": 1000, "pods": 1, "example.com/bar": b.requests["example.com/bar"]}
    assert table.pod_vector(a)[0].tolist() == va[0].tolist()


def test_cache_and_uid_are_made_when_first_read():
    p = Pod(pod_dict("p", "ns"), 1)
    q = Pod(pod_dict("q", "ns", uid="u-1"), 2)
    assert p.uid == "ns-p" and q.uid == "u-1"
    assert p.cache == {} and p.cache is p.cache
    p.cache["k"] = 1
    assert p.cache == {"k": 1}
    c = copy.copy(Pod(pod_dict("r", "ns"), 3))
    assert c.uid == "ns-r" and c.cache == {}        # (a copy reads every slot: made then)
    assert copy.copy(p).cache is p.cache            # (shared by a copy, as before they were lazy)
    assert getattr(p, "nope", None) is None and not hasattr(p, "nope")
    back = pickle.loads(pickle.dumps(Pod(pod_dict("s", "ns", labels={"a": "b"}), 4)))   # (a Ray run pickles pods)
    assert (back.key, back.uid, back.labels, back.cache) == ("ns/s", "ns-s", {"a": "b"}, {})
    with pytest.raises(AttributeError, match="nope"):
        _ = p.nope


def test_empty_and_non_string_maps():
    p = Pod(pod_dict("p", labels={"a": 1, "b": None}), 1)
    assert p.labels == {"a": "1", "b": ""}
    q, r = Pod(pod_dict("q"), 2), Pod(pod_dict("r", annotations={}), 3)
    assert q.labels == q.annotations == q.node_selector == r.annotations == {}
    s = Pod(pod_dict("s", labels={"app": "x"}), 4)
    assert s.labels is s.raw["metadata"]["labels"]          # the manifest's own, not a copy


def test_where_of_pods_names_file_and_position(tmp_path):
    a = write_list(tmp_path / "a.yaml", [small_pod(0, 1), small_pod(1, 1)])
    b = write_list(tmp_path / "b.yaml", [small_pod(2, 1)])
    before = [("cluster", 0, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "live", "namespace": "ns-0"},
                              "spec": {"containers": [{"name": "c", "image": "i"}]}})]
    c = load_cluster([a, b], before)
    assert c.where_of("Pod", "ns-0/live") == ("cluster", 0)
    assert c.where_of("Pod", "ns-0/pod-0") == (a, 1)
    assert c.where_of("Pod", "ns-1/pod-1") == (a, 2)
    assert c.where_of("Pod", "ns-2/pod-2") == (b, 3)
    assert c.where_of("Pod", "ns-0/none") == ("<input>", 1 << 62)


# ---- what is shared ------------------------------------------------------------------------------

def test_pods_of_a_big_list_share_equal_subtrees(tmp_path, sharing):
    tol = [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
            "tolerationSeconds": 300}]
    docs = [pod_dict(f"p{i}", "ns", cpu="100m", labels={"app": "web"}, tolerations=tol, node_selector={"d": "x"},
                     annotations={"a": "b"}, phase="Pending") for i in range(40)]
    c = load_cluster([write_list(tmp_path / "pods.yaml", docs)])
    p, q = c.pods[0], c.pods[-1]
    for part, key in (("metadata", "labels"), ("metadata", "annotations"), ("spec", "containers"),
                      ("spec", "tolerations"), ("spec", "nodeSelector")):
        assert p.raw[part][key] is q.raw[part][key], key
    assert p.raw["status"] is q.raw["status"]
    # equal specs are one (nothing writes a read pod's spec: a trace naming a scheduler gives the
    # pod a new one); each pod's top mapping and metadata (its name) stay its own
    assert p.raw["spec"] is q.raw["spec"]
    assert p.raw is not q.raw and p.raw["metadata"] is not q.raw["metadata"]
    assert p.labels is q.labels is p.raw["metadata"]["labels"]
    assert p.node_selector is q.node_selector and p.annotations is q.annotations
    assert p.requests is q.requests and p.tolerations is q.tolerations and p.images is q.images


def test_sharing_keeps_values_of_different_types_apart(tmp_path, sharing):
    # True == 1 == 1.0 in Python, but not in a manifest: equal sub-trees are found by their repr
    extras = [{"x": True}, {"x": 1}, {"x": 1.0}, {"x": "1"}, {"x": None}, {"x": [1]}, {"x": {"1": 1}}, ["x", 1],
              {"x": True}, [True]]
    docs = [pod_dict(f"p{i}", "ns", cpu="1", spec={"extra": e}) for i, e in enumerate(extras)]
    c = load_cluster([write_list(tmp_path / "pods.yaml", docs)])
    got = [p.raw["spec"]["extra"] for p in c.pods]
    assert [repr(g) for g in got] == [repr(e) for e in extras]
    assert got[0] is got[8] and got[0] is not got[1]
    assert [type(g["x"]) for g in got[:5]] == [bool, int, float, str, type(None)]


def test_documents_read_alike_with_and_without_sharing(tmp_path, monkeypatch):
    docs = [small_pod(i, 7, pending=i % 5 == 0) for i in range(300)] + [
        pod_dict(f"x{i}", "ns", cpu="1", labels={"a": str(i % 3)}, affinity={"podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": {"matchLabels": {"a": "0"}},
                                                               "topologyKey": "zone"}]}},
                 annotations={"n": i % 2}, spec={"overhead": {"cpu": "10m"}, "weird": [[], {}, [{}], 0, -0.0, 1e300]})
        for i in range(60)]
    path = write_list(tmp_path / "pods.yaml", docs)
    monkeypatch.setattr(parse, "SLICE_CHARS", 1 << 10)
    plain = read_documents([path])
    monkeypatch.setattr(reader, "SHARE_FROM_BYTES", 0)
    shared = read_documents([path])
    assert repr(shared) == repr(plain)
    assert shared[0][2]["spec"]["containers"] is shared[3][2]["spec"]["containers"]


# ---- nothing changes what is shared --------------------------------------------------------------

@pytest.fixture
def recorded(sharing, monkeypatch):
    """Every shared part of every pod read (what is below its metadata and spec, and its status),
    with its repr when read."""
    seen: list[tuple[str, object, str]] = []
    real = reader._shared_pod

    def recording(doc, strings, trees):
        out = real(doc, strings, trees)
        parts = [(f"{k}.{f}", v) for k in ("metadata", "spec") for f, v in (out.get(k) or {}).items()
                 if isinstance(v, (dict, list))]
        parts += [("spec", out.get("spec")), ("status", out.get("status"))]
        name = (out.get("metadata") or {}).get("name")
        seen.extend((f"{name} {where}", v, repr(v)) for where, v in parts)
        return out
    monkeypatch.setattr(reader, "_shared_pod", recording)
    return seen


def unchanged(seen) -> None:
    assert seen, "no pod went through the sharing"
    changed = [what for what, v, text in seen if repr(v) != text]
    assert not changed, f"shared parts changed: {changed[:5]}"


def kube_dump(tmp_path: Path) -> str:
    """3 nodes of 4 CPU filled by low-priority pods of one workload; pending: pods that preempt
    them, pods with spreading and anti-affinity, and a pod for a node selector no node has."""
    nodes = [{"apiVersion": "v1", "kind": "Node",
              "metadata": {"name": f"n{i}", "labels": {"kubernetes.io/hostname": f"n{i}", "zone": f"z{i % 2}"}},
              "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "20"}}} for i in range(3)]
    tol = [{"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
            "tolerationSeconds": 300}]
    owner = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "low-rs", "uid": "rs-1", "controller": True}]
    low = [pod_dict(f"low-{i}", "ns", cpu="1", memory="1Gi", labels={"app": "low"}, node=f"n{i % 3}",
                    priority=0, tolerations=tol, phase="Running",
                    spec={"terminationGracePeriodSeconds": 30}) for i in range(12)]
    for d in low:
        d["metadata"]["ownerReferences"] = owner
    spread = {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
              "labelSelector": {"matchLabels": {"app": "high"}}}
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "high"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    high = [pod_dict(f"high-{i}", "ns", cpu="2", memory="1Gi", labels={"app": "high"}, priority=1000,
                     tolerations=tol, topology_spread=[spread], affinity=anti) for i in range(3)]
    lost = [pod_dict(f"lost-{i}", "ns", cpu="1", node_selector={"disk": "ssd"}, tolerations=tol) for i in range(2)]
    return write_list(tmp_path / "kube.yaml", nodes + low + high + lost)


def test_a_kube_pass_with_preemption_leaves_shared_parts_as_read(tmp_path, recorded):
    from caldera.configfile import load_config
    from caldera.engine.oneshot import run_pass
    from caldera.plugins.registry import build_registry
    cluster = load_cluster([kube_dump(tmp_path)])
    assert cluster.pods[0].raw["spec"]["containers"] is cluster.pods[1].raw["spec"]["containers"]
    reg = build_registry()
    res = run_pass(cluster, load_config(None, reg), registry=reg)
    assert res.bindings or res.unschedulable
    unchanged(recorded)
    # the same decisions as without sharing
    reader.SHARE_FROM_BYTES = 1 << 62
    plain = load_cluster([kube_dump(tmp_path)])
    assert plain.pods[0].raw["spec"]["containers"] is not plain.pods[1].raw["spec"]["containers"]
    assert run_pass(plain, load_config(None, reg), registry=reg).to_dict() == res.to_dict()


def example_as_list(tmp_path: Path, example: str, name: str) -> str:
    """An example's manifests as one kubectl List (so that they are read as a dump is)."""
    return write_list(tmp_path / name, [d for _, _, d in read_documents([str(EXAMPLES / example)])])


def volcano_conf(path: Path):
    from caldera.batch.actions import ACTIONS
    from caldera.batch.conf import parse_volcano_conf
    from caldera.batch.plugins import PLUGINS
    return parse_volcano_conf(yaml.safe_load(path.read_text()), str(path), ACTIONS, PLUGINS)


def test_a_volcano_session_with_reclaim_leaves_shared_parts_as_read(tmp_path, recorded):
    from caldera.batch.runner import run_session
    path = example_as_list(tmp_path, "reclaim", "reclaim.yaml")
    cluster = load_cluster([path])
    etl = [p for p in cluster.pods if p.name.startswith("etl-")]
    assert len(etl) > 2 and etl[0].raw["spec"]["containers"] is etl[1].raw["spec"]["containers"]
    res = run_session(cluster, volcano_conf(EXAMPLES / "reclaim" / "volcano-scheduler.conf"))
    assert res.evictions           # (reclaim evicted some of etl's pods)
    unchanged(recorded)


def test_simulations_leave_shared_parts_as_read(tmp_path, recorded):
    from caldera.config.defaults import default_config
    from caldera.plugins.registry import build_registry
    from caldera.sim.kube import KubeSim
    from caldera.sim.traces import read_cluster, read_workload
    from caldera.sim.volcano import VolcanoSim
    nodes = write_list(tmp_path / "nodes.yaml", [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}", "labels": {"zone": f"z{i}"}},
         "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "20"}}} for i in range(2)])

    def arriving(i: int, prio: int, sched: str | None = None) -> dict:
        ann = {"simulation.caldera/arrival": str(i), "simulation.caldera/duration": "30"}
        return pod_dict(f"w{i}", "t", cpu="2", memory="1Gi", labels={"app": "w"}, priority=prio, annotations=ann,
                        scheduler_name=sched, spec={"terminationGracePeriodSeconds": 5})
    work = write_list(tmp_path / "work.yaml", [arriving(i, 1000 if i >= 4 else 0) for i in range(8)])
    reg = build_registry()
    sim = KubeSim("default", read_cluster([nodes]), read_workload([work]), default_config(reg), registry=reg)
    r = sim.run()
    assert sum(rec.evictions for rec in r.records) > 0        # (the late high-priority pods preempted)
    vwork = write_list(tmp_path / "vwork.yaml", [arriving(i, 0, "volcano") for i in range(8)])
    conf = volcano_conf(EXAMPLES / "reclaim" / "volcano-scheduler.conf")
    VolcanoSim("volcano", read_cluster([nodes]), read_workload([vwork]), conf).run()
    unchanged(recorded)
    assert np.unique([id(v) for what, v, _ in recorded if what.endswith("spec.containers")]).size < len(
        [1 for what, _, _ in recorded if what.endswith("spec.containers")])


def test_a_trace_naming_the_scheduler_of_its_pods_leaves_their_shared_spec_as_read(tmp_path, recorded):
    """`simulate --default-scheduler`: a workload's pods that name no scheduler get one, in a new
    spec (sim/traces/manifests.py), not in the spec they share with the pods of the same shape."""
    from caldera.sim.traces import read_workload
    work = write_list(tmp_path / "work.yaml", [pod_dict(f"w{i}", "t", cpu="1") for i in range(6)])
    wl = read_workload([work], default_scheduler="volcano")
    assert [sp.pod.scheduler_name for sp in wl.pods] == ["volcano"] * 6
    specs = [v for what, v, _ in recorded if what.endswith(" spec")]
    assert len(specs) == 6 and all(v is specs[0] for v in specs)      # (shared when read)
    unchanged(recorded)
