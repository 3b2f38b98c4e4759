"""InterPodAffinity: the cases of kube's filtering_test.go (TestRequiredAffinitySingleNode,
TestRequiredAffinityMultipleNodes) and scoring_test.go (TestPreferredAffinity,
TestPreferredAffinityWithHardPodAffinitySymmetricWeight), plus args, matchLabelKeys, the index
and an end-to-end run through the default profile.

kube's tests use namespace "" for unnamespaced pods; here such pods live in "default", so a term
listing namespace "" in kube lists "default" here. Pods kube's tests place on nodes missing from
the snapshot are left out (they cannot be on a node of the table).
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from caldera.api.workloads import Namespace, Workloads
from caldera.errors import ConfigError
from caldera.framework.interface import CycleState
from caldera.framework.status import Status
from caldera.plugins.interpodaffinity.filtering import ERR_AFFINITY, ERR_ANTI_AFFINITY, ERR_EXISTING_ANTI_AFFINITY
from caldera.plugins.interpodaffinity.scoring import normalize

from ..builders import make_node, make_pod, make_scheduler, make_table

IPA = "InterPodAffinity"
NAMESPACES = {"subteam1.team1": {"team": "team1"}, "subteam2.team1": {"team": "team1"},
              "subteam1.team2": {"team": "team2"}, "subteam2.team2": {"team": "team2"}}
_names = itertools.count()

SKIP = Status.skip()
AFF = Status.unresolvable(ERR_AFFINITY)
ANTI = Status.unschedulable(ERR_ANTI_AFFINITY)
EXIST = Status.unschedulable(ERR_EXISTING_ANTI_AFFINITY)


# ---- builders (kube's st.MakePod().PodAffinityIn(...) and friends) -----------------------------
def sel(*reqs):
    return {"matchExpressions": [dict(r) for r in reqs]}


def in_(key, *vals):
    return {"key": key, "operator": "In", "values": list(vals)}


def notin(key, *vals):
    return {"key": key, "operator": "NotIn", "values": list(vals)}


def exists(key):
    return {"key": key, "operator": "Exists"}


def dne(key):
    return {"key": key, "operator": "DoesNotExist"}


def term(selector, topo, namespaces=None, ns_selector=None, **extra):
    t = {"labelSelector": selector, "topologyKey": topo}
    if namespaces is not None:
        t["namespaces"] = list(namespaces)
    if ns_selector is not None:
        t["namespaceSelector"] = ns_selector
    t.update(extra)
    return t


def wterm(weight, selector, topo, **kw):
    return {"weight": weight, "podAffinityTerm": term(selector, topo, **kw)}


def affinity(req_aff=None, req_anti=None, pref_aff=None, pref_anti=None):
    a = {}
    for block, req, pref in (("podAffinity", req_aff, pref_aff), ("podAntiAffinity", req_anti, pref_anti)):
        if req is not None or pref is not None:
            a[block] = {}
            if req is not None:
                a[block]["requiredDuringSchedulingIgnoredDuringExecution"] = list(req)
            if pref is not None:
                a[block]["preferredDuringSchedulingIgnoredDuringExecution"] = list(pref)
    return a


def merge(*affs):
    out = {}
    for a in affs:
        for block, d in a.items():
            for k, v in d.items():
                out.setdefault(block, {}).setdefault(k, []).extend(v)
    return out


def pod(labels=None, node=None, ns="default", aff=None, name=None):
    return make_pod(name or f"p{next(_names)}", ns, labels=labels, node=node, affinity=aff or None)


def node(name, labels):
    return make_node(name, labels=labels)


def setup(nodes, pods, args=None):
    table = make_table(nodes, pods)
    sched = make_scheduler(table, {"preFilter": [IPA], "filter": [IPA], "preScore": [IPA], "score": [IPA]},
                           args={IPA: args} if args is not None else None)
    sched.workloads = kube_namespaces()     # the Go tests' namespace lister: these four only
    pl = sched.default_framework.plugin(IPA)
    return table, pl


def kube_namespaces(names=NAMESPACES) -> Workloads:
    """A namespace lister holding `names` (name -> labels) as v1 Namespace objects."""
    wl = Workloads()
    for name, labels in names.items():
        wl.add(Namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}))
    return wl


def prefilter_filter(pl, table, p):
    """(PreFilter status, [Filter status per node]) as the Go tests; no Filter unless PreFilter succeeded."""
    state = CycleState()
    s = pl.pre_filter(state, p)
    if s is not None and not s.is_success():
        return s, None
    idx = np.arange(len(table), dtype=np.intp)
    ok = pl.filter(state, p, table, idx)
    return s, [None if ok[i] else pl.filter_status(state, p, table, i) for i in range(len(table))]


def prescore_score(pl, table, p):
    """(PreScore status, [normalised score per node])."""
    state = CycleState()
    idx = np.arange(len(table), dtype=np.intp)
    s = pl.pre_score(state, p, table, idx)
    if s is not None and not s.is_success():
        return s, None
    raw = pl.score(state, p, table, idx)
    return s, [int(x) for x in pl.normalize_score(state, p, raw)]


# ---- TestRequiredAffinitySingleNode ------------------------------------------------------------
POD_LABEL = {"service": "securityscan"}
POD_LABEL2 = {"security": "S1"}
NODE1 = {"region": "r1", "zone": "z11"}
BAD = ('parsing pod: requiredAffinityTerms: values[0][service]: Invalid value: "{{.bad-value.}}": a valid '
       "label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start "
       "and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
       "validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")
SVC_IN = sel(in_("service", "securityscan", "value2"))


def _existing():
    return pod(POD_LABEL, "node1")


def _ns_term(topo):
    return term(SVC_IN, topo, ns_selector=sel(in_("team", "team1")))


SINGLE = [
    ("no affinity, no pods", lambda: pod(), [], SKIP, None),
    ("affinity In matches existing pod", lambda: pod(POD_LABEL2, aff=affinity([term(SVC_IN, "region")])),
     lambda: [_existing()], None, None),
    ("affinity NotIn matches existing pod",
     lambda: pod(POD_LABEL2, aff=affinity([term(sel(notin("service", "securityscan3", "value3")), "region")])),
     lambda: [_existing()], None, None),
    ("different namespace", lambda: pod(POD_LABEL2, aff=affinity([term(SVC_IN, "", namespaces=["DiffNameSpace"])], [])),
     lambda: [pod(POD_LABEL, "node1", ns="ns")], None, AFF),
    ("unmatching selector",
     lambda: pod(POD_LABEL, aff=affinity([term(sel(in_("service", "antivirusscan", "value2")), "")])),
     lambda: [_existing()], None, AFF),
    ("several operators, several terms", lambda: pod(POD_LABEL2, aff=affinity([
        term(sel(exists("service"), dne("wrongkey")), "region"),
        term(sel(in_("service", "securityscan"), notin("service", "WrongValue")), "region")], [])),
     lambda: [_existing()], None, None),
    ("requirements ANDed, one does not match", lambda: pod(POD_LABEL2, aff=affinity([
        term(sel(exists("service"), dne("wrongkey")), "region"),
        term(sel(in_("service", "securityscan2"), notin("service", "WrongValue")), "region")], [])),
     lambda: [_existing()], None, AFF),
    ("affinity and anti-affinity satisfied", lambda: pod(POD_LABEL2, aff=affinity(
        [term(SVC_IN, "region")], [term(sel(in_("service", "antivirusscan", "value2")), "node")])),
     lambda: [_existing()], None, None),
    ("affinity, anti-affinity and symmetry satisfied", lambda: pod(POD_LABEL2, aff=affinity(
        [term(SVC_IN, "region")], [term(sel(in_("service", "antivirusscan", "value2")), "node")])),
     lambda: [pod(POD_LABEL, "node1",
                  aff=affinity(None, [term(sel(in_("service", "antivirusscan", "value2")), "node")]))],
     None, None),
    ("anti-affinity violated", lambda: pod(POD_LABEL2, aff=affinity([term(SVC_IN, "region")], [term(SVC_IN, "zone")])),
     lambda: [_existing()], None, ANTI),
    ("symmetry violated", lambda: pod(POD_LABEL, aff=affinity(
        [term(sel(in_("service", "securityscan", "value2")), "region")],
        [term(sel(in_("service", "antivirusscan", "value2")), "node")])),
     lambda: [pod(POD_LABEL, "node1", aff=affinity(None, [term(SVC_IN, "zone")]))], None, EXIST),
    ("pod matches its own NotIn term but another pod matches elsewhere (off-table) -> no self match",
     lambda: pod(POD_LABEL, aff=affinity([term(sel(notin("service", "securityscan", "value2")), "region")])),
     list, None, AFF),
    ("existing anti-affinity respected when pod has none", lambda: pod(POD_LABEL),
     lambda: [pod(POD_LABEL, "node1", aff=affinity(None, [term(SVC_IN, "zone")]))], None, EXIST),
    ("existing anti-affinity not matching -> Skip", lambda: pod(POD_LABEL),
     lambda: [pod(POD_LABEL, "node1",
                  aff=affinity(None, [term(sel(notin("service", "securityscan", "value2")), "zone")]))],
     SKIP, None),
    ("incoming anti-affinity violated, symmetry satisfied", lambda: pod(POD_LABEL, aff=affinity(
        None, [term(sel(exists("service")), "region"), term(sel(exists("security")), "region")])),
     lambda: [pod(POD_LABEL2, "node1", aff=affinity(None, [term(sel(exists("security")), "zone")]))], None, ANTI),
    ("symmetry a1", lambda: pod(POD_LABEL, aff=affinity(
        None, [term(sel(exists("service")), "zone"), term(sel(exists("security")), "zone")])),
     lambda: [pod(POD_LABEL2, "node1", aff=affinity(None, [term(sel(exists("security")), "zone")]))], None, ANTI),
    ("symmetry a2", lambda: pod(POD_LABEL2, aff=affinity(None, [term(sel(exists("security")), "zone")])),
     lambda: [pod(POD_LABEL, "node1", aff=affinity(None, [term(sel(exists("service")), "zone"),
                                                          term(sel(exists("security")), "zone")]))], None, EXIST),
    ("symmetry b1", lambda: pod({"abc": "", "xyz": ""}, aff=affinity(
        None, [term(sel(exists("abc")), "zone"), term(sel(exists("def")), "zone")])),
     lambda: [pod({"def": "", "xyz": ""}, "node1", aff=affinity(
         None, [term(sel(exists("abc")), "zone"), term(sel(exists("def")), "zone")]))], None, ANTI),
    ("symmetry b2", lambda: pod({"def": "", "xyz": ""}, aff=affinity(
        None, [term(sel(exists("abc")), "zone"), term(sel(exists("def")), "zone")])),
     lambda: [pod({"abc": "", "xyz": ""}, "node1", aff=affinity(
         None, [term(sel(exists("abc")), "zone"), term(sel(exists("def")), "zone")]))], None, ANTI),
    ("invalid affinity label value fails PreFilter", lambda: pod(POD_LABEL, aff=affinity([
        term(sel(in_("service", "{{.bad-value.}}")), "region"),
        term(sel(in_("service", "antivirusscan", "value2")), "node")])),
     list, Status.unresolvable(BAD), None),
    ("invalid value in the second term fails PreFilter", lambda: pod(POD_LABEL, aff=affinity([
        term(sel(in_("service", "foo")), "region"), term(sel(in_("service", "{{.bad-value.}}")), "node")])),
     list, Status.unresolvable(BAD), None),
    ("affinity with NamespaceSelector", lambda: pod(POD_LABEL2, aff=affinity([_ns_term("region")], [])),
     lambda: [pod(POD_LABEL, "node1", ns="subteam1.team1")], None, None),
    ("affinity with non-matching NamespaceSelector", lambda: pod(POD_LABEL2, aff=affinity([_ns_term("region")], [])),
     lambda: [pod(POD_LABEL, "node1", ns="subteam1.team2")], None, AFF),
    ("anti-affinity with matching NamespaceSelector",
     lambda: pod(POD_LABEL2, ns="subteam1.team1", aff=affinity([], [_ns_term("zone")])),
     lambda: [pod(POD_LABEL, "node1", ns="subteam2.team1")], None, ANTI),
    ("anti-affinity with match-all NamespaceSelector",
     lambda: pod(POD_LABEL2, ns="subteam1.team1", aff=affinity([], [term(SVC_IN, "zone", ns_selector={})])),
     lambda: [pod(POD_LABEL, "node1", ns="subteam2.team1")], None, ANTI),
    ("anti-affinity with non-matching NamespaceSelector",
     lambda: pod(POD_LABEL2, ns="subteam1.team1", aff=affinity([], [_ns_term("zone")])),
     lambda: [pod(POD_LABEL, "node1", ns="subteam1.team2")], None, None),
]


@pytest.mark.parametrize("name,mk_pod,mk_pods,want_pre,want_filter", SINGLE, ids=[c[0] for c in SINGLE])
def test_required_affinity_single_node(name, mk_pod, mk_pods, want_pre, want_filter):
    pods = mk_pods() if callable(mk_pods) else mk_pods
    table, pl = setup([node("node1", NODE1)], pods)
    pre, filt = prefilter_filter(pl, table, mk_pod())
    assert pre == want_pre or (pre is None and want_pre is None)
    if want_pre is None:
        assert filt == [want_filter]


# ---- TestRequiredAffinityMultipleNodes ---------------------------------------------------------
RG_CHINA = {"region": "China"}
RG_CHINA_AZ1 = {"region": "China", "az": "az1"}
RG_INDIA = {"region": "India"}


def _abc(name, region="r1", zone="z1"):
    return node(name, {"region": region, "zone": zone, "hostname": name})


MULTI = [
    ("nodes sharing the topology value of a matching pod pass",
     lambda: pod(aff=affinity([term(sel(in_("foo", "bar")), "region")])),
     lambda: [pod({"foo": "bar"}, "node1")],
     lambda: [node("node1", RG_CHINA), node("node2", RG_CHINA_AZ1), node("node3", RG_INDIA)],
     None, [None, None, AFF]),
    ("first pod of a collection is not blocked",
     lambda: pod({"foo": "bar", "service": "securityscan"},
                 aff=affinity([term(sel(in_("foo", "bar")), "zone"),
                               term(sel(in_("service", "securityscan")), "zone")])),
     lambda: [pod({"foo": "bar"}, "nodeA")],
     lambda: [node("nodeA", {"zone": "az1", "hostname": "h1"}), node("nodeB", {"zone": "az2", "hostname": "h2"})],
     None, [None, None]),
    ("first pod of a collection needs the topology keys",
     lambda: pod({"foo": "bar", "service": "securityscan"},
                 aff=affinity([term(sel(in_("foo", "bar")), "zone"),
                               term(sel(in_("service", "securityscan")), "zone")])),
     lambda: [pod({"foo": "bar"}, "nodeA")],
     lambda: [node("nodeA", {"zoneLabel": "az1", "hostname": "h1"}),
              node("nodeB", {"zoneLabel": "az2", "hostname": "h2"})],
     None, [AFF, AFF]),
    ("anti-affinity blocks the whole topology domain",
     lambda: pod(aff=affinity(None, [term(sel(in_("foo", "abc")), "region")])),
     lambda: [pod({"foo": "abc"}, "nodeA")],
     lambda: [node("nodeA", {"region": "r1", "hostname": "nodeA"}),
              node("nodeB", {"region": "r1", "hostname": "nodeB"})],
     None, [ANTI, ANTI]),
    ("anti-affinity matches when any term matches",
     lambda: pod(aff=affinity(None, [term(sel(in_("foo", "abc")), "region"),
                                     term(sel(in_("service", "securityscan")), "zone")])),
     lambda: [pod({"foo": "abc", "service": "securityscan"}, "nodeA")],
     lambda: [_abc("nodeA", "r1", "z1"), _abc("nodeB", "r1", "z2")],
     None, [ANTI, ANTI]),
    ("anti-affinity: other region passes",
     lambda: pod(aff=affinity(None, [term(sel(in_("foo", "abc")), "region")])),
     lambda: [pod({"foo": "abc"}, "nodeA")],
     lambda: [node("nodeA", RG_CHINA), node("nodeB", RG_CHINA_AZ1), node("nodeC", RG_INDIA)],
     None, [ANTI, ANTI, None]),
    ("anti-affinity and an existing pod's term in another namespace",
     lambda: pod({"foo": "123"}, ns="NS1", aff=affinity(None, [term(sel(in_("foo", "bar")), "region")])),
     lambda: [pod({"foo": "bar"}, "nodeA", ns="NS1"),
              pod(None, "nodeC", ns="NS2", aff=affinity(None, [term(sel(in_("foo", "123")), "region")]))],
     lambda: [node("nodeA", RG_CHINA), node("nodeB", RG_CHINA_AZ1), node("nodeC", RG_INDIA)],
     None, [ANTI, ANTI, None]),
    ("existing pod's term with a topology key no node has -> Skip",
     lambda: pod({"foo": ""}),
     lambda: [pod(None, "nodeA", aff=affinity(None, [term(sel(exists("foo")), "invalid-node-label")]))],
     lambda: [_abc("nodeA"), _abc("nodeB")],
     SKIP, None),
    ("incoming pod's term: selector matches but no node has the key",
     lambda: pod(aff=affinity(None, [term(sel(exists("foo")), "invalid-node-label")])),
     lambda: [pod({"foo": ""}, "nodeA")],
     lambda: [_abc("nodeA"), _abc("nodeB")],
     None, [None, None]),
    ("existing pods' terms violated on all nodes",
     lambda: pod({"foo": "", "bar": ""}),
     lambda: [pod(None, "nodeA", aff=affinity(None, [term(sel(exists("foo")), "zone")])),
              pod(None, "nodeA", aff=affinity(None, [term(sel(exists("bar")), "region")]))],
     lambda: [_abc("nodeA", "r1", "z1"), _abc("nodeB", "r1", "z2")],
     None, [EXIST, EXIST]),
    ("incoming pod violates at least one anti-affinity term everywhere",
     lambda: pod(aff=affinity(None, [term(sel(exists("foo")), "zone"), term(sel(exists("bar")), "region")])),
     lambda: [pod({"foo": ""}, "nodeA"), pod({"bar": ""}, "nodeB")],
     lambda: [_abc("nodeA", "r1", "z1"), _abc("nodeB", "r1", "z2")],
     None, [ANTI, ANTI]),
    ("existing pod: selector and topology key must both match (one invalid key)",
     lambda: pod({"foo": "", "bar": ""}),
     lambda: [pod(None, "nodeA", aff=affinity(None, [term(sel(exists("foo")), "invalid-node-label"),
                                                     term(sel(exists("bar")), "zone")]))],
     lambda: [_abc("nodeA", "r1", "z1"), _abc("nodeB", "r1", "z2")],
     None, [EXIST, None]),
    ("incoming pod: selector and topology key must both match (one invalid key)",
     lambda: pod(aff=affinity(None, [term(sel(exists("foo")), "invalid-node-label"),
                                     term(sel(exists("bar")), "zone")])),
     lambda: [pod({"foo": "", "bar": ""}, "nodeA", name="podA")],
     lambda: [_abc("nodeA", "r1", "z1"), _abc("nodeB", "r1", "z2")],
     None, [ANTI, None]),
    ("existing pod: both terms valid",
     lambda: pod({"foo": "", "bar": ""}),
     lambda: [pod(None, "nodeA",
                  aff=affinity(None, [term(sel(exists("foo")), "region"), term(sel(exists("bar")), "zone")]))],
     lambda: [_abc("nodeA", "r1", "z1"), _abc("nodeB", "r1", "z2")],
     None, [EXIST, EXIST]),
    ("incoming pod: both terms valid",
     lambda: pod(aff=affinity(None, [term(sel(exists("foo")), "region"), term(sel(exists("bar")), "zone")])),
     lambda: [pod({"foo": "", "bar": ""}, "nodeA")],
     lambda: [_abc("nodeA", "r1", "z1"), _abc("nodeB", "r1", "z2")],
     None, [ANTI, ANTI]),
    ("existing pods on nodeA and nodeB each have a matching term: only nodeC",
     lambda: pod({"foo": "", "bar": ""}),
     lambda: [pod(None, "nodeA",
                  aff=affinity(None, [term(sel(exists("foo")), "zone"), term(sel(exists("labelA")), "zone")])),
              pod(None, "nodeB",
                  aff=affinity(None, [term(sel(exists("bar")), "zone"), term(sel(exists("labelB")), "zone")]))],
     lambda: [_abc("nodeA", "r1", "z1"), _abc("nodeB", "r1", "z2"), _abc("nodeC", "r1", "z3")],
     None, [EXIST, EXIST, None]),
    ("affinity: all terms matched by one pod, then all keys",
     lambda: pod(aff=affinity([term(sel(exists("foo")), "region"), term(sel(exists("bar")), "zone")])),
     lambda: [pod({"foo": "", "bar": ""}, "nodeA", name="pod1")],
     lambda: [_abc("nodeA", "r1", "z1"), _abc("nodeB", "r1", "z1")],
     None, [None, None]),
    ("affinity: terms matched by different pods do not count",
     lambda: pod(aff=affinity([term(sel(exists("foo")), "region"), term(sel(exists("bar")), "zone")])),
     lambda: [pod({"foo": ""}, "nodeA", name="pod1"), pod({"bar": ""}, "nodeB", name="pod2")],
     lambda: [_abc("nodeA", "r1", "z1"), _abc("nodeB", "r1", "z2")],
     None, [AFF, AFF]),
]


@pytest.mark.parametrize("name,mk_pod,mk_pods,mk_nodes,want_pre,want", MULTI, ids=[c[0] for c in MULTI])
def test_required_affinity_multiple_nodes(name, mk_pod, mk_pods, mk_nodes, want_pre, want):
    table, pl = setup(mk_nodes(), mk_pods())
    pre, filt = prefilter_filter(pl, table, mk_pod())
    assert pre == want_pre or (pre is None and want_pre is None)
    if want_pre is None:
        assert filt == want


# ---- TestPreferredAffinity ---------------------------------------------------------------------
AZ1, AZ2 = {"az": "az1"}, {"az": "az2"}
S1, S2 = {"security": "S1"}, {"security": "S2"}
STAY_S1_REGION = affinity(pref_aff=[wterm(5, sel(in_("security", "S1")), "region")])
STAY_S2_REGION = affinity(pref_aff=[wterm(6, sel(in_("security", "S2")), "region")])
AFFINITY3 = affinity(pref_aff=[wterm(8, sel(notin("security", "S1"), in_("security", "S2")), "region"),
                               wterm(2, sel(exists("security"), dne("wrongkey")), "region")])
HARD_AFFINITY = affinity([term(sel(in_("security", "S1", "value2")), "region"),
                          term(sel(exists("security"), dne("wrongkey")), "region")])
AWAY_S1_AZ = affinity(pref_anti=[wterm(5, sel(in_("security", "S1")), "az")])
AWAY_S2_AZ = affinity(pref_anti=[wterm(5, sel(in_("security", "S2")), "az")])
STAY_S1_REGION_AWAY_S2_AZ = affinity(pref_aff=[wterm(8, sel(in_("security", "S1")), "region")],
                                     pref_anti=[wterm(5, sel(in_("security", "S2")), "az")])
_NS_SEL = {"namespaces": ["subteam2.team2"], "ns_selector": sel(in_("team", "team1"))}
AFFINITY_NS_SELECTOR = affinity(pref_aff=[wterm(5, sel(in_("security", "S1")), "region", **_NS_SEL)])
ANTI_AFFINITY_NS_SELECTOR = affinity(pref_anti=[wterm(5, sel(in_("security", "S1")), "region", **_NS_SEL)])
INVALID_AFFINITY = affinity(pref_aff=[wterm(8, sel(in_("security", "{{.bad-value.}}")), "region")])
INVALID_ANTI_AFFINITY = affinity(pref_anti=[wterm(5, sel(in_("security", "{{.bad-value.}}")), "az")])


def _n(*labels):
    return lambda: [node(f"node{i + 1}", lb) for i, lb in enumerate(labels)]


def _p(*specs):
    """specs: (node, labels, affinity[, namespace])"""
    return lambda: [pod(s[1], s[0], aff=s[2], ns=s[3] if len(s) > 3 else "default") for s in specs]


PREFERRED = [
    # name, pod, pods, nodes, ignorePreferredTermsOfExistingPods, want status, want scores
    ("affinity nil: Skip", lambda: pod(S1), _p(), _n(RG_CHINA, RG_INDIA, AZ1), False, SKIP, None),
    ("affinity: matching pod in the topology scores high", lambda: pod(S1, aff=STAY_S1_REGION),
     _p(("node1", S1, None), ("node2", S2, None), ("node3", S1, None)), _n(RG_CHINA, RG_INDIA, AZ1), False, None,
     [100, 0, 0]),
    ("affinity: same topology value shares the score", lambda: pod(aff=STAY_S1_REGION),
     _p(("node1", S1, None)), _n(RG_CHINA, RG_CHINA_AZ1, RG_INDIA), False, None, [100, 100, 0]),
    ("affinity: region with more matches scores high", lambda: pod(S1, aff=STAY_S2_REGION),
     _p(("node1", S2, None), ("node1", S2, None), ("node2", S2, None), ("node3", S2, None), ("node4", S2, None),
        ("node5", S2, None)), _n(RG_CHINA, RG_INDIA, RG_CHINA, RG_CHINA, RG_INDIA), False, None, [100, 0, 100, 100, 0]),
    ("affinity: operators and partial matches", lambda: pod(S1, aff=AFFINITY3),
     _p(("node1", S1, None), ("node2", S2, None), ("node3", S1, None)), _n(RG_CHINA, RG_INDIA, AZ1), False, None,
     [20, 100, 0]),
    ("affinity symmetry: preferred terms of existing pods", lambda: pod(S2),
     _p(("node1", S1, STAY_S1_REGION), ("node2", S2, STAY_S2_REGION)), _n(RG_CHINA, RG_INDIA, AZ1), False, None,
     [0, 100, 0]),
    ("affinity symmetry with namespace selector", lambda: pod(S1, ns="subteam1.team1"),
     _p(("node1", S1, AFFINITY_NS_SELECTOR), ("node2", S2, STAY_S2_REGION)), _n(RG_CHINA, RG_INDIA, AZ1), False,
     None, [100, 0, 0]),
    ("anti-affinity symmetry with namespace selector", lambda: pod(S1, ns="subteam1.team1"),
     _p(("node1", S1, ANTI_AFFINITY_NS_SELECTOR), ("node2", S2, STAY_S2_REGION)), _n(RG_CHINA, RG_INDIA, AZ1), False,
     None, [0, 100, 100]),
    ("affinity symmetry: required terms of existing pods", lambda: pod(S1),
     _p(("node1", S1, HARD_AFFINITY), ("node2", S2, HARD_AFFINITY)), _n(RG_CHINA, RG_INDIA, AZ1), False, None,
     [100, 100, 0]),
    ("anti-affinity: non-matching node scores high", lambda: pod(S1, aff=AWAY_S1_AZ),
     _p(("node1", S1, None), ("node2", S2, None)), _n(AZ1, RG_CHINA), False, None, [0, 100]),
    ("anti-affinity: node without the key scores high", lambda: pod(S1, aff=AWAY_S1_AZ),
     _p(("node1", S1, None), ("node2", S1, None)), _n(AZ1, RG_CHINA), False, None, [0, 100]),
    ("anti-affinity: more matching pods score lower", lambda: pod(S1, aff=AWAY_S1_AZ),
     _p(("node1", S1, None), ("node1", S1, None), ("node2", S2, None)), _n(AZ1, RG_INDIA), False, None, [0, 100]),
    ("anti-affinity symmetry", lambda: pod(S2),
     _p(("node1", S1, AWAY_S2_AZ), ("node2", S2, AWAY_S1_AZ)), _n(AZ1, AZ2), False, None, [0, 100]),
    ("affinity and anti-affinity", lambda: pod(S1, aff=STAY_S1_REGION_AWAY_S2_AZ),
     _p(("node1", S1, None), ("node2", S1, None)), _n(RG_CHINA, AZ1), False, None, [100, 0]),
    ("affinity and anti-affinity, same labels", lambda: pod(S1, aff=STAY_S1_REGION_AWAY_S2_AZ),
     _p(("node1", S1, None), ("node1", S1, None), ("node2", S1, None), ("node3", S1, None), ("node3", S1, None),
        ("node4", S1, None), ("node5", S1, None)), _n(RG_CHINA_AZ1, RG_INDIA, RG_CHINA, RG_CHINA, RG_INDIA), False,
     None, [100, 0, 100, 100, 0]),
    ("affinity, anti-affinity and symmetry", lambda: pod(S1, aff=STAY_S1_REGION_AWAY_S2_AZ),
     _p(("node1", S1, None), ("node2", S2, None), ("node3", None, STAY_S1_REGION_AWAY_S2_AZ),
        ("node4", None, AWAY_S1_AZ)), _n(RG_CHINA, AZ1, RG_INDIA, AZ2), False, None, [100, 0, 100, 0]),
    ("partial nodes of a topology without pods with affinity", lambda: pod(S1),
     _p(("node1", S1, None), ("node2", None, STAY_S1_REGION_AWAY_S2_AZ)), _n(RG_CHINA, RG_CHINA), False, None,
     [0, 0]),
    ("invalid affinity fails PreScore", lambda: pod(aff=INVALID_AFFINITY), _p(), _n(RG_CHINA, RG_CHINA), False,
     Status.error('Invalid value: "{{.bad-value.}}"'), None),
    ("invalid anti-affinity fails PreScore", lambda: pod(aff=INVALID_ANTI_AFFINITY), _p(), _n(RG_CHINA, RG_CHINA),
     False, Status.error('Invalid value: "{{.bad-value.}}"'), None),
    ("affinity with pods matching NamespaceSelector", lambda: pod(S1, ns="subteam1.team1", aff=AFFINITY_NS_SELECTOR),
     _p(("node1", S1, None, "subteam1.team1"), ("node1", S1, None, "subteam1.team1"),
        ("node1", S1, None, "subteam1.team2"), ("node2", S1, None, "subteam2.team1")), _n(RG_CHINA, RG_INDIA), False,
     None, [100, 0]),
    ("affinity with pods matching NamespaceSelector and Namespaces",
     lambda: pod(S1, ns="subteam1.team1", aff=AFFINITY_NS_SELECTOR),
     _p(("node1", S1, None, "subteam1.team1"), ("node1", S1, None, "subteam1.team1"),
        ("node1", S1, None, "subteam2.team2"), ("node2", S1, None, "subteam2.team1")), _n(RG_CHINA, RG_INDIA), False,
     None, [100, 0]),
    ("anti-affinity with pods matching NamespaceSelector",
     lambda: pod(S1, ns="subteam1.team1", aff=ANTI_AFFINITY_NS_SELECTOR),
     _p(("node1", S1, None, "subteam1.team1"), ("node1", S1, None, "subteam1.team1"),
        ("node1", S1, None, "subteam1.team2"), ("node2", S1, None, "subteam2.team1")), _n(RG_CHINA, RG_INDIA), False,
     None, [0, 100]),
    ("anti-affinity with pods matching NamespaceSelector and Namespaces",
     lambda: pod(S1, ns="subteam1.team1", aff=ANTI_AFFINITY_NS_SELECTOR),
     _p(("node1", S1, None, "subteam1.team1"), ("node1", S1, None, "subteam1.team1"),
        ("node1", S1, None, "subteam2.team2"), ("node2", S1, None, "subteam2.team1")), _n(RG_CHINA, RG_INDIA), False,
     None, [0, 100]),
    ("ignore preferred terms of existing pods", lambda: pod(S2),
     _p(("node1", S1, STAY_S1_REGION_AWAY_S2_AZ), ("node2", S2, STAY_S2_REGION)), _n(RG_CHINA, RG_INDIA), True,
     SKIP, None),
    ("do not ignore preferred terms of existing pods", lambda: pod(S2),
     _p(("node1", S1, STAY_S1_REGION_AWAY_S2_AZ), ("node2", S2, STAY_S2_REGION)), _n(RG_CHINA, RG_INDIA), False,
     None, [0, 100]),
    ("no nodes to score", lambda: pod(S2), _p(), _n(), False, SKIP, None),
]


@pytest.mark.parametrize("name,mk_pod,mk_pods,mk_nodes,ignore,want_status,want", PREFERRED,
                         ids=[c[0] for c in PREFERRED])
def test_preferred_affinity(name, mk_pod, mk_pods, mk_nodes, ignore, want_status, want):
    table, pl = setup(mk_nodes(), mk_pods(), {"hardPodAffinityWeight": 1, "ignorePreferredTermsOfExistingPods": ignore})
    status, scores = prescore_score(pl, table, mk_pod())
    if want_status is None:
        assert status is None and scores == want
    else:
        assert status.code == want_status.code and want_status.message() in status.message()


# ---- TestPreferredAffinityWithHardPodAffinitySymmetricWeight ------------------------------------
HARD_POD_AFFINITY = affinity([term(sel(in_("service", "S1")), "region", namespaces=["default", "subteam2.team2"],
                                   ns_selector=sel(in_("team", "team1")))])
HARD = [
    ("default weight", "default", 1, None, [100, 100, 0]),
    ("zero weight", "default", 0, SKIP, None),
    ("no matching namespace", "subteam1.team2", 1, SKIP, None),
    ("matching NamespaceSelector", "subteam1.team1", 1, None, [100, 100, 0]),
    ("matching Namespaces", "subteam2.team2", 1, None, [100, 100, 0]),
]


@pytest.mark.parametrize("name,ns,weight,want_status,want", HARD, ids=[c[0] for c in HARD])
def test_preferred_affinity_with_hard_pod_affinity_symmetric_weight(name, ns, weight, want_status, want):
    table, pl = setup(_n(RG_CHINA, RG_INDIA, AZ1)(),
                      _p(("node1", None, HARD_POD_AFFINITY), ("node2", None, HARD_POD_AFFINITY))(),
                      {"hardPodAffinityWeight": weight})
    status, scores = prescore_score(pl, table, pod({"service": "S1"}, ns=ns))
    assert status == want_status or (status is None and want_status is None)
    assert scores == want


# ---- args, parsing details, normalisation, index ------------------------------------------------
@pytest.mark.parametrize("args,fragment", [
    ({"hardPodAffinityWeight": 101}, "hardPodAffinityWeight"),
    ({"hardPodAffinityWeight": -1}, "not in valid range [0, 100]"),
    ({"hardPodAffinityWeight": "5"}, "hardPodAffinityWeight"),
    ({"ignorePreferredTermsOfExistingPods": "yes"}, "ignorePreferredTermsOfExistingPods"),
    ({"hardPodAffinityWeigth": 1}, "unknown field"),
])
def test_invalid_args_raise_config_error(args, fragment):
    with pytest.raises(ConfigError, match=None) as e:
        setup([node("n1", {})], [], args)
    assert fragment in str(e.value)


def test_args_defaults_and_bounds():
    for args, want in (({}, (1, False)), ({"hardPodAffinityWeight": 0}, (0, False)),
                       ({"hardPodAffinityWeight": 100, "ignorePreferredTermsOfExistingPods": True}, (100, True))):
        _, pl = setup([node("n1", {})], [], args)
        assert (pl.hard_weight, pl.ignore_existing_preferred) == want


def test_hard_pod_affinity_weight_scales_symmetric_score():
    # node1: existing pod's required term (weight w); node2: incoming preferred term weight 3
    nodes = [node("node1", {"zone": "a"}), node("node2", {"zone": "b"}), node("node3", {"zone": "c"})]
    pods = [pod({"app": "x"}, "node1", aff=affinity([term(sel(in_("app", "y")), "zone")])),
            pod({"app": "z"}, "node2")]
    incoming = pod({"app": "y"}, aff=affinity(pref_aff=[wterm(3, sel(in_("app", "z")), "zone")]))
    for w, want in ((1, [33, 100, 0]), (6, [100, 50, 0])):
        table, pl = setup(nodes, pods, {"hardPodAffinityWeight": w})
        assert prescore_score(pl, table, incoming)[1] == want


def test_normalize_uses_float_division_then_truncation():
    # 100 * (29/100) is 28.999999999999996 in float64: kube's int64() truncates it to 28
    assert normalize(np.array([0, 29, 100], dtype=np.int64)).tolist() == [0, 28, 100]
    assert normalize(np.array([-5, 0, 5], dtype=np.int64)).tolist() == [0, 50, 100]
    assert normalize(np.array([7, 7], dtype=np.int64)).tolist() == [0, 0]


def test_match_label_keys_and_mismatch_label_keys_merge_into_selector():
    nodes = [node("n1", {"zone": "a"}), node("n2", {"zone": "b"}), node("n3", {"zone": "c"})]
    pods = [pod({"app": "web", "rev": "1"}, "n1"), pod({"app": "web", "rev": "2"}, "n2")]
    table, pl = setup(nodes, pods)
    same_rev = pod({"app": "web", "rev": "2"}, aff=affinity([term(sel(in_("app", "web")), "zone",
                                                                   matchLabelKeys=["rev"])]))
    assert prefilter_filter(pl, table, same_rev)[1] == [AFF, None, AFF]
    other_rev = pod({"app": "web", "rev": "2"}, aff=affinity(None, [term(sel(in_("app", "web")), "zone",
                                                                         mismatchLabelKeys=["rev"])]))
    assert prefilter_filter(pl, table, other_rev)[1] == [ANTI, None, None]
    # a key the pod does not have is ignored
    no_key = pod({"app": "web"}, aff=affinity([term(sel(in_("app", "web")), "zone", matchLabelKeys=["rev"])]))
    assert prefilter_filter(pl, table, no_key)[1] == [None, None, AFF]


def test_namespace_defaults_and_metadata_name_label():
    nodes = [node("n1", {"zone": "a"}), node("n2", {"zone": "b"})]
    pods = [pod({"app": "db"}, "n1", ns="prod"), pod({"app": "db"}, "n2", ns="dev")]
    table, pl = setup(nodes, pods)
    wl = pl.handle.scheduler.workloads = Workloads()
    wl.assume_namespaces(["prod", "dev", "x"])        # what `caldera schedule` does for the pods' namespaces
    # no namespaces, no namespaceSelector: the pod's own namespace only
    assert prefilter_filter(pl, table, pod(ns="dev", aff=affinity([term(sel(in_("app", "db")), "zone")])))[1] \
        == [AFF, None]
    # namespaceSelector {}: all namespaces
    assert prefilter_filter(pl, table, pod(ns="x", aff=affinity([term(sel(in_("app", "db")), "zone",
                                                                       ns_selector={})])))[1] == [None, None]
    # a selector on user labels matches no namespace without labels
    p = pod(ns="x", aff=affinity(None, [term(sel(in_("app", "db")), "zone", ns_selector=sel(in_("env", "prod")))]))
    assert prefilter_filter(pl, table, p)[1] == [None, None]
    # every namespace carries kubernetes.io/metadata.name=<name>
    p = pod(ns="x", aff=affinity(None, [term(sel(in_("app", "db")), "zone",
                                             ns_selector=sel(in_("kubernetes.io/metadata.name", "prod")))]))
    assert prefilter_filter(pl, table, p)[1] == [ANTI, None]
    # kube's NamespaceLister: a namespace it does not know matches no non-empty selector
    wl.remove("Namespace", "", "prod")
    assert prefilter_filter(pl, table, p)[1] == [None, None]
    # a nil labelSelector matches no pod: affinity can never be met by others
    p = pod({"app": "db"}, ns="prod", aff=affinity([{"topologyKey": "zone"}]))
    assert prefilter_filter(pl, table, p)[1] == [AFF, AFF]


def test_affinity_free_pods_skip_without_building_the_index():
    table, pl = setup([node("n1", {"zone": "a"})], [pod({"app": "a"}, "n1")])
    assert prefilter_filter(pl, table, pod({"app": "b"}))[0] == SKIP
    assert prescore_score(pl, table, pod({"app": "b"}))[0] == SKIP
    assert "interpodaffinity.index" not in table._shared


def test_index_follows_table_changes_and_rebuilds():
    nodes = [node("n1", {"zone": "a"}), node("n2", {"zone": "b"})]
    table, pl = setup(nodes, [])
    incoming = pod({"app": "web"}, aff=affinity(None, [term(sel(in_("app", "db")), "zone")]))
    assert prefilter_filter(pl, table, incoming)[1] == [None, None]
    db = pod({"app": "db"}, "n1", aff=affinity(None, [term(sel(in_("app", "web")), "zone")]))
    table.add_pod(db, 0)
    assert prefilter_filter(pl, table, incoming)[1] == [ANTI, None]
    assert prefilter_filter(pl, table, pod({"app": "web"}))[1] == [EXIST, None]
    table.remove_pod(db.key)
    assert prefilter_filter(pl, table, incoming)[1] == [None, None]
    assert prefilter_filter(pl, table, pod({"app": "web"}))[0] == SKIP
    table.add_pod(db, 1)
    table.shared("interpodaffinity.index", None).pos = -1   # as if the journal moved past the index: rebuild
    assert prefilter_filter(pl, table, incoming)[1] == [None, ANTI]
    table.remove_node("n1")            # rows renumber: n2 is now row 0
    assert prefilter_filter(pl, table, incoming)[1] == [ANTI]


# ---- end to end through the default profile ------------------------------------------------------
def _zone_cluster():
    nodes = [make_node(f"n{i}", labels={"kubernetes.io/hostname": f"n{i}", "zone": "a" if i < 3 else "b"})
             for i in range(6)]
    return make_table(nodes, [make_pod("db", labels={"app": "db"}, node="n4", cpu="100m")])


def test_end_to_end_default_profile():
    table = _zone_cluster()
    sched = make_scheduler(table, default=True)
    web = affinity([term(sel(in_("app", "db")), "zone")], [term(sel(in_("app", "web")), "kubernetes.io/hostname")])
    placed = []
    for i in range(3):   # required affinity to zone b, anti-affinity to each other per host
        att = sched.schedule_one(make_pod(f"web{i}", labels={"app": "web"}, cpu="100m", affinity=web))
        assert att.scheduled, att.message
        placed.append(att.node)
    assert sorted(placed) == ["n3", "n4", "n5"]
    att = sched.schedule_one(make_pod("web3", labels={"app": "web"}, cpu="100m", affinity=web))
    assert not att.scheduled
    assert att.message.startswith("0/6 nodes are available: 3 node(s) didn't match pod affinity rules, "
                                  "3 node(s) didn't match pod anti-affinity rules.")
    assert "InterPodAffinity" in att.unschedulable_plugins
    # a preferred anti-affinity pod goes to zone a, away from the db
    att = sched.schedule_one(make_pod("cache", labels={"app": "cache"}, cpu="100m",
                                      affinity=affinity(pref_anti=[wterm(100, sel(in_("app", "db")), "zone")])))
    assert att.scheduled and att.node in ("n0", "n1", "n2")


def test_end_to_end_first_pod_of_self_affine_group():
    table = _zone_cluster()
    sched = make_scheduler(table, default=True)
    grp = affinity([term(sel(in_("app", "grp")), "zone")])
    first = sched.schedule_one(make_pod("g0", labels={"app": "grp"}, cpu="100m", affinity=grp))
    assert first.scheduled
    zone = table.nodes[table.index[first.node]].labels["zone"]
    for i in range(1, 4):
        att = sched.schedule_one(make_pod(f"g{i}", labels={"app": "grp"}, cpu="100m", affinity=grp))
        assert att.scheduled and table.nodes[table.index[att.node]].labels["zone"] == zone
    # a pod that does not match its own term cannot start a group
    att = sched.schedule_one(make_pod("lone", labels={"app": "x"}, cpu="100m",
                                      affinity=affinity([term(sel(in_("app", "nothing")), "zone")])))
    assert not att.scheduled
    assert att.message.startswith("0/6 nodes are available: 6 node(s) didn't match pod affinity rules.")


def test_ignore_preferred_terms_of_existing_pods_only_skips_pods_without_preferred_terms():
    # kube only Skips PreScore; once the incoming pod has preferred terms, existing pods' terms count
    nodes = [node("node1", RG_CHINA), node("node2", RG_INDIA), node("node3", AZ1)]
    pods = [pod(S1, "node1", aff=STAY_S2_REGION), pod(S2, "node2")]
    incoming = pod(S2, aff=affinity(pref_aff=[wterm(3, sel(in_("security", "S2")), "region")]))
    table, pl = setup(nodes, pods, {"ignorePreferredTermsOfExistingPods": True})
    assert prescore_score(pl, table, incoming)[1] == [100, 50, 0]     # raw 6 (existing pod's term), 3, 0
    assert prescore_score(pl, table, pod(S2, aff=HARD_AFFINITY))[0] == SKIP
