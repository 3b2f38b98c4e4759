"""`caldera simulate` over HyperNodes (network topology): the HyperNodes of the cluster and the
workload reach every session, on the kept snapshot as on a rebuilt one; a job keeps its
HyperNode between sessions as Volcano's cache does; jobs.csv and summary.json's jobs_per_tier
say where each PodGroup landed (the cost of spreading), per configuration."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from click.testing import CliRunner

from caldera.batch.actions import ACTIONS
from caldera.batch.cache.snapshot import build_snapshot
from caldera.batch.conf import parse_volcano_conf
from caldera.batch.framework.topology import open_topology
from caldera.batch.plugins import PLUGINS
from caldera.batch.runner import open_snapshot
from caldera.cli.main import cli
from caldera.errors import InputError
from caldera.sim.summary import summarize
from caldera.sim.traces import read_cluster, read_workload
from caldera.sim.volcano import VolcanoSim

from ..builders import node_dict, pod_dict
from .test_volcano_incremental import _dump

# a fat tree of 8 nodes of 4 CPU: leaves l0..l3 (tier 1) of two nodes, spines s0 (l0, l1) and
# s1 (l2, l3) (tier 2), the cluster top at tier 3
LEAVES = {"l0": ["n0", "n1"], "l1": ["n2", "n3"], "l2": ["n4", "n5"], "l3": ["n6", "n7"]}
SPINES = {"s0": ["l0", "l1"], "s1": ["l2", "l3"]}
TOPO_CONF = """actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder},
            {name: network-topology-aware}]
