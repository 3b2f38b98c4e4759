"""PodTopologySpread: the cases of kube's filtering_test.go (TestSingleConstraint,
TestMultipleConstraints, parts of TestPreFilterState) and scoring_test.go
(TestPodTopologySpreadScore), plus args validation and an end-to-end run of the default profile."""
from __future__ import annotations

import numpy as np
import pytest

from caldera.errors import ConfigError
from caldera.framework.interface import CycleState
from caldera.framework.status import Code
from caldera.plugins.podtopologyspread.common import key_index, match_counts
from caldera.plugins.podtopologyspread.plugin import PREFILTER_KEY

from ..builders import make_node, make_pod, make_scheduler, make_table, run_filter, run_score

PTS = "PodTopologySpread"
HOST = "kubernetes.io/hostname"
FOO = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}
BAR = {"matchExpressions": [{"key": "bar", "operator": "Exists"}]}
TAINTS = [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]
TOLERATE_UNSCHEDULABLE = [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}]
S, U, UU = Code.SUCCESS, Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE
H, D = "DoNotSchedule", "ScheduleAnyway"


def sc(max_skew, key, action, selector, min_domains=None, aff=None, taint=None, keys=None):
    c = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": action}
    if selector is not None:
        c["labelSelector"] = selector
    if min_domains is not None:
        c["minDomains"] = min_domains
    if aff:
        c["nodeAffinityPolicy"] = aff
    if taint:
        c["nodeTaintsPolicy"] = taint
    if keys:
        c["matchLabelKeys"] = keys
    return c


def N(name, taints=None, **labels):
    """A node; labels given as keyword args (`host=` is kubernetes.io/hostname)."""
    if "host" in labels:
        labels[HOST] = labels.pop("host")
    return make_node(name, labels=labels, taints=taints)


def P(name, node, ns="default", terminating=False, **labels):
    p = make_pod(name, ns, node=node, labels=labels)
    p.terminating = terminating
    return p


def affinity_in(key, values):
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": key, "operator": "In", "values": values}]}]}}}


def affinity_not_in(key, values):
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": key, "operator": "NotIn", "values": values}]}]}}}


def incoming(constraints, labels=None, **kw):
    return make_pod("p", labels=labels if labels is not None else {"foo": ""}, topology_spread=constraints, **kw)


def four_zone_nodes():
    return [N("node-a", zone="zone1", node="node-a"), N("node-b", zone="zone1", node="node-b"),
            N("node-x", zone="zone2", node="node-x"), N("node-y", zone="zone2", node="node-y")]


def foo_pods(*spec):
    """foo_pods(("p-a1", "node-a"), ...) -> pods labelled foo."""
    return [P(n, nd, foo="") for n, nd in spec]


SPREAD_2103 = [("p-a1", "node-a"), ("p-a2", "node-a"), ("p-b1", "node-b"),
               ("p-y1", "node-y"), ("p-y2", "node-y"), ("p-y3", "node-y")]
NODE_ONLY_3 = lambda: [N("node-a", node="node-a"), N("node-b", node="node-b"), N("node-c", node="node-c")]  # noqa: E731
INCLUSION_NODES_FOO = lambda: [N("node-a", node="node-a", foo=""), N("node-b", node="node-b", foo=""),  # noqa: E731
                               N("node-x", node="node-x", foo=""), N("node-y", node="node-y")]
INCLUSION_PODS = lambda: foo_pods(("p-b1", "node-a"), ("p-b2", "node-b"), ("p-y1", "node-y"))  # noqa: E731

