"""`caldera simulate` with a volcano-scheduler.conf passes the PodDisruptionBudgets and
ResourceQuotas of its cluster and workload manifests to every session (the pdb and resourcequota
plugins), on the kept snapshot and on the rebuilt one alike. Small cases, checked by hand."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml

from caldera.batch.actions import ACTIONS
from caldera.batch.conf import parse_volcano_conf
from caldera.batch.plugins import PLUGINS
from caldera.errors import InputError
from caldera.sim.traces import read_cluster, read_workload
from caldera.sim.volcano import VolcanoSim


def _conf(text: str):
    return parse_volcano_conf(yaml.safe_load(text), "test.conf", ACTIONS, PLUGINS)


def _run(tmp_path: Path, cluster: str, workload: str, conf: str, rebuild: bool):
    (tmp_path / "cluster.yaml").write_text(cluster)
    (tmp_path / "work.yaml").write_text(workload)
    c = read_cluster([str(tmp_path / "cluster.yaml")])
    w = read_workload([str(tmp_path / "work.yaml")], priority_classes=c.priority_classes)
    sim = VolcanoSim("v", c, w, _conf(conf), rebuild_every_tick=rebuild, until=1000.0)
    r = sim.run()
    return {x.pod: x for x in r.records}, w


def _both(tmp_path: Path, cluster: str, workload: str, conf: str):
    """The kept-snapshot replay, after checking that the rebuilt one decides the same."""
    ref, _ = _run(tmp_path, cluster, workload, conf, rebuild=True)
    got, w = _run(tmp_path, cluster, workload, conf, rebuild=False)
    assert [dataclasses.astuple(x) for x in got.values()] == [dataclasses.astuple(x) for x in ref.values()]
    return got, w


# ---- pdb: preempt takes the pod no PDB protects -------------------------------------------------
# db-0 and web-0 (2 CPU each, preemptable, one PodGroup of minMember 0) fill n1 (4 CPU) at t = 0; at t = 10
# the high-priority `urgent` (2 CPU) arrives and preempt must evict one of them. Volcano lists the
# node's tasks in order and, without a PDB, takes web-0; with web's PDB (0 disruptions allowed)
# and the pdb plugin, web-0 is not a victim and db-0 is evicted instead.
PDB_CLUSTER = """\
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
"""
PDB = """\
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: shop}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: web}}
status: {disruptionsAllowed: 0, currentHealthy: 1, desiredHealthy: 1, expectedPods: 1}
"""
PDB_WORKLOAD = """\
apiVersion: v1
kind: Pod
metadata:
  name: db-0
  namespace: shop
  labels: {app: db}
  annotations: {volcano.sh/preemptable: "true", scheduling.k8s.io/group-name: batch,
                simulation.caldera/duration: "1000"}
spec:
  schedulerName: volcano
  terminationGracePeriodSeconds: 0
  containers: [{name: c, image: busybox, resources: {requests: {cpu: "2", memory: 1Gi}}}]
---
apiVersion: v1
kind: Pod
metadata:
  name: web-0
  namespace: shop
  labels: {app: web}
  annotations: {volcano.sh/preemptable: "true", scheduling.k8s.io/group-name: batch,
                simulation.caldera/duration: "1000"}
spec:
  schedulerName: volcano
  terminationGracePeriodSeconds: 0
  containers: [{name: c, image: busybox, resources: {requests: {cpu: "2", memory: 1Gi}}}]
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: batch, namespace: shop}
spec: {minMember: 0}
status: {phase: Running}
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
  annotations: {scheduling.k8s.io/group-name: urgent, simulation.caldera/arrival: "10",
                simulation.caldera/duration: "100"}
spec:
  schedulerName: volcano
  priorityClassName: high
  containers: [{name: c, image: busybox, resources: {requests: {cpu: "2", memory: 1Gi}}}]
"""
PDB_CONF = """\
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


