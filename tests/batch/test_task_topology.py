"""task-topology plugin: port of volcano pkg/scheduler/plugins/task-topology/topology_test.go
(Test_readTopologyFromPgAnnotations, its seven cases), then hand-checked buckets, task order, node
scores and events, and `caldera schedule` runs of examples/batch/task-topology.

Hand checks. TF job: ps-0, ps-1, worker-0..3 (1 CPU, 1Gi each), annotations affinity "ps,worker"
(ps and worker are inter-affine: priority 3 each) and anti-affinity "ps" (self-anti-affinity:
ps priority 4). No task order, so the pods are dealt by priority then name: ps-0, ps-1,
worker-0, worker-1, worker-2, worker-3.
- ps-0: no bucket yet -> b0 {ps}.
- ps-1: b0 scores -1 (self-anti-affinity) -> negative -> new b1 {ps}.
- worker-0: b0 +1, b1 +1; tie and equal request scores -> the first, b0.
- worker-1: b0 +1, b1 +1; b1's request score (one pod: 1000 mCPU + 1024 MiB + 1 pod = 2025) is
  below b0's (4050) -> b1.
- worker-2: tie, equal scores -> b0; worker-3: b1 is smaller -> b1.
So b0 = {ps-0, worker-0, worker-2}, b1 = {ps-1, worker-1, worker-3}, largest bucket 3.

Node scores (two 4-CPU nodes, weight 2): ps-0 scores 3 pending on both: 3 * 2 * 100 / 3 = 200.
After ps-0 is allocated on n1: worker-0 scores 1 (b0 on n1) + 2 pending = 3 -> 200 on n1, 2 ->
400/3 on n2; ps-1 scores 3 - 1 (a ps placed on n1 this session, self-anti-affine) = 2 -> 400/3
on n1 and 200 on n2. Task order: ps-1's bucket now has 3 pending pods, worker-0's 2, so ps-1 first.

Fit (weight 1; n1 4 CPU, n2 2 CPU, n3 1.5 CPU, n4 0.5 CPU; b0's request is 3 CPU): ps-0 on n1
fits whole: 3 -> 100; on n2 worker-0 is taken off (2 CPU left, fits): 2 -> 200/3; on n3 worker-0
and worker-2 (1 CPU): 1 -> 100/3; on n4 ps-0 itself does not fit Idle: 0.
"""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from click.testing import CliRunner

from caldera.batch.conf import FLAGS
from caldera.batch.plugins import argument_warnings
from caldera.batch.plugins.tasktopology_manager import (
    AFFINITY_ANNOTATION,
    ANTI_AFFINITY_ANNOTATION,
    TASK_ORDER_ANNOTATION,
    TaskTopology,
    TopologyError,
    read_topology,
)
from caldera.cli.main import cli
from caldera.errors import ConfigError

from .helpers import conf, node, open_session, pod, podgroup, rl, run

ROOT = Path(__file__).resolve().parents[2]
EX = ROOT / "examples" / "batch" / "task-topology"
ALL_OFF = {k: False for k in FLAGS if k not in ("enableHierarchy", "enabledClusterOrder")}
SPEC = "volcano.sh/task-spec"


# ---- Volcano's unit test: Test_readTopologyFromPgAnnotations --------------------------------------
def job_of(roles: list[tuple[str, str]] | None, annotations: dict | None):
    """A JobInfo as the Go test builds it: tasks with a name and a TaskRole, PodGroup annotations."""
    tasks = {str(i): SimpleNamespace(name=n, role=r) for i, (n, r) in enumerate(roles or [])}
    return SimpleNamespace(name="job1", namespace="default", tasks=tasks,
                           pg=SimpleNamespace(annotations=dict(annotations or {})))


SIX = [("job1-ps-0", "ps"), ("job1-ps-1", "ps"), ("job1-worker-0", "worker"), ("job1-worker-1", "worker"),
       ("job1-chief-0", "chief"), ("job1-evaluator-0", "evaluator")]
FOUR = SIX[:4]
DASHED = [("job1-ps-some-0", "ps-some"), ("job1-ps-some-1", "ps-some"),
          ("job1-worker-another-some-0", "worker-another-some"), ("job1-worker-another-some-1", "worker-another-some"),
          ("job1-chief-kk-0", "chief-kk"), ("job1-evaluator-tt-0", "evaluator-tt")]


def ann(aff, anti, order) -> dict:
    return {AFFINITY_ANNOTATION: aff, ANTI_AFFINITY_ANNOTATION: anti, TASK_ORDER_ANNOTATION: order}