# ---- TestSingleConstraint ---------------------------------------------------------------------------
SINGLE = [
    ("no existing pods", incoming([sc(1, "zone", H, FOO)]), four_zone_nodes, [], [S, S, S, S]),
    ("no existing pods, incoming pod doesn't match itself", incoming([sc(1, "zone", H, BAR)]),
     four_zone_nodes, [], [S, S, S, S]),
    ("existing pods in a different namespace do not count", incoming([sc(1, "zone", H, FOO)]), four_zone_nodes,
     lambda: [P("p-a1", "node-a", "ns1", foo=""), P("p-b1", "node-a", "ns2", foo=""),
              P("p-x1", "node-x", foo=""), P("p-y1", "node-y", foo="")], [S, S, U, U]),
    ("existing pods do not match null selector", incoming([sc(1, "zone", H, None)]), four_zone_nodes,
     lambda: foo_pods(("p-x1", "node-x"), ("p-y1", "node-y")), [S, S, S, S]),
    ("pods spread across zones as 3/3, all nodes fit", incoming([sc(1, "zone", H, FOO)]), four_zone_nodes,
     lambda: foo_pods(*SPREAD_2103), [S, S, S, S]),
    ("pods spread across zones as 1/2 due to absence of label 'zone' on node-b", incoming([sc(1, "zone", H, FOO)]),
     lambda: [N("node-a", zone="zone1", node="node-a"), N("node-b", zon="zone1", node="node-b"),
              N("node-x", zone="zone2", node="node-x"), N("node-y", zone="zone2", node="node-y")],
     lambda: foo_pods(("p-a1", "node-a"), ("p-b1", "node-b"), ("p-x1", "node-x"), ("p-y1", "node-y")),
     [S, UU, U, U]),
    ("pod cannot be scheduled as all nodes don't have label 'rack'", incoming([sc(1, "rack", H, FOO)]),
     lambda: [N("node-a", zone="zone1", node="node-a"), N("node-x", zone="zone2", node="node-x")], [], [UU, UU]),
    ("pods spread across nodes as 2/1/0/3, only node-x fits", incoming([sc(1, "node", H, FOO)]), four_zone_nodes,
     lambda: foo_pods(*SPREAD_2103), [U, U, S, U]),
    ("pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit", incoming([sc(2, "node", H, FOO)]),
     four_zone_nodes, lambda: foo_pods(*SPREAD_2103), [U, S, S, U]),
    ("pods spread across nodes as 2/1/0/3, but pod doesn't match itself",
     incoming([sc(1, "node", H, FOO)], labels={"bar": ""}), four_zone_nodes, lambda: foo_pods(*SPREAD_2103),
     [U, S, S, U]),
    ("incoming pod has nodeAffinity, pods spread as 2/~1~/~0~/3, hence node-a fits",
     incoming([sc(1, "node", H, FOO)], affinity=affinity_in("node", ["node-a", "node-y"])), four_zone_nodes,
     lambda: foo_pods(*SPREAD_2103), [S, S, S, U]),
    ("terminating Pods should be excluded", incoming([sc(1, "node", H, FOO)]),
     lambda: [N("node-a", node="node-a"), N("node-b", node="node-b")],
     lambda: [P("p-a", "node-a", terminating=True, foo=""), P("p-b", "node-b", foo="")], [S, U]),
    ("incoming pod has nodeAffinity, pods spread as 0/~2~/0/1, hence node-a fits",
     incoming([sc(1, "zone", H, FOO)], affinity=affinity_not_in("node", ["node-b"])), four_zone_nodes,
     lambda: foo_pods(("p-b1", "node-b"), ("p-b2", "node-b"), ("p-y1", "node-y")), [S, S, U, U]),
    ("pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains < minDomains, "
     "then the third node fits", incoming([sc(2, "node", H, FOO, min_domains=4)]), NODE_ONLY_3,
     lambda: foo_pods(("p-a1", "node-a"), ("p-a2", "node-a"), ("p-b1", "node-b"), ("p-b2", "node-b"),
                      ("p-c1", "node-c")), [U, U, S]),
    ("pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains > minDomains, "
     "then the all nodes fit", incoming([sc(2, "node", H, FOO, min_domains=2)]), NODE_ONLY_3,
     lambda: foo_pods(("p-a1", "node-a"), ("p-a2", "node-a"), ("p-b1", "node-b"), ("p-b2", "node-b"),
                      ("p-c1", "node-c")), [S, S, S]),
    ("pods spread across zone as 2/1, maxSkew is 2 and the number of domains < minDomains, "
     "then the third and fourth nodes fit", incoming([sc(2, "zone", H, FOO, min_domains=3)]), four_zone_nodes,
     lambda: foo_pods(("p-b1", "node-a"), ("p-b2", "node-b"), ("p-y1", "node-y")), [U, U, S, S]),
    ("pods spread across zone as 2/1, maxSkew is 2 and the number of domains > minDomains, "
     "then the all nodes fit", incoming([sc(2, "zone", H, FOO, min_domains=1)]), four_zone_nodes,
     lambda: foo_pods(("p-b1", "node-a"), ("p-b2", "node-b"), ("p-y1", "node-y")), [S, S, S, S]),
    ("NodeAffinityPolicy honored with labelSelectors",
     incoming([sc(1, "node", H, FOO)], node_selector={"foo": ""}), INCLUSION_NODES_FOO, INCLUSION_PODS,
     [U, U, S, S]),
    ("NodeAffinityPolicy ignored with labelSelectors",
     incoming([sc(1, "node", H, FOO, aff="Ignore")], node_selector={"foo": ""}), INCLUSION_NODES_FOO,
     INCLUSION_PODS, [U, U, S, U]),
    ("NodeAffinityPolicy honored with nodeAffinity",
     incoming([sc(1, "node", H, FOO)], affinity=affinity_in("foo", [""])), INCLUSION_NODES_FOO, INCLUSION_PODS,
     [U, U, S, S]),
    ("NodeAffinityPolicy ignored with nodeAffinity",
     incoming([sc(1, "node", H, FOO, aff="Ignore")], affinity=affinity_in("foo", [""])), INCLUSION_NODES_FOO,
     INCLUSION_PODS, [U, U, S, U]),
    ("NodeTaintsPolicy honored", incoming([sc(1, "node", H, FOO, taint="Honor")]),
     lambda: [N("node-a", node="node-a", foo=""), N("node-b", node="node-b", foo=""),
              N("node-x", node="node-x", foo=""), N("node-y", taints=TAINTS, node="node-y")],
     INCLUSION_PODS, [U, U, S, S]),
    ("NodeTaintsPolicy ignored", incoming([sc(1, "node", H, FOO)]),
     lambda: [N("node-a", node="node-a", foo=""), N("node-b", node="node-b", foo=""),
              N("node-x", node="node-x", foo=""), N("node-y", taints=TAINTS, node="node-y")],
     INCLUSION_PODS, [U, U, S, U]),
]

