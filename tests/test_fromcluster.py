"""`caldera schedule --from-cluster` without an API server: the reader (live/fromcluster.py) over a
fake client (pagination, kinds put back on list items, 404 CRDs skipped, refused lists), and the
CLI's one-line errors (no server, bad kubeconfig, usage). The live comparison with files is
tests/live/test_fromcluster_live.py."""
from __future__ import annotations

import json

import pytest
import yaml
from click.testing import CliRunner

from caldera.api.loader import load_cluster
from caldera.cli.main import cli
from caldera.errors import ConfigError
from caldera.live.client import ApiError
from caldera.live.fromcluster import KUBE_ONLY, read_cluster

from .extender_server import dead_url


def node(name, cpu="4"):
    return {"metadata": {"name": name}, "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}}}


def pod(name, cpu="1", node_name=None, ns="default"):
    spec = {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}]}
    if node_name:
        spec["nodeName"] = node_name
    return {"metadata": {"name": name, "namespace": ns, "creationTimestamp": "2026-01-01T00:00:00Z"}, "spec": spec}


class FakeApi:
    """Answers LISTs from `collections` {path: [items]} in pages of `page` items."""

    def __init__(self, collections, page=2, refuse=None):
        self.host = "https://fake:6443"
        self.collections = collections
        self.page = page
        self.refuse = refuse or {}
        self.requests: list[tuple[str, dict]] = []

    def check(self):
        return {"gitVersion": "v1.35.4"}

    def get(self, path, query=None):
        self.requests.append((path, dict(query or {})))
        if path in self.refuse:
            raise ApiError(self.refuse[path], "Forbidden", f"cannot list {path}")
        if path not in self.collections:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        items = self.collections[path]
        start = int((query or {}).get("continue") or 0)
        end = start + self.page
        meta = {"continue": str(end)} if end < len(items) else {}
        return {"kind": "List", "metadata": meta, "items": [json.loads(json.dumps(i)) for i in items[start:end]]}

    def close(self):
        pass


KUBE = {"/api/v1/nodes": [node("n1"), node("n2"), node("n3")],
        "/apis/scheduling.k8s.io/v1/priorityclasses": [{"metadata": {"name": "high"}, "value": 100}],
        "/apis/policy/v1/poddisruptionbudgets": [],
        "/api/v1/pods": [pod("run", "3", "n1"), pod("a"), pod("b", "2"), pod("c", "8")],
        # built-in kinds kube profiles read (workloads, storage): served, empty here
        **{k.path: [] for k in KUBE_ONLY if not k.optional}}


def test_read_cluster_lists_pages_and_puts_kinds_back():
    api = FakeApi(KUBE)
    docs = read_cluster(api)
    kinds = [(d["kind"], d["apiVersion"], d["metadata"]["name"]) for _, _, d in docs]
    assert kinds == [("Node", "v1", "n1"), ("Node", "v1", "n2"), ("Node", "v1", "n3"),
                     ("PriorityClass", "scheduling.k8s.io/v1", "high"),
                     ("Pod", "v1", "run"), ("Pod", "v1", "a"), ("Pod", "v1", "b"), ("Pod", "v1", "c")]
    assert [i for _, i, _ in docs] == list(range(8))
    assert {s for s, _, _ in docs} == {"cluster https://fake:6443"}
    # paginated (limit/continue), pods without the terminal ones (kube-scheduler's field selector)
    pods = [q for p, q in api.requests if p == "/api/v1/pods"]
    assert [q.get("continue") for q in pods] == [None, "2"]
    assert all(q["limit"] == 500 for q in pods)
    assert pods[0]["fieldSelector"] == "status.phase!=Succeeded,status.phase!=Failed"
    # a kube configuration reads no Volcano objects nor ResourceQuotas; it reads the kube-only kinds
    asked = [p for p, _ in api.requests]
    assert not [p for p in asked if "volcano" in p or "resourcequotas" in p]
    assert {"/api/v1/namespaces", "/apis/apps/v1/replicasets", "/api/v1/persistentvolumeclaims",
            "/apis/scheduling.x-k8s.io/v1alpha1/podgroups"} <= set(asked)
    assert asked[-1] == "/api/v1/pods"
    c = load_cluster([], docs)
    assert [n.name for n in c.nodes] == ["n1", "n2", "n3"] and len(c.pods) == 4