READ_CASES = [
    ("correct annotation", SIX, ann("ps,worker;ps,chief", "ps;worker,chief", "ps,worker,chief,evaluator"),
     TaskTopology([["ps", "worker"], ["ps", "chief"]], [["ps"], ["worker", "chief"]],
                  ["ps", "worker", "chief", "evaluator"]), None),
    ("correct annotation with tasks whose names contain `-`", DASHED,
     ann("ps-some,worker-another-some;ps-some,chief-kk", "ps-some;worker-another-some,chief-kk",
         "ps-some,worker-another-some,chief-kk,evaluator-tt"),
     TaskTopology([["ps-some", "worker-another-some"], ["ps-some", "chief-kk"]],
                  [["ps-some"], ["worker-another-some", "chief-kk"]],
                  ["ps-some", "worker-another-some", "chief-kk", "evaluator-tt"]), None),
    ("nil annotation", None, None, None, None),
    ("invalid annotation", SIX,
     ann("$%GF$^trtqwrg^", "ps;worker,chief;#@FGEW^vfa897bgs;;", "ps,worker,chief,evaluator,,,"), None,
     "task $%GF$^trtqwrg^ do not exist in job <default/job1>"),
    ("invalid task name", FOUR, ann("ps,worker", "ps", "ps,worker,chief"),
     None, "task chief do not exist in job <default/job1>"),
    ("duplicate task name", FOUR, ann("ps,worker", "ps,ps", "ps,worker"),
     None, "task ps is duplicate in job <default/job1>"),
    ("redundant punctuations", SIX, ann("ps,worker;ps,,chief,;", "ps;worker,chief;;;", "ps,worker,chief,evaluator,,,"),
     TaskTopology([["ps", "worker"], ["ps", "", "chief", ""], [""]], [["ps"], ["worker", "chief"], [""], [""], [""]],
                  ["ps", "worker", "chief", "evaluator", "", "", ""]), None),
]


@pytest.mark.parametrize("desc,roles,annotations,topology,err", READ_CASES, ids=[c[0] for c in READ_CASES])
def test_read_topology_from_pg_annotations(desc, roles, annotations, topology, err):
    """Test_readTopologyFromPgAnnotations (topology_test.go)."""
    job = job_of(roles, annotations)
    if err is None:
        assert read_topology(job) == topology
    else:
        with pytest.raises(TopologyError) as e:
            read_topology(job)
        assert str(e.value) == err


# ---- a session over a TF job ---------------------------------------------------------------------
TF_ANN = {AFFINITY_ANNOTATION: "ps,worker", ANTI_AFFINITY_ANNOTATION: "ps"}


def tf_job(ann=None, placed: dict | None = None, extra=(), req=None) -> list[dict]:
    """PodGroup tf (ns ml) and its pods ps-0, ps-1, worker-0..3 (1 CPU, 1Gi); `placed`: pod -> node
    (Running there)."""
    docs = [podgroup("ml", "tf", 0, annotations=TF_ANN if ann is None else ann)]
    for name in ("ps-0", "ps-1", "worker-0", "worker-1", "worker-2", "worker-3", *extra):
        node_name = (placed or {}).get(name, "")
        docs.append(pod("ml", name, node_name, "Running" if node_name else "Pending", req or rl("1", "1Gi"), group="tf",
                        annotations={SPEC: name.rsplit("-", 1)[0]}))
    return docs


def tt_conf(weight=None, actions="allocate") -> dict:
    entry: dict = {**ALL_OFF, "name": "task-topology", "enableNodeOrder": True, "enableTaskOrder": True}
    if weight is not None:
        entry["arguments"] = {"task-topology.weight": weight}
    return {"actions": actions, "tiers": [{"plugins": [entry]}]}


def session(docs, weight=None):
    ssn = open_session(docs, tt_conf(weight))
    tasks = {t.name: t for j in ssn.jobs.values() for t in j.tasks.values()}
    return ssn, ssn.plugins["task-topology"], tasks


def buckets(plugin, job="ml/tf") -> list[list[str]]:
    m = plugin.managers[job]
    return [sorted(t.name for t in b.tasks.values()) for b in m.buckets]


def scores(ssn, task) -> list[float]:
    return ssn.node_scores(task, np.arange(len(ssn.nodes))).tolist()


TWO_NODES = [node("n1", rl("4", "8Gi")), node("n2", rl("4", "8Gi"))]


