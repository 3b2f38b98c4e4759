"""nodegroup plugin: port of volcano pkg/scheduler/plugins/nodegroup/nodegroup_test.go
(TestNodeGroup, all seven cases: scores and predicate status codes per node), the predicate's
reasons, hierarchy corner cases, Queue.spec.affinity parsing errors, and hand-checked sessions
including a `caldera schedule` run of examples/batch/nodegroup.

Hand check of the allocate session (test_allocate_follows_required_and_preferred_groups): nodes
a1 (group a, 4 CPU), b1 (group b, 8 CPU), x1 (no label, 16 CPU); queue `nlp` requires a or b and
prefers a; queue `rec` requires b; queue `free` has no affinity. With nodegroup + predicates +
nodeorder (leastrequested etc. prefer the emptier node) and nodegroup's +150 for a vs +100 for b:
- nlp's 2-CPU pod goes to a1 (150 > 100 outweighs nodeorder's preference for the bigger b1);
- rec's pod can only go to b1;
- free's pod fits no node: x1 has no label ("node group label not found", strict), a1 and b1 are
  labelled but the queue has no affinity ("node group affinity not specified").
With strict: false, free's pod goes to x1 (the only unlabelled node).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from caldera.batch.api.fiterrors import UNRESOLVABLE
from caldera.batch.conf import FLAGS
from caldera.batch.plugins import argument_warnings
from caldera.cli.main import cli
from caldera.errors import InputError

from .helpers import conf, node, open_session, outcome, pod, podgroup, queue, rl, run

ROOT = Path(__file__).resolve().parents[2]
ALL_OFF = {k: False for k in FLAGS if k not in ("enableHierarchy", "enabledClusterOrder")}
KEY = "volcano.sh/nodegroup-name"
SUCCESS = "Success"


REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


def affinity(req=None, pref=None, anti_req=None, anti_pref=None) -> dict:
    out: dict = {}
    for key, r, p in (("nodeGroupAffinity", req, pref), ("nodeGroupAntiAffinity", anti_req, anti_pref)):
        if r is not None or p is not None:
            out[key] = {k: v for k, v in ((REQUIRED, r), (PREFERRED, p)) if v is not None}
    return out


def aqueue(name, aff: dict | None, parent=None) -> dict:
    q = queue(name, parent=parent)
    if aff is not None:
        q["spec"]["affinity"] = aff
    return q


def ng_conf(arguments=None, hierarchy=False, actions="allocate") -> dict:
    entry: dict = {**ALL_OFF, "name": "nodegroup", "enablePredicate": True, "enableNodeOrder": True,
                   "enableHierarchy": hierarchy}
    if arguments:
        entry["arguments"] = arguments
    return {"actions": actions, "tiers": [{"plugins": [entry]}]}


# ---- Volcano's unit test: TestNodeGroup --------------------------------------------------------
NODES = [node("n1", rl("2", "4Gi"), {KEY: "group1"}), node("n2", rl("4", "16Gi"), {KEY: "group2"}),
         node("n3", rl("4", "16Gi"), {KEY: "group3"}), node("n4", rl("4", "16Gi"), {KEY: "group4"}),
         node("n5", rl("4", "16Gi"))]
FULL = affinity(["group1", "group3"], ["group3"], ["group2", "group4"], ["group4"])
ROOT_Q = aqueue("root", FULL)
NO_AFFINITY_ROOT_Q = aqueue("root-no-affinity", None)
Q1 = aqueue("q1", FULL, parent="root")
Q2 = aqueue("q2", affinity(["group1"], ["group3"], ["group2"], ["group4"]), parent="root")
Q3 = aqueue("q3", affinity(pref=["group1", "group3"]))
NO_AFFINITY_Q = aqueue("q-no-affinity", None, parent="root")
Q1_CHILD = aqueue("q1-child", None, parent="q1")                       # inherits from q1
NO_AFFINITY_Q_CHILD = aqueue("q-no-affinity-child", None, parent="q-no-affinity")   # inherits from root

OK, NO = SUCCESS, UNRESOLVABLE
SUBSET = ({"n1": 100, "n2": 0.0, "n3": 150, "n4": -1, "n5": 0.0}, {"n1": OK, "n2": NO, "n3": OK, "n4": OK, "n5": NO})
CASES = [
    # (name, pod index, queue of its group, queues, arguments, hierarchy, scores, statuses)
    ("soft constraints is subset of hard constraints", 1, "q1", [Q1], {}, False, *SUBSET),
    ("soft constraints is not subset of hard constraints", 2, "q2", [Q2], {}, False,
     {"n1": 100, "n2": 0.0, "n3": 50, "n4": -1, "n5": 0.0}, {"n1": OK, "n2": NO, "n3": OK, "n4": OK, "n5": NO}),
    ("affinity is not set for the queue, pods still cannot be scheduled to nodes with the nodegroup label "
     "when strict=false", 5, "root-no-affinity", [NO_AFFINITY_ROOT_Q], {"strict": False}, False,
     dict.fromkeys(("n1", "n2", "n3", "n4", "n5"), 0.0), {"n1": NO, "n2": NO, "n3": NO, "n4": NO, "n5": OK}),
    ("affinity inherits from parent queue", 3, "q1-child", [ROOT_Q, Q1, Q1_CHILD], {}, True, *SUBSET),
    ("affinity inherits from ancestor queue if parent queue has no affinity", 4, "q-no-affinity-child",
     [ROOT_Q, NO_AFFINITY_Q, NO_AFFINITY_Q_CHILD], {}, True, *SUBSET),
    ("queue without affinity", 4, "q-no-affinity", [NO_AFFINITY_Q], {}, False,
     dict.fromkeys(("n1", "n2", "n3", "n4", "n5"), 0.0), dict.fromkeys(("n1", "n2", "n3", "n4", "n5"), NO)),
    ("preferred nodegroup priority ordering", 6, "q3", [Q3], {"enablePreferredOrder": True}, False,
     {"n1": 50, "n2": 0.0, "n3": 25, "n4": 0.0, "n5": 0.0}, {"n1": OK, "n2": NO, "n3": OK, "n4": NO, "n5": NO}),
]


def scores_and_statuses(ssn) -> tuple[dict, dict]:
    """Per task key and node: the nodegroup score and the predicate's status code."""
    import numpy as np
    plugin = ssn.plugins["nodegroup"]
    idx = np.arange(len(ssn.nodes))
    scores: dict = {}
    statuses: dict = {}
    for job in ssn.jobs.values():
        for t in job.tasks.values():
            s = ssn.node_scores(t, idx)
            ok, _ = ssn.predicate(t, idx)
            scores[t.key] = {n: float(s[i]) for i, n in enumerate(ssn.nodes.names)}
            statuses[t.key] = {n: SUCCESS if ok[i] else plugin.reason(t, i)[0][0]
                               for i, n in enumerate(ssn.nodes.names)}
    return scores, statuses


