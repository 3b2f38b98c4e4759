"""kube-scheduler's HTTP extenders (engine/extenders.py, config `extenders`), against a real HTTP
extender started in the test (tests/extender_server.py)."""
from __future__ import annotations

import json

import numpy as np
import pytest
import yaml
from click.testing import CliRunner

from caldera.cli.main import cli
from caldera.config.decode import decode_kube_config
from caldera.config.defaults import default_config
from caldera.config.types import ExtenderConfig, PluginRef, Profile, SchedulerConfig
from caldera.engine.extenders import HTTPExtender, build_extenders
from caldera.engine.scheduler import Scheduler, record_binder
from caldera.errors import ConfigError
from caldera.framework.interface import Plugin
from caldera.plugins.registry import build_registry
from tests.builders import make_node, make_pod, make_table
from tests.extender_server import ExtenderServer, dead_url, node_names


@pytest.fixture
def servers():
    made: list[ExtenderServer] = []

    def make(handlers=None) -> ExtenderServer:
        s = ExtenderServer(handlers)
        made.append(s)
        return s

    yield make
    for s in made:
        s.close()


# ---- kube's fake extender, over HTTP (testing/framework/fake_extender.go) -----------------------
def true_pred(node):
    return True


def false_pred(node):
    return False


def error_pred(node):
    raise RuntimeError("some error")


def node1_pred(node):
    return node == "node1"


def node2_pred(node):
    return node == "node2"


def error_prio(nodes):
    raise RuntimeError("some error")


def node1_prio(nodes):
    return {n: 10 if n == "node1" else 1 for n in nodes}


def node2_prio(nodes):
    return {n: 10 if n == "node2" else 1 for n in nodes}


def fake_extender(predicates=(), prioritizers=(), binder=False):
    """Handlers of kube's FakeExtender: a node passes when every predicate holds ("FakeExtender:
    node %q failed" otherwise); a predicate error is the filter's Error; prioritize sums
    score x prioritizer weight per node."""
    def filter_(body):
        keep, failed = [], {}
        for n in node_names(body):
            try:
                ok = all(p(n) for p in predicates)
            except RuntimeError as e:
                return {"Error": str(e)}
            if ok:
                keep.append(n)
            else:
                failed[n] = f'FakeExtender: node "{n}" failed'
        if body.get("NodeNames") is not None:
            return {"NodeNames": keep, "FailedNodes": failed}
        return {"Nodes": {"items": [{"metadata": {"name": n}} for n in keep]}, "FailedNodes": failed}

    def prioritize(body):
        names = node_names(body)
        total = dict.fromkeys(names, 0)
        for fn, w in prioritizers:
            try:
                got = fn(names)
            except RuntimeError:
                return 500, {"error": "some error"}
            for n, s in got.items():
                total[n] += s * w
        return [{"Host": n, "Score": s} for n, s in total.items()]

    h = {"filter": filter_, "prioritize": prioritize}
    if binder:
        h["bind"] = lambda body: {"Error": ""}
    return h


class TrueFilter(Plugin):
    name = "TrueFilter"

    def filter(self, state, pod, nodes, idx):
        return None


class EqualPrioritizerPlugin(Plugin):
    name = "EqualPrioritizerPlugin"

    def score(self, state, pod, nodes, idx):
        return np.ones(idx.size, dtype=np.int64)


class Node2Prioritizer(Plugin):
    name = "Node2Prioritizer"

    def score(self, state, pod, nodes, idx):
        return np.array([100 if nodes.nodes[i].name == "node2" else 10 for i in idx.tolist()], dtype=np.int64)


def _registry():
    reg = build_registry(third_party=False)
    for cls in (TrueFilter, EqualPrioritizerPlugin, Node2Prioritizer):
        reg[cls.name] = cls
    return reg


def kube_scheduler(node_list, extenders, filters=(), scores=(), *, explain=False, default=False):
    reg = _registry()
    if default:
        cfg = default_config(reg)
    else:
        pl = {"queueSort": [PluginRef("PrioritySort")], "bind": [PluginRef("DefaultBinder")],
              "filter": [PluginRef(f) for f in filters], "score": [PluginRef(n, w) for n, w in scores]}
        cfg = SchedulerConfig(profiles=[Profile(plugins=pl)])
    cfg.extenders = list(extenders)
    return Scheduler(cfg, make_table(node_list), reg, explain=explain)