def test_buckets_of_the_tf_job():
    _, plugin, _ = session(tf_job() + TWO_NODES)
    assert buckets(plugin) == [["ps-0", "worker-0", "worker-2"], ["ps-1", "worker-1", "worker-3"]]
    m = plugin.managers["ml/tf"]
    assert m.bucket_max_size == 3
    assert [b.req_score for b in m.buckets] == [3 * 2025.0, 3 * 2025.0]
    assert m.task_affinity_priority == {"ps": 4, "worker": 3}
    assert m.self_anti_affinity == {"ps"} and m.inter_affinity == {"ps": {"worker"}, "worker": {"ps"}}


def test_scores_task_order_and_the_allocate_event():
    ssn, plugin, t = session(tf_job() + TWO_NODES, weight=2)
    assert scores(ssn, t["ps-0"]) == [200.0, 200.0]
    # b0 and b1 have 3 pending pods each: the lower bucket index first; in one bucket ps (priority 4)
    assert ssn.task_compare(t["ps-0"], t["ps-1"]) == -1
    assert plugin.task_order(t["worker-0"], t["ps-0"]) == 1
    assert plugin.task_order(t["worker-0"], t["worker-2"]) == 0      # same task name: no opinion
    stmt = ssn.statement()
    stmt.allocate(t["ps-0"], ssn.nodes.by_name["n1"].i)
    assert scores(ssn, t["worker-0"]) == [200.0, 400 / 3]
    assert scores(ssn, t["ps-1"]) == [400 / 3, 200.0]
    assert plugin.task_order(t["ps-1"], t["worker-0"]) == -1          # 3 pending in b1 > 2 in b0
    # a discarded allocation is not undone (Volcano registers no deallocate handler)
    stmt.discard()
    assert scores(ssn, t["worker-0"]) == [200.0, 400 / 3]


def test_the_bucket_request_is_trimmed_to_what_the_node_has():
    nodes = [node("n1", rl("4", "8Gi")), node("n2", rl("2", "8Gi")), node("n3", rl("1.5", "8Gi")),
             node("n4", rl("0.5", "8Gi"))]
    ssn, _, t = session(tf_job() + nodes)
    assert scores(ssn, t["ps-0"]) == [100.0, 200 / 3, 100 / 3, 0.0]


def test_placed_pods_make_buckets_and_only_this_sessions_placements_repel():
    """ps-0 already runs on n1: it is dealt first, into b0 (n1's bucket), with the workers (tie on
    affinity, b0's request score 0 < 2025 for worker-0; 2025 = 2025 for worker-1 keeps b0); ps-1
    is anti-affine to b0 and gets b1. worker-0 on n1: 1 + 2 pending = 3 -> 100, n2: 2 -> 200/3.
    ps-1: its anti-affinity counts only pods placed in this session, so n1 is not penalised:
    1 pending on both -> 100/3."""
    docs = [d for d in tf_job(placed={"ps-0": "n1"}) if d["metadata"]["name"] not in ("worker-2", "worker-3")]
    ssn, plugin, t = session(docs + TWO_NODES)
    m = plugin.managers["ml/tf"]
    assert buckets(plugin) == [["worker-0", "worker-1"], ["ps-1"]]
    assert m.buckets[0].node == {"n1": 1} and m.bucket_max_size == 3
    assert scores(ssn, t["worker-0"]) == [100.0, 200 / 3]
    assert scores(ssn, t["ps-1"]) == [100 / 3, 100 / 3]
    # the placed ps-0 still belongs to b0 (2 pending pods) against b1's 1: ps-0's side first
    assert plugin.task_order(t["ps-0"], t["ps-1"]) == -1


def test_pods_out_of_buckets():
    """evaluator is only in the task order: no (anti-)affinity, so out of any bucket; a pod with
    the task name only as a label (the TaskRole passes the annotation check, but the plugin reads
    the annotation) is out too. Pods in a bucket go first; two pods out of buckets: no opinion."""
    docs = tf_job({**TF_ANN, TASK_ORDER_ANNOTATION: "ps,worker,evaluator"}, extra=("evaluator-0",))
    labelled = pod("ml", "worker-9", req=rl("1", "1Gi"), group="tf", labels={SPEC: "worker"})
    ssn, plugin, t = session([*docs, labelled, *TWO_NODES])
    m = plugin.managers["ml/tf"]
    assert m.get_bucket(t["evaluator-0"]) is None and m.get_bucket(t["worker-9"]) is None
    assert plugin.task_order(t["evaluator-0"], t["worker-3"]) == 1
    assert plugin.task_order(t["worker-3"], t["evaluator-0"]) == -1
    assert plugin.task_order(t["evaluator-0"], t["worker-9"]) == 0
    assert scores(ssn, t["evaluator-0"]) == [0.0, 0.0]
    # with the task order ps (3) > worker (2): the same buckets, ps first in each
    assert buckets(plugin) == [["ps-0", "worker-0", "worker-2"], ["ps-1", "worker-1", "worker-3"]]