def test_read_cluster_for_volcano_skips_crds_that_are_not_served():
    cols = dict(KUBE)
    cols["/api/v1/resourcequotas"] = []
    cols["/apis/scheduling.volcano.sh/v1beta1/queues"] = [{"metadata": {"name": "default"}, "spec": {"weight": 1}}]
    api = FakeApi(cols)
    docs = read_cluster(api, volcano=True)
    assert ("Queue", "scheduling.volcano.sh/v1beta1") in {(d["kind"], d["apiVersion"]) for _, _, d in docs}
    asked = [p for p, _ in api.requests]
    # podgroups, hypernodes, numatopologies answered 404: skipped
    assert "/apis/scheduling.volcano.sh/v1beta1/podgroups" in asked
    assert "/apis/topology.volcano.sh/v1alpha1/hypernodes" in asked
    assert not [p for p in asked if "batch.volcano.sh" in p]      # Jobs: never read
    assert "/api/v1/namespaces" not in asked                      # kube-only kinds: not for Volcano


@pytest.mark.parametrize("status,needle", [
    (403, "needs get/list permission"),
    (401, "credentials were not accepted"),
    (500, "cannot list /api/v1/nodes"),
])
def test_a_refused_list_is_one_line(status, needle):
    with pytest.raises(ConfigError) as e:
        read_cluster(FakeApi(KUBE, refuse={"/api/v1/nodes": status}))
    msg = str(e.value)
    assert msg.startswith("cluster https://fake:6443: cannot list /api/v1/nodes: ") and needle in msg
    assert "\n" not in msg


def test_a_core_kind_that_is_not_served_is_an_error():
    cols = {k: v for k, v in KUBE.items() if k != "/apis/policy/v1/poddisruptionbudgets"}
    with pytest.raises(ConfigError, match="cannot list /apis/policy/v1/poddisruptionbudgets: 404"):
        read_cluster(FakeApi(cols))


def test_schedule_from_a_fake_cluster_and_files_on_top(tmp_path, monkeypatch):
    """The CLI path end to end over the fake client: cluster pods keep their state, pending ones are
    scheduled, -f adds a pod."""
    import caldera.live.client as client
    monkeypatch.setattr(client, "connect", lambda kubeconfig=None, context=None: FakeApi(KUBE))
    extra = tmp_path / "new.yaml"
    extra.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Pod", **pod("new", "1")}))
    r = CliRunner().invoke(cli, ["schedule", "--from-cluster", "-f", str(extra), "-o", "json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    # n1 holds "run" (3 of 4 CPUs); a, b, new go in order; c (8 CPUs) fits nowhere
    placed = {b["pod"] for b in out["bindings"]}
    assert placed == {"default/a", "default/b", "default/new"}
    assert [u["pod"] for u in out["unschedulable"]] == ["default/c"]
    assert out["unschedulable"][0]["message"].startswith("0/3 nodes are available: 3 Insufficient cpu.")


def test_dead_api_server_is_one_line_exit_2(tmp_path):
    kc = tmp_path / "kubeconfig"
    kc.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "k", "cluster": {"server": dead_url()}}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
        "users": [{"name": "u", "user": {"token": "t"}}]}))
    r = CliRunner().invoke(cli, ["schedule", "--from-cluster", "--kubeconfig", str(kc)])
    assert r.exit_code == 2, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("caldera: error: cannot reach the API server at http://127.0.0.1:")


@pytest.mark.parametrize("args,needle", [
    (["--from-cluster", "--kubeconfig", "/nonexistent/kubeconfig"], "kubeconfig file does not exist"),
    ([], "give manifests with -f FILE_OR_DIR, or --from-cluster"),
    (["-f", "x.yaml", "--kubeconfig", "k"], "--kubeconfig and --context apply only with --from-cluster"),
])
def test_bad_kubeconfig_and_usage_exit_2(args, needle):
    r = CliRunner().invoke(cli, ["schedule", *args])
    assert r.exit_code == 2, r.output
    assert needle in r.stderr


def test_pods_from_the_cluster_are_slimmed_as_read_files_are():
    p = pod("a")
    p["metadata"]["managedFields"] = [{"manager": "kubectl"}]
    p["status"] = {"phase": "Pending", "containerStatuses": [{"name": "c"}]}
    docs = read_cluster(FakeApi({**KUBE, "/api/v1/pods": [p]}))
    got = docs[-1][2]
    assert got["kind"] == "Pod" and "managedFields" not in got["metadata"]
    assert "containerStatuses" not in got["status"]
