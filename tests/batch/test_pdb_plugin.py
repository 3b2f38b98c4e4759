"""pdb plugin: port of volcano pkg/scheduler/plugins/pdb/pdb_test.go
(TestPreemptableAndReclaimableFn) plus hand-checked preempt / reclaim sessions and a `caldera
schedule` run where a PodDisruptionBudget protects the victim the action would take and the next
candidate is evicted instead.

Hand check of the preempt scenario: node n1 (4 CPU) runs db-0 and web-0 (2 CPU each, job
`batch`, minMember 0, preemptable); `urgent` (priority 1000, 2 CPU) is Inqueue. Without the pdb
plugin the victim queue pops web-0 first (the newer task), so web-0 is evicted. With PDB `web`
(status.disruptionsAllowed 0, selecting app=web) the filter drops web-0 from the candidates
[db-0, web-0]; db-0 alone frees the 2 CPU, so db-0 is evicted and urgent pipelined on n1.
"""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from caldera.batch.conf import FLAGS
from caldera.batch.plugins import PLUGINS, argument_warnings
from caldera.batch.plugins.pdb import filter_victims
from caldera.cli.main import cli

from .helpers import conf, node, open_session, outcome, pod, podgroup, priority_class, queue, rl, run

ALL_OFF = {k: False for k in FLAGS if k not in ("enableHierarchy", "enabledClusterOrder")}
PREEMPTABLE = {"volcano.sh/preemptable": "true"}
JOB_LABEL = "volcano.sh/job-name"


def pdb(name, match: dict, allowed: int | None, ns="c1", disrupted: list[str] | None = None, **spec) -> dict:
    doc: dict = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name, "namespace": ns},
                 "spec": {"selector": {"matchLabels": dict(match)}, **spec}}
    if allowed is not None:
        doc["status"] = {"disruptionsAllowed": allowed}
        if disrupted:
            doc["status"]["disruptedPods"] = dict.fromkeys(disrupted, "2026-01-01T00:00:00Z")
    return doc


def only_pdb(**flags) -> dict:
    return {"actions": "preempt", "tiers": [{"plugins": [{**ALL_OFF, "name": "pdb", **flags}]}]}


# ---- Volcano's unit test: the filter as Preemptable, Reclaimable and VictimTasks -------------
TWO_TASKS = [pod("c1", "test-pod1", "n1", "Running", rl("1", "1G"), labels={JOB_LABEL: "job-1"}),
             pod("c1", "test-pod2", "n1", "Running", rl("1", "1G"), labels={JOB_LABEL: "job-1"}),
             node("n1", rl("4", "4G"))]


@pytest.mark.parametrize("pdbs,expected", [
    ([], ["c1/test-pod1", "c1/test-pod2"]),                                  # test without pdbs
    ([pdb("test-pdb", {JOB_LABEL: "job-1"}, 0)], []),                        # can evict 0 pod
    ([pdb("test-pdb", {JOB_LABEL: "job-1"}, 1)], ["c1/test-pod1"]),          # can evict 1 pod
], ids=["test without pdbs", "test with pdbs(can evict 0 pod)", "test with pdbs(can evict 1 pod)"])
def test_preemptable_and_reclaimable_fn(pdbs, expected):
    ssn = open_session(TWO_TASKS + pdbs, only_pdb(enablePreemptable=True, enableReclaimable=True,
                                                   enabledVictim=True))
    tasks = [t for ni in ssn.nodes.infos for _, t in ni.tasks.values()]
    assert [t.key for t in tasks] == ["c1/test-pod1", "c1/test-pod2"]
    actor = tasks[0]
    # an empty answer is "no victims" (Go: nil)
    assert [t.key for t in ssn.preemptable(actor, tasks) or []] == expected
    assert [t.key for t in ssn.reclaimable(actor, tasks) or []] == expected
    (victim_fn,) = [fn for _, _, fn in ssn._each("victim_tasks")]
    assert [t.key for t in victim_fn(tasks)] == expected


def _tasks(docs):
    ssn = open_session(docs + [node("n1", rl("8", "8G"))], only_pdb())
    return ssn, [t for ni in ssn.nodes.infos for _, t in ni.tasks.values()]