# (name, filters, scores, [(predicates, [(prioritizer, weight)], extender weight, ignorable, uninterested, binder)],
#  nodes, expected host or None for an error, evaluated, feasible)
KUBE_CASES = [
    ("test 1", ["TrueFilter"], [], [([true_pred], [], 0, False, False, False),
                                    ([error_pred], [], 0, False, False, False)], ["node1", "node2"], None, 0, 0),
    ("test 2", ["TrueFilter"], [], [([true_pred], [], 0, False, False, False),
                                    ([false_pred], [], 0, False, False, False)], ["node1", "node2"], None, 0, 0),
    ("test 3", ["TrueFilter"], [("EqualPrioritizerPlugin", 1)],
     [([true_pred], [], 0, False, False, False), ([node1_pred], [], 0, False, False, False)],
     ["node1", "node2"], "node1", 2, 1),
    ("test 4", ["TrueFilter"], [], [([node2_pred], [], 0, False, False, False),
                                    ([node1_pred], [], 0, False, False, False)], ["node1", "node2"], None, 0, 0),
    ("test 5", ["TrueFilter"], [], [([true_pred], [(error_prio, 10)], 1, False, False, False)],
     ["node1"], "node1", 1, 1),
    ("test 6", ["TrueFilter"], [], [([true_pred], [(node1_prio, 10)], 1, False, False, False),
                                    ([true_pred], [(node2_prio, 10)], 5, False, False, False)],
     ["node1", "node2"], "node2", 2, 2),
    ("test 7", ["TrueFilter"], [("Node2Prioritizer", 20)], [([true_pred], [(node1_prio, 10)], 1, False, False, False)],
     ["node1", "node2"], "node2", 2, 2),
    ("test 8", ["TrueFilter"], [("Node2Prioritizer", 1)], [([error_pred], [(error_prio, 10)], 0, False, True, False)],
     ["node1", "node2"], "node2", 2, 2),
    ("test 9", ["TrueFilter"], [("EqualPrioritizerPlugin", 1)],
     [([error_pred], [], 0, True, False, False), ([node1_pred], [], 0, False, False, False)],
     ["node1", "node2"], "node1", 2, 1),
    ("test 10 - no scoring, extender filters configured, multiple feasible nodes are evaluated", ["TrueFilter"], [],
     [([true_pred], [], 0, False, False, False), ([node1_pred], [], 0, False, False, False)],
     ["node1", "node2"], "node1", 2, 1),
    ("test 11 - no scoring, no prefilters or extender filters configured, a single feasible node is evaluated",
     [], [], [([], [], 0, False, False, True)], ["node1", "node2"], "node1", 1, 1),
]


@pytest.mark.parametrize("case", KUBE_CASES, ids=[c[0] for c in KUBE_CASES])
def test_scheduler_with_extenders(servers, case):
    """kube's TestSchedulerWithExtenders (schedule_one_test.go), each FakeExtender an HTTP server."""
    _, filters, scores, exts, nodes, host, evaluated, feasible = case
    cfgs = []
    for preds, prios, weight, ignorable, uninterested, binder in exts:
        srv = servers(fake_extender(preds, prios, binder))
        cfgs.append(ExtenderConfig(
            url_prefix=srv.url, filter_verb="filter" if preds else "", prioritize_verb="prioritize" if prios else "",
            bind_verb="bind" if binder else "", weight=weight, ignorable=ignorable,
            managed_resources=[("example.com/uninterested", False)] if uninterested else []))
    sched = kube_scheduler([make_node(n) for n in nodes], cfgs, filters, scores)
    att = sched.schedule_one(make_pod("p"))
    if host is None:
        assert not att.scheduled and att.message
    else:
        assert (att.node, att.evaluated, att.feasible) == (host, evaluated, feasible), att.message


def test_scheduler_with_extenders_test_8_never_calls_an_uninterested_extender(servers):
    """test 8's point: the uninterested extender (an erroring one) is not sent the pod."""
    srv = servers(fake_extender([error_pred], [(error_prio, 10)]))
    cfg = ExtenderConfig(url_prefix=srv.url, filter_verb="filter", prioritize_verb="prioritize", weight=1,
                         bind_verb="bind", managed_resources=[("example.com/foo", False)])
    att = kube_scheduler([make_node("node1"), make_node("node2")], [cfg], ["TrueFilter"],
                         [("Node2Prioritizer", 1)]).schedule_one(make_pod("p"))
    assert att.node == "node2" and srv.calls == []


