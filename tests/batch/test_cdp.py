"""cdp plugin: port of volcano pkg/scheduler/plugins/cdp/cdp_test.go
(Test_CooldownTimePlugin_podPreemptStableTime, TestPreemptableFn), plus hand-checked preempt and
reclaim sessions and a `caldera schedule --now` run.

The Go tests measure from time.Now(); here the session's time is fixed (NOW, 12:00 UTC) and the
pods' PodScheduled conditions are set relative to it.

Hand check of the preempt scenario: node n1 (2 CPU) runs old-0 (PodScheduled 11:00) and new-0
(PodScheduled 11:58), 1 CPU each, job `low` (priority 100, preemptable), both with
volcano.sh/cooldown-time 10m; `urgent` (priority 1000, 1 CPU) is Inqueue. Without cdp the victim
queue pops new-0 first (the newer task) and evicts it. With cdp new-0 is in its cooldown (11:58 +
10m = 12:08 > 12:00), so the victims are [old-0], which is evicted. At 12:08 new-0's cooldown has
ended (not after now): it is a victim again and, popped first, evicted.
"""
from __future__ import annotations

import json
from datetime import datetime

import pytest
from click.testing import CliRunner

from caldera.batch.conf import FLAGS
from caldera.batch.plugins import argument_warnings
from caldera.batch.plugins.cdp import pod_cooldown_time
from caldera.cli.main import cli

from .helpers import conf, node, open_session, outcome, pod, podgroup, priority_class, queue, rl, run

ALL_OFF = {k: False for k in FLAGS if k not in ("enableHierarchy", "enabledClusterOrder")}
COOLDOWN = "volcano.sh/cooldown-time"
PREEMPTABLE = "volcano.sh/preemptable"


NOW = datetime.fromisoformat("2026-01-01T12:00:00+00:00").timestamp()


def scheduled(ts: float | None) -> dict:
    """status of a Running pod whose PodScheduled condition turned True at `ts` (None: no conditions)."""
    if ts is None:
        return {"phase": "Running"}
    t = datetime.fromtimestamp(ts).astimezone().isoformat()
    return {"phase": "Running", "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": t}]}


def make_pod(name, labels=None, annotations=None, scheduled_at: float | None = None, node_name="n1", **kw):
    """cdp_test.go's makePod: Running with a PodScheduled condition when given a time, else Pending."""
    doc = pod("default", name, node_name, "Running" if scheduled_at is not None else "Pending", rl("1", "1G"),
              labels=labels, annotations=annotations, **kw)
    if scheduled_at is not None:
        doc["status"] = scheduled(scheduled_at)
    return doc


def only_cdp(**flags) -> dict:
    return {"actions": "preempt", "tiers": [{"plugins": [{**ALL_OFF, "name": "cdp", **flags}]}]}


def _tasks(ssn) -> dict:
    return {t.name: t for j in ssn.jobs.values() for t in j.tasks.values()}


# ---- Test_CooldownTimePlugin_podPreemptStableTime ------------------------------------------------
@pytest.mark.parametrize("value,enabled,ns", [("600s", True, 600 * 10**9), ("600abcde", False, 0)],
                         ids=["normal", "not-enabled"])
def test_pod_cooldown_time(value, enabled, ns):
    ssn = open_session([make_pod("p", annotations={COOLDOWN: value}, scheduled_at=NOW - 100),
                        node("n1", rl("4", "4G"))], only_cdp(), now=NOW)
    got, problem = pod_cooldown_time(_tasks(ssn)["p"].pod)
    assert (got is not None) == enabled
    assert (got or 0) == ns
    assert (problem is None) == enabled


def test_label_before_annotation():
    ssn = open_session([make_pod("p", labels={COOLDOWN: "1m"}, annotations={COOLDOWN: "1h"}, scheduled_at=NOW),
                        node("n1", rl("4", "4G"))], only_cdp(), now=NOW)
    assert pod_cooldown_time(_tasks(ssn)["p"].pod) == (60 * 10**9, None)


