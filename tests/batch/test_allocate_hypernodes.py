"""allocate's HyperNode path (actions/topology.py): ports of Volcano v1.15.1's
pkg/scheduler/actions/allocate/allocate_test.go TestAllocateWithNetWorkTopologies,
TestNodeLevelScoreWithNetWorkTopologies and TestHyperNodeBinpackWithNetWorkTopologies, plus
hand-checked scenarios, the HyperNode input errors and an end-to-end `caldera schedule`.

Where a Go case sets the PodGroup's allocated-HyperNode annotation, Caldera recovers the same
HyperNode from the nodes the job's running tasks are on (recoverAllocatedHyperNode); each such
case asserts it."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from caldera.cli.main import cli
from caldera.errors import InputError
from tests.batch.helpers import node, open_session, outcome, pod, podgroup, queue, rl, run
from tests.batch.test_network_topology_aware import hypernode, nodes8, tree
from tests.fuzz.harness import schema_errors

ROOT = Path(__file__).resolve().parents[2]


def conf(binpack=False) -> dict:
    plugins = [{"name": "gang"}, {"name": "predicates"}]
    if binpack:
        plugins.append({"name": "binpack"})
    plugins.append({"name": "network-topology-aware"})
    return {"actions": "allocate", "tiers": [{"plugins": plugins}]}


def pg(min_member, mode="hard", tier=None, tier_name=None, name="pg1", phase="Inqueue") -> dict:
    d = podgroup("c1", name, min_member, queue="q1", phase=phase)
    nt: dict = {"mode": mode}
    if tier is not None:
        nt["highestTierAllowed"] = tier
    if tier_name:
        nt["highestTierName"] = tier_name
    d["spec"]["networkTopology"] = nt
    return d


def p(name, node_name="", role="worker", req=("2", "4G"), group="pg1", selector=None) -> dict:
    return pod("c1", name, node_name, "Running" if node_name else "Pending", rl(*req), group,
               labels={"volcano.sh/task-spec": role}, selector=selector)


def two_tier(tier_names=False) -> list[dict]:
    """s0 (s0-n1, s0-n2) and s1 (s1-n3, s1-n4) at tier 1 under s2 at tier 2; 2 CPU / 4Gi nodes."""
    hs = [hypernode("s0", 1, nodes=("s0-n1", "s0-n2")), hypernode("s1", 1, nodes=("s1-n3", "s1-n4")),
          hypernode("s2", 2, children=("s0", "s1"))]
    if tier_names:
        for h, n in zip(hs, ("volcano.sh/task-spec", "volcano.sh/task-spec", "volcano.sh/job-spec")):
            h["spec"]["tierName"] = n
    return hs + [node(n, rl("2", "4Gi", {"pods": "10"})) for n in ("s0-n1", "s0-n2", "s1-n3", "s1-n4")] \
        + [queue("q1")]


PENDING3 = [p("p1", role="master"), p("p2"), p("p3")]
RESCHEDULED_S0 = [p("p1", "s0-n1", "master"), p("p2", "s0-n2"), p("p3")]
RESCHEDULED_S3 = [p("p1", "s3-n1", "master"), p("p2", "s3-n2"), p("p3")]


def three_tier() -> list[dict]:
    return [*nodes8(), *tree(), queue("q1")]


# (Go case name, PodGroup, pods, fixture, expected binds, allocated HyperNode recovered at open)
CASES = [
    ("soft network topology constrain, can allocate job when resources are enough",
     pg(3, "soft", 0), PENDING3, two_tier, 3, ""),
    ("soft network topology constrain, can allocate job when minavailable < replicas",
     pg(1, "soft", 0), [p("p1", role="master"), p("p2")], two_tier, 2, ""),
    ("soft network topology constrain and tasks in job rescheduled, can allocate job when resources are enough",
     pg(2, "soft", 0), RESCHEDULED_S0, two_tier, 1, "s0"),
    ("soft network topology constrain and tasks in job rescheduled, can allocate job when resources are enough "
     "and minavailable = replicas", pg(3, "soft", 0), RESCHEDULED_S0, two_tier, 1, "s0"),
    ("soft network topology constrain and tasks in job rescheduled, can allocate job when cross "
     "highestTierAllowed tier and hyperNodesInfo has three tier",
     pg(2, "soft", 0), RESCHEDULED_S3, three_tier, 1, "s3"),
    ("hard network topology constrain, can not allocate job when cross highestTierAllowed tier",
     pg(3, "hard", 1), PENDING3, two_tier, 0, ""),
    ("hard network topology constrain, can allocate job when highestTierAllowed not reached",
     pg(3, "hard", 2), PENDING3, two_tier, 3, ""),
    ("hard network topology constrain, can allocate job when multi hyperNodes are available",
     pg(2, "hard", 1), [p("p1", role="master"), p("p2")], two_tier, 2, ""),
    ("hard network topology constrain, can allocate job when minavailable < replicas",
     pg(1, "hard", 1), [p("p1", role="master"), p("p2")], two_tier, 2, ""),
    ("hard network topology constrain and tasks in job rescheduled, can allocate job when highestTierAllowed "
     "not reached", pg(2, "hard", 2), RESCHEDULED_S0, two_tier, 1, "s0"),
    ("hard network topology constrain and tasks in job rescheduled, can allocate job when highestTierAllowed "
     "not reached and minavailable = replicas", pg(3, "hard", 2), RESCHEDULED_S0, two_tier, 1, "s0"),
    ("hard network topology constrain and tasks in job rescheduled, can allocate job when highestTierAllowed "
     "not reached and hyperNodesInfo has three tier", pg(2, "hard", 2), RESCHEDULED_S3, three_tier, 1, "s3"),
    ("hard network topology constrain and tasks in job rescheduled, can not allocate job when cross "
     "highestTierAllowed tier", pg(2, "hard", 1), RESCHEDULED_S0, two_tier, 0, "s0"),
    ("hard network topology constrain and tasks in job rescheduled, can not allocate job when cross "
     "highestTierAllowed tier and hyperNodesInfo has three tier", pg(2, "hard", 1), RESCHEDULED_S3, three_tier, 0,
     "s3"),
    ("hard network topology constrain and tasks in job rescheduled, can allocate job when LCAHyperNode is empty",
     pg(2, "hard", 2), RESCHEDULED_S0, lambda: two_tier()[:2] + two_tier()[3:], 1, "s0"),
    ("(highestTierName) hard, can not allocate job when cross highestTierName tier",
     pg(3, "hard", tier_name="volcano.sh/task-spec"), PENDING3, lambda: two_tier(True), 0, ""),
    ("(highestTierName) hard, can allocate job when highestTierName not reached",
     pg(3, "hard", tier_name="volcano.sh/job-spec"), PENDING3, lambda: two_tier(True), 3, ""),
    ("(highestTierName) hard, can allocate job when multi hyperNodes are available",
     pg(2, "hard", tier_name="volcano.sh/task-spec"), [p("p1", role="master"), p("p2")], lambda: two_tier(True), 2,
     ""),
    ("(highestTierName) hard, tasks in job rescheduled, can allocate job when highestTierName not reached",
     pg(2, "hard", tier_name="volcano.sh/job-spec"), RESCHEDULED_S0, lambda: two_tier(True), 1, "s0"),
]


@pytest.mark.parametrize("name,group,pods,fixture,binds,allocated", CASES, ids=[c[0][:90] for c in CASES])
def test_allocate_with_network_topologies(name, group, pods, fixture, binds, allocated):
    """TestAllocateWithNetWorkTopologies: the number of pods bound (MinimalBindCheck)."""
    docs = [group, *pods, *fixture()]
    ssn = open_session(docs, conf())
    assert ssn.jobs["c1/pg1"].allocated_hypernode == allocated
    out = outcome(run(docs, conf()))
    assert len(out["bind"]) == binds, out


def test_allocate_with_network_topologies_node_affinity():
    """TestAllocateWithNetWorkTopologies "soft/hard network topology constrain, two available
    hyperNodes, can allocate job to nodes with affinity": the pod goes to the master node."""
    for mode, tier in (("soft", 0), ("hard", 1)):
        docs = [pg(1, mode, tier), p("p1", role="master", selector={"nodeRole": "master"}),
                node("s0-n1", rl("2", "4Gi", {"pods": "10"})),
                node("s1-n2", rl("2", "4Gi", {"pods": "10"}), labels={"nodeRole": "master"}),
                hypernode("s0", 0, nodes=("s0-n1",)), hypernode("s1", 0, nodes=("s1-n2",)), queue("q1")]
        assert outcome(run(docs, conf()))["bind"] == {"c1/p1": "s1-n2"}