@pytest.mark.parametrize("label,managed,kw,want", [
    ("Empty managed resources", [], {}, True),
    ("Managed memory, empty resources", ["memory"], {}, False),
    ("Managed memory, container memory with Requests", ["memory"], {"requests": {"memory": "0"}}, True),
    ("Managed memory, container memory with Limits", ["memory"], {"limits": {"memory": "0"}}, True),
    ("Managed memory, init container memory", ["memory"],
     {"init_containers": [{"name": "i", "image": "x", "resources": {"requests": {"memory": "0"}}}]}, True),
])
def test_is_interested(label, managed, kw, want):
    """kube's TestIsInterested (extender_test.go)."""
    ext = HTTPExtender(ExtenderConfig(url_prefix="http://x", managed_resources=[(m, False) for m in managed]))
    assert ext.is_interested(make_pod("p", **kw)) is want


def test_ignorable_extenders_go_last():
    """buildExtenders: ignorable extenders are moved after the others, order otherwise kept."""
    cfgs = [ExtenderConfig(url_prefix=u, ignorable=i)
            for u, i in (("a", True), ("b", False), ("c", True), ("d", False))]
    assert [e.name for e in build_extenders(cfgs)] == ["b", "d", "a", "c"]


# ---- scenarios, checked by hand ---------------------------------------------------------------
def test_failed_scheduling_counts_the_extenders_reasons(servers):
    """3 nodes: NodeResourcesFit rejects small; the extender fails n2 and n3 (n3 unresolvable, also
    listed as failed: the unresolvable map wins). The message counts them as kube's FitError does,
    and preemption does not consider n3."""
    srv = servers({"filter": lambda body: {
        "Nodes": {"items": []},
        "FailedNodes": {"n2": "no GPU license", "n3": "whatever"},
        "FailedAndUnresolvableNodes": {"n3": "node is quarantined"}}})
    cfg = ExtenderConfig(url_prefix=srv.url, filter_verb="filter")
    nodes = [make_node("small", cpu="1"), make_node("n2"), make_node("n3")]
    sched = kube_scheduler(nodes, [cfg], default=True)
    att = sched.schedule_one(make_pod("p", cpu="2"))
    assert not att.scheduled
    assert att.message.startswith(
        "0/3 nodes are available: 1 Insufficient cpu, 1 no GPU license, 1 node is quarantined.")
    # only the nodes the plugins let through were sent
    assert node_names(srv.calls[0][1]) == ["n2", "n3"]
    assert srv.calls[0][1]["Pod"]["metadata"]["name"] == "p"


def test_extender_not_called_when_plugins_filter_every_node(servers):
    srv = servers(fake_extender([true_pred]))
    cfg = ExtenderConfig(url_prefix=srv.url, filter_verb="filter")
    att = kube_scheduler([make_node("a", cpu="1")], [cfg], default=True).schedule_one(make_pod("p", cpu="2"))
    assert not att.scheduled and srv.calls == []
    assert att.message.startswith("0/1 nodes are available: 1 Insufficient cpu.")


def test_prioritize_reorders(servers):
    """Default plugins rank the identical empty nodes equally; the extender's score 3 x weight 2 x
    10 = 60 for node c decides. Explain lists the extender's part under its urlPrefix."""
    srv = servers({"prioritize": lambda body: [{"Host": n, "Score": 3 if n == "c" else 0}
                                               for n in node_names(body)]})
    cfg = ExtenderConfig(url_prefix=srv.url + "/", prioritize_verb="prioritize", weight=2)
    sched = kube_scheduler([make_node(n) for n in "abcd"], [cfg], default=True, explain=True)
    att = sched.schedule_one(make_pod("p", cpu="1"))
    assert att.node == "c"
    scores = att.explain["scores"]
    assert scores["c"][srv.url + "/"] == 60 and scores["a"][srv.url + "/"] == 0
    assert scores["c"]["total"] - scores["a"]["total"] == 60
    assert srv.calls[0][0] == "prioritize"      # the trailing "/" of urlPrefix is trimmed


