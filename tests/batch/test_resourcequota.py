"""resourcequota plugin: port of volcano pkg/scheduler/plugins/resourcequota/resourcequota_test.go
(TestResourceQuotaPlugin) plus hand-checked enqueue sessions and a `caldera schedule` run.

Hand check of the end-to-end case: namespace `team` has ResourceQuota `team-quota` with
status.hard requests.cpu 6 / requests.memory 12Gi and status.used requests.cpu 2 / 4Gi. Volcano
Job `small` (2 x 1 CPU, 2Gi) gets minResources requests.cpu 2, requests.memory 4Gi (and cpu,
memory, pods, count/pods, which the quota does not name): 2 + 2 = 4 <= 6 CPU, 4 + 4 = 8 <= 12Gi,
so it is enqueued and its minResources become pending for the namespace. Job `big` (2 x 2 CPU,
2Gi): used 2 + pending 2 + requested 4 = 8 > 6 CPU (memory 4 + 4 + 4 = 12 <= 12Gi): rejected,
with the event "resource quota insufficient, requested: map[requests.cpu:4], used:
map[requests.cpu:2], limited: map[requests.cpu:6]" (requested and used as Volcano prints them:
the job's request and the quota's status.used, without the pending part).
"""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from caldera.batch.actions import ACTIONS
from caldera.batch.conf import FLAGS
from caldera.batch.plugins import argument_warnings
from caldera.cli.main import cli
from caldera.errors import InputError

from .helpers import conf, node, open_session, pod, podgroup, queue, rl, run

ALL_OFF = {k: False for k in FLAGS if k not in ("enableHierarchy", "enabledClusterOrder")}


def quota(name, ns, hard: dict | None = None, used: dict | None = None, spec_hard: dict | None = None,
          **spec) -> dict:
    doc: dict = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": name, "namespace": ns},
                 "spec": {"hard": dict(spec_hard if spec_hard is not None else hard or {}), **spec}}
    status = {}
    if hard is not None:
        status["hard"] = dict(hard)
    if used is not None:
        status["used"] = dict(used)
    if status:
        doc["status"] = status
    return doc


def only_rq(actions="enqueue") -> dict:
    return {"actions": actions,
            "tiers": [{"plugins": [{**ALL_OFF, "name": "resourcequota", "enableJobEnqueued": True}]}]}


# ---- Volcano's unit test -----------------------------------------------------------------------
HUGE = rl("20000m", "20G")
NORMAL = rl("2000m", "2G")
RQ1 = quota("test", "default", hard=NORMAL)     # util.BuildResourceQuota: spec.hard and status.hard


@pytest.mark.parametrize("docs,expected", [
    ([podgroup("default", "pg1", 2, "c1", "Inqueue", NORMAL), queue("c1"), RQ1], True),
    ([podgroup("default", "pg2", 2, "c1", "Inqueue", HUGE), queue("c1"), RQ1], False),
    ([podgroup("default", "pg2", 2, "c1", "Inqueue", HUGE), queue("c1")], True),
    ([podgroup("default", "pg3", 2, "c1", "Inqueue"), queue("c1"), RQ1], True),
], ids=["ResourceQuota capacity can match the needs of this pg",
        "ResourceQuota capacity can't match the needs of this pg",
        "No ResourceQuota resource object",
        "MinResources field of pg is not set"])
def test_resource_quota_plugin(docs, expected):
    ssn = open_session(docs, only_rq())
    assert [ssn.job_enqueueable(j) for j in ssn.jobs.values()] == [expected]


# ---- enqueue sessions ----------------------------------------------------------------------------
def test_pending_jobs_of_the_session_count_and_other_namespaces_do_not():
    """hard cpu 4, used 1: a (2) admitted (1+2 <= 4), b (2) rejected (1+2+2 > 4), c (1) admitted
    (1+2+1 <= 4); d in another namespace has no quota; e names only memory (not limited here)."""
    docs = [queue("q"), quota("q1", "ns", hard={"cpu": "4"}, used={"cpu": "1"}),
            podgroup("ns", "a", 1, "q", "Pending", rl("2"), creation="2026-01-01T00:00:01Z"),
            podgroup("ns", "b", 1, "q", "Pending", rl("2"), creation="2026-01-01T00:00:02Z"),
            podgroup("ns", "c", 1, "q", "Pending", rl("1"), creation="2026-01-01T00:00:03Z"),
            podgroup("other", "d", 1, "q", "Pending", rl("100"), creation="2026-01-01T00:00:04Z"),
            podgroup("ns", "e", 1, "q", "Pending", rl(mem="1Ti"), creation="2026-01-01T00:00:05Z")]
    res = run(docs, only_rq())
    groups = {g["name"]: g for g in res.to_dict()["podGroups"]}
    assert {k: g["phase"] for k, g in groups.items()} == {
        "ns/a": "Inqueue", "ns/b": "Pending", "ns/c": "Inqueue", "other/d": "Inqueue", "ns/e": "Inqueue"}
    assert groups["ns/b"]["events"] == [{"type": "Normal", "reason": "Unschedulable", "message":
                                         "resource quota insufficient, requested: map[cpu:2], used: map[cpu:1], "
                                         "limited: map[cpu:4]"}]