def test_node_level_score_with_network_topologies():
    """TestNodeLevelScoreWithNetWorkTopologies "hard network topology constrain, allocate job to
    highest score hypeNode with node level binpack": s0 is half used by pg2, the HyperNode
    binpacking prefers it and the pods fill its free room exactly."""
    docs = [pg(2, "hard", 1), pg(2, "hard", 1, name="pg2", phase="Running"),
            p("p1", role="master", req=("2", "4Gi")), p("p2", req=("4", "8Gi")),
            p("p3", "s0-n1", "master", ("2", "4Gi"), "pg2"), p("p4", "s0-n2", "worker", ("4", "8Gi"), "pg2"),
            node("s0-n1", rl("4", "8Gi", {"pods": "10"})), node("s0-n2", rl("8", "16Gi", {"pods": "10"})),
            node("s1-n3", rl("4", "8Gi", {"pods": "10"})), node("s1-n4", rl("8", "16Gi", {"pods": "10"})),
            hypernode("s0", 1, nodes=("s0-n1", "s0-n2")), hypernode("s1", 1, nodes=("s1-n3", "s1-n4")),
            hypernode("s2", 2, children=("s0", "s1")), queue("q1")]
    assert outcome(run(docs, conf(binpack=True)))["bind"] == {"c1/p1": "s0-n1", "c1/p2": "s0-n2"}


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_hypernode_binpack_with_network_topologies(seed):
    """TestHyperNodeBinpackWithNetWorkTopologies "hard network topology constrain, allocate task to
    node under LCAHyperNode": four 4-CPU pods on six 4-CPU nodes in three leaves of two: whatever
    the first pick, the pods fill two leaves (bind numbers per HyperNode [2, 2])."""
    leaves = {"s0": ("s0-n1", "s0-n2"), "s1": ("s1-n3", "s1-n4"), "s2": ("s2-n5", "s2-n6")}
    docs = [pg(4, "hard", 2), p("p1", role="master", req=("4", "8Gi")),
            *[p(f"p{i}", req=("4", "8Gi")) for i in (2, 3, 4)],
            *[node(n, rl("4", "8Gi", {"pods": "10"})) for ns in leaves.values() for n in ns],
            *[hypernode(h, 1, nodes=ns) for h, ns in leaves.items()],
            hypernode("s3", 2, children=("s0", "s1", "s2")), queue("q1")]
    bind = outcome(run(docs, conf(), seed=seed))["bind"]
    per: dict[str, int] = {}
    for n in bind.values():
        leaf = next(h for h, ns in leaves.items() if n in ns)
        per[leaf] = per.get(leaf, 0) + 1
    assert sorted(per.values()) == [2, 2]