# ---- TestMultipleConstraints ----------------------------------------------------------------------------
ZN = [sc(1, "zone", H, FOO), sc(1, "node", H, FOO)]
ZN_DIFF = [sc(1, "zone", H, FOO), sc(1, "node", H, BAR)]
INC_NODES = lambda: [N("node-a", zone="zone1", node="node-a", foo=""),  # noqa: E731
                     N("node-b", zone="zone1", node="node-b", foo=""),
                     N("node-x", zone="zone2", node="node-x", foo=""), N("node-y", zone="zone2", node="node-y")]
INC_PODS = lambda: foo_pods(("p-a1", "node-a"), ("p-b1", "node-b"), ("p-y1", "node-y"))  # noqa: E731
MULTI = [
    ("two Constraints on zone and node, spreads = [3/3, 2/1/0/3]", incoming(ZN), four_zone_nodes,
     lambda: foo_pods(*SPREAD_2103), [U, U, S, U]),
    ("two Constraints on zone and node, spreads = [3/4, 2/1/0/4]", incoming(ZN), four_zone_nodes,
     lambda: foo_pods(*SPREAD_2103, ("p-y4", "node-y")), [U, U, U, U]),
    ("Constraints hold different labelSelectors, spreads = [1/0, 1/0/0/1]",
     incoming(ZN_DIFF, labels={"foo": "", "bar": ""}), four_zone_nodes,
     lambda: [P("p-a1", "node-a", foo=""), P("p-y1", "node-y", bar="")], [U, U, S, U]),
    ("Constraints hold different labelSelectors, spreads = [1/0, 0/0/1/1]",
     incoming(ZN_DIFF, labels={"foo": "", "bar": ""}), four_zone_nodes,
     lambda: [P("p-a1", "node-a", foo=""), P("p-x1", "node-x", bar=""), P("p-y1", "node-y", bar="")],
     [U, U, U, U]),
    ("Constraints hold different labelSelectors, spreads = [2/3, 1/0/0/1]",
     incoming(ZN_DIFF, labels={"foo": "", "bar": ""}), four_zone_nodes,
     lambda: [P("p-a1", "node-a", foo=""), P("p-a2", "node-a", foo="", bar=""), P("p-y1", "node-y", foo=""),
              P("p-y2", "node-y", foo="", bar=""), P("p-y3", "node-y", foo="")], [U, S, U, U]),
    ("Constraints hold different labelSelectors but pod doesn't match itself on 'zone' constraint",
     incoming(ZN_DIFF, labels={"bar": ""}), four_zone_nodes,
     lambda: [P("p-a1", "node-a", foo=""), P("p-x1", "node-x", bar=""), P("p-y1", "node-y", bar="")],
     [S, S, U, U]),
    ("two Constraints on zone and node, absence of label 'node' on node-x, spreads = [1/1, 1/0/0/1]",
     incoming(ZN), lambda: [N("node-a", zone="zone1", node="node-a"), N("node-b", zone="zone1", node="node-b"),
                            N("node-x", zone="zone2"), N("node-y", zone="zone2", node="node-y")],
     lambda: foo_pods(("p-a1", "node-a"), ("p-y3", "node-y")), [U, S, UU, U]),
    ("two node inclusion Constraints, zone: honor/ignore, node: ignore/ignore",
     incoming([sc(1, "zone", H, FOO), sc(1, "node", H, FOO, aff="Ignore")], node_selector={"foo": ""}),
     INC_NODES, INC_PODS, [U, U, S, U]),
    ("two node inclusion Constraints, zone: honor/honor, node: honor/ignore",
     incoming([sc(1, "zone", H, FOO, taint="Honor"), sc(1, "node", H, FOO)]),
     lambda: [N("node-a", zone="zone1", node="node-a", foo=""), N("node-b", zone="zone1", node="node-b", foo=""),
              N("node-x", zone="zone2", node="node-x", foo=""),
              N("node-y", taints=TAINTS, zone="zone2", node="node-y")], INC_PODS, [U, U, S, U]),
    ("two node inclusion Constraints, zone: honor/ignore, node: honor/ignore",
     incoming(ZN, node_selector={"foo": ""}),
     lambda: [N("node-a", zone="zone1", node="node-a", foo=""), N("node-b", zone="zone1", node="node-b"),
              N("node-x", zone="zone2", node="node-x", foo=""),
              N("node-y", taints=TAINTS, zone="zone2", node="node-y", foo="")], INC_PODS, [U, S, S, U]),
    ("two node inclusion Constraints, zone: honor/honor, node: ignore/ignore",
     incoming([sc(1, "zone", H, FOO, taint="Honor"), sc(1, "node", H, FOO, aff="Ignore")],
              node_selector={"foo": ""}),
     lambda: [N("node-a", zone="zone1", node="node-a", foo=""), N("node-b", zone="zone1", node="node-b"),
              N("node-x", zone="zone2", node="node-x", foo=""),
              N("node-y", taints=TAINTS, zone="zone2", node="node-y", foo="")], INC_PODS, [U, U, S, U]),
]


