"""`caldera simulate` with a volcano-scheduler.conf runs its sessions on the virtual clock: a
PodGroup (or the pod of an implicit one) is created when it arrives, as the API server would
stamp it, and each session's `now` is the replay's time. So Volcano's job order falls back to
arrival order (creationTimestamp), not to names, and the sla plugin's waiting times are measured
in the replay. Small cases, checked by hand, on the kept snapshot and the rebuilt one alike."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml

from caldera.batch.actions import ACTIONS
from caldera.batch.conf import parse_volcano_conf
from caldera.batch.plugins import PLUGINS
from caldera.sim.traces import read_cluster, read_workload
from caldera.sim.volcano import VolcanoSim

CLUSTER = """\
apiVersion: v1
kind: Node
metadata: {name: n1}
status:
  allocatable: {cpu: "4", memory: 8Gi, pods: "110"}
  capacity: {cpu: "4", memory: 8Gi, pods: "110"}
"""


def _job(name: str, arrival: float, duration: float, cpu: int = 4, group: bool = True) -> str:
    """A one-pod job of `cpu` CPU: a PodGroup and its pod, or (group=False) a bare pod whose
    PodGroup Volcano's controller makes."""
    pod = f"""\
apiVersion: v1
kind: Pod
metadata:
  name: {name}-0
  namespace: team
  annotations:
    simulation.caldera/arrival: "{arrival}"
    simulation.caldera/duration: "{duration}"
{f"    scheduling.k8s.io/group-name: {name}" if group else ""}
spec:
  schedulerName: volcano
  containers: [{{name: c, image: busybox, resources: {{requests: {{cpu: "{cpu}", memory: 1Gi}}}}}}]
"""
    if not group:
        return pod
    return f"""\
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata:
  name: {name}
  namespace: team
  annotations: {{simulation.caldera/arrival: "{arrival}"}}
spec: {{minMember: 1, minResources: {{cpu: "{cpu}"}}}}
status: {{phase: Pending}}
---
""" + pod


CONF = """\
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: priority
  - name: gang
{sla}- plugins:
  - name: drf
  - name: predicates
  - name: proportion
"""


def _run(tmp_path: Path, workload: str, conf: str, rebuild: bool, cluster: str = CLUSTER):
    (tmp_path / "cluster.yaml").write_text(cluster)
    (tmp_path / "work.yaml").write_text(workload)
    c = read_cluster([str(tmp_path / "cluster.yaml")])
    w = read_workload([str(tmp_path / "work.yaml")], priority_classes=c.priority_classes)
    conf_ = parse_volcano_conf(yaml.safe_load(conf), "test.conf", ACTIONS, PLUGINS)
    r = VolcanoSim("v", c, w, conf_, rebuild_every_tick=rebuild, until=1000.0).run()
    return {x.pod: x for x in r.records}


def _both(tmp_path: Path, workload: str, conf: str, cluster: str = CLUSTER):
    ref = _run(tmp_path, workload, conf, True, cluster)
    got = _run(tmp_path, workload, conf, False, cluster)
    assert [dataclasses.astuple(x) for x in got.values()] == [dataclasses.astuple(x) for x in ref.values()]
    return got


def _starts(recs) -> dict[str, float | None]:
    return {k.split("/")[1]: r.start for k, r in recs.items()}


@pytest.mark.parametrize("group", [True, False], ids=["podgroups", "implicit-podgroups"])
def test_jobs_wait_in_arrival_order(tmp_path, group):
    """n1 (4 CPU) runs `zzz` from t = 0 to 100; `bbb` arrives at 10 and `aaa` at 20, both wanting
    the whole node. Equal priority and share: Volcano's job order falls back to creationTimestamp,
    so bbb (created at 10) runs at 100 and aaa after it, at 200; by name aaa would go first."""
    work = "---\n".join([_job("zzz", 0, 100, group=group), _job("bbb", 10, 100, group=group),
                         _job("aaa", 20, 100, group=group)])
    starts = _starts(_both(tmp_path, work, CONF.format(sla="")))
    assert starts == {"zzz-0": 0.0, "bbb-0": 100.0, "aaa-0": 200.0}


def test_sla_waiting_time_counts_in_the_replay(tmp_path):
    """As above, but `aaa` (arriving at 20) carries sla-waiting-time 60s: by the time n1 frees at
    100 it has waited 80 s, past its 60 s, and sla's job order puts it first (Volcano's sla
    orders by creation + waiting time: aaa's 20 + 60 = 80 before bbb's, which has none)."""
    work = "---\n".join([_job("zzz", 0, 100), _job("bbb", 10, 100),
                         _job("aaa", 20, 100).replace(
                             'annotations: {simulation.caldera/arrival: "20"}',
                             'annotations: {simulation.caldera/arrival: "20", sla-waiting-time: 60s}')])
    starts = _starts(_both(tmp_path, work, CONF.format(sla="  - name: sla\n")))
    assert starts == {"zzz-0": 0.0, "aaa-0": 100.0, "bbb-0": 200.0}


def test_cluster_objects_are_older_than_every_arrival(tmp_path):
    """The replay's clock starts at the cluster's newest creationTimestamp: a pod of the cluster
    stamped 2026-01-01 is older than anything that arrives, whatever the calendar says."""
    cluster = CLUSTER + """\
---
apiVersion: v1
kind: Pod
metadata: {name: old-0, namespace: team, creationTimestamp: "2026-01-01T00:00:00Z"}
spec:
  schedulerName: volcano
  nodeName: n1
  containers: [{name: c, image: busybox, resources: {requests: {cpu: "1", memory: 1Gi}}}]
status: {phase: Running}
"""
    (tmp_path / "cluster.yaml").write_text(cluster)
    (tmp_path / "work.yaml").write_text(_job("new", 5, 10, cpu=1))
    c = read_cluster([str(tmp_path / "cluster.yaml")])
    w = read_workload([str(tmp_path / "work.yaml")], priority_classes=c.priority_classes)
    conf_ = parse_volcano_conf(yaml.safe_load(CONF.format(sla="")), "test.conf", ACTIONS, PLUGINS)
    sim = VolcanoSim("v", c, w, conf_, until=1000.0)
    assert sim.epoch == 1767225600.0
    assert sim._groups["team/new"][1]["metadata"]["creationTimestamp"] == "2026-01-01T00:00:05Z"


def test_a_finished_podgroup_leaves_the_replay(tmp_path):
    """`zzz` completes at 100; from then on its PodGroup is Completed and in no session (with its
    pods deleted it would otherwise go back to Pending, be enqueued again, and, created first,
    hold n1's 4 CPU in proportion's enqueue ahead of `bbb` for ever)."""
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    (tmp_path / "work.yaml").write_text(_job("zzz", 0, 100) + "---\n" + _job("bbb", 10, 100))
    c = read_cluster([str(tmp_path / "cluster.yaml")])
    w = read_workload([str(tmp_path / "work.yaml")], priority_classes=c.priority_classes)
    conf_ = parse_volcano_conf(yaml.safe_load(CONF.format(sla="")), "test.conf", ACTIONS, PLUGINS)
    sim = VolcanoSim("v", c, w, conf_, until=1000.0)
    recs = {x.pod: x for x in sim.run().records}
    assert (recs["team/bbb-0"].start, recs["team/bbb-0"].end) == (100.0, 200.0)
    assert sim._groups["team/zzz"][1]["status"]["phase"] == "Completed"
    assert "team/zzz" not in sim.kept.snap.podgroups