def test_every_quota_of_the_namespace_is_checked():
    """Two quotas: `big` passes, `small` fails on memory only; the message names memory, with
    quantities printed as Quantity.String() (2048Mi is 2Gi) and no `used` entry for memory."""
    docs = [queue("q"), quota("big", "ns", hard={"cpu": "100", "memory": "100Gi"}, used={}),
            quota("small", "ns", hard={"cpu": "10", "memory": "1Gi"}, used={"cpu": "1"}),
            podgroup("ns", "a", 1, "q", "Pending", rl("2", "2048Mi"))]
    res = run(docs, only_rq())
    (g,) = res.to_dict()["podGroups"]
    assert g["phase"] == "Pending"
    assert g["events"][0]["message"] == ("resource quota insufficient, requested: map[memory:2Gi], used: map[], "
                                         "limited: map[memory:1Gi]")


def test_a_quota_without_status_uses_spec_hard_and_warns():
    docs = [queue("q"), quota("rq", "ns", spec_hard={"cpu": "1"}, scopes=["NotTerminating"]),
            podgroup("ns", "a", 1, "q", "Pending", rl("2"))]
    res = run(docs, only_rq())
    assert res.to_dict()["podGroups"][0]["phase"] == "Pending"
    assert [w for w in res.warnings if "ResourceQuota" in w] == [
        "ResourceQuota ns/rq: no status.hard; spec.hard used (the quota controller copies it)",
        "ResourceQuota ns/rq: no status.used; nothing used assumed (the quota controller computes it)",
        "ResourceQuota ns/rq: scopes / scopeSelector are not supported by Volcano's resourcequota plugin; "
        "the quota applies to every PodGroup of the namespace"]


def test_takes_no_arguments_and_bad_quotas_are_input_errors():
    c = conf({"actions": "enqueue", "tiers": [{"plugins": [{"name": "resourcequota", "arguments": {"x": 1}}]}]})
    assert argument_warnings(c) == ['test.conf: plugin "resourcequota" argument "x" is not read '
                                    '(resourcequota takes no arguments); ignored']
    with pytest.raises(InputError, match=r"status\.used\.cpu"):
        run([queue("q"), quota("rq", "ns", hard={"cpu": "1"}, used={"cpu": "lots"})], only_rq())


# ---- end to end: caldera schedule ------------------------------------------------------------------
CLUSTER = """\
apiVersion: v1
kind: Node
metadata: {name: n1}
status:
  allocatable: {cpu: "16", memory: 32Gi, pods: "110"}
  capacity: {cpu: "16", memory: 32Gi, pods: "110"}
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: team-quota, namespace: team}
spec:
  hard: {requests.cpu: "6", requests.memory: 12Gi}
status:
  hard: {requests.cpu: "6", requests.memory: 12Gi}
  used: {requests.cpu: "2", requests.memory: 4Gi}
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: small, namespace: team, creationTimestamp: "2026-01-01T00:00:00Z"}
spec:
  minAvailable: 2
  tasks:
  - name: w
    replicas: 2
    template:
      spec:
        containers:
        - {name: c, image: busybox, resources: {requests: {cpu: "1", memory: 2Gi}}}
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: big, namespace: team, creationTimestamp: "2026-01-01T00:01:00Z"}
spec:
  minAvailable: 2
  tasks:
  - name: w
    replicas: 2
    template:
      spec:
        containers:
        - {name: c, image: busybox, resources: {requests: {cpu: "2", memory: 2Gi}}}
"""