def test_jobs_without_topology_or_pending_pods_or_with_bad_annotations():
    other = [podgroup("ml", "plain", 0), pod("ml", "plain-0", req=rl("1", "1Gi"), group="plain")]
    done = [podgroup("ml", "done", 0, annotations=TF_ANN),
            pod("ml", "done-ps-0", "n2", "Running", rl("1", "1Gi"), group="done", annotations={SPEC: "ps"})]
    bad = [podgroup("ml", "bad", 0, annotations={AFFINITY_ANNOTATION: "ps,chief"}),
           pod("ml", "bad-ps-0", req=rl("1", "1Gi"), group="bad", annotations={SPEC: "ps"})]
    _, plugin, t = session(tf_job() + other + done + bad + TWO_NODES)
    assert set(plugin.managers) == {"ml/tf"}
    assert plugin.warnings == ["PodGroup ml/bad: task-topology annotations ignored: task chief do not exist "
                               "in job <ml/bad>"]
    assert plugin.node_order(t["plain-0"], np.arange(2), None) is None
    assert plugin.task_order(t["plain-0"], t["ps-0"]) == 0


def test_weight_argument():
    c = conf({"actions": "allocate", "tiers": [{"plugins": [
        {"name": "task-topology", "arguments": {"task-topology.weight": 3, "task-topology.wieght": 1}}]}]})
    assert argument_warnings(c) == ['test.conf: plugin "task-topology" argument "task-topology.wieght" is not read '
                                    '(did you mean "task-topology.weight"?); ignored']
    with pytest.raises(ConfigError, match=r"task-topology\.arguments\.task-topology\.weight: must be an integer"):
        run([], tt_conf("heavy"))


# ---- allocate ----------------------------------------------------------------------------------------
def test_allocate_keeps_each_bucket_on_one_node():
    """Three 3-CPU nodes, the TF job (minMember 6), task-topology alone with predicates: ps-0 goes
    first (bucket b0, lower index; ps before workers), every node scores 100; once placed, b0's
    pods score their node higher, ps-1 scores it lower (anti-affinity) and takes another node,
    where b1 follows."""
    nodes = [node(n, rl("3", "8Gi")) for n in ("n1", "n2", "n3")]
    docs = tf_job() + nodes
    docs[0]["spec"]["minMember"] = 6
    conf_ = {"actions": "allocate", "tiers": [{"plugins": [{"name": "gang"}]}, {"plugins": [
        {"name": "predicates"}, {"name": "task-topology"}]}]}
    bind = {b["pod"]: b["node"] for b in run(docs, conf_).to_dict()["bindings"]}
    assert len(bind) == 6
    assert bind["ml/ps-0"] != bind["ml/ps-1"]
    assert bind["ml/worker-0"] == bind["ml/worker-2"] == bind["ml/ps-0"]
    assert bind["ml/worker-1"] == bind["ml/worker-3"] == bind["ml/ps-1"]


# ---- end to end: caldera schedule on the example -------------------------------------------------------
def schedule(conf_path: Path) -> dict:
    r = CliRunner().invoke(cli, ["schedule", "-f", str(EX), "--config", str(conf_path), "-o", "json"])
    assert r.exit_code == 0, (r.stdout, r.stderr)
    return json.loads(r.stdout)


def test_caldera_schedule_example(tmp_path):
    out = schedule(EX / "volcano-scheduler.conf")
    bind = {b["pod"].split("/")[1]: b["node"] for b in out["bindings"]}
    assert len(bind) == 6
    assert bind["tf-ps-0"] != bind["tf-ps-1"]
    assert bind["tf-worker-0"] == bind["tf-worker-2"] == bind["tf-ps-0"]
    assert bind["tf-worker-1"] == bind["tf-worker-3"] == bind["tf-ps-1"]
    # without the plugin nodeorder spreads the pods over the three nodes
    plain = (EX / "volcano-scheduler.conf").read_text().replace("  - name: task-topology\n", "").replace(
        "    arguments:\n      task-topology.weight: 10\n", "")
    (tmp_path / "plain.conf").write_text(plain)
    out = schedule(tmp_path / "plain.conf")
    assert len({b["node"] for b in out["bindings"]}) == 3