@pytest.mark.parametrize("name,p,q,queues,args,hierarchy,scores,statuses", CASES, ids=[c[0] for c in CASES])
def test_node_group(name, p, q, queues, args, hierarchy, scores, statuses):
    """TestNodeGroup (nodegroup_test.go): one pod p<i> of 2 CPU / 4Gi in PodGroup pg<i> of queue q."""
    docs = [pod("c1", f"p{p}", req=rl("2", "4Gi"), group=f"pg{p}"), podgroup("c1", f"pg{p}", queue=q),
            *queues, *NODES]
    ssn = open_session(docs, ng_conf(args, hierarchy))
    got_scores, got_statuses = scores_and_statuses(ssn)
    assert got_scores == {f"c1/p{p}": scores}
    assert got_statuses == {f"c1/p{p}": statuses}


# ---- reasons, hierarchy and preferred order corner cases -------------------------------------------
def test_reasons_name_the_failed_rule():
    docs = [pod("c1", "p", req=rl("1", "1Gi"), group="pg"), podgroup("c1", "pg", queue="q1"), Q1,
            pod("c1", "f", req=rl("1", "1Gi"), group="pf"), podgroup("c1", "pf", queue="free"), queue("free"), *NODES]
    ssn = open_session(docs, ng_conf())
    plugin = ssn.plugins["nodegroup"]
    tasks = {t.name: t for j in ssn.jobs.values() for t in j.tasks.values()}
    row = {n: i for i, n in enumerate(ssn.nodes.names)}
    assert plugin.reason(tasks["p"], row["n2"]) == [(UNRESOLVABLE, "node does not satisfy the node group affinity")]
    assert plugin.reason(tasks["p"], row["n5"]) == [(UNRESOLVABLE, "node group label not found")]
    assert plugin.reason(tasks["p"], row["n1"]) == []
    assert plugin.reason(tasks["f"], row["n1"]) == [(UNRESOLVABLE, "node group affinity not specified")]
    assert plugin.reason(tasks["f"], row["n5"]) == [(UNRESOLVABLE, "node group label not found")]