# ---- hand-checked scenarios ------------------------------------------------------------------------

def test_hard_job_lands_in_the_lowest_tier_that_fits():
    """Four 2-CPU pods, min 4, highestTierAllowed 3 on the 3-tier tree (two 2-CPU nodes per leaf):
    no leaf holds 4 pods, s1 and s2 (tier 2) do; the job lands inside one of them, never across."""
    docs = [pg(4, "hard", 3), *[p(f"p{i}") for i in range(4)], *three_tier()]
    res = run(docs, conf())
    nodes = set(outcome(res)["bind"].values())
    assert len(nodes) == 4
    assert nodes <= {"s3-n1", "s3-n2", "s4-n1", "s4-n2"} or nodes <= {"s5-n1", "s5-n2", "s6-n1", "s6-n2"}
    pgs = {g["name"]: g for g in res.to_dict()["podGroups"]}
    assert pgs["c1/pg1"]["hyperNode"] in ("s1", "s2")


def test_hard_job_waits_rather_than_cross_its_tier():
    """The same job with highestTierAllowed 1 stays pending (no leaf holds it), while a job
    without a constraint on the same cluster spreads over two leaves."""
    docs = [pg(4, "hard", 1), *[p(f"p{i}") for i in range(4)], *three_tier()]
    res = run(docs, conf())
    assert outcome(res)["bind"] == {}
    assert "hyperNode" not in res.to_dict()["podGroups"][0]
    free = [podgroup("c1", "pg1", 4, queue="q1"), *[p(f"p{i}") for i in range(4)], *three_tier()]
    assert len(outcome(run(free, conf()))["bind"]) == 4


def test_explain_lists_the_hypernodes_tried():
    docs = [pg(4, "hard", 2), *[p(f"p{i}") for i in range(4)], *three_tier()]
    res = run(docs, conf(), explain=True)
    entry = res.to_dict()["podGroups"][0]
    by = {e["hyperNode"]: e for e in entry["hyperNodes"]}
    assert by[entry["hyperNode"]]["result"] == "chosen"
    assert {by["s1"]["result"], by["s2"]["result"]} == {"chosen", "feasible"}
    assert by["s0"]["result"] == "skipped" and "highestTierAllowed 2" in by["s0"]["reason"]
    # no minResources: every leaf passes the gradient's prefilter, is tried and is too small
    assert [by[leaf]["result"] for leaf in ("s3", "s4", "s5", "s6")] == ["rejected"] * 4
    assert by["s3"]["gradient"] == 1 and by["s1"]["gradient"] == 2