def test_prioritize_error_gives_no_score(servers):
    srv = servers({"prioritize": lambda body: (500, {})})
    cfg = ExtenderConfig(url_prefix=srv.url, prioritize_verb="prioritize", weight=1)
    att = kube_scheduler([make_node("a"), make_node("b")], [cfg], default=True).schedule_one(make_pod("p"))
    assert att.scheduled


def test_node_cache_capable_sends_node_names(servers):
    srv = servers(fake_extender([node2_pred]))
    cfg = ExtenderConfig(url_prefix=srv.url, filter_verb="filter", node_cache_capable=True)
    att = kube_scheduler([make_node("node1"), make_node("node2")], [cfg], default=True).schedule_one(make_pod("p"))
    assert att.node == "node2"
    body = srv.calls[0][1]
    assert body["NodeNames"] == ["node1", "node2"] and body["Nodes"] is None


def test_unknown_node_name_is_an_error(servers):
    srv = servers({"filter": lambda body: {"NodeNames": ["ghost"]}})
    cfg = ExtenderConfig(url_prefix=srv.url, filter_verb="filter", node_cache_capable=True)
    att = kube_scheduler([make_node("a")], [cfg], default=True).schedule_one(make_pod("p"))
    assert att.message == (f'extender "{srv.url}" claims a filtered node "ghost" '
                           "which is not found in the input node list")


def test_answer_fields_match_case_insensitively(servers):
    srv = servers({"filter": lambda body: {"nodenames": ["b"], "failedNodes": {"a": "nope"}}})
    cfg = ExtenderConfig(url_prefix=srv.url, filter_verb="filter", node_cache_capable=True)
    att = kube_scheduler([make_node("a"), make_node("b")], [cfg], default=True).schedule_one(make_pod("p"))
    assert att.node == "b"


def test_non_ignorable_extender_down_fails_the_cycle():
    url = dead_url()
    cfg = ExtenderConfig(url_prefix=url, filter_verb="filter")
    att = kube_scheduler([make_node("a"), make_node("b")], [cfg], default=True).schedule_one(make_pod("p"))
    assert not att.scheduled
    port = url.rsplit(":", 1)[1]
    assert att.message == f'Post "{url}/filter": dial tcp 127.0.0.1:{port}: connect: connection refused'
    assert att.status.code.name == "ERROR"


def test_ignorable_extender_down_is_skipped(servers):
    ok = servers(fake_extender([node1_pred]))
    cfgs = [ExtenderConfig(url_prefix=dead_url(), filter_verb="filter", ignorable=True),
            ExtenderConfig(url_prefix=ok.url, filter_verb="filter")]
    att = kube_scheduler([make_node("node1"), make_node("node2")], cfgs, default=True).schedule_one(make_pod("p"))
    assert att.node == "node1"


def test_non_200_answer(servers):
    srv = servers({"filter": lambda body: (503, {})})
    cfg = ExtenderConfig(url_prefix=srv.url, filter_verb="filter")
    att = kube_scheduler([make_node("a"), make_node("b")], [cfg], default=True).schedule_one(make_pod("p"))
    assert att.message == f"failed filter with extender at URL {srv.url}/filter, code 503"


def test_filter_error_field(servers):
    srv = servers({"filter": lambda body: {"Error": "license server unreachable"}})
    cfg = ExtenderConfig(url_prefix=srv.url, filter_verb="filter")
    att = kube_scheduler([make_node("a"), make_node("b")], [cfg], default=True).schedule_one(make_pod("p"))
    assert att.message == "license server unreachable"


def test_bind_delegated_to_interested_extender(servers):
    srv = servers({"bind": lambda body: {"Error": ""}})
    cfg = ExtenderConfig(url_prefix=srv.url, bind_verb="bind", managed_resources=[("example.com/fpga", False)])
    sched = kube_scheduler([make_node("a", extra={"example.com/fpga": "2"})], [cfg], default=True)
    by_plugin: list[str] = []
    sched.binder = lambda pod, node: by_plugin.append(pod.name) or record_binder(pod, node)
    att = sched.schedule_one(make_pod("p", uid="u-1", requests={"example.com/fpga": "1"}))
    assert att.node == "a"
    assert srv.calls == [("bind", {"PodName": "p", "PodNamespace": "default", "PodUID": "u-1", "Node": "a"})]
    assert by_plugin == []
    # a pod that does not use the resource is bound by DefaultBinder
    att = sched.schedule_one(make_pod("q"))
    assert att.node == "a" and len(srv.calls) == 1 and by_plugin == ["q"]