def test_without_hierarchy_a_child_does_not_inherit():
    """The same queues as "affinity inherits from parent queue", enableHierarchy unset."""
    docs = [pod("c1", "p3", req=rl("2", "4Gi"), group="pg3"), podgroup("c1", "pg3", queue="q1-child"),
            ROOT_Q, Q1, Q1_CHILD, *NODES]
    scores, statuses = scores_and_statuses(open_session(docs, ng_conf()))
    assert set(statuses["c1/p3"].values()) == {UNRESOLVABLE}
    assert set(scores["c1/p3"].values()) == {0.0}


def test_empty_affinity_stops_inheritance_and_allows_nothing():
    """`affinity: {}` is an affinity (the child does not look further up) with no rules: every
    labelled node fails with "affinity not specified"."""
    child = aqueue("child", {}, parent="q1")
    docs = [pod("c1", "p", req=rl("1", "1Gi"), group="pg"), podgroup("c1", "pg", queue="child"), Q1, child, *NODES]
    _, statuses = scores_and_statuses(open_session(docs, ng_conf(hierarchy=True)))
    assert set(statuses["c1/p"].values()) == {UNRESOLVABLE}
    # strict false: an empty affinity is "unset", so the unlabelled node passes
    _, statuses = scores_and_statuses(open_session(docs, ng_conf({"strict": False}, hierarchy=True)))
    assert [n for n, s in statuses["c1/p"].items() if s == SUCCESS] == ["n5"]


def test_a_cycle_of_parents_is_cut_and_the_root_is_reached_without_parent():
    """a -> b -> a: neither has affinity, nothing inherited. c has no parent: its parent is "root"."""
    docs = [aqueue("a", None, parent="b"), aqueue("b", None, parent="a"), aqueue("c", None), ROOT_Q,
            pod("c1", "pa", req=rl("1", "1Gi"), group="ga"), podgroup("c1", "ga", queue="a"),
            pod("c1", "pc", req=rl("1", "1Gi"), group="gc"), podgroup("c1", "gc", queue="c"), *NODES]
    scores, statuses = scores_and_statuses(open_session(docs, ng_conf(hierarchy=True)))
    assert set(statuses["c1/pa"].values()) == {UNRESOLVABLE}
    assert scores["c1/pc"] == SUBSET[0] and statuses["c1/pc"] == SUBSET[1]


def test_a_parent_that_is_not_a_queue_ends_the_chain():
    docs = [aqueue("child", None, parent="missing"), ROOT_Q,
            pod("c1", "p", req=rl("1", "1Gi"), group="g"), podgroup("c1", "g", queue="child"), *NODES]
    _, statuses = scores_and_statuses(open_session(docs, ng_conf(hierarchy=True)))
    assert set(statuses["c1/p"].values()) == {UNRESOLVABLE}