CONF = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
{rq}- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"""


def schedule(tmp_path, with_rq: bool) -> dict:
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    (tmp_path / "volcano-scheduler.conf").write_text(CONF.format(rq="  - name: resourcequota\n" if with_rq else ""))
    r = CliRunner().invoke(cli, ["schedule", "-f", str(tmp_path / "cluster.yaml"),
                                 "--config", str(tmp_path / "volcano-scheduler.conf"), "-o", "json"])
    assert r.exit_code == 0, (r.stdout, r.stderr)
    return json.loads(r.stdout)


def test_caldera_schedule_holds_back_the_job_over_quota(tmp_path):
    out = schedule(tmp_path, True)
    assert sorted(b["pod"] for b in out["bindings"]) == ["team/small-w-0", "team/small-w-1"]
    groups = {g["name"]: g for g in out["podGroups"]}
    assert groups["team/big"]["phase"] == "Pending"
    assert groups["team/big"]["events"] == [{
        "type": "Normal", "reason": "Unschedulable",
        "message": "resource quota insufficient, requested: map[requests.cpu:4], used: map[requests.cpu:2], "
                   "limited: map[requests.cpu:6]"}]
    assert "events" not in groups["team/small"]
    assert out["ignored"] == []          # the quota is used


def test_caldera_schedule_without_the_plugin_admits_both(tmp_path):
    out = schedule(tmp_path, False)
    assert len(out["bindings"]) == 4
    assert [(i["kind"], i["name"]) for i in out["ignored"]] == [("ResourceQuota", "team/team-quota")]


def test_table_output_prints_the_message(tmp_path):
    """The event holds "map[...]", which the table must print as text, not as rich markup."""
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    (tmp_path / "volcano-scheduler.conf").write_text(CONF.format(rq="  - name: resourcequota\n"))
    r = CliRunner().invoke(cli, ["schedule", "-f", str(tmp_path / "cluster.yaml"),
                                 "--config", str(tmp_path / "volcano-scheduler.conf")],
                           env={"COLUMNS": "200"})
    assert r.exit_code == 0
    assert "requested: map[requests.cpu:4], used: map[requests.cpu:2], limited: map[requests.cpu:6]" in r.stdout


def test_kube_mode_still_ignores_quotas(tmp_path):
    (tmp_path / "cluster.yaml").write_text(CLUSTER.split("---\napiVersion: batch")[0])
    r = CliRunner().invoke(cli, ["schedule", "-f", str(tmp_path / "cluster.yaml"), "-o", "json"])
    assert r.exit_code == 0
    assert [(i["kind"], i["reason"]) for i in json.loads(r.stdout)["ignored"]] == [
        ("ResourceQuota", "kind ResourceQuota is not used by the scheduler")]


def test_snapshot_holds_the_namespace_quotas():
    """api.NamespaceInfo: namespace -> quota name -> its status (exact nano-units)."""
    ssn = open_session([node("n1", rl("1", "1G")), queue("q"), quota("rq", "ns", hard={"cpu": "1"}, used={})],
                       only_rq())
    assert ssn.namespace_info["ns"]["rq"].hard == {"cpu": 10**9}


def test_a_pod_without_podgroup_is_checked_with_its_quota_usage():
    """Volcano's podgroup controller gives such a pod's group minResources = the pod's quota
    usage (CalTaskRequests): requests.cpu, cpu, pods, count/pods, ... so a quota on requests.cpu
    or pods applies to it. hard pods 2, used 1: the first pod is admitted (1 + 1 <= 2), the
    second is not (1 + 1 + 1 > 2)."""
    docs = [queue("default"), quota("rq", "ns", hard={"pods": "2", "requests.cpu": "10"}, used={"pods": "1"}),
            pod("ns", "p1", req=rl("1", "1G"), creation="2026-01-01T00:00:01Z"),
            pod("ns", "p2", req=rl("1", "1G"), creation="2026-01-01T00:00:02Z")]
    ssn = open_session(docs, only_rq())
    ACTIONS["enqueue"](ssn)
    phases = {j.tasks[next(iter(j.tasks))].pod.name: j.pg.phase for j in ssn.jobs.values()}
    assert phases == {"p1": "Inqueue", "p2": "Pending"}
    (msg,) = [m for evs in ssn.events.values() for _, m in evs]
    assert msg == "resource quota insufficient, requested: map[pods:1], used: map[pods:1], limited: map[pods:2]"