def test_rejected_hypernode_reason_is_the_fit_error():
    """A leaf whose nodes are too small is tried (minResources unset: every leaf passes the
    gradient's prefilter) and rejected with the task's fit error, named after the HyperNode."""
    docs = [pg(1, "hard", 1), p("p1", req=("3", "1G")), *two_tier()]
    res = run(docs, conf(), explain=True)
    entry = res.to_dict()["podGroups"][0]
    rejected = [e for e in entry["hyperNodes"] if e["result"] == "rejected"]
    assert [e["hyperNode"] for e in rejected] == ["s0", "s1"]
    assert rejected[0]["reason"].startswith("In hyperNode s0: 0/2 nodes are unavailable")


def test_vcjob_network_topology_reaches_its_podgroup():
    job = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "j", "namespace": "c1"},
           "spec": {"minAvailable": 4, "queue": "q1", "networkTopology": {"mode": "hard", "highestTierAllowed": 1},
                    "tasks": [{"name": "w", "replicas": 4, "template": {"spec": {"containers": [
                        {"name": "c", "image": "x", "resources": {"requests": {"cpu": "2", "memory": "1G"}}}]}}}]}}
    ssn = open_session([job, *three_tier()], conf())
    nt = ssn.jobs["c1/j"].network_topology
    assert (nt.mode, nt.highest_tier_allowed) == ("hard", 1)
    assert outcome(run([job, *three_tier()], conf()))["bind"] == {}


# ---- input errors ----------------------------------------------------------------------------------

@pytest.mark.parametrize("docs,match", [
    ([hypernode("a", 1, children=("b",)), hypernode("b", 1, children=("a",))], "cyclic dependency between HyperNodes"),
    ([hypernode("a", 2, children=("nope",))], "member HyperNode 'nope' does not exist"),
    ([hypernode("a", -1, nodes=("s3-n1",))], r"spec.tier: must be an integer >= 0"),
    ([hypernode("a", 1, regex="([")], "member regexMatch pattern is invalid"),
    ([hypernode("a", 2, children=("c",)), hypernode("b", 2, children=("c",)), hypernode("c", 1, nodes=("x",))],
     "already has the parent"),
    ([{**pg(1), "spec": {**pg(1)["spec"], "networkTopology": {"mode": "loose", "highestTierAllowed": 1}}}],
     "networkTopology.mode: must be hard or soft"),
])
def test_bad_input_is_an_input_error(docs, match):
    with pytest.raises(InputError, match=match) as e:
        open_session([*docs, *nodes8(), queue("q1")], conf())
    assert "\n" not in str(e.value)


def test_bad_hypernode_cli_exit_code_2(tmp_path):
    (tmp_path / "h.yaml").write_text(json.dumps(hypernode("a", 2, children=("nope",))))
    r = CliRunner().invoke(cli, ["schedule", "-f", str(tmp_path / "h.yaml"), "--config",
                                 str(ROOT / "examples/batch/hypernodes/volcano-scheduler.conf")])
    assert r.exit_code == 2
    assert "member HyperNode 'nope' does not exist" in r.stderr and "Traceback" not in r.stderr


# ---- end to end ------------------------------------------------------------------------------------

def test_caldera_schedule_example():
    """examples/batch/hypernodes: the 16-pod gang lands inside one tier-2 HyperNode, spine-1
    (fuller than spine-0 because of web-0, so its binpacking score is higher)."""
    ex = ROOT / "examples/batch/hypernodes"
    r = CliRunner().invoke(cli, ["schedule", "-f", str(ex), "--config", str(ex / "volcano-scheduler.conf"),
                                 "-o", "json", "--explain"])
    assert r.exit_code == 0, (r.stdout, r.stderr)
    out = json.loads(r.stdout)
    assert schema_errors(out, "volcano") == []
    assert len(out["bindings"]) == 16
    assert {b["node"] for b in out["bindings"]} == {f"node-{i:02d}" for i in range(8, 16)}
    (train,) = out["podGroups"]
    assert train["hyperNode"] == "spine-1"
    by = {e["hyperNode"]: e for e in train["hyperNodes"]}
    assert by["spine-1"]["result"] == "chosen" and by["spine-0"]["result"] == "feasible"
    assert by["spine-1"]["score"] > by["spine-0"]["score"]