def test_filter_details():
    """Namespace, disruptedPods, several PDBs and a pod without labels, as pdb.go computes them."""
    docs = [pod("c1", "a", "n1", "Running", rl("1", "1G"), labels={"app": "x", "tier": "t"}),
            pod("c1", "b", "n1", "Running", rl("1", "1G"), labels={"app": "x"}),
            pod("c1", "c", "n1", "Running", rl("1", "1G"), labels={"app": "x", "tier": "t"}),
            pod("c2", "d", "n1", "Running", rl("1", "1G"), labels={"app": "x"}),
            pod("c1", "nolabels", "n1", "Running", rl("1", "1G")),
            pdb("by-app", {"app": "x"}, 2),                  # a, b: allowed 2 -> 0; c: -1 (violated)
            pdb("by-tier", {"tier": "t"}, 5),
            pdb("other-ns", {"app": "x"}, 0, ns="c3")]       # matches nothing: wrong namespace
    ssn, tasks = _tasks(docs)
    keys = [t.key for t in filter_victims(ssn.pdbs, tasks)]
    # d is in c2 (no PDB there); the pod without labels is never a victim (Volcano skips it
    # before the PDB loop and so leaves it out of the result)
    assert keys == ["c1/a", "c1/b", "c2/d"]
    # a pod already in status.disruptedPods does not take from the budget
    docs[5] = pdb("by-app", {"app": "x"}, 1, disrupted=["a"])
    ssn, tasks = _tasks(docs)
    assert [t.key for t in filter_victims(ssn.pdbs, tasks)] == ["c1/a", "c1/b", "c2/d"]
    # an empty selector matches nothing
    docs[5] = {**pdb("by-app", {}, 0), "spec": {"selector": {}}}
    ssn, tasks = _tasks(docs)
    assert [t.key for t in filter_victims(ssn.pdbs, tasks)] == ["c1/a", "c1/b", "c1/c", "c2/d"]


def test_the_budget_is_per_call():
    """Each call starts again from status.disruptionsAllowed (the lister is not updated in a
    session), so two calls over one task each both accept it."""
    ssn, tasks = _tasks([pod("c1", "a", "n1", "Running", rl("1", "1G"), labels={"app": "x"}),
                         pod("c1", "b", "n1", "Running", rl("1", "1G"), labels={"app": "x"}),
                         pdb("p", {"app": "x"}, 1)])
    assert [t.key for t in filter_victims(ssn.pdbs, tasks[:1])] == ["c1/a"]
    assert [t.key for t in filter_victims(ssn.pdbs, tasks[1:])] == ["c1/b"]
    assert [t.key for t in filter_victims(ssn.pdbs, tasks)] == ["c1/a"]


def test_takes_no_arguments():
    c = conf({"actions": "preempt", "tiers": [{"plugins": [{"name": "pdb", "arguments": {"minAvailable": 1}}]}]})
    assert argument_warnings(c) == ['test.conf: plugin "pdb" argument "minAvailable" is not read '
                                    '(pdb takes no arguments); ignored']
    assert "pdb" in PLUGINS and "resourcequota" in PLUGINS


# ---- preempt and reclaim sessions --------------------------------------------------------------
PREEMPT_TIER = [
    {"name": "conformance", "enablePreemptable": True},
    {"name": "gang", "enablePreemptable": True, "enableJobPipelined": True, "enableJobStarving": True},
    {"name": "priority", "enableTaskOrder": True, "enableJobOrder": True, "enablePreemptable": True,
     "enableJobPipelined": True, "enableJobStarving": True},
]


def preempt_conf(with_pdb: bool) -> dict:
    plugins = [{**ALL_OFF, **p} for p in PREEMPT_TIER]
    if with_pdb:
        plugins.append({**ALL_OFF, "name": "pdb", "enablePreemptable": True})
    return {"actions": "preempt", "tiers": [{"plugins": plugins}]}


def preempt_docs(*pdbs) -> list[dict]:
    return [priority_class("low-priority", 100), priority_class("high-priority", 1000),
            podgroup("c1", "pg1", 0, queue="q1", phase="Running", priority_class="low-priority"),
            podgroup("c1", "pg2", 1, queue="q1", phase="Inqueue", priority_class="high-priority"),
            pod("c1", "db-0", "n1", "Running", rl("1", "1G"), "pg1", labels={"app": "db"}, annotations=PREEMPTABLE,
                creation="2026-01-01T00:00:00Z"),
            pod("c1", "web-0", "n1", "Running", rl("1", "1G"), "pg1", labels={"app": "web"},
                annotations=PREEMPTABLE, creation="2026-01-01T00:00:01Z"),
            pod("c1", "preemptor1", "", "Pending", rl("1", "1G"), "pg2"),
            node("n1", rl("2", "2G")), queue("q1", 1), *pdbs]