def test_bind_error(servers):
    srv = servers({"bind": lambda body: {"Error": "node a is fenced"}})
    cfg = ExtenderConfig(url_prefix=srv.url, bind_verb="bind")
    sched = kube_scheduler([make_node("a")], [cfg], default=True)
    att = sched.schedule_one(make_pod("p"))
    assert not att.scheduled and att.message == "node a is fenced"
    assert sched.table.node_of("default/p") is None       # unreserved


def test_ignorable_binder_down_falls_back_to_plugins():
    cfg = ExtenderConfig(url_prefix=dead_url(), bind_verb="bind", ignorable=True)
    att = kube_scheduler([make_node("a")], [cfg], default=True).schedule_one(make_pod("p"))
    assert att.node == "a"


# ---- configuration ---------------------------------------------------------------------------------
V1 = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


def decode(text):
    return decode_kube_config(yaml.safe_load(V1 + text), "c.yaml", build_registry(third_party=False))


def test_config_every_field():
    cfg = decode("""\
extenders:
- urlPrefix: https://ext.example:8443/scheduler
  filterVerb: filter
  preemptVerb: preempt
  prioritizeVerb: prioritize
  bindVerb: bind
  weight: 3
  enableHTTPS: true
  tlsConfig: {insecure: true, serverName: ext, certFile: /c, keyFile: /k, caFile: /ca, caData: aGk=}
  httpTimeout: 1m30s
  nodeCacheCapable: true
  managedResources: [{name: example.com/foo, ignoredByScheduler: true}, {name: example.com/bar}]
  ignorable: true
""")
    (e,) = cfg.extenders
    assert (e.url_prefix, e.filter_verb, e.preempt_verb, e.prioritize_verb, e.bind_verb, e.weight) == \
        ("https://ext.example:8443/scheduler", "filter", "preempt", "prioritize", "bind", 3)
    assert e.enable_https and e.node_cache_capable and e.ignorable and e.http_timeout == 90.0
    assert e.tls is not None and e.tls.insecure and e.tls.ca_data == b"hi" and e.tls.server_name == "ext"
    assert e.managed_resources == [("example.com/foo", True), ("example.com/bar", False)]
    # buildExtenders: ignoredByScheduler resources become NodeResourcesFit's ignoredResources
    assert cfg.profiles[0].plugin_args["NodeResourcesFit"]["ignoredResources"] == ["example.com/foo"]


@pytest.mark.parametrize("text,msg", [
    ("extenders:\n- {urlPrefix: http://x, prioritizeVerb: p}\n",
     "c.yaml: extenders[0].weight: Invalid value: 0: must have a positive weight applied to it;"),
    ("extenders:\n- {urlPrefix: http://x, prioritizeVerb: p, weight: -1}\n",
     "extenders[0].weight: Invalid value: -1: must have a positive weight applied to it"),
    ("extenders:\n- {urlPrefix: http://x, bindVerb: b}\n- {urlPrefix: http://y, bindVerb: b}\n",
     'extenders: Invalid value: "found 2 extenders implementing bind": only one extender can implement bind'),
    ("extenders:\n- {urlPrefix: http://x, managedResources: [{name: example.com/a}]}\n"
     "- {urlPrefix: http://y, managedResources: [{name: example.com/a}]}\n",
     'extenders[1].managedResources[0].name: Invalid value: "example.com/a": duplicate extender managed resource name'),
    ("extenders:\n- {urlPrefix: http://x, managedResources: [{name: cpu}]}\n",
     'extenders[0].managedResources[0].name: Invalid value: "cpu": is an invalid extended resource name'),
    ("extenders:\n- {urlPrefix: http://x, managedResources: [{name: kubernetes.io/x}]}\n",
     'Invalid value: "kubernetes.io/x": is an invalid extended resource name'),
    ("extenders:\n- {urlPrefix: http://x, managedResources: [{name: 'a/b/c'}]}\n",
     'extenders[0].managedResources[0].name: Invalid value: "a/b/c": a valid label key'),
    ("extenders:\n- {urlPrefix: http://x, httpTimeout: 5}\n", "extenders[0].httpTimeout: expected a string"),
    ("extenders:\n- {urlPrefix: http://x, httpTimeout: 5x}\n", 'extenders[0].httpTimeout: time: invalid duration "5x"'),
    ("extenders:\n- {urlPrefix: http://x, filterverb: f}\n", "extenders[0].filterverb: unknown field; did you mean"),
    ("extenders:\n- {urlPrefix: http://x, tlsConfig: {caData: '%%%'}}\n", "extenders[0].tlsConfig.caData"),
    ("extenders:\n- {urlPrefix: http://x, ignorable: 'yes'}\n", "extenders[0].ignorable: expected true or false"),
    ("extenders: {urlPrefix: http://x}\n", "extenders: expected a list"),
])
def test_config_errors(text, msg):
    with pytest.raises(ConfigError) as e:
        decode(text)
    assert msg in str(e.value)
    assert "\n" not in str(e.value)


