"""extender plugin: ports of volcano pkg/scheduler/plugins/extender/extender_test.go
(TestMaxBodySizeLimit2, TestIsInterested, TestHasManagedResources, TestHasResourcesInList) and
sessions against a real HTTP extender (tests/extender_server.py), checked by hand:

- PREDICATE: nodes n1, n2 (4 CPU each), one pending 1-CPU pod, actions allocate, tiers
  [predicates, extender]. The extender fails n1 ("n1 is draining", code 2): the pod binds to n2.
  Failing both: the pod is unschedulable and the message counts the extender's reasons.
- PRIORITIZE: same nodes, the extender scores n2 50 and n1 0; no other scorer: n2.
- an unreachable extender: ignorable, the predicate passes (pod bound); not ignorable, every node
  fails with the transport error as its reason.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from caldera.api.webhook import WebhookError
from caldera.batch.plugins import argument_warnings
from caldera.batch.plugins.base import ABSTAIN, PERMIT, REJECT
from caldera.batch.plugins.extender import (
    MAX_BODY_SIZE,
    ExtenderPlugin,
    containers_use,
    has_managed_resources,
    resources_in_list,
)
from caldera.cli.main import cli
from caldera.errors import ConfigError
from tests.extender_server import ExtenderServer, dead_url

from .helpers import conf, node, open_session, outcome, pod, podgroup, queue, rl, run


@pytest.fixture
def server():
    made: list[ExtenderServer] = []

    def make(handlers=None) -> ExtenderServer:
        s = ExtenderServer(handlers)
        made.append(s)
        return s

    yield make
    for s in made:
        s.close()


def plugin(**args) -> ExtenderPlugin:
    return ExtenderPlugin({f"extender.{k}": v for k, v in args.items()})


# ---- ports of extender_test.go --------------------------------------------------------------------
def test_max_body_size_limit(server):
    """TestMaxBodySizeLimit2: an answer over 10 MiB is an error."""
    srv = server({"test": lambda body: {"padding": "a" * (MAX_BODY_SIZE + 1)}})
    with pytest.raises(WebhookError, match="http: request body too large"):
        plugin(urlPrefix=srv.url).send("test", {"task": {}, "node": {}})


def _pod(containers=None, init=None) -> dict:
    spec = {"containers": containers or []}
    if init is not None:
        spec["initContainers"] = init
    return {"spec": spec}


def _c(requests=None, limits=None) -> dict:
    res = {}
    if requests is not None:
        res["requests"] = requests
    if limits is not None:
        res["limits"] = limits
    return {"name": "c", "resources": res}


@pytest.mark.parametrize("name,managed,raw,expected", [
    ("empty managed resources - should return true", [], _pod([_c({"cpu": "100m"})]), True),
    ("container has managed resource in requests", ["nvidia.com/gpu"],
     _pod([_c({"cpu": "100m", "nvidia.com/gpu": "1"})]), True),
    ("container has managed resource in limits", ["nvidia.com/gpu"], _pod([_c(limits={"nvidia.com/gpu": "1"})]), True),
    ("init container has managed resource", ["nvidia.com/gpu"],
     _pod([_c({"cpu": "100m"})], [_c({"nvidia.com/gpu": "1"})]), True),
    ("no managed resources in containers", ["nvidia.com/gpu"], _pod([_c({"cpu": "100m", "memory": "128Mi"})]), False),
    ("multiple managed resources - one match", ["nvidia.com/gpu", "amd.com/gpu"],
     _pod([_c({"cpu": "100m", "amd.com/gpu": "1"})]), True),
])
def test_is_interested(name, managed, raw, expected):
    """TestIsInterested."""
    p = ExtenderPlugin({"extender.managedResources": managed})

    class Task:
        class pod:
            pass

    Task.pod.raw = raw
    assert p.is_interested(Task) is expected          # type: ignore[arg-type]


@pytest.mark.parametrize("name,managed,containers,expected", [
    ("no containers", ["nvidia.com/gpu"], [], False),
    ("container with managed resource in requests", ["nvidia.com/gpu"], [_c({"nvidia.com/gpu": "1"})], True),
    ("container with managed resource in limits", ["nvidia.com/gpu"], [_c(limits={"nvidia.com/gpu": "1"})], True),
    ("container with managed resource in both requests and limits", ["nvidia.com/gpu"],
     [_c({"nvidia.com/gpu": "1"}, {"nvidia.com/gpu": "1"})], True),
    ("multiple containers - one has managed resource", ["nvidia.com/gpu"],
     [_c({"cpu": "100m"}), _c({"nvidia.com/gpu": "1"})], True),
    ("container with no managed resources", ["nvidia.com/gpu"], [_c({"cpu": "100m", "memory": "128Mi"})], False),
    ("empty resource requirements", ["nvidia.com/gpu"], [_c()], False),
    ("multiple managed resources - partial match", ["nvidia.com/gpu", "amd.com/gpu"],
     [_c({"nvidia.com/gpu": "1", "intel.com/gpu": "1"})], True),
])
def test_has_managed_resources(name, managed, containers, expected):
    """TestHasManagedResources."""
    assert containers_use(containers, frozenset(managed)) is expected


@pytest.mark.parametrize("name,managed,resources,expected", [
    ("empty resource list", ["nvidia.com/gpu"], {}, False),
    ("nil resource list", ["nvidia.com/gpu"], None, False),
    ("resource list contains managed resource", ["nvidia.com/gpu"], {"cpu": "100m", "nvidia.com/gpu": "1"}, True),
    ("resource list contains no managed resources", ["nvidia.com/gpu"], {"cpu": "100m", "memory": "128Mi"}, False),
    ("resource list contains multiple managed resources", ["nvidia.com/gpu", "amd.com/gpu"],
     {"cpu": "100m", "nvidia.com/gpu": "1", "amd.com/gpu": "1"}, True),
    ("resource list contains one of multiple managed resources", ["nvidia.com/gpu", "amd.com/gpu"],
     {"cpu": "100m", "amd.com/gpu": "1"}, True),
    ("empty managed resources - should return false", [], {"cpu": "100m", "nvidia.com/gpu": "1"}, False),
])
def test_has_resources_in_list(name, managed, resources, expected):
    """TestHasResourcesInList."""
    assert resources_in_list(resources, frozenset(managed)) is expected


def test_has_managed_resources_pod():
    assert has_managed_resources(_pod([], [_c(limits={"x.io/y": "1"})]), frozenset({"x.io/y"}))


# ---- arguments ------------------------------------------------------------------------------------
def test_argument_defaults():
    p = plugin()
    assert (p.url_prefix, p.timeout, p.ignorable, p.managed) == ("", 1.0, False, frozenset())
    assert all(v == "" for v in p.verbs.values())
    p = plugin(httpTimeout="100ms", ignorable=True, managedResources=["a.com/b"], predicateVerb="predicate")
    assert (p.timeout, p.ignorable, p.managed, p.verbs["extender.predicateVerb"]) == \
        (0.1, True, frozenset({"a.com/b"}), "predicate")


@pytest.mark.parametrize("args,msg", [
    ({"extender.httpTimeout": "soon"}, 'extender.arguments.extender.httpTimeout: must be a Go duration'),
    ({"extender.httpTimeout": "-1s"}, "must be a positive Go duration"),
    ({"extender.predicateVerb": 3}, "extender.arguments.extender.predicateVerb: must be a string"),
    ({"extender.ignorable": "maybe"}, "must be true or false"),
    ({"extender.managedResources": "nvidia.com/gpu"}, "must be a list of resource names"),
])
def test_bad_arguments(args, msg):
    with pytest.raises(ConfigError, match=msg):
        ExtenderPlugin(args)


def test_unknown_argument_warns():
    c = conf("actions: allocate\ntiers:\n- plugins:\n  - name: extender\n"
             "    arguments: {extender.predicateVerbs: p, extender.urlPrefix: http://x}\n")
    (w,) = argument_warnings(c)
    assert 'argument "extender.predicateVerbs" is not read (did you mean "extender.predicateVerb"?)' in w


# ---- sessions -------------------------------------------------------------------------------------
def _conf(**args) -> str:
    a = "".join(f"      extender.{k}: {json.dumps(v)}\n" for k, v in args.items())
    return ("actions: \"allocate\"\ntiers:\n- plugins:\n  - name: predicates\n  - name: extender\n"
            f"    arguments:\n{a}")


def _docs(n_pods=1, cpu="1"):
    docs = [node("n1", rl("4", "8Gi")), node("n2", rl("4", "8Gi")), queue("default")]
    for i in range(n_pods):
        docs.append(pod("ns", f"p{i}", req=rl(cpu, "1Gi"), uid=f"uid-p{i}"))
    return docs


def test_predicate_rejects_a_node(server):
    srv = server({"predicate": lambda b: {"status": "n1 is draining" if b["node"]["Name"] == "n1" else "",
                                          "code": 2}})
    res = run(_docs(), _conf(urlPrefix=srv.url, predicateVerb="predicate"))
    assert outcome(res)["bind"] == {"ns/p0": "n2"}
    verb, body = srv.calls[0]
    assert verb == "predicate" and set(body) == {"task", "node"}
    t, n = body["task"], body["node"]
    assert (t["UID"], t["Name"], t["Namespace"], t["Status"], t["Pod"]["metadata"]["name"]) == \
        ("uid-p0", "p0", "ns", 1, "p0")
    assert t["Resreq"] == {"MilliCPU": 1000.0, "Memory": 1024.0**3, "ScalarResources": None, "MaxTaskNum": 0}
    assert n["Name"] in ("n1", "n2") and n["Node"]["metadata"]["name"] == n["Name"]
    assert n["Idle"]["MilliCPU"] == 4000.0 and n["State"] == {"Phase": 1, "Reason": ""}


def test_predicate_rejects_every_node(server):
    srv = server({"predicate": lambda b: {"status": f"{b['node']['Name']} is draining"}})   # code 0 -> Error
    res = run(_docs(), _conf(urlPrefix=srv.url, predicateVerb="predicate"))
    (u,) = res.to_dict()["unschedulable"]
    assert u["message"] == "0/2 nodes are unavailable: 1 n1 is draining, 1 n2 is draining."


def test_prioritize_reorders(server):
    srv = server({"prioritize": lambda b: {"nodeScore": {"n2": 50, "n1": 0}, "errorMessage": ""}})
    res = run(_docs(), _conf(urlPrefix=srv.url, prioritizeVerb="prioritize"))
    assert outcome(res)["bind"] == {"ns/p0": "n2"}
    body = srv.calls[0][1]
    assert set(body) == {"task", "nodes"} and sorted(n["Name"] for n in body["nodes"]) == ["n1", "n2"]


@pytest.mark.parametrize("ignorable", [False, True])
def test_prioritize_error_message_fails_the_scoring(server, ignorable):
    """An errorMessage fails BatchNodeOrderFn, ignorable or not: PrioritizeNodes returns no scores,
    allocate finds no best node among n1, n2 (the idle list; the future-idle list is empty) and
    the task stays pending."""
    srv = server({"prioritize": lambda b: {"nodeScore": {"n2": 50}, "errorMessage": "model not loaded"}})
    res = run(_docs(), _conf(urlPrefix=srv.url, prioritizeVerb="prioritize", ignorable=ignorable))
    assert outcome(res)["bind"] == {}
    assert [u["pod"] for u in res.to_dict()["unschedulable"]] == ["ns/p0"]
    assert any("Prioritize failed with error model not loaded" in w for w in res.warnings)


@pytest.mark.parametrize("ignorable,bound", [(False, set()), (True, {"ns/p0"})])
def test_prioritize_unreachable(ignorable, bound):
    res = run(_docs(), _conf(urlPrefix=dead_url(), prioritizeVerb="prioritize", ignorable=ignorable))
    assert set(outcome(res)["bind"]) == bound


def test_ignorable_extender_down_passes():
    res = run(_docs(), _conf(urlPrefix=dead_url(), predicateVerb="predicate", ignorable=True))
    assert list(outcome(res)["bind"]) == ["ns/p0"]


def test_extender_down_fails_every_node():
    url = dead_url()
    res = run(_docs(), _conf(urlPrefix=url, predicateVerb="predicate"))
    (u,) = res.to_dict()["unschedulable"]
    port = url.rsplit(":", 1)[1]
    assert u["message"] == (f'0/2 nodes are unavailable: 2 Post "{url}/predicate": dial tcp 127.0.0.1:{port}: '
                            "connect: connection refused.")
    assert any("Predicate failed with error" in w for w in res.warnings)


def test_unchosen_task_is_not_sent(server):
    """managedResources: a task using none of them passes without a call."""
    srv = server({"predicate": lambda b: {"status": "no", "code": 3}})
    res = run(_docs(), _conf(urlPrefix=srv.url, predicateVerb="predicate", managedResources=["nvidia.com/gpu"]))
    assert list(outcome(res)["bind"]) == ["ns/p0"] and srv.calls == []


def test_session_open_failure_registers_nothing(server):
    srv = server({"predicate": lambda b: {"status": "no", "code": 2}})
    args = dict(onSessionOpenVerb="open", predicateVerb="predicate")
    ssn = open_session(_docs(), _conf(urlPrefix=srv.url, **args))     # "open" answers 404
    assert "extender" not in ssn.fns["predicate"]
    ssn = open_session(_docs(), _conf(urlPrefix=srv.url, ignorable=True, **args))
    assert "extender" in ssn.fns["predicate"]


def test_session_open_and_close_bodies(server):
    srv = server({"open": lambda b: {}, "close": lambda b: {}})
    run(_docs(), _conf(urlPrefix=srv.url, onSessionOpenVerb="open", onSessionCloseVerb="close"))
    assert srv.verbs() == ["open", "close"]
    body = srv.calls[0][1]
    assert set(body) == {"Jobs", "Nodes", "Queues", "NamespaceInfo", "RevocableNodes", "NodeList"}
    assert sorted(body["Nodes"]) == ["n1", "n2"] and "default" in body["Queues"]
    (job,) = body["Jobs"].values()
    assert job["Namespace"] == "ns" and list(job["Tasks"]) == ["uid-p0"] and list(job["TaskStatusIndex"]) == ["1"]
    assert srv.calls[1][1] == {}


def _pg(name):
    return podgroup("ns", name, 1, phase="Pending", min_resources=rl("1", "1Gi"))


def test_job_enqueueable_reject(server):
    """Enqueue asks JobEnqueueable only for a PodGroup with minResources (Volcano's enqueue)."""
    srv = server({"enqueue": lambda b: {"status": REJECT if b["job"]["Name"] == "pg1" else PERMIT}})
    docs = [node("n1", rl("4", "8Gi")), queue("default"),
            _pg("pg1"), pod("ns", "a", req=rl("1", "1Gi"), group="pg1"),
            _pg("pg2"), pod("ns", "b", req=rl("1", "1Gi"), group="pg2")]
    text = ("actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: gang\n  - name: extender\n"
            f"    arguments: {{extender.urlPrefix: '{srv.url}', extender.jobEnqueueableVerb: enqueue}}\n")
    out = outcome(run(docs, text))
    assert out["bind"] == {"ns/b": "n1"} and out["phase"]["ns/pg1"] == "Pending"


def test_job_enqueueable_unreachable():
    docs = [node("n1", rl("4", "8Gi")), queue("default"),
            _pg("pg1"), pod("ns", "a", req=rl("1", "1Gi"), group="pg1")]
    for ignorable, bound in ((False, {}), (True, {"ns/a": "n1"})):
        text = ("actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: gang\n  - name: extender\n"
                f"    arguments: {{extender.urlPrefix: '{dead_url()}', extender.jobEnqueueableVerb: e, "
                f"extender.ignorable: {str(ignorable).lower()}}}\n")
        assert outcome(run(docs, text))["bind"] == bound


def test_job_ready_and_overused(server):
    srv = server({"ready": lambda b: {"status": False}, "overused": lambda b: {"overused": False}})
    ssn = open_session(_docs(), _conf(urlPrefix=srv.url, jobReadyVerb="ready", queueOverusedVerb="overused"))
    job = next(iter(ssn.jobs.values()))
    assert ssn.job_ready(job) is False
    assert ssn.overused(ssn.queues["default"]) is False
    assert [v for v, _ in srv.calls] == ["ready", "overused"]
    assert srv.calls[1][1]["queue"]["Name"] == "default" and srv.calls[1][1]["queue"]["Queue"]["kind"] == "Queue"
    # unreachable: true unless ignorable
    ssn = open_session(_docs(), _conf(urlPrefix=dead_url(), jobReadyVerb="r", queueOverusedVerb="o"))
    assert ssn.job_ready(job) is True and ssn.overused(ssn.queues["default"]) is True
    ssn = open_session(_docs(), _conf(urlPrefix=dead_url(), jobReadyVerb="r", queueOverusedVerb="o", ignorable=True))
    assert ssn.job_ready(job) is False and ssn.overused(ssn.queues["default"]) is False
    # an answer Go cannot decode is an error too
    srv = server({"ready": lambda b: {"status": "yes"}})
    ssn = open_session(_docs(), _conf(urlPrefix=srv.url, jobReadyVerb="ready"))
    assert ssn.job_ready(next(iter(ssn.jobs.values()))) is True


def test_preemptable_victims_by_uid(server):
    srv = server({"preemptable": lambda b: {"status": PERMIT,
                                            "victims": [e for e in b["evictees"] if e["Name"] == "v2"]}})
    docs = [node("n1", rl("4", "8Gi")), queue("default")] + [
        pod("ns", n, node="n1", phase="Running", req=rl("1", "1Gi"), uid=f"u-{n}") for n in ("v1", "v2")] + [
        pod("ns", "hi", req=rl("1", "1Gi"), uid="u-hi")]
    ssn = open_session(docs, _conf(urlPrefix=srv.url, preemptableVerb="preemptable"))
    tasks = {t.name: t for j in ssn.jobs.values() for t in j.tasks.values()}
    victims = ssn.preemptable(tasks["hi"], [tasks["v1"], tasks["v2"]])
    assert [t.name for t in victims] == ["v2"]
    body = srv.calls[0][1]
    assert body["evictor"]["UID"] == "u-hi" and [e["UID"] for e in body["evictees"]] == ["u-v1", "u-v2"]
    # unreachable: (nil, Reject), or (nil, Permit) when ignorable: no victims either way
    p = plugin(urlPrefix=dead_url(), preemptableVerb="p")
    p.ssn = ssn
    assert p._victims("p", "Preemptable", tasks["hi"], [tasks["v1"]]) == (None, REJECT)
    p.ignorable = True
    assert p._victims("p", "Preemptable", tasks["hi"], [tasks["v1"]]) == (None, PERMIT)
    p.managed = frozenset({"x.com/y"})
    assert p._victims("p", "Preemptable", tasks["hi"], [tasks["v1"]]) == ([], ABSTAIN)


def test_allocate_event(server):
    srv = server({"alloc": lambda b: {"errorMessage": ""}})
    res = run(_docs(), _conf(urlPrefix=srv.url, allocateFuncVerb="alloc"))
    assert list(outcome(res)["bind"]) == ["ns/p0"]
    assert [(v, b["task"]["Name"]) for v, b in srv.calls] == [("alloc", "p0")]


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
kind: Pod
metadata: {name: web, namespace: shop}
spec:
  schedulerName: volcano
  containers: [{name: c, image: nginx, resources: {requests: {cpu: "1", memory: 1Gi}}}]
status: {phase: Pending}
"""


def test_caldera_schedule(tmp_path, server):
    srv = server({"predicate": lambda b: {"status": "reserved" if b["node"]["Name"] == "n2" else ""},
                  "prioritize": lambda b: {"nodeScore": {"n1": 10}}})
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    (tmp_path / "volcano-scheduler.conf").write_text(f"""\
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: predicates
  - name: extender
    arguments:
      extender.urlPrefix: {srv.url}
      extender.httpTimeout: 2s
      extender.predicateVerb: predicate
      extender.prioritizeVerb: prioritize
""")
    r = CliRunner().invoke(cli, ["schedule", "-f", str(tmp_path / "cluster.yaml"),
                                 "--config", str(tmp_path / "volcano-scheduler.conf"), "-o", "json"])
    assert r.exit_code == 0, (r.stdout, r.stderr)
    out = json.loads(r.stdout)
    assert out["bindings"] == [{"pod": "shop/web", "node": "n1"}]
    assert {v for v, _ in srv.calls} == {"predicate"}     # one feasible node: no scoring


def test_caldera_schedule_bad_argument(tmp_path):
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    (tmp_path / "c.conf").write_text("actions: allocate\ntiers:\n- plugins:\n  - name: extender\n"
                                     "    arguments: {extender.httpTimeout: soon}\n")
    r = CliRunner().invoke(cli, ["schedule", "-f", str(tmp_path / "cluster.yaml"),
                                 "--config", str(tmp_path / "c.conf")])
    assert r.exit_code == 2
    assert "extender.httpTimeout" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("code,want", [(0, "Error"), (1, "Error"), (2, "Unschedulable"),
                                       (3, "UnschedulableAndUnresolvable"), (7, "Error")])
def test_predicate_codes(server, code, want):
    """A reason with code 0 counts as Error (NewFitErrWithStatus after the compatibility rewrite)."""
    srv = server({"predicate": lambda b: {"status": "busy", "code": code}})
    ssn = open_session(_docs(), _conf(urlPrefix=srv.url, predicateVerb="predicate"))
    task = next(t for j in ssn.jobs.values() for t in j.tasks.values())
    ok, failures = ssn.predicate(task, np.arange(2))
    assert not ok.any()
    ((fn, bad),) = [f for f in failures if f[0].mask.__self__.name == "extender"]
    assert fn.reason(task, int(bad[0])) == [(want, "busy")]