# ---- TestPreemptableFn ------------------------------------------------------------------------------
def test_preemptable_fn():
    """task1 in its cooldown (600s, scheduled 100s ago) is filtered; task2's cooldown does not
    parse (not enabled); task3 scheduled 800s ago is past it."""
    docs = [make_pod("task1", {PREEMPTABLE: "true"}, {COOLDOWN: "600s"}, NOW - 100),
            make_pod("task2", {PREEMPTABLE: "true"}, {COOLDOWN: "600abcde"}, NOW - 100),
            make_pod("task3", {PREEMPTABLE: "true"}, {COOLDOWN: "600s"}, NOW - 800),
            make_pod("preemptor"), node("n1", rl("8", "8G"))]
    ssn = open_session(docs, only_cdp(enablePreemptable=True, enableReclaimable=True), now=NOW)
    t = _tasks(ssn)
    cands = [t["task1"], t["task2"], t["task3"]]
    assert [v.name for v in ssn.preemptable(t["preemptor"], cands) or []] == ["task2", "task3"]
    assert [v.name for v in ssn.reclaimable(t["preemptor"], cands) or []] == ["task2", "task3"]
    assert any("Pod default/task2: invalid time duration volcano.sh/cooldown-time=600abcde" in w
               for w in ssn.plugins["cdp"].warnings)


@pytest.mark.parametrize("doc,victim", [
    (make_pod("p", annotations={COOLDOWN: "10m"}, scheduled_at=NOW - 599), False),
    (make_pod("p", annotations={COOLDOWN: "10m"}, scheduled_at=NOW - 600), True),   # not After: a victim
    (make_pod("p", annotations={COOLDOWN: "10m"}, scheduled_at=None), True),        # no PodScheduled condition
    (make_pod("p", annotations={COOLDOWN: "10m"}), True),                           # not Running
    (make_pod("p", scheduled_at=NOW - 1), True),                                    # no cooldown
    (make_pod("p", annotations={COOLDOWN: "-10m"}, scheduled_at=NOW - 1), True),    # negative: no protection
], ids=["in cooldown", "cooldown just over", "no condition", "pending", "no cooldown", "negative"])
def test_protection_boundaries(doc, victim):
    ssn = open_session([doc, make_pod("x"), node("n1", rl("4", "4G"))], only_cdp(enablePreemptable=True), now=NOW)
    t = _tasks(ssn)
    assert (ssn.preemptable(t["x"], [t["p"]]) is not None) == victim