def test_default_timeout_is_5s():
    assert HTTPExtender(ExtenderConfig(url_prefix="http://x")).timeout == 5.0
    assert HTTPExtender(ExtenderConfig(url_prefix="http://x", http_timeout=0.25)).timeout == 0.25


def test_timeout(servers):
    import time

    def slow(body):
        time.sleep(1.0)
        return {"NodeNames": []}

    srv = servers({"filter": slow})
    cfg = ExtenderConfig(url_prefix=srv.url, filter_verb="filter", http_timeout=0.1)
    att = kube_scheduler([make_node("a"), make_node("b")], [cfg], default=True).schedule_one(make_pod("p"))
    assert att.message == (f'Post "{srv.url}/filter": context deadline exceeded '
                           "(Client.Timeout exceeded while awaiting headers)")


# ---- end to end ------------------------------------------------------------------------------------
CLUSTER = """\
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: n2}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: n3}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default}
spec:
  containers: [{name: c, image: nginx, resources: {requests: {cpu: "1"}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: blocked, namespace: default, labels: {blocked: "yes"}}
spec:
  containers: [{name: c, image: nginx, resources: {requests: {cpu: "1"}}}]
"""


def test_caldera_schedule_with_extenders(tmp_path, servers):
    """The extender removes n1 for every pod (and every node for pods labelled blocked) and prefers
    n3; `web` lands on n3, `blocked` fails with the extender's reasons."""
    def filter_(body):
        blocked = (body["Pod"]["metadata"].get("labels") or {}).get("blocked") == "yes"
        names = node_names(body)
        failed = {n: ("n1 is reserved" if n == "n1" else "blocked by policy")
                  for n in names if blocked or n == "n1"}
        return {"NodeNames": [n for n in names if n not in failed], "FailedNodes": failed}

    srv = servers({"filter": filter_,
                   "prioritize": lambda body: [{"Host": n, "Score": 10 if n == "n3" else 0} for n in node_names(body)]})
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    (tmp_path / "sched.yaml").write_text(V1 + f"""\
extenders:
- urlPrefix: {srv.url}
  filterVerb: filter
  prioritizeVerb: prioritize
  weight: 1
  nodeCacheCapable: true
  httpTimeout: 2s
""")
    r = CliRunner().invoke(cli, ["schedule", "-f", str(tmp_path / "cluster.yaml"),
                                 "--config", str(tmp_path / "sched.yaml"), "-o", "json"])
    assert r.exit_code == 0, (r.stdout, r.stderr)
    out = json.loads(r.stdout)
    assert [(b["pod"], b["node"]) for b in out["bindings"]] == [("default/web", "n3")]
    (u,) = out["unschedulable"]
    assert u["pod"] == "default/blocked"
    assert u["message"].startswith("0/3 nodes are available: 1 n1 is reserved, 2 blocked by policy.")


def test_caldera_schedule_with_a_dead_extender(tmp_path):
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    url = dead_url()
    (tmp_path / "sched.yaml").write_text(V1 + f"extenders:\n- urlPrefix: {url}\n  filterVerb: filter\n")
    r = CliRunner().invoke(cli, ["schedule", "-f", str(tmp_path / "cluster.yaml"),
                                 "--config", str(tmp_path / "sched.yaml"), "-o", "json"])
    assert r.exit_code == 0, (r.stdout, r.stderr)
    out = json.loads(r.stdout)
    assert out["bindings"] == []
    assert {u["message"] for u in out["unschedulable"]} == {
        f'Post "{url}/filter": dial tcp 127.0.0.1:{url.rsplit(":", 1)[1]}: connect: connection refused'}