def test_preferred_order_with_a_repeated_group():
    """Indexes map: a repeated group keeps its last position, n counts distinct groups:
    [group3, group1, group3] -> group3: 2, group1: 1, n = 2: group1 0.5*100*(2-1)/2 = 25,
    group3 0.5*100*(2-2)/2 = 0. Without enablePreferredOrder both get 50."""
    q = aqueue("q", affinity(pref=["group3", "group1", "group3"]))
    docs = [pod("c1", "p", req=rl("1", "1Gi"), group="g"), podgroup("c1", "g", queue="q"), q, *NODES]
    scores, _ = scores_and_statuses(open_session(docs, ng_conf({"enablePreferredOrder": True})))
    assert (scores["c1/p"]["n1"], scores["c1/p"]["n3"]) == (25.0, 0.0)
    scores, _ = scores_and_statuses(open_session(docs, ng_conf()))
    assert (scores["c1/p"]["n1"], scores["c1/p"]["n3"]) == (50.0, 50.0)


def test_an_empty_group_label_is_a_group():
    """A node labelled `volcano.sh/nodegroup-name: ""` is in group "" (the label exists)."""
    q = aqueue("q", affinity(req=[""]))
    docs = [pod("c1", "p", req=rl("1", "1Gi"), group="g"), podgroup("c1", "g", queue="q"), q,
            node("e", rl("4", "4Gi"), {KEY: ""}), node("u", rl("4", "4Gi"))]
    scores, statuses = scores_and_statuses(open_session(docs, ng_conf()))
    assert statuses["c1/p"] == {"e": SUCCESS, "u": UNRESOLVABLE}
    assert scores["c1/p"] == {"e": 100.0, "u": 0.0}


# ---- allocate -------------------------------------------------------------------------------------
ALLOC_DOCS = [
    node("a1", rl("4", "8Gi"), {KEY: "a"}), node("b1", rl("8", "16Gi"), {KEY: "b"}), node("x1", rl("16", "32Gi")),
    aqueue("nlp", affinity(["a", "b"], ["a"])), aqueue("rec", affinity(["b"])), queue("free"),
    podgroup("ml", "nlp-job", 1, queue="nlp"), pod("ml", "nlp-0", req=rl("2", "1Gi"), group="nlp-job"),
    podgroup("ml", "rec-job", 1, queue="rec"), pod("ml", "rec-0", req=rl("2", "1Gi"), group="rec-job"),
    podgroup("ml", "free-job", 1, queue="free"), pod("ml", "free-0", req=rl("2", "1Gi"), group="free-job"),
]
ALLOC_CONF = """\
actions: "allocate"
tiers:
- plugins:
  - name: gang
- plugins:
  - name: predicates
  - name: nodeorder
  - name: nodegroup
{args}"""


@pytest.mark.parametrize("strict,free_node", [(True, None), (False, "x1")])
def test_allocate_follows_required_and_preferred_groups(strict, free_node):
    args = "" if strict else "    arguments: {strict: false}\n"
    res = run(ALLOC_DOCS, ALLOC_CONF.format(args=args))
    bind = outcome(res)["bind"]
    assert bind.get("ml/nlp-0") == "a1"
    assert bind.get("ml/rec-0") == "b1"
    assert bind.get("ml/free-0") == free_node
    if strict:
        msg = next(u for u in res.to_dict()["unschedulable"] if u["pod"] == "ml/free-0")
        text = json.dumps(msg)
        assert "node group label not found" in text and "node group affinity not specified" in text


def test_without_the_plugin_affinity_is_ignored():
    bind = outcome(run(ALLOC_DOCS, ALLOC_CONF.format(args="").replace("  - name: nodegroup\n", "")))["bind"]
    assert len(bind) == 3