def filter_sched(nodes, pods, args=None):
    t = make_table(nodes, pods)
    return make_scheduler(t, {"preFilter": [PTS], "filter": [PTS]}, args=args)


@pytest.mark.parametrize("name,pod,nodes,pods,want", SINGLE + MULTI, ids=[c[0] for c in SINGLE + MULTI])
def test_filter(name, pod, nodes, pods, want):
    nodes = nodes()
    s = filter_sched(nodes, pods() if callable(pods) else pods, {PTS: {"defaultingType": "List"}})
    got = run_filter(s, pod)
    for n, code in zip(nodes, want):
        st = got[n.name]
        assert (S if st is None else st.code) == code, n.name
        if code == UU:
            assert st.reasons == ("node(s) didn't match pod topology spread constraints (missing required label)",)
        elif code == U:
            assert st.reasons == ("node(s) didn't match pod topology spread constraints",)
            assert st.plugin == PTS


# ---- TestPreFilterState (domain counts, minimum, Skip) -------------------------------------------------
def prefilter(pod, nodes, pods, args=None):
    s = filter_sched(nodes, pods, args)
    fw = s.default_framework
    state = CycleState()
    _, st = fw.run_pre_filter(state, pod)
    return s.table, state, st


def domain_map(table, hc):
    _, uniques = key_index(table, hc.key)
    return {(uniques + [None])[d]: int(hc.domain_counts[d]) for d in np.flatnonzero(hc.present)}


