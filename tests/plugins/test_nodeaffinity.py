"""NodeAffinity: the cases of kube's node_affinity_test.go (TestNodeAffinity, TestNodeAffinityPriority),
plus vectorised-vs-reference agreement, args validation and the default profile end to end."""
import random

import numpy as np
import pytest

from caldera.api.selectors import go_int, parse_node_selector, parse_preferred_terms
from caldera.errors import ConfigError, InputError
from caldera.framework.interface import CycleState, PreFilterResult
from caldera.framework.status import Code, Status
from caldera.plugins.nodeaffinity.plugin import ERR_REASON_CONFLICT, ERR_REASON_ENFORCED, ERR_REASON_POD

from ..builders import make_node, make_pod, make_scheduler, make_table, run_filter, run_score

REQ = "requiredDuringSchedulingIgnoredDuringExecution"
PREF = "preferredDuringSchedulingIgnoredDuringExecution"
SKIP = Status.skip()
POD = Status.unresolvable(ERR_REASON_POD)
ENFORCED = Status.unresolvable(ERR_REASON_ENFORCED)
CONFLICT = Status.unresolvable(ERR_REASON_CONFLICT)


def expr(key, op, *values):
    e = {"key": key, "operator": op}
    if values:
        e["values"] = list(values)
    return e


def name_in(*names):
    return {"key": "metadata.name", "operator": "In", "values": list(names)}


def required(*terms):
    return {"nodeAffinity": {REQ: {"nodeSelectorTerms": list(terms)}}}


def pod_req(*terms, **kw):
    return make_pod("p", affinity=required(*terms), **kw)


def added_required(*terms):
    return {"addedAffinity": {REQ: {"nodeSelectorTerms": list(terms)}}}