def test_caldera_schedule_rejects_a_bad_extender_config(tmp_path):
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    (tmp_path / "sched.yaml").write_text(V1 + "extenders:\n- {urlPrefix: http://x, prioritizeVerb: p}\n")
    r = CliRunner().invoke(cli, ["schedule", "-f", str(tmp_path / "cluster.yaml"),
                                 "--config", str(tmp_path / "sched.yaml")])
    assert r.exit_code == 2
    assert "extenders[0].weight: Invalid value: 0: must have a positive weight applied to it" in r.stderr


# ---- preemption (Evaluator.callExtenders) ----------------------------------------------------------
def _preemption(extenders):
    """n1 (4 CPU) runs v1 and v2 (2 CPU each, priority 0, v1 started first); `hi` (2 CPU,
    priority 100) preempts. Without extenders DefaultPreemption evicts v2 (the later start)."""
    sched = kube_scheduler([make_node("n1", cpu="4")], extenders, default=True)
    for name, uid, start in (("v1", "u1", "2026-01-01T00:00:00Z"), ("v2", "u2", "2026-01-01T00:01:00Z")):
        sched.table.add_pod(make_pod(name, node="n1", cpu="2", priority=0, uid=uid, start_time=start), 0)
    return sched.schedule_one(make_pod("hi", cpu="2", priority=100, uid="u-hi"))


def test_preemption_without_extender_evicts_v2():
    att = _preemption([])
    assert att.nominated == "n1" and [v.name for v, _ in att.evictions] == ["v2"]


@pytest.mark.parametrize("cache_capable", [False, True])
def test_preempt_verb_chooses_the_victims(servers, cache_capable):
    srv = servers({"preempt": lambda body: {"NodeNameToMetaVictims": {
        "n1": {"Pods": [{"UID": "u1"}], "NumPDBViolations": 0}}}})
    cfg = ExtenderConfig(url_prefix=srv.url, preempt_verb="preempt", node_cache_capable=cache_capable)
    att = _preemption([cfg])
    assert att.nominated == "n1" and [v.name for v, _ in att.evictions] == ["v1"]
    ((verb, body),) = srv.calls
    assert verb == "preempt" and body["Pod"]["metadata"]["name"] == "hi"
    if cache_capable:
        assert body["NodeNameToVictims"] is None
        assert body["NodeNameToMetaVictims"] == {"n1": {"Pods": [{"UID": "u2"}], "NumPDBViolations": 0}}
    else:
        assert body["NodeNameToMetaVictims"] is None
        assert [p["metadata"]["name"] for p in body["NodeNameToVictims"]["n1"]["Pods"]] == ["v2"]


@pytest.mark.parametrize("answer,ignorable,msg", [
    ({"n1": {"Pods": []}}, False, 'preemption: expected at least one victim pod on node "n1"'),
    ({"n1": {"Pods": [{"UID": "nope"}]}}, False,
     "preemption: extender: {url} claims to preempt pod (UID: &{{nope}}) on node: n1, "
     "but the pod is not found on that node"),
    ({"ghost": {"Pods": [{"UID": "u1"}]}}, False, 'preemption: nodeinfo not found for node name "ghost"'),
    ({"n1": {"Pods": []}}, True, None),        # an ignorable extender's empty node is dropped: no candidate
])
def test_preempt_verb_errors(servers, answer, ignorable, msg):
    srv = servers({"preempt": lambda body: {"NodeNameToMetaVictims": answer}})
    cfg = ExtenderConfig(url_prefix=srv.url, preempt_verb="preempt", ignorable=ignorable)
    att = _preemption([cfg])
    assert att.evictions == [] and not att.nominated
    if msg is not None:
        assert att.message.endswith(msg.format(url=srv.url))
    else:
        assert att.message.endswith("preemption: no candidate node for preemption")


def test_preempt_verb_unreachable_ignorable_keeps_the_candidates():
    att = _preemption([ExtenderConfig(url_prefix=dead_url(), preempt_verb="preempt", ignorable=True)])
    assert [v.name for v, _ in att.evictions] == ["v2"]