PREFILTER_STATE = [
    ("normal case with two spreadConstraints", incoming(ZN), four_zone_nodes,
     lambda: foo_pods(*SPREAD_2103, ("p-y4", "node-y")),
     [({"zone1": 3, "zone2": 4}, 3), ({"node-a": 2, "node-b": 1, "node-x": 0, "node-y": 4}, 0)]),
    ("namespace mismatch doesn't count", incoming([sc(1, "zone", H, FOO)]), four_zone_nodes,
     lambda: [P("p-a1", "node-a", foo=""), P("p-a2", "node-a", "ns1", foo=""), P("p-b1", "node-b", foo=""),
              P("p-y1", "node-y", "ns2", foo=""), P("p-y2", "node-y", foo="")], [({"zone1": 2, "zone2": 1}, 1)]),
    ("two spreadConstraints, and with podAffinity", incoming(ZN, affinity=affinity_not_in("node", ["node-x"])),
     four_zone_nodes, lambda: foo_pods(*SPREAD_2103, ("p-y4", "node-y")),
     [({"zone1": 3, "zone2": 4}, 3), ({"node-a": 2, "node-b": 1, "node-y": 4}, 1)]),
    ("NodeTaintsPolicy honored with tolerated taints",
     incoming([sc(1, "node", H, BAR, taint="Honor")], tolerations=TOLERATE_UNSCHEDULABLE),
     lambda: [N("node-a", node="node-a"), N("node-b", node="node-b"),
              N("node-c", taints=TAINTS, node="node-c", bar="")],
     lambda: [P("p-a", "node-a", bar=""), P("p-b", "node-b", bar=""), P("p-c", "node-b", bar=""), P("p-d", "node-c")],
     [({"node-a": 1, "node-b": 2, "node-c": 0}, 0)]),
    ("two node inclusion Constraints, zone: ignore/ignore, node: honor/honor",
     incoming([sc(1, "zone", H, FOO, aff="Ignore"), sc(1, "node", H, FOO, taint="Honor")],
              node_selector={"foo": ""}),
     lambda: [N("node-a", zone="zone1", node="node-a"), N("node-b", taints=TAINTS, zone="zone1", node="node-b", foo=""),
              N("node-x", zone="zone2", node="node-x", foo=""), N("node-y", zone="zone2", node="node-y", foo="")],
     lambda: foo_pods(("p-a1", "node-a"), ("p-a2", "node-a"), ("p-x1", "node-x"), ("p-x2", "node-x"),
                      ("p-y1", "node-y")), [({"zone1": 2, "zone2": 3}, 2), ({"node-x": 2, "node-y": 1}, 1)]),
    ("matchLabelKeys ANDed with LabelSelector when LabelSelector isn't empty",
     incoming([sc(1, "zone", H, FOO, keys=["bar"])], labels={"foo": "", "bar": "a"}), four_zone_nodes,
     lambda: [P("p-a1", "node-a", foo=""), P("p-a2", "node-a", foo="", bar="a"), P("p-b1", "node-b", foo=""),
              P("p-y1", "node-y", foo="", bar="a"), P("p-y2", "node-y", bar="")], [({"zone1": 1, "zone2": 1}, 1)]),
    ("matchLabelKeys ANDed with LabelSelector when LabelSelector is empty",
     incoming([sc(1, "zone", H, {}, keys=["foo"])], labels={"foo": "a"}), four_zone_nodes,
     lambda: [P(n, nd, foo="a") for n, nd in [("p-a1", "node-a"), ("p-a2", "node-a"), ("p-b1", "node-b"),
                                             ("p-y1", "node-y"), ("p-y2", "node-y")]],
     [({"zone1": 3, "zone2": 2}, 2)]),
    ("key in matchLabelKeys is ignored when LabelSelector is nil",
     incoming([sc(1, "zone", H, None, keys=["bar"])]), four_zone_nodes,
     lambda: [P(n, nd, foo="a") for n, nd in [("p-a1", "node-a"), ("p-a2", "node-a"), ("p-b1", "node-b"),
                                             ("p-y1", "node-y"), ("p-y2", "node-y")]],
     [({"zone1": 0, "zone2": 0}, 0)]),
    ("key in matchLabelKeys is ignored when it isn't exist in pod.labels",
     incoming([sc(1, "zone", H, FOO, keys=["bar"])]), four_zone_nodes,
     lambda: [P(n, nd, foo="a") for n, nd in [("p-a1", "node-a"), ("p-a2", "node-a"), ("p-b1", "node-b"),
                                             ("p-y1", "node-y"), ("p-y2", "node-y")]],
     [({"zone1": 3, "zone2": 2}, 2)]),
]


@pytest.mark.parametrize("name,pod,nodes,pods,want", PREFILTER_STATE, ids=[c[0] for c in PREFILTER_STATE])
def test_prefilter_state(name, pod, nodes, pods, want):
    table, state, st = prefilter(pod, nodes(), pods(), {PTS: {"defaultingType": "List"}})
    assert st.is_success() and PTS not in state.skip_filter
    got = state.get(PREFILTER_KEY).constraints
    assert [(domain_map(table, hc), hc.min_match) for hc in got] == want


@pytest.mark.parametrize("args,pod", [
    ({"defaultingType": "List"}, make_pod("p", labels={"foo": ""})),
    ({}, make_pod("p", labels={"foo": ""})),   # System defaults: no Service selects the pod -> Skip
    ({"defaultingType": "List", "defaultConstraints": [sc(3, "node", H, None), sc(5, "rack", H, None)]},
     make_pod("p", labels={"foo": "bar"})),
    ({"defaultingType": "List"}, incoming([sc(1, "zone", D, FOO)])),   # soft constraints only
], ids=["skip if not specified", "system defaulting", "list defaults without a selecting service", "soft only"])
def test_prefilter_skip(args, pod):
    _, state, st = prefilter(pod, four_zone_nodes(), [], {PTS: args})
    assert st.is_success() and PTS in state.skip_filter


def test_invalid_pod_constraint_is_an_error():
    _, _, st = prefilter(incoming([sc(0, "zone", H, FOO)]), four_zone_nodes(), [])
    assert st.code == Code.ERROR and "maxSkew" in st.message()
    _, _, st = prefilter(incoming([sc(1, "zone", D, FOO, min_domains=3)]), four_zone_nodes(), [])
    assert st.code == Code.ERROR and "minDomains" in st.message()


@pytest.mark.parametrize("args,field", [
    ({"defaultingType": "Sometimes"}, "defaultingType"),
    ({"defaultConstraints": [sc(1, "zone", D, None)]}, "defaultingType"),
    ({"defaultingType": "List", "defaultConstraints": [sc(1, "zone", D, FOO)]}, "labelSelector"),
    ({"defaultingType": "List", "defaultConstraints": [sc(0, "zone", D, None)]}, "maxSkew"),
    ({"defaultingType": "List", "defaultConstraints": [sc(1, "", D, None)]}, "topologyKey"),
    ({"defaultingType": "List", "defaultConstraints": [sc(1, "zone", "Maybe", None)]}, "whenUnsatisfiable"),
    ({"defaultingType": "List", "defaultConstraints": [sc(1, "zone", D, None), sc(2, "zone", D, None)]},
     "duplicate"),
    ({"defaultingType": "List", "bogus": 1}, "unknown"),
])
def test_args_validation(args, field):
    with pytest.raises(ConfigError, match=field):
        filter_sched(four_zone_nodes(), [], {PTS: args})