# (name, pod, node labels, node name, want filter status, want prefilter status, want prefilter names,
#  args, run prefilter)
FILTER_CASES = [
    ("missing labels", lambda: make_pod("p", node_selector={"foo": "bar"}), {}, "node1", POD, None, None, None, True),
    ("same labels", lambda: make_pod("p", node_selector={"foo": "bar"}), {"foo": "bar"}, "node1",
     None, None, None, None, True),
    ("node labels are superset", lambda: make_pod("p", node_selector={"foo": "bar"}),
     {"foo": "bar", "baz": "blah"}, "node1", None, None, None, None, True),
    ("node labels are subset", lambda: make_pod("p", node_selector={"foo": "bar", "baz": "blah"}),
     {"foo": "bar"}, "node1", POD, None, None, None, True),
    ("matchExpressions In matches", lambda: pod_req({"matchExpressions": [expr("foo", "In", "bar", "value2")]}),
     {"foo": "bar"}, "node1", None, None, None, None, True),
    ("matchExpressions Gt matches", lambda: pod_req({"matchExpressions": [expr("kernel-version", "Gt", "0204")]}),
     {"kernel-version": "0206"}, "node1", None, None, None, None, True),
    ("matchExpressions NotIn matches",
     lambda: pod_req({"matchExpressions": [expr("mem-type", "NotIn", "DDR", "DDR2")]}),
     {"mem-type": "DDR3"}, "node1", None, None, None, None, True),
    ("matchExpressions Exists matches", lambda: pod_req({"matchExpressions": [expr("GPU", "Exists")]}),
     {"GPU": "NVIDIA-GRID-K1"}, "node1", None, None, None, None, True),
    ("affinity doesn't match node labels",
     lambda: pod_req({"matchExpressions": [expr("foo", "In", "value1", "value2")]}),
     {"foo": "bar"}, "node1", POD, None, None, None, True),
    ("empty MatchExpressions matches nothing", lambda: pod_req({"matchExpressions": []}),
     {"foo": "bar"}, "node1", POD, None, None, None, True),
    ("no Affinity", lambda: make_pod("p"), {"foo": "bar"}, "node1", None, SKIP, None, None, True),
    ("Affinity but nil required NodeSelector", lambda: make_pod("p", affinity={"nodeAffinity": {REQ: None}}),
     {"foo": "bar"}, "node1", None, SKIP, None, None, True),
    ("multiple matchExpressions ANDed match",
     lambda: pod_req({"matchExpressions": [expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER")]}),
     {"GPU": "NVIDIA-GRID-K1"}, "node1", None, None, None, None, True),
    ("multiple matchExpressions ANDed don't match",
     lambda: pod_req({"matchExpressions": [expr("GPU", "Exists"), expr("GPU", "In", "AMD", "INTER")]}),
     {"GPU": "NVIDIA-GRID-K1"}, "node1", POD, None, None, None, True),
    ("multiple terms ORed, one matches",
     lambda: pod_req({"matchExpressions": [expr("foo", "In", "bar", "value2")]},
                     {"matchExpressions": [expr("diffkey", "In", "wrong", "value2")]}),
     {"foo": "bar"}, "node1", None, None, None, None, True),
    ("Affinity and nodeSelector both satisfied",
     lambda: make_pod("p", node_selector={"foo": "bar"},
                      affinity=required({"matchExpressions": [expr("foo", "Exists")]})),
     {"foo": "bar"}, "node1", None, None, None, None, True),
    ("Affinity matches but nodeSelector not",
     lambda: make_pod("p", node_selector={"foo": "bar"},
                      affinity=required({"matchExpressions": [expr("foo", "Exists")]})),
     {"foo": "barrrrrr"}, "node1", POD, None, None, None, True),
    ("invalid value in Affinity term",
     lambda: pod_req({"matchExpressions": [expr("foo", "NotIn", "invalid value: ___@#$%^")]}),
     {"foo": "bar"}, "node1", POD, None, None, None, True),
    ("matchFields In matches", lambda: pod_req({"matchFields": [name_in("node1")]}),
     {}, "node1", None, None, {"node1"}, None, True),
    ("matchFields In doesn't match", lambda: pod_req({"matchFields": [name_in("node1")]}),
     {}, "node2", POD, None, {"node1"}, None, True),
    ("two terms: matchFields doesn't match, matchExpressions matches",
     lambda: pod_req({"matchFields": [name_in("node1"), name_in("node2")]},
                     {"matchExpressions": [expr("foo", "In", "bar")]}),
     {"foo": "bar"}, "node2", None, None, None, None, True),
    ("one term: matchFields doesn't match, matchExpressions matches",
     lambda: pod_req({"matchFields": [name_in("node1")], "matchExpressions": [expr("foo", "In", "bar")]}),
     {"foo": "bar"}, "node2", POD, None, {"node1"}, None, True),
    ("one term: both matchFields and matchExpressions match",
     lambda: pod_req({"matchFields": [name_in("node1")], "matchExpressions": [expr("foo", "In", "bar")]}),
     {"foo": "bar"}, "node1", None, None, {"node1"}, None, True),
    ("two terms: neither matches",
     lambda: pod_req({"matchFields": [name_in("node1")]},
                     {"matchExpressions": [expr("foo", "In", "not-match-to-bar")]}),
     {"foo": "bar"}, "node2", POD, None, None, None, True),
    ("two terms of node.Name affinity",
     lambda: pod_req({"matchFields": [name_in("node1")]}, {"matchFields": [name_in("node2")]}),
     {}, "node2", None, None, {"node1", "node2"}, None, True),
    ("two conflicting matchFields requirements",
     lambda: pod_req({"matchFields": [name_in("node1"), name_in("node2")]}),
     {"foo": "bar"}, "node2", POD, CONFLICT, None, None, True),
    ("matches added affinity and pod's node affinity",
     lambda: pod_req({"matchExpressions": [expr("zone", "In", "foo")]}),
     {"zone": "foo"}, "node2", None, None, None, added_required({"matchFields": [name_in("node2")]}), True),
    ("matches added affinity but not pod's node affinity",
     lambda: pod_req({"matchExpressions": [expr("zone", "In", "bar")]}),
     {"zone": "foo"}, "node2", POD, None, None, added_required({"matchFields": [name_in("node2")]}), True),
    ("doesn't match added affinity", lambda: make_pod("p"), {"zone": "foo"}, "node2", ENFORCED, None, None,
     added_required({"matchExpressions": [expr("zone", "In", "bar")]}), True),
    ("nodeSelector matched even if PreFilter is not called",
     lambda: make_pod("p", node_selector={"foo": "bar"}), {"foo": "bar", "baz": "blah"}, "node1",
     None, None, None, None, False),
    ("node affinity matched even if PreFilter is not called",
     lambda: pod_req({"matchExpressions": [expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER")]}),
     {"GPU": "NVIDIA-GRID-K1"}, "node1", None, None, None, None, False),
]


def _plugin(table, args=None, points=("preFilter", "filter", "preScore", "score")):
    s = make_scheduler(table, {p: ["NodeAffinity"] for p in points},
                       args={"NodeAffinity": args} if args else None)
    return s, s.default_framework.plugin("NodeAffinity")


@pytest.mark.parametrize("case", FILTER_CASES, ids=[c[0] for c in FILTER_CASES])
def test_filter(case):
    _, mk_pod, labels, node_name, want, want_pf, want_names, args, run_pf = case
    table = make_table([make_node(node_name, labels=labels)])
    _, pl = _plugin(table, args)
    pod = mk_pod()
    state = CycleState()
    if run_pf:
        got = pl.pre_filter(state, pod)
        if want_names is not None:
            assert isinstance(got, PreFilterResult) and got.node_names == want_names
        elif want_pf is not None:
            assert isinstance(got, Status) and got == want_pf and got.code == want_pf.code
        else:
            assert got is None
    ok = pl.filter(state, pod, table, np.array([0], dtype=np.intp))
    got = None if ok[0] else pl.filter_status(state, pod, table, 0)
    assert got == want
    if want is not None:
        assert got.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def test_filter_through_framework():
    """PreFilterResult restricts the nodes; the pod's statuses name the plugin."""
    table = make_table([make_node("node1", labels={"foo": "bar"}), make_node("node2"), make_node("node3")])
    s, _ = _plugin(table)
    got = run_filter(s, pod_req({"matchFields": [name_in("node1"), name_in("node2")]}))
    assert all(v == CONFLICT for v in got.values())
    got = run_filter(s, pod_req({"matchFields": [name_in("node1")]}, {"matchFields": [name_in("node3")]}))
    assert got == {"node1": None, "node2": "excluded by PreFilter", "node3": None}
    got = run_filter(s, make_pod("p", node_selector={"foo": "bar"}))
    assert got["node1"] is None and got["node2"] == POD and got["node2"].plugin == "NodeAffinity"


LABEL1, LABEL2, LABEL3 = {"foo": "bar"}, {"key": "value"}, {"az": "az1"}
LABEL4 = {"abc": "az11", "def": "az22"}
LABEL5 = {"foo": "bar", "key": "value", "az": "az1"}
AFF1 = {"nodeAffinity": {PREF: [{"weight": 2, "preference": {"matchExpressions": [expr("foo", "In", "bar")]}}]}}
AFF2 = {"nodeAffinity": {PREF: [
    {"weight": 2, "preference": {"matchExpressions": [expr("foo", "In", "bar")]}},
    {"weight": 4, "preference": {"matchExpressions": [expr("key", "In", "value")]}},
    {"weight": 5, "preference": {"matchExpressions": [expr("foo", "In", "bar"), expr("key", "In", "value"),
                                                      expr("az", "In", "az1")]}},
]}}

SCORE_CASES = [
    ("all nodes same priority as NodeAffinity is nil", None,
     [("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL3)], [0, 0, 0], None, True),
    ("no node matches preferred terms", AFF1,
     [("node1", LABEL4), ("node2", LABEL2), ("node3", LABEL3)], [0, 0, 0], None, True),
    ("only node1 matches", AFF1, [("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL3)], [100, 0, 0], None, True),
    ("all nodes match with different priorities", AFF2,
     [("node1", LABEL1), ("node5", LABEL5), ("node2", LABEL2)], [18, 100, 36], None, True),
    ("added affinity", None, [("node1", LABEL1), ("node2", LABEL2)], [100, 0], {"addedAffinity": AFF1["nodeAffinity"]},
     True),
    ("added affinity and pod has default affinity", AFF1,
     [("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL5)], [40, 60, 100],
     {"addedAffinity": {PREF: [{"weight": 3, "preference": {"matchExpressions": [expr("key", "In", "value")]}}]}},
     True),
    ("priorities correct even if PreScore is not called", AFF2,
     [("node1", LABEL1), ("node5", LABEL5), ("node2", LABEL2)], [18, 100, 36], None, False),
]


@pytest.mark.parametrize("case", SCORE_CASES, ids=[c[0] for c in SCORE_CASES])
def test_score(case):
    _, aff, nodes, want, args, run_prescore = case
    table = make_table([make_node(n, labels=lab) for n, lab in nodes])
    _, pl = _plugin(table, args)
    pod = make_pod("p", affinity=aff)
    state = CycleState()
    idx = np.arange(len(table), dtype=np.intp)
    if run_prescore:
        s = pl.pre_score(state, pod, table, idx)
        assert s is None or s.is_skip()
    raw = pl.score(state, pod, table, idx)
    assert pl.normalize_score(state, pod, raw).tolist() == want


def test_score_through_framework():
    table = make_table([make_node("node1", labels=LABEL1), make_node("node5", labels=LABEL5),
                        make_node("node2", labels=LABEL2)])
    s, _ = _plugin(table, points=("preScore", "score"))
    got = run_score(s, make_pod("p", affinity=AFF2))
    assert got["NodeAffinity"] == {"node1": 18, "node5": 100, "node2": 36}
    assert "NodeAffinity" not in run_score(s, make_pod("q"))      # PreScore Skip: no preferred terms


def test_prescore_error_on_unparsable_preferred_term():
    table = make_table([make_node("n1"), make_node("n2")])
    _, pl = _plugin(table)
    pod = make_pod("p", affinity={"nodeAffinity": {PREF: [
        {"weight": 1, "preference": {"matchExpressions": [expr("foo", "In", "not a label value!")]}}]}})
    s = pl.pre_score(CycleState(), pod, table, np.arange(2))
    assert s.code == Code.ERROR


def test_prescore_error_is_kubes():
    """node_affinity_test.go 'Invalid key in preferred affinity': the field error of
    NewPreferredSchedulingTerms (no field path, so '[0].matchExpressions[0].key')."""
    table = make_table([make_node("node1", labels=LABEL1)])
    _, pl = _plugin(table)
    pod = make_pod("p", affinity={"nodeAffinity": {PREF: [
        {"weight": 2, "preference": {"matchExpressions": [expr("invalid key", "In", "bar")]}}]}})
    s = pl.pre_score(CycleState(), pod, table, np.arange(1))
    assert s == Status.error(
        "[0].matchExpressions[0].key: Invalid value: \"invalid key\": name part must consist of alphanumeric "
        "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or "
        "'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
    # errors of several terms are aggregated as "[a, b]"
    pod = make_pod("q", affinity={"nodeAffinity": {PREF: [
        {"weight": 1, "preference": {"matchExpressions": [expr("foo", "Gt", "1_0")]}},
        {"weight": 1, "preference": {"matchExpressions": [expr("ok", "In", "x"), expr("foo", "Lt", "2_0")]}}]}})
    s = pl.pre_score(CycleState(), pod, table, np.arange(1))
    assert s == Status.error("[[0].matchExpressions[0].values[0]: Invalid value: \"1_0\": for 'Gt', 'Lt' operators, "
                             "the value must be an integer, [1].matchExpressions[1].values[0]: Invalid value: "
                             "\"2_0\": for 'Gt', 'Lt' operators, the value must be an integer]")


def test_bad_added_affinity_reports_kubes_field_errors():
    """ValidateNodeAffinityArgs: the errors of every term, under NodeAffinityArgs.addedAffinity."""
    args = {"addedAffinity": {
        REQ: {"nodeSelectorTerms": [{"matchExpressions": [expr("invalid/label/key", "In", "label-1-val")]}]},
        PREF: [{"weight": 1, "preference": {"matchExpressions": [expr("a", "In", "bad value!")]}}]}}
    with pytest.raises(ConfigError) as e:
        _plugin(make_table([make_node("n1")]), args)
    assert str(e.value) == (
        "[NodeAffinityArgs.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
        ".matchExpressions[0].key: Invalid value: \"invalid/label/key\": a valid label key must consist of "
        "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
        "'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?"
        "[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName'), "
        "NodeAffinityArgs.addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].matchExpressions[0]"
        ".values[0][a]: Invalid value: \"bad value!\": a valid label must be an empty string or consist of "
        "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
        "'MyValue',  or 'my_value',  or '12345', regex used for validation is "
        "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')]")


def test_gt_lt_parse_like_go():
    assert go_int("0206") == 206 and go_int("+5") == 5 and go_int("-3") == -3
    assert go_int("1_000") is None and go_int(" 5") is None and go_int("9223372036854775808") is None
    table = make_table([make_node("a", labels={"v": "10"}), make_node("b", labels={"v": "x"}),
                        make_node("c", labels={"v": "1_0"}), make_node("d")])
    _, pl = _plugin(table)
    for op, val, want in (("Gt", "5", [True, False, False, False]), ("Lt", "11", [True, False, False, False])):
        pod = pod_req({"matchExpressions": [expr("v", op, val)]})
        st = CycleState()
        pl.pre_filter(st, pod)
        assert pl.filter(st, pod, table, np.arange(4)).tolist() == want


def _random_term(rng, keys, values):
    reqs = []
    for _ in range(rng.randint(1, 3)):
        k = rng.choice(keys)
        op = rng.choice(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"])
        if op in ("In", "NotIn"):
            reqs.append(expr(k, op, *rng.sample(values, rng.randint(1, 2))))
        elif op in ("Gt", "Lt"):
            reqs.append(expr(k, op, str(rng.randint(0, 4))))
        else:
            reqs.append(expr(k, op))
    term = {"matchExpressions": reqs}
    if rng.random() < 0.2:
        term["matchFields"] = [{"key": "metadata.name", "operator": rng.choice(["In", "NotIn"]),
                                "values": [f"n{rng.randint(0, 9)}"]}]
    return term


def test_vectorised_matches_reference_selector():
    """The mask evaluation agrees with the per-node reference (api.selectors .matches)."""
    rng = random.Random(7)
    keys, values = ["a", "b", "c"], ["0", "1", "2", "x"]
    nodes = [make_node(f"n{i}", labels={k: rng.choice(values) for k in keys if rng.random() < 0.7})
             for i in range(10)]
    table = make_table(nodes)
    _, pl = _plugin(table)
    idx = np.arange(len(nodes), dtype=np.intp)
    for _ in range(200):
        terms = [_random_term(rng, keys, values) for _ in range(rng.randint(1, 3))]
        sel_labels = {rng.choice(keys): rng.choice(values)} if rng.random() < 0.3 else None
        pod = make_pod("p", node_selector=sel_labels, affinity={"nodeAffinity": {
            REQ: {"nodeSelectorTerms": terms},
            PREF: [{"weight": w + 1, "preference": t} for w, t in enumerate(terms)]}})
        ref_sel = parse_node_selector({"nodeSelectorTerms": terms}, "x")
        want = [ref_sel.matches(n.labels, n.name) and all(n.labels.get(k) == v for k, v in (sel_labels or {}).items())
                for n in nodes]
        st = CycleState()
        pl.pre_filter(st, pod)
        assert pl.filter(st, pod, table, idx).tolist() == want
        prefs = parse_preferred_terms([{"weight": w + 1, "preference": t} for w, t in enumerate(terms)], "x")
        want_sc = [sum(p.weight for p in prefs if p.term.matches(n.labels, n.name)) for n in nodes]
        assert pl.score(st, pod, table, idx).tolist() == want_sc


@pytest.mark.parametrize("args", [
    {"bogus": 1},
    {"addedAffinity": []},
    {"addedAffinity": {"requiredDuringSchedulingRequiredDuringExecution": {}}},
    {"addedAffinity": {REQ: {"nodeSelectorTerms": [{"matchExpressions": [expr("a", "Foo", "b")]}]}}},
    {"addedAffinity": {REQ: {"nodeSelectorTerms": [{"matchExpressions": [expr("a", "In", "bad value!")]}]}}},
    {"addedAffinity": {REQ: {"nodeSelectorTerms": [{"matchFields": [name_in("a", "b")]}]}}},
    {"addedAffinity": {PREF: [{"weight": 1, "preference": {"matchExpressions": [expr("a", "Gt", "x")]}}]}},
    {"addedAffinity": {PREF: {"weight": 1}}},
])
def test_bad_args(args):
    with pytest.raises(ConfigError):
        _plugin(make_table([make_node("n1")]), args)


def test_added_preferred_weight_zero_ignored():
    table = make_table([make_node("n1", labels=LABEL1), make_node("n2")])
    args = {"addedAffinity": {PREF: [{"weight": 0, "preference": {"matchExpressions": [expr("foo", "In", "bar")]}}]}}
    _, pl = _plugin(table, args)
    assert pl.pre_score(CycleState(), make_pod("p"), table, np.arange(2)) == SKIP


@pytest.mark.parametrize("aff", [
    {"nodeAffinity": {REQ: {"nodeSelectorTerms": [{"matchExpressions": [expr("a", "In")]}]}}},
    {"nodeAffinity": {REQ: {"nodeSelectorTerms": [{"matchFields": [name_in("a", "b")]}]}}},
    {"nodeAffinity": {PREF: [{"weight": 0, "preference": {"matchExpressions": [expr("a", "Exists")]}}]}},
    {"nodeAffinity": "zone"},
])
def test_malformed_pod_affinity_is_input_error(aff):
    _, pl = _plugin(make_table([make_node("n1")]))
    with pytest.raises(InputError):
        pl.pre_filter(CycleState(), make_pod("p", affinity=aff))


def test_default_profile_end_to_end():
    nodes = [make_node("n1", labels={"zone": "a"}), make_node("n2", labels={"zone": "b"}),
             make_node("n3", labels={"zone": "b", "disk": "ssd"})]
    s = make_scheduler(make_table(nodes), default=True)
    # required: only zone b; preferred: ssd -> n3
    pod = make_pod("p1", affinity={"nodeAffinity": {
        REQ: {"nodeSelectorTerms": [{"matchExpressions": [expr("zone", "In", "b")]}]},
        PREF: [{"weight": 50, "preference": {"matchExpressions": [expr("disk", "In", "ssd")]}}]}})
    assert s.schedule_one(pod).node == "n3"
    assert s.schedule_one(make_pod("p2", node_selector={"zone": "a"})).node == "n1"
    assert s.schedule_one(pod_req({"matchFields": [name_in("n2")]})).node == "n2"
    att = s.schedule_one(make_pod("p4", node_selector={"zone": "c"}))
    assert not att.scheduled
    assert att.message.startswith("0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.")
    assert "NodeAffinity" in att.unschedulable_plugins


def test_default_profile_added_affinity():
    nodes = [make_node("n1", labels={"pool": "x"}), make_node("n2", labels={"pool": "y"})]
    args = {"NodeAffinity": added_required({"matchExpressions": [expr("pool", "In", "y")]})}
    s = make_scheduler(make_table(nodes), default=True, args=args)
    assert s.schedule_one(make_pod("p")).node == "n2"
    att = s.schedule_one(make_pod("q", node_selector={"pool": "x"}))
    assert att.message.startswith("0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
                                  "1 node(s) didn't match scheduler-enforced node affinity.")