"""
# spreads: nodeorder's least-requested only, no HyperNode scoring
SPREAD_CONF = """actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}]
"""


def hypernode(name: str, tier: int, kind: str, members: list[str]) -> dict:
    return {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": name},
            "spec": {"tier": tier, "members": [{"type": kind, "selector": {"exactMatch": {"name": m}}}
                                               for m in members]}}


def fat_tree() -> list[dict]:
    return [*(hypernode(n, 1, "Node", m) for n, m in LEAVES.items()),
            *(hypernode(n, 2, "HyperNode", m) for n, m in SPINES.items())]


def gang(name: str, size: int, cpu: int, at: float, duration: float, topology: dict | None) -> list[dict]:
    spec: dict = {"minMember": size}
    if topology is not None:
        spec["networkTopology"] = topology
    docs: list[dict] = [{"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                         "metadata": {"name": name, "namespace": "t"}, "spec": spec}]
    for k in range(size):
        ann = {"scheduling.k8s.io/group-name": name, "simulation.caldera/arrival": str(at),
               "simulation.caldera/duration": str(duration)}
        docs.append(pod_dict(f"{name}-{k}", "t", cpu=str(cpu), memory="1Gi", annotations=ann,
                             scheduler_name="volcano"))
    return docs


HARD1 = {"mode": "hard", "highestTierAllowed": 1}
HARD2 = {"mode": "hard", "highestTierAllowed": 2}
SOFT = {"mode": "soft"}


def trace() -> list[dict]:
    """Gangs of 4-CPU pods (one per node) arriving over time: hard within a leaf, hard within a
    spine, soft, and without a constraint; some wait for others to finish."""
    docs: list[dict] = []
    for k, (size, at, duration, topo) in enumerate([
            (2, 0, 30, HARD1), (4, 0, 50, HARD2), (2, 5, 20, SOFT), (2, 5, 40, None),
            (3, 10, 30, HARD2), (2, 20, 25, HARD1), (2, 35, 15, SOFT), (4, 40, 30, HARD2),
            (2, 45, 20, None), (2, 60, 10, HARD1)]):
        docs += gang(f"j{k}", size, 4, at, duration, topo)
    return docs


def write_inputs(d: Path, workload: list[dict], hypernodes_in: str = "cluster") -> tuple[Path, Path]:
    nodes = [node_dict(n, cpu="4", memory="64Gi") for ns in LEAVES.values() for n in ns]
    cluster_docs = nodes + (fat_tree() if hypernodes_in == "cluster" else [])
    work_docs = workload + (fat_tree() if hypernodes_in == "workload" else [])
    (d / "cluster.yaml").write_text("\n---\n".join(yaml.safe_dump(x) for x in cluster_docs))
    (d / "work.yaml").write_text("\n---\n".join(json.dumps(x) for x in work_docs))
    return d / "cluster.yaml", d / "work.yaml"


def conf(text: str):
    return parse_volcano_conf(yaml.safe_load(text), "test.conf", ACTIONS, PLUGINS)


def replay(d: Path, conf_text: str, rebuild: bool, hypernodes_in: str = "cluster", check: bool = False):
    c, w = write_inputs(d, trace(), hypernodes_in)
    cluster = read_cluster([str(c)])
    workload = read_workload([str(w)], priority_classes=cluster.priority_classes)
    sim = VolcanoSim("v", cluster, workload, conf(conf_text), rebuild_every_tick=rebuild)
    kept_hn: list[dict] = []
    session = sim._session

    def watched(seed):
        out = session(seed)
        kept_hn.append(dict(sim._job_hn))
        return out
    sim._session = watched  # type: ignore[method-assign]
    if check:
        sync = sim.kept.sync

        def checked(view):
            snap = sync(view)
            ref = build_snapshot(view(), "volcano", sim._implicit_phase)
            assert snap.hypernodes is not None and ref.hypernodes is not None
            assert sorted(snap.hypernodes.infos) == sorted(ref.hypernodes.infos) == sorted(
                [*LEAVES, *SPINES, "<cluster-top-hypernode>"])
            assert _dump(snap) == _dump(ref), f"kept snapshot differs from a rebuilt one at t={sim.now}"
            return snap
        sim.kept.sync = checked  # type: ignore[method-assign]
    r = sim.run()
    return sim, r, kept_hn


def tier_of_nodes(nodes: set[str]) -> str:
    """By hand: the lowest HyperNode of the fat tree holding `nodes`."""
    for leaf, ns in LEAVES.items():
        if nodes <= set(ns):
            return leaf
    for spine, leaves in SPINES.items():
        if nodes <= {n for lf in leaves for n in LEAVES[lf]}:
            return spine
    return "<cluster-top-hypernode>"


@pytest.mark.parametrize("where", ["cluster", "workload"])
def test_kept_and_rebuilt_snapshots_agree_with_hypernodes(tmp_path, where):
    sim_k, rk, hn_k = replay(tmp_path, TOPO_CONF, rebuild=False, hypernodes_in=where, check=True)
    sim_r, rr, hn_r = replay(tmp_path, TOPO_CONF, rebuild=True, hypernodes_in=where)
    assert [(x.pod, x.start, x.end, x.node) for x in rk.records] == [(x.pod, x.start, x.end, x.node)
                                                                     for x in rr.records]
    assert rk.jobs == rr.jobs
    # the jobs' HyperNodes carried between sessions: the same changes in the same order (the
    # kept path skips the sessions that could only write phases)
    def changes(hist):
        return [h for k, h in enumerate(hist) if k == 0 or h != hist[k - 1]]
    assert changes(hn_k) == changes(hn_r)
    assert sim_k._job_hn_last == sim_r._job_hn_last
    assert all(x.outcome == "completed" for x in rk.records)
    by_job = {j.job: j for j in rk.jobs}
    # the hard constraints hold: tier-1 jobs inside a leaf, tier-2 jobs inside a spine
    for name in ("t/j0", "t/j5", "t/j9"):
        assert by_job[name].tier == 1 and by_job[name].hypernode in LEAVES
    for name in ("t/j1", "t/j4", "t/j7"):
        assert by_job[name].tier is not None and by_job[name].tier <= 2
    # every job's HyperNode is, by hand, the lowest one holding the nodes its pods ran on
    nodes: dict[str, set[str]] = {}
    for x in rk.records:
        nodes.setdefault(x.pod.rsplit("-", 1)[0], set()).add(x.node)
    for j in rk.jobs:
        assert j.placed == j.pods
        assert j.hypernode == tier_of_nodes(nodes[j.job]), j
        assert j.top == (j.hypernode == "<cluster-top-hypernode>")
    # Volcano's own choice is kept for the jobs with a networkTopology, and holds their pods
    for j in rk.jobs:
        if j.job in ("t/j3", "t/j8"):
            assert j.allocated_hypernode == ""
        else:
            assert j.allocated_hypernode, j
    per = summarize(rk)["jobs_per_tier"]
    assert sum(per.values()) == 10
    assert per == {f"tier_{t}": sum(1 for j in rk.jobs if j.tier == t and not j.top) for t in (1, 2)
                   if any(j.tier == t and not j.top for j in rk.jobs)} | {"cluster_top": sum(j.top for j in rk.jobs)}


def test_hypernode_kept_between_sessions_is_not_recovered_again():
    """Volcano's removeInvalidAllocatedHyperNode + recoverAllocatedHyperNode: a job keeps the
    HyperNode an earlier session gave it (here spine s0 while its pods are on leaf l0's nodes);
    one that no longer exists is dropped and recovered from the placed tasks (l0); a job without
    placed tasks loses it."""
    from caldera.api.loader import Cluster
    from caldera.api.objects import Node, Pod
    c = Cluster()
    c.nodes = [Node(node_dict(n, cpu="4", memory="64Gi")) for ns in LEAVES.values() for n in ns]
    c.other = [("<t>", d) for d in fat_tree()]
    docs = gang("a", 2, 4, 0, 10, HARD2) + gang("b", 2, 4, 0, 10, HARD2) + gang("c", 2, 4, 0, 10, HARD2)
    c.other += [("<t>", d) for d in docs if d["kind"] == "PodGroup"]
    seq = 0
    for d in docs:
        if d["kind"] != "Pod":
            continue
        name = d["metadata"]["name"]
        if not name.startswith("c-"):
            d["spec"]["nodeName"] = "n0" if name.endswith("-0") else "n1"
            d["status"] = {"phase": "Running"}
        c.pods.append(Pod(d, seq))
        seq += 1
    snap = build_snapshot(c)
    snap.jobs["t/a"].allocated_hypernode = snap.jobs["t/a"].subjob_allocated_hypernode = "s0"
    snap.jobs["t/b"].allocated_hypernode = snap.jobs["t/b"].subjob_allocated_hypernode = "gone"
    snap.jobs["t/c"].allocated_hypernode = snap.jobs["t/c"].subjob_allocated_hypernode = "s1"
    ssn = open_snapshot(snap, conf(TOPO_CONF), {})
    assert (ssn.jobs["t/a"].allocated_hypernode, ssn.jobs["t/a"].subjob_allocated_hypernode) == ("s0", "s0")
    assert (ssn.jobs["t/b"].allocated_hypernode, ssn.jobs["t/b"].subjob_allocated_hypernode) == ("l0", "l0")
    assert (ssn.jobs["t/c"].allocated_hypernode, ssn.jobs["t/c"].subjob_allocated_hypernode) == ("", "")
    # nothing kept: recovered, as before
    snap2 = build_snapshot(c)
    open_topology(open_snapshot(snap2, conf(SPREAD_CONF), {}), snap2.hypernodes)
    assert snap2.jobs["t/a"].allocated_hypernode == "l0"


def test_cost_of_spreading_per_policy(tmp_path):
    """Two configurations over the same trace (hard, soft and unconstrained gangs):
    jobs.csv per run, jobs_per_tier in summary.json and a "jobs per tier" column in the table."""
    c, w = write_inputs(tmp_path, trace())
    (tmp_path / "topo.conf").write_text(TOPO_CONF)
    (tmp_path / "spread.conf").write_text(SPREAD_CONF)
    out = tmp_path / "out"
    res = CliRunner().invoke(cli, ["simulate", "--cluster", str(c), "--workload", str(w), "--config",
                                   str(tmp_path / "topo.conf"), "--config", str(tmp_path / "spread.conf"),
                                   "--out", str(out), "--jobs", "1"])
    assert res.exit_code == 0, res.output
    assert "jobs per tier" in res.output
    per = {}
    for run in ("topo", "spread"):
        rows = list(csv.DictReader((out / run / "jobs.csv").open()))
        assert [r["job"] for r in rows] == [f"t/j{k}" for k in range(10)]
        assert list(rows[0]) == ["job", "queue", "pods", "placed", "hypernode", "tier", "allocated_hypernode"]
        pods = list(csv.DictReader((out / run / "pods.csv").open()))
        for r in rows:
            nodes = {p["node"] for p in pods if p["pod"].rsplit("-", 1)[0] == r["job"]}
            assert r["hypernode"] == tier_of_nodes(nodes)
            assert r["tier"] == {"l": "1", "s": "2", "<": "3"}[r["hypernode"][0]]
        s = json.loads((out / run / "summary.json").read_text())
        per[run] = s["jobs_per_tier"]
        assert sum(per[run].values()) == 10
    # with network-topology-aware the hard jobs hold their tiers and the others pack into leaves;
    # without it (no HyperNode gradients: Volcano then tries the cluster top only, so even hard
    # jobs are not held) nodeorder's least-requested spreads every job over two leaves or more
    assert per == {"topo": {"tier_1": 6, "tier_2": 3, "cluster_top": 1},
                   "spread": {"tier_2": 8, "cluster_top": 2}}
    assert "jobs per tier" in (out / "report.html").read_text()


def test_no_hypernodes_no_jobs_csv(tmp_path):
    nodes = [node_dict("n0", cpu="4", memory="64Gi")]
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(nodes[0]))
    (tmp_path / "w.yaml").write_text("\n---\n".join(json.dumps(x) for x in gang("g", 1, 1, 0, 5, None)))
    (tmp_path / "v.conf").write_text(TOPO_CONF)
    res = CliRunner().invoke(cli, ["simulate", "--cluster", str(tmp_path / "c.yaml"), "--workload",
                                   str(tmp_path / "w.yaml"), "--config", str(tmp_path / "v.conf"),
                                   "--out", str(tmp_path / "out"), "--jobs", "1"])
    assert res.exit_code == 0, res.output
    assert not (tmp_path / "out" / "v" / "jobs.csv").exists()
    assert "jobs_per_tier" not in json.loads((tmp_path / "out" / "v" / "summary.json").read_text())


def test_bad_hypernode_in_workload_is_an_input_error(tmp_path):
    bad = hypernode("l9", 1, "Node", ["n0"])
    bad["spec"]["members"][0]["selector"] = {}
    c, w = write_inputs(tmp_path, [bad, *gang("g", 1, 1, 0, 5, None)])
    res = CliRunner().invoke(cli, ["simulate", "--cluster", str(c), "--workload", str(w), "--out",
                                   str(tmp_path / "out"), "--jobs", "1"])
    assert res.exit_code == 2, res.output
    assert "HyperNode l9" in res.output and "exactMatch, regexMatch" in res.output


def test_hypernode_tree_error_fails_before_the_replay(tmp_path):
    c, w = write_inputs(tmp_path, [hypernode("s9", 2, "HyperNode", ["nope"]), *gang("g", 1, 1, 0, 5, None)])
    cluster = read_cluster([str(c)])
    workload = read_workload([str(w)], priority_classes=cluster.priority_classes)
    with pytest.raises(InputError, match="member HyperNode 'nope' does not exist"):
        VolcanoSim("v", cluster, workload, conf(TOPO_CONF))


def test_hypernodes_over_nodes_that_join(tmp_path):
    """A regexMatch leaf takes a node that joins during the replay (the tree is rebuilt with the
    nodes), and jobs.csv places the job that ran there under it."""
    join = node_dict("n9", cpu="4", memory="64Gi")
    join["metadata"]["annotations"] = {"simulation.caldera/arrival": "5"}
    leaf = {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": "lx"},
            "spec": {"tier": 1, "members": [{"type": "Node", "selector": {"regexMatch": {"pattern": "^n9$"}}}]}}
    _, w = write_inputs(tmp_path, [join, leaf, *gang("g", 2, 2, 6, 5, HARD1)])
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(node_dict("n0", cpu="1", memory="64Gi")))
    cluster = read_cluster([str(tmp_path / "c.yaml")])
    workload = read_workload([str(w)], priority_classes=cluster.priority_classes)
    r = VolcanoSim("v", cluster, workload, conf(TOPO_CONF)).run()
    assert [(j.job, j.placed, j.hypernode, j.tier) for j in r.jobs] == [("t/g", 2, "lx", 1)]
    assert np.all([x.node == "n9" for x in r.records])