def test_invalid_topology_key_reports_kubes_message():
    with pytest.raises(ConfigError) as e:
        filter_sched(four_zone_nodes(), [], {PTS: {"defaultingType": "List",
                                                   "defaultConstraints": [sc(1, "Zone.io/z", D, None)]}})
    assert str(e.value) == (
        "PodTopologySpreadArgs.defaultConstraints[0].topologyKey: 'Zone.io/z' is not a valid label name: prefix part "
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
        "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")


# ---- TestPodTopologySpreadScore --------------------------------------------------------------------------
HOST4 = lambda: [N(f"node-{x}", host=f"node-{x}") for x in "abcd"]  # noqa: E731
P2103 = lambda: foo_pods(("p-a1", "node-a"), ("p-a2", "node-a"), ("p-b1", "node-b"),  # noqa: E731
                         ("p-d1", "node-d"), ("p-d2", "node-d"), ("p-d3", "node-d"))
P4321 = lambda: foo_pods(*[(f"p-{x}{k}", f"node-{x}") for x, m in zip("abcd", (4, 3, 2, 1))  # noqa: E731
                           for k in range(1, m + 1)])
P4213 = lambda: foo_pods(("p-a1", "node-a"), ("p-a2", "node-a"), ("p-a3", "node-a"), ("p-a4", "node-a"),  # noqa
                         ("p-b1", "node-b"), ("p-b2", "node-b"), ("p-x1", "node-x"),
                         ("p-y1", "node-y"), ("p-y2", "node-y"), ("p-y3", "node-y"))
ZH4 = lambda: [N("node-a", zone="zone1", host="node-a"), N("node-b", zone="zone1", host="node-b"),  # noqa: E731
               N("node-x", zone="zone2", host="node-x"), N("node-y", zone="zone2", host="node-y")]
DIFF_PODS = lambda: [P("p-a1", "node-a", foo=""), P("p-b1", "node-b", foo="", bar=""),  # noqa: E731
                     P("p-y1", "node-y", foo=""), P("p-y2", "node-y", bar="")]
POL_NODES = lambda: [N("node-a", node="node-a", foo=""), N("node-b", node="node-b", foo=""),  # noqa: E731
                     N("node-c", node="node-c")]
POL_TAINT_NODES = lambda: [N("node-a", node="node-a"), N("node-b", node="node-b"),  # noqa: E731
                           N("node-c", taints=TAINTS, node="node-c")]
POL_PODS = lambda: foo_pods(("p-a1", "node-a"), ("p-a2", "node-a"), ("p-b1", "node-b"), ("p-c1", "node-c"))  # noqa
MLK_NODES = lambda: [N("node-a", zone="zone1", host="node-a"), N("node-b", zone="zone1", host="node-b"),  # noqa
                     N("node-c", zone="zone2", host="node-c"), N("node-d", zone="zone2", host="node-d")]
SOFT_HOST = [sc(1, HOST, D, FOO)]
SOFT_ZH = [sc(1, "zone", D, FOO), sc(1, HOST, D, FOO)]
SOFT_ZH_DIFF = [sc(1, "zone", D, FOO), sc(1, HOST, D, BAR)]