# ---- arguments and bad input ----------------------------------------------------------------------
def test_arguments_are_read_and_checked():
    c = conf({"actions": "allocate", "tiers": [{"plugins": [
        {"name": "nodegroup", "arguments": {"strict": False, "enablePreferredOrder": True, "strickt": True}}]}]})
    assert argument_warnings(c) == ['test.conf: plugin "nodegroup" argument "strickt" is not read '
                                    '(did you mean "strict"?); ignored']
    with pytest.raises(Exception, match=r"nodegroup\.arguments\.strict: must be true or false"):
        run([], {"actions": "allocate", "tiers": [{"plugins": [{"name": "nodegroup", "arguments": {"strict": 3}}]}]})


@pytest.mark.parametrize("aff,needle", [
    ("nodegroup-a", r"spec\.affinity: must be a mapping"),
    ({"nodeGroupAfinity": {}}, r"spec\.affinity\.nodeGroupAfinity: unknown field"),
    ({"nodeGroupAffinity": ["a"]}, r"spec\.affinity\.nodeGroupAffinity: must be a mapping"),
    ({"nodeGroupAntiAffinity": {"required": ["a"]}}, r"spec\.affinity\.nodeGroupAntiAffinity\.required: unknown field"),
    ({"nodeGroupAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": "a"}},
     r"requiredDuringSchedulingIgnoredDuringExecution: must be a list of node group names"),
    ({"nodeGroupAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [1]}},
     r"preferredDuringSchedulingIgnoredDuringExecution: must be a list of node group names"),
])
def test_malformed_affinity_is_an_input_error_naming_the_queue(aff, needle):
    with pytest.raises(InputError, match=needle) as e:
        run([aqueue("q", aff)], ng_conf())
    assert "Queue q" in str(e.value) and "\n" not in str(e.value)


def test_affinity_null_is_no_affinity():
    q = aqueue("q", None)
    q["spec"]["affinity"] = None
    ssn = open_session([q], ng_conf())
    assert ssn.queues["q"].queue.affinity is None


def test_cli_exit_code_2_on_bad_affinity(tmp_path):
    (tmp_path / "q.yaml").write_text("apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\n"
                                     "metadata: {name: nlp}\nspec: {affinity: {nodeGroupAffinity: [a]}}\n")
    conf_path = ROOT / "examples" / "batch" / "nodegroup" / "volcano-scheduler.conf"
    r = CliRunner().invoke(cli, ["schedule", "-f", str(tmp_path / "q.yaml"), "--config", str(conf_path)])
    assert r.exit_code == 2
    assert "Queue nlp" in r.stderr and "spec.affinity.nodeGroupAffinity: must be a mapping" in r.stderr
    assert "Traceback" not in r.stderr


# ---- end to end: caldera schedule on the example -----------------------------------------------------
def test_caldera_schedule_example():
    ex = ROOT / "examples" / "batch" / "nodegroup"
    r = CliRunner().invoke(cli, ["schedule", "-f", str(ex), "--config",
                                 str(ex / "volcano-scheduler.conf"), "-o", "json"])
    assert r.exit_code == 0, (r.stdout, r.stderr)
    out = json.loads(r.stdout)
    bind = {b["pod"]: b["node"] for b in out["bindings"]}
    assert bind == EXAMPLE_BINDINGS
    assert {u["pod"] for u in out["unschedulable"]} == EXAMPLE_UNSCHEDULABLE


# nlp-pool: 150 (required + preferred, inherited from engineering), shared: 100; four 4-CPU
# workers fill the two 8-CPU nlp-pool nodes, the fifth goes to shared-0
EXAMPLE_BINDINGS = {"nlp/bert-worker-0": "nlp-1", "nlp/bert-worker-1": "nlp-0", "nlp/bert-worker-2": "nlp-1",
                    "nlp/bert-worker-3": "nlp-0", "nlp/bert-worker-4": "shared-0",
                    "rec/ranker-worker-0": "rec-0", "rec/ranker-worker-1": "rec-0"}
EXAMPLE_UNSCHEDULABLE = {"adhoc/notebook-main-0"}