@pytest.mark.parametrize("with_pdb,where,victim,kept", [
    (False, "cluster", "shop/web-0", "shop/db-0"),     # the PDB is there, the plugin is not
    (True, "cluster", "shop/db-0", "shop/web-0"),
    (True, "workload", "shop/db-0", "shop/web-0"),
])
def test_preempt_spares_the_pdb_protected_pod(tmp_path, with_pdb, where, victim, kept):
    cluster = PDB_CLUSTER + ("---\n" + PDB if where == "cluster" else "")
    workload = PDB_WORKLOAD + ("---\n" + PDB if where == "workload" else "")
    recs, w = _both(tmp_path, cluster, workload, PDB_CONF.format(pdb="  - name: pdb\n" if with_pdb else ""))
    assert [p.key for p in w.pdbs] == (["shop/web"] if where == "workload" else [])
    assert recs[victim].evictions == 1
    assert recs[kept].evictions == 0
    assert recs["shop/urgent"].start is not None and recs["shop/urgent"].start >= 10


# ---- resourcequota: a PodGroup over the namespace's quota is never enqueued --------------------
# n1 has 8 CPU; namespace team has a quota of 3 CPU (status written: no quota controller runs in
# the replay, so status.used stays what the manifest says). `small` (minResources 2 CPU) is
# enqueued and runs at t = 0; `big` (minResources 4 CPU > 3) is held back by every session and
# never starts, though the node has room. Without the resourcequota plugin both start at t = 0.
QUOTA_CLUSTER = """\
apiVersion: v1
kind: Node
metadata: {name: n1}
status:
  allocatable: {cpu: "8", memory: 16Gi, pods: "110"}
  capacity: {cpu: "8", memory: 16Gi, pods: "110"}
"""
QUOTA = """\
apiVersion: v1
kind: ResourceQuota
metadata: {name: compute, namespace: team}
spec: {hard: {cpu: "3"}}
status: {hard: {cpu: "3"}, used: {cpu: "0"}}
"""


def _group(name: str, cpu: int) -> str:
    return f"""\
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {{name: {name}, namespace: team}}
spec: {{minMember: 1, minResources: {{cpu: "{cpu}"}}}}
status: {{phase: Pending}}
---
apiVersion: v1
kind: Pod
metadata:
  name: {name}-0
  namespace: team
  annotations: {{scheduling.k8s.io/group-name: {name}, simulation.caldera/duration: "50"}}
spec:
  schedulerName: volcano
  containers: [{{name: c, image: busybox, resources: {{requests: {{cpu: "{cpu}", memory: 1Gi}}}}}}]
"""


QUOTA_CONF = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
{quota}- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"""


@pytest.mark.parametrize("with_plugin,where", [(False, "cluster"), (True, "cluster"), (True, "workload")])
def test_quota_holds_back_the_group_that_exceeds_it(tmp_path, with_plugin, where):
    cluster = QUOTA_CLUSTER + ("---\n" + QUOTA if where == "cluster" else "")
    workload = _group("small", 2) + "---\n" + _group("big", 4) + ("---\n" + QUOTA if where == "workload" else "")
    recs, w = _both(tmp_path, cluster, workload,
                    QUOTA_CONF.format(quota="  - name: resourcequota\n" if with_plugin else ""))
    assert [q.key for q in w.resource_quotas] == (["team/compute"] if where == "workload" else [])
    assert (recs["team/small-0"].start, recs["team/small-0"].end) == (0.0, 50.0)
    if with_plugin:
        assert recs["team/big-0"].start is None and recs["team/big-0"].outcome == "pending"
    else:
        assert (recs["team/big-0"].start, recs["team/big-0"].end) == (0.0, 50.0)


def test_duplicate_quota_in_the_workload(tmp_path):
    (tmp_path / "work.yaml").write_text(QUOTA + "---\n" + QUOTA)
    with pytest.raises(InputError, match="duplicate ResourceQuota team/compute"):
        read_workload([str(tmp_path / "work.yaml")])