# (name, pod, nodes (candidates first), pods, number of candidate nodes, want scores of candidates)
SCORE = [
    ("one constraint on node, no existing pods", incoming(SOFT_HOST),
     lambda: HOST4()[:2], list, 2, [100, 100]),
    ("one constraint on node, only one node is candidate", incoming(SOFT_HOST), lambda: HOST4()[:2],
     lambda: foo_pods(("p-a1", "node-a"), ("p-a2", "node-a"), ("p-b1", "node-b")), 1, [100]),
    ("one constraint on node, all nodes have the same number of matching pods", incoming(SOFT_HOST),
     lambda: HOST4()[:2], lambda: foo_pods(("p-a1", "node-a"), ("p-b1", "node-b")), 2, [100, 100]),
    ("one constraint on node, all 4 nodes are candidates", incoming(SOFT_HOST), HOST4, P2103, 4,
     [20, 60, 100, 0]),
    ("one constraint on node, null selector", incoming([sc(1, HOST, D, None)]), HOST4, P2103, 4,
     [100, 100, 100, 100]),
    ("one constraint on node, all 4 nodes are candidates, maxSkew=2", incoming([sc(2, HOST, D, FOO)]),
     HOST4, P2103, 4, [33, 66, 100, 16]),
    ("one constraint on node, all 4 nodes are candidates, maxSkew=3", incoming([sc(3, HOST, D, FOO)]),
     HOST4, P4321, 4, [44, 66, 77, 100]),
    ("one constraint on node, 3 out of 4 nodes are candidates", incoming(SOFT_HOST),
     lambda: [N(f"node-{x}", host=f"node-{x}") for x in "abxy"], P4213, 3, [33, 83, 100]),
    ("one constraint on node, 3 out of 4 nodes are candidates, one node doesn't match topology key",
     incoming(SOFT_HOST), lambda: [N("node-a", host="node-a"), N("node-b", n="node-b"),
                                   N("node-x", host="node-x"), N("node-y", host="node-y")],
     P4213, 3, [16, 0, 100]),
    ("one constraint on zone, 3 out of 4 nodes are candidates", incoming([sc(1, "zone", D, FOO)]), ZH4, P4213, 3,
     [75, 75, 100]),
    ("two Constraints on zone and node, 2 out of 4 nodes are candidates", incoming(SOFT_ZH),
     lambda: [N("node-a", zone="zone1", host="node-a"), N("node-x", zone="zone2", host="node-x"),
              N("node-b", zone="zone1", host="node-b"), N("node-y", zone="zone2", host="node-y")],
     lambda: foo_pods(("p-a1", "node-a"), ("p-a2", "node-a"), ("p-b1", "node-b"), ("p-x1", "node-x"),
                      ("p-x2", "node-x"), ("p-y1", "node-y"), ("p-y2", "node-y"), ("p-y3", "node-y"),
                      ("p-y4", "node-y")), 2, [100, 63]),
    ("two Constraints on zone and node, with different labelSelectors",
     incoming(SOFT_ZH_DIFF, labels={"foo": "", "bar": ""}), ZH4, DIFF_PODS, 4, [60, 20, 100, 60]),
    ("two Constraints on zone and node, with different labelSelectors, some nodes have 0 pods",
     incoming(SOFT_ZH_DIFF, labels={"foo": "", "bar": ""}), ZH4,
     lambda: [P("p-b1", "node-b", bar=""), P("p-x1", "node-x", foo=""), P("p-y1", "node-y", foo="", bar="")],
     4, [100, 60, 40, 0]),
    ("two Constraints on zone and node, with different labelSelectors, 3 out of 4 nodes are candidates",
     incoming(SOFT_ZH_DIFF, labels={"foo": "", "bar": ""}), ZH4, DIFF_PODS, 3, [50, 25, 100]),
    ("existing pods in a different namespace do not count", incoming(SOFT_HOST), lambda: HOST4()[:2],
     lambda: [P("p-a1", "node-a", "ns1", foo=""), P("p-a2", "node-a", foo=""), P("p-b1", "node-b", foo=""),
              P("p-b2", "node-b", foo="")], 2, [100, 33]),
    ("terminating Pods should be excluded", incoming(SOFT_HOST), lambda: HOST4()[:2],
     lambda: [P("p-a", "node-a", terminating=True, foo=""), P("p-b", "node-b", foo="")], 2, [100, 0]),
    ("NodeAffinityPolicy honoed with labelSelectors",
     incoming([sc(1, "node", D, FOO)], node_selector={"foo": ""}), POL_NODES, POL_PODS, 3, [0, 33, 100]),
    ("NodeAffinityPolicy ignored with labelSelectors",
     incoming([sc(1, "node", D, FOO, aff="Ignore")], node_selector={"foo": ""}), POL_NODES, POL_PODS, 3,
     [66, 100, 100]),
    ("NodeAffinityPolicy honoed with nodeAffinity",
     incoming([sc(1, "node", D, FOO)], affinity=affinity_in("foo", [""])), POL_NODES, POL_PODS, 3, [0, 33, 100]),
    ("NodeAffinityPolicy ignored with nodeAffinity",
     incoming([sc(1, "node", D, FOO, aff="Ignore")], affinity=affinity_in("foo", [""])), POL_NODES, POL_PODS, 3,
     [66, 100, 100]),
    ("NodeTaintsPolicy honored", incoming([sc(1, "node", D, FOO, taint="Honor")]), POL_TAINT_NODES, POL_PODS, 3,
     [0, 33, 100]),
    ("NodeTaintsPolicy ignored", incoming([sc(1, "node", D, FOO)]), POL_TAINT_NODES, POL_PODS, 3, [66, 100, 100]),
    ("matchLabelKeys ANDed with LabelSelector when LabelSelector is empty",
     incoming([sc(1, "zone", D, {}, keys=["foo"]), sc(1, HOST, D, {}, keys=["bar"])], labels={"foo": "", "bar": ""}),
     MLK_NODES, lambda: [P("p-a1", "node-a", foo=""), P("p-b1", "node-b", foo="", bar=""),
                         P("p-y1", "node-c", foo=""), P("p-y2", "node-c", bar="")], 4, [60, 20, 60, 100]),
    ("matchLabelKeys ANDed with LabelSelector when LabelSelector isn't empty",
     incoming([sc(1, "zone", D, FOO), sc(1, HOST, D, BAR, keys=["baz"])], labels={"foo": "", "bar": "", "baz": ""}),
     MLK_NODES, lambda: [P("p-a1", "node-a", foo=""), P("p-b1", "node-b", foo="", bar="", baz=""),
                         P("p-c1", "node-c", foo=""), P("p-c2", "node-c", bar=""),
                         P("p-d3", "node-c", bar="", baz="")], 4, [60, 20, 60, 100]),
]