def test_preempt_takes_the_next_candidate_when_a_pdb_protects_the_first():
    base = outcome(run(preempt_docs(pdb("web", {"app": "web"}, 0)), preempt_conf(False)))
    assert base["evict"] == ["c1/web-0"] and base["pipeline"] == {"c1/preemptor1": "n1"}
    out = outcome(run(preempt_docs(pdb("web", {"app": "web"}, 0)), preempt_conf(True)))
    assert out["evict"] == ["c1/db-0"] and out["pipeline"] == {"c1/preemptor1": "n1"}
    # a budget of 1 lets web-0 go as before
    out = outcome(run(preempt_docs(pdb("web", {"app": "web"}, 1)), preempt_conf(True)))
    assert out["evict"] == ["c1/web-0"]
    # both protected: no victim, the preemptor stays pending
    out = outcome(run(preempt_docs(pdb("all", {"app": "web"}, 0), pdb("db", {"app": "db"}, 0)),
                      preempt_conf(True)))
    assert out["evict"] == [] and out["pipeline"] == {}


RECLAIM_TIER = [
    {"name": "conformance", "enableReclaimable": True},
    {"name": "gang", "enableReclaimable": True, "enableJobStarving": True},
    {"name": "proportion", "enableReclaimable": True, "enableQueueOrder": True, "enablePreemptive": True},
]


def test_reclaim_skips_a_pdb_protected_victim():
    """q1 and q2 (weight 1 each) share n1 (4 CPU): q1 runs four 1-CPU pods, q2 asks for two
    (deserved 2 each). Proportion offers the victims [p-1, p-2] (q1 stays at or above its
    deserved 2), gang and conformance all four; the victim queue pops p-2 first, one eviction
    frees the 1 CPU preemptor1 needs, and pg2 (minMember 1) stops starving once preemptor1 is
    pipelined. Without the pdb plugin p-2 is evicted. With PDB
    `keep` (disruptionsAllowed 0 over p-2) the pdb filter offers [p-1, p-3, p-4], the tier's
    intersection is [p-1], and the next candidate, p-1, is evicted instead."""
    def docs(*pdbs):
        return [podgroup("c1", "pg1", 0, queue="q1", phase="Running"), podgroup("c1", "pg2", 1, queue="q2"),
                *[pod("c1", f"p-{i}", "n1", "Running", rl("1", "1G"), "pg1", labels={"app": "a", "n": str(i)},
                      annotations=PREEMPTABLE, creation=f"2026-01-01T00:00:0{i}Z") for i in (1, 2, 3, 4)],
                pod("c1", "preemptor1", "", "Pending", rl("1", "1G"), "pg2", creation="2026-01-01T00:01:00Z"),
                pod("c1", "preemptor2", "", "Pending", rl("1", "1G"), "pg2", creation="2026-01-01T00:01:01Z"),
                node("n1", rl("4", "4G")), queue("q1", 1), queue("q2", 1), *pdbs]

    def conf_(with_pdb):
        plugins = [{**ALL_OFF, **p} for p in RECLAIM_TIER]
        if with_pdb:
            plugins.append({**ALL_OFF, "name": "pdb", "enableReclaimable": True})
        return {"actions": "reclaim", "tiers": [{"plugins": plugins}]}

    keep = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "keep", "namespace": "c1"},
            "spec": {"maxUnavailable": 0, "selector": {"matchExpressions": [
                {"key": "n", "operator": "In", "values": ["2"]}]}},
            "status": {"disruptionsAllowed": 0}}
    base = outcome(run(docs(keep), conf_(False)))
    assert base["evict"] == ["c1/p-2"] and base["pipeline"] == {"c1/preemptor1": "n1"}
    out = outcome(run(docs(keep), conf_(True)))
    assert out["evict"] == ["c1/p-1"] and out["pipeline"] == {"c1/preemptor1": "n1"}