def test_only_a_true_pod_scheduled_condition_counts():
    doc = make_pod("p", annotations={COOLDOWN: "10m"}, scheduled_at=NOW - 60)
    doc["status"]["conditions"] = [
        {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T11:59:00Z"},
        {"type": "PodScheduled", "status": "False", "lastTransitionTime": "2026-01-01T11:59:00Z"},
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-01-01T11:00:00Z"}]
    ssn = open_session([doc, make_pod("x"), node("n1", rl("4", "4G"))], only_cdp(enablePreemptable=True), now=NOW)
    t = _tasks(ssn)
    assert ssn.preemptable(t["x"], [t["p"]]) == [t["p"]]      # 11:00 + 10m is past


def test_bad_condition_time_is_an_input_error(tmp_path):
    doc = make_pod("p", annotations={COOLDOWN: "10m"}, scheduled_at=NOW)
    doc["status"]["conditions"][0]["lastTransitionTime"] = "yesterday"
    import yaml
    (tmp_path / "c.yaml").write_text(yaml.safe_dump_all([doc, node("n1", rl("4", "4G"))]))
    (tmp_path / "v.conf").write_text(yaml.safe_dump(only_cdp()))
    r = CliRunner().invoke(cli, ["schedule", "-f", str(tmp_path / "c.yaml"), "--config", str(tmp_path / "v.conf")])
    assert r.exit_code == 2
    assert "Pod default/p: status.conditions[0].lastTransitionTime" in r.stderr and "Traceback" not in r.stderr


def test_the_reader_keeps_the_conditions_of_pods_with_a_cooldown(tmp_path):
    """The reader drops the conditions of pods that are not terminating (nothing else reads
    them), but keeps them on a pod with volcano.sh/cooldown-time (label or annotation)."""
    import yaml

    from caldera.api.reader import read_documents
    docs = [make_pod("a", annotations={COOLDOWN: "1m"}, scheduled_at=NOW), make_pod("b", labels={COOLDOWN: "1m"},
            scheduled_at=NOW), make_pod("c", scheduled_at=NOW)]
    (tmp_path / "p.yaml").write_text(yaml.safe_dump_all(docs))
    got = {d["metadata"]["name"]: d["status"] for _, _, d in read_documents([str(tmp_path / "p.yaml")])}
    assert [c["type"] for c in got["a"]["conditions"]] == ["PodScheduled"]
    assert [c["type"] for c in got["b"]["conditions"]] == ["PodScheduled"]
    assert got["c"] == {"phase": "Running"}


def test_takes_no_arguments():
    c = conf({"actions": "preempt", "tiers": [{"plugins": [{"name": "cdp", "arguments": {"cooldown": "1m"}}]}]})
    assert argument_warnings(c) == ['test.conf: plugin "cdp" argument "cooldown" is not read '
                                    '(cdp takes no arguments); ignored']


# ---- preempt and reclaim sessions ---------------------------------------------------------------
PREEMPT_TIER = [
    {"name": "conformance", "enablePreemptable": True},
    {"name": "gang", "enablePreemptable": True, "enableJobPipelined": True, "enableJobStarving": True},
    {"name": "priority", "enableTaskOrder": True, "enableJobOrder": True, "enablePreemptable": True,
     "enableJobPipelined": True, "enableJobStarving": True},
]


def preempt_conf(with_cdp: bool) -> dict:
    plugins = [{**ALL_OFF, **p} for p in PREEMPT_TIER]
    if with_cdp:
        plugins.append({**ALL_OFF, "name": "cdp", "enablePreemptable": True})
    return {"actions": "preempt", "tiers": [{"plugins": plugins}]}


def preempt_docs():
    def running(name, sched, creation):
        d = pod("c1", name, "n1", "Running", rl("1", "1G"), "low", annotations={PREEMPTABLE: "true", COOLDOWN: "10m"},
                creation=creation)
        d["status"] = scheduled(sched)
        return d
    return [priority_class("low", 100), priority_class("high", 1000),
            podgroup("c1", "low", 0, queue="q1", phase="Running", priority_class="low"),
            podgroup("c1", "high", 1, queue="q1", phase="Inqueue", priority_class="high"),
            running("old-0", NOW - 3600, "2026-01-01T10:59:00Z"),
            running("new-0", NOW - 120, "2026-01-01T11:57:00Z"),
            pod("c1", "urgent", "", "Pending", rl("1", "1G"), "high", creation="2026-01-01T11:59:00Z"),
            node("n1", rl("2", "2G")), queue("q1", 1)]


def test_preempt_spares_a_pod_in_its_cooldown():
    base = outcome(run(preempt_docs(), preempt_conf(False), now=NOW))
    assert base["evict"] == ["c1/new-0"] and base["pipeline"] == {"c1/urgent": "n1"}
    out = outcome(run(preempt_docs(), preempt_conf(True), now=NOW))
    assert out["evict"] == ["c1/old-0"] and out["pipeline"] == {"c1/urgent": "n1"}
    # 12:08: new-0's cooldown (11:58 + 10m) has ended
    out = outcome(run(preempt_docs(), preempt_conf(True), now=NOW + 480))
    assert out["evict"] == ["c1/new-0"]
    # both in cooldown (old-0 scheduled at 11:55 too): no victim at all
    docs = preempt_docs()
    docs[4]["status"] = scheduled(NOW - 300)
    out = outcome(run(docs, preempt_conf(True), now=NOW))
    assert out["evict"] == [] and out["pipeline"] == {}


RECLAIM_TIER = [
    {"name": "conformance", "enableReclaimable": True},
    {"name": "gang", "enableReclaimable": True, "enableJobStarving": True},
    {"name": "proportion", "enableReclaimable": True, "enableQueueOrder": True, "enablePreemptive": True},
]


def test_reclaim_spares_a_pod_in_its_cooldown():
    """q1 and q2 (weight 1 each) share n1 (4 CPU): q1 runs p-1..p-4 (1 CPU each), q2 asks for 1.
    Proportion offers [p-1] alone (the task the victim order takes first while q1 stays above
    its deserved share), conformance and gang all four: without cdp p-1 is evicted. With p-1 in
    its cooldown (scheduled a minute ago, cooldown 5m) cdp offers [p-2, p-3, p-4]; the tier's
    intersection is empty, which ends it with no victims: nothing is evicted and preemptor1 stays
    pending. Five minutes on, p-1's cooldown is over and it is evicted."""
    def docs():
        out = [podgroup("c1", "pg1", 0, queue="q1", phase="Running"), podgroup("c1", "pg2", 1, queue="q2")]
        for i in (1, 2, 3, 4):
            d = pod("c1", f"p-{i}", "n1", "Running", rl("1", "1G"), "pg1",
                    annotations={PREEMPTABLE: "true", COOLDOWN: "5m"}, creation=f"2026-01-01T00:00:0{i}Z")
            d["status"] = scheduled(NOW - (60 if i == 1 else 3600))
            out.append(d)
        out += [pod("c1", "preemptor1", "", "Pending", rl("1", "1G"), "pg2", creation="2026-01-01T00:01:00Z"),
                node("n1", rl("4", "4G")), queue("q1", 1), queue("q2", 1)]
        return out

    def conf_(with_cdp):
        plugins = [{**ALL_OFF, **p} for p in RECLAIM_TIER]
        if with_cdp:
            plugins.append({**ALL_OFF, "name": "cdp", "enableReclaimable": True})
        return {"actions": "reclaim", "tiers": [{"plugins": plugins}]}

    base = outcome(run(docs(), conf_(False), now=NOW))
    assert base["evict"] == ["c1/p-1"] and base["pipeline"] == {"c1/preemptor1": "n1"}
    out = outcome(run(docs(), conf_(True), now=NOW))
    assert out["evict"] == [] and out["pipeline"] == {}
    assert outcome(run(docs(), conf_(True), now=NOW + 240))["evict"] == ["c1/p-1"]


# ---- caldera schedule --now ---------------------------------------------------------------------------
CLUSTER = """\
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "2", memory: 2Gi, pods: "10"}, capacity: {cpu: "2", memory: 2Gi, pods: "10"}}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: batch, namespace: default}
spec: {minMember: 0}
status: {phase: Running}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: urgent, namespace: default}
spec: {minMember: 1, priorityClassName: high}
status: {phase: Inqueue}
---
apiVersion: v1
kind: Pod
metadata:
  name: old
  namespace: default
  annotations: {volcano.sh/cooldown-time: 10m, scheduling.k8s.io/group-name: batch}
  creationTimestamp: "2026-01-01T10:00:00Z"
spec:
  schedulerName: volcano
  nodeName: n1
  containers: [{name: c, image: busybox, resources: {requests: {cpu: "1", memory: 1Gi}}}]
status:
  phase: Running
  conditions: [{type: PodScheduled, status: "True", lastTransitionTime: "2026-01-01T10:00:00Z"}]
---
apiVersion: v1
kind: Pod
metadata:
  name: fresh
  namespace: default
  annotations: {volcano.sh/cooldown-time: 10m, scheduling.k8s.io/group-name: batch}
  creationTimestamp: "2026-01-01T11:58:00Z"
spec:
  schedulerName: volcano
  nodeName: n1
  containers: [{name: c, image: busybox, resources: {requests: {cpu: "1", memory: 1Gi}}}]
status:
  phase: Running
  conditions: [{type: PodScheduled, status: "True", lastTransitionTime: "2026-01-01T11:58:00Z"}]
---
apiVersion: v1
kind: Pod
metadata:
  name: urgent
  namespace: default
  annotations: {scheduling.k8s.io/group-name: urgent}
  creationTimestamp: "2026-01-01T11:59:00Z"
spec:
  schedulerName: volcano
  priorityClassName: high
  containers: [{name: c, image: busybox, resources: {requests: {cpu: "1", memory: 1Gi}}}]
status: {phase: Pending}
"""

CONF = """\
actions: "allocate, preempt"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
  - name: cdp
- plugins:
  - name: predicates
"""


@pytest.mark.parametrize("now,victim", [(None, "default/old"), ("2026-01-01T12:05:00Z", "default/old"),
                                        ("2026-01-01T12:08:00Z", "default/fresh")])
def test_caldera_schedule(tmp_path, now, victim):
    """Without --now the session's time is the newest creation (11:59): fresh (scheduled 11:58,
    cooldown 10m) is protected and old is evicted; from 12:08 fresh, the newer, goes first."""
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    (tmp_path / "volcano-scheduler.conf").write_text(CONF)
    args = ["schedule", "-f", str(tmp_path / "cluster.yaml"), "--config", str(tmp_path / "volcano-scheduler.conf"),
            "-o", "json"]
    r = CliRunner().invoke(cli, args + (["--now", now] if now else []))
    assert r.exit_code == 0, (r.stdout, r.stderr)
    out = json.loads(r.stdout)
    assert out["evictions"] == [{"pod": victim, "node": "n1", "reason": "preempt"}]
    assert out["pipelined"] == [{"pod": "default/urgent", "node": "n1"}]