def score_sched(nodes, pods, args=None):
    t = make_table(nodes, pods)
    return make_scheduler(t, {"preScore": [PTS], "score": [PTS]}, args=args)


@pytest.mark.parametrize("name,pod,nodes,pods,k,want", SCORE, ids=[c[0] for c in SCORE])
def test_score(name, pod, nodes, pods, k, want):
    nodes = nodes()
    s = score_sched(nodes, pods())       # the test table runs with defaultingType System
    names = [n.name for n in nodes[:k]]
    got = run_score(s, pod, names)[PTS]
    assert [got[n] for n in names] == want


def test_score_skips_without_soft_constraints():
    # kube's "system defaulting, nodes don't have zone, pods match service" needs a Service selecting
    # the pod; without Services the system defaults have an empty selector, so the plugin skips.
    s = score_sched(HOST4(), P4321())
    assert PTS not in run_score(s, make_pod("p", labels={"foo": ""}))
    s = score_sched(HOST4(), P4321(), {PTS: {"defaultingType": "List"}})
    assert PTS not in run_score(s, incoming([sc(1, HOST, H, FOO)]))


def test_counts_follow_table_changes():
    nodes = four_zone_nodes()
    t = make_table(nodes, foo_pods(("p-a1", "node-a")))
    from caldera.api.selectors import parse_label_selector
    sel = parse_label_selector(FOO, "x")
    assert match_counts(t, "default", sel).tolist() == [1, 0, 0, 0]
    t.add_pod(P("p-y1", "node-y", foo=""), 3)
    t.add_pod(P("p-y2", "node-y", bar=""), 3)
    t.remove_pod("default/p-a1")
    assert match_counts(t, "default", sel).tolist() == [0, 0, 0, 1]
    assert match_counts(t, "other", sel).tolist() == [0, 0, 0, 0]


# ---- end to end through the default profile -------------------------------------------------------------
def zone_cluster():
    return [N(f"n-{z}{i}", zone=f"z{z}", host=f"n-{z}{i}") for z in "abc" for i in (1, 2)]


def test_default_profile_spreads_hard_constraint_across_zones():
    t = make_table(zone_cluster())
    s = make_scheduler(t, default=True)
    placed = []
    for k in range(9):
        pod = make_pod(f"web-{k}", cpu="100m", labels={"app": "web"}, topology_spread=[
            sc(1, "zone", H, {"matchLabels": {"app": "web"}})])
        att = s.schedule_one(pod)
        assert att.scheduled, att.message
        placed.append(t.nodes[t.index[att.node]].labels["zone"])
        counts = {z: placed.count(z) for z in ("za", "zb", "zc")}
        assert max(counts.values()) - min(counts.values()) <= 1
    assert {z: placed.count(z) for z in ("za", "zb", "zc")} == {"za": 3, "zb": 3, "zc": 3}


def test_default_profile_rejects_when_skew_cannot_hold():
    nodes = [N("n-a1", zone="za"), N("n-b1", zone="zb", taints=[{"key": "k", "effect": "NoSchedule"}])]
    t = make_table(nodes, [P("old", "n-a1", app="web")])
    s = make_scheduler(t, default=True)
    pod = make_pod("web", labels={"app": "web"}, topology_spread=[sc(1, "zone", H, {"matchLabels": {"app": "web"}})])
    att = s.schedule_one(pod)
    assert not att.scheduled
    assert "1 node(s) didn't match pod topology spread constraints" in att.message
    assert PTS in att.unschedulable_plugins


def test_default_profile_soft_spreading_prefers_empty_zone():
    nodes = [N("n-a1", zone="za", host="n-a1"), N("n-b1", zone="zb", host="n-b1"),
             N("n-b2", zone="zb", host="n-b2")]
    t = make_table(nodes, [P("old-b1", "n-b1", app="web"), P("old-b2", "n-b2", app="web")])
    s = make_scheduler(t, default=True)
    pod = make_pod("web", labels={"app": "web"}, topology_spread=[sc(1, "zone", D, {"matchLabels": {"app": "web"}})])
    assert s.schedule_one(pod).node == "n-a1"