def test_a_pdb_veto_falls_through_to_the_next_tier():
    """Volcano's Reclaimable: a plugin answering no victims ends its tier without a set, and the
    first later tier with a set decides. With a PDB over all four of q1's pods and the pdb plugin
    in the tier *before* proportion's, pdb's empty answer is overridden: proportion's victims
    [p-1, p-2] stand and p-2 is evicted, PDB or not. With pdb in proportion's tier (after it) the
    veto ends the last tier: nothing is evicted and preemptor1 stays pending."""
    every = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
             "metadata": {"name": "all", "namespace": "c1"},
             "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "a"}}},
             "status": {"disruptionsAllowed": 0}}
    docs = [podgroup("c1", "pg1", 0, queue="q1", phase="Running"), podgroup("c1", "pg2", 1, queue="q2"),
            *[pod("c1", f"p-{i}", "n1", "Running", rl("1", "1G"), "pg1", labels={"app": "a", "n": str(i)},
                  annotations=PREEMPTABLE, creation=f"2026-01-01T00:00:0{i}Z") for i in (1, 2, 3, 4)],
            pod("c1", "preemptor1", "", "Pending", rl("1", "1G"), "pg2", creation="2026-01-01T00:01:00Z"),
            node("n1", rl("4", "4G")), queue("q1", 1), queue("q2", 1), every]
    first, second = [{**ALL_OFF, **p} for p in RECLAIM_TIER[:2]], [{**ALL_OFF, **RECLAIM_TIER[2]}]
    pdb_ = {**ALL_OFF, "name": "pdb", "enableReclaimable": True}
    before = outcome(run(docs, {"actions": "reclaim", "tiers": [{"plugins": [*first, pdb_]}, {"plugins": second}]}))
    assert before["evict"] == ["c1/p-1"] and before["pipeline"] == {"c1/preemptor1": "n1"}
    after = outcome(run(docs, {"actions": "reclaim", "tiers": [{"plugins": first}, {"plugins": [*second, pdb_]}]}))
    assert after["evict"] == ["c1/p-4"] and after["pipeline"] == {"c1/preemptor1": "n1"}
    one = outcome(run(docs, {"actions": "reclaim", "tiers": [{"plugins": [*first, *second, pdb_]}]}))
    assert one["evict"] == [] and one["pipeline"] == {}


# ---- end to end: caldera schedule ------------------------------------------------------------------
CLUSTER = """\
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: v1
kind: Node
metadata: {name: n1}
status:
  allocatable: {cpu: "4", memory: 8Gi, pods: "110"}
  capacity: {cpu: "4", memory: 8Gi, pods: "110"}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: batch, namespace: shop}
spec: {minMember: 0}
status: {phase: Running}
---
apiVersion: v1
kind: Pod
metadata:
  name: db-0
  namespace: shop
  labels: {app: db}
  annotations: {volcano.sh/preemptable: "true", scheduling.k8s.io/group-name: batch}
  creationTimestamp: "2026-01-01T00:00:00Z"
spec:
  schedulerName: volcano
  nodeName: n1
  containers: [{name: c, image: busybox, resources: {requests: {cpu: "2", memory: 1Gi}}}]
status: {phase: Running}
---
apiVersion: v1
kind: Pod
metadata:
  name: web-0
  namespace: shop
  labels: {app: web}
  annotations: {volcano.sh/preemptable: "true", scheduling.k8s.io/group-name: batch}
  creationTimestamp: "2026-01-01T00:00:01Z"
spec:
  schedulerName: volcano
  nodeName: n1
  containers: [{name: c, image: busybox, resources: {requests: {cpu: "2", memory: 1Gi}}}]
status: {phase: Running}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: shop}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: web}}
status: {disruptionsAllowed: 0, currentHealthy: 1, desiredHealthy: 1, expectedPods: 1}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: urgent, namespace: shop}
spec: {minMember: 1, priorityClassName: high}
status: {phase: Inqueue}
---
apiVersion: v1
kind: Pod
metadata:
  name: urgent
  namespace: shop
  annotations: {scheduling.k8s.io/group-name: urgent}
  creationTimestamp: "2026-01-01T00:05:00Z"
spec:
  schedulerName: volcano
  priorityClassName: high
  containers: [{name: c, image: busybox, resources: {requests: {cpu: "2", memory: 1Gi}}}]
status: {phase: Pending}
"""

CONF = """\
actions: "allocate, preempt"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
{pdb}- plugins:
  - name: predicates
  - name: nodeorder
"""


@pytest.mark.parametrize("with_pdb,victim", [(False, "shop/web-0"), (True, "shop/db-0")])
def test_caldera_schedule(tmp_path, with_pdb, victim):
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    (tmp_path / "volcano-scheduler.conf").write_text(CONF.format(pdb="  - name: pdb\n" if with_pdb else ""))
    r = CliRunner().invoke(cli, ["schedule", "-f", str(tmp_path / "cluster.yaml"),
                                 "--config", str(tmp_path / "volcano-scheduler.conf"), "-o", "json"])
    assert r.exit_code == 0, (r.stdout, r.stderr)
    out = json.loads(r.stdout)
    assert out["evictions"] == [{"pod": victim, "node": "n1", "reason": "preempt"}]
    assert out["pipelined"] == [{"pod": "shop/urgent", "node": "n1"}]
    # the PDB is listed as not used only when the conf has no pdb plugin
    assert [i["kind"] for i in out["ignored"]] == ([] if with_pdb else ["PodDisruptionBudget"])
