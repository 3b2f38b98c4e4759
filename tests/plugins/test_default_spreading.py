"""PodTopologySpread's default constraints with real pod owners (api/workloads.py), ported from
kube v1.35.4:
- pkg/scheduler/framework/plugins/helper/spread_test.go: TestGetPodServices, TestDefaultSelector;
- podtopologyspread/filtering_test.go TestPreFilterState: "default constraints and a service",
  "... a service that doesn't match", "... a service, but pod has constraints", "default soft
  constraints and a service";
- podtopologyspread/scoring_test.go TestPreScoreSkip "default constraints and a replicaset that
  doesn't match"; TestPreScoreStateEmptyNodes "system default constraints and a replicaset",
  "default constraints and a replicaset", "default constraints and a replicaset, but pod has
  constraints"; TestPodTopologySpreadScore "system defaulting, nodes don't have zone, pods match
  service".
"""
from __future__ import annotations

import pytest

from caldera.api.selectors import LabelSelector, Requirement
from caldera.api.workloads import Owner, Workloads
from caldera.errors import InputError
from caldera.framework.interface import CycleState
from caldera.plugins.podtopologyspread.common import DO_NOT_SCHEDULE, SCHEDULE_ANYWAY, default_selector
from caldera.plugins.podtopologyspread.plugin import PREFILTER_KEY

from ..builders import make_pod, make_scheduler, make_table, run_score
from .test_podtopologyspread import FOO, HOST, HOST4, P4321, PTS, D, H, N, four_zone_nodes, sc

ZONE = "topology.kubernetes.io/zone"
NS = "test"


def owned(name, kind, ns="default", api="apps/v1", **labels):
    """A pod whose controller is `kind`/`name` (st.MakePod().OwnerReference)."""
    p = make_pod("p", ns, labels=labels)
    p.raw["metadata"]["ownerReferences"] = [{"apiVersion": api, "kind": kind, "name": name, "uid": "u",
                                             "controller": True}]
    return p


def service(name, selector, ns="default"):
    spec = {} if selector is None else {"selector": selector}
    return Owner("Service", {"metadata": {"name": name, "namespace": ns}, "spec": spec})


def rs(name, selector, ns="default", kind="ReplicaSet"):
    return Owner(kind, {"metadata": {"name": name, "namespace": ns}, "spec": {"selector": selector}})


def rc(name, selector, ns="default"):
    return Owner("ReplicationController", {"metadata": {"name": name, "namespace": ns}, "spec": {"selector": selector}})


def workloads(*objs) -> Workloads:
    wl = Workloads()
    for o in objs:
        wl.add(o)
    return wl


def as_set(sel: LabelSelector) -> set:
    return {(r.key, r.op, r.values) for r in sel.requirements}


def eq(**labels) -> set:
    return {(k, "In", (v,)) for k, v in labels.items()}


# ---- helper/spread_test.go ------------------------------------------------------------------------
def test_get_pod_services():
    svcs = [service(f"service-{i}", {"app": f"test-{i}"}, NS) for i in range(3)]
    wl = workloads(*svcs)
    for i, want in enumerate([[svcs[0]], [svcs[1]], [svcs[2]], [], []]):
        p = make_pod(f"test-pod-{i}", NS, labels={"app": f"test-{i}", "label": f"label-{i}"})
        assert wl.pod_services(p) == want


def test_services_with_nil_selector_select_nothing_and_empty_selects_all():
    p = make_pod("p", labels={"app": "a"})
    wl = workloads(service("nil", None), service("empty", {}))
    assert [s.name for s in wl.pod_services(p)] == ["empty"]
    assert default_selector(p, wl).empty        # it selects the pod, and adds no requirement


SVC = service("test-service", {"podLabelKey": "podLabelVal"}, NS)
DEFAULT_SELECTOR = [
    ("DefaultSelector for default case", None, (), set()),
    ("DefaultSelector for no OwnerReference pod case", None, (SVC,), eq(podLabelKey="podLabelVal")),
    ("DefaultSelector for ReplicaSet OwnerReference pod case", ("test-replicaset", "ReplicaSet", "apps/v1"),
     (SVC, rs("test-replicaset", {"matchLabels": {"replicaSetLabelKey": "replicaSetLabelVal"}}, NS)),
     eq(podLabelKey="podLabelVal", replicaSetLabelKey="replicaSetLabelVal")),
    ("DefaultSelector for ReplicationController OwnerReference pod case",
     ("test-replicationcontroller", "ReplicationController", "v1"),
     (SVC, rc("test-replicationcontroller", {"replicationLabelKey": "replicationLabelVal"}, NS)),
     eq(podLabelKey="podLabelVal", replicationLabelKey="replicationLabelVal")),
    ("DefaultSelector for StatefulSet OwnerReference pod case", ("test-statefulset", "StatefulSet", "apps/v1"),
     (SVC, rs("test-statefulset", {"matchLabels": {"statefulSetLabelKey": "statefulSetLabelVal"}}, NS,
              kind="StatefulSet")),
     eq(podLabelKey="podLabelVal", statefulSetLabelKey="statefulSetLabelVal")),
]


@pytest.mark.parametrize("name,owner,objs,want", DEFAULT_SELECTOR, ids=[c[0] for c in DEFAULT_SELECTOR])
def test_default_selector(name, owner, objs, want):
    if owner is None:
        p = make_pod("test-pod", NS, labels={"podLabelKey": "podLabelVal"})
    else:
        p = owned(owner[0], owner[1], NS, owner[2], podLabelKey="podLabelVal")
    assert as_set(default_selector(p, workloads(*objs))) == want


def test_default_selector_needs_the_controller_ref_kind_group_and_namespace():
    obj = rs("r", {"matchLabels": {"a": "b"}})
    assert as_set(default_selector(owned("r", "ReplicaSet", x="y"), workloads(obj))) == eq(a="b")
    # wrong group/version, other namespace, not the controller: no selector from the owner
    assert default_selector(owned("r", "ReplicaSet", api="extensions/v1beta1"), workloads(obj)).empty
    assert default_selector(owned("r", "ReplicaSet", ns="other"), workloads(obj)).empty
    p = owned("r", "ReplicaSet")
    p.raw["metadata"]["ownerReferences"][0]["controller"] = False
    assert default_selector(p, workloads(obj)).empty
    # a ReplicaSet's expressions are kept as they are
    obj = rs("r", {"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["x"]}]})
    assert as_set(default_selector(owned("r", "ReplicaSet"), workloads(obj))) == {("tier", "NotIn", ("x",))}


def test_rc_selector_defaults_to_the_template_labels_and_apps_v1_requires_one():
    o = Owner("ReplicationController", {"metadata": {"name": "r"},
                                        "spec": {"template": {"metadata": {"labels": {"app": "x"}}}}})
    assert o.map_selector == {"app": "x"}
    with pytest.raises(InputError, match=r"spec\.selector"):
        Owner("ReplicaSet", {"metadata": {"name": "r"}, "spec": {}})


# ---- filtering_test.go TestPreFilterState (defaults) ----------------------------------------------
def prefilter(pod, args, objs, nodes=four_zone_nodes):
    s = make_scheduler(make_table(nodes(), []), {"preFilter": [PTS], "filter": [PTS]}, args={PTS: args})
    s.workloads = workloads(*objs)
    state = CycleState()
    _, st = s.default_framework.run_pre_filter(state, pod)
    return state, st, s.default_framework.plugin(PTS)


def hard(pl, pod):
    return [(c.max_skew, c.key, as_set(c.selector), c.min_domains) for c in pl._constraints(pod, DO_NOT_SCHEDULE)]


LIST3 = {"defaultingType": "List", "defaultConstraints": [
    sc(3, "node", H, None), sc(2, "node", D, None), sc(5, "rack", H, None)]}


def test_prefilter_default_constraints_and_a_service():
    p = make_pod("p", labels={"foo": "bar", "baz": "kar"})
    state, st, pl = prefilter(p, LIST3, [service("s", {"foo": "bar"})])
    assert st.is_success() and PTS not in state.skip_filter
    assert hard(pl, p) == [(3, "node", eq(foo="bar"), 1), (5, "rack", eq(foo="bar"), 1)]
    # no pods: every domain counts 0, the pod matches its own selector
    got = [(hc.key, hc.max_skew, hc.self_match, int(hc.domain_counts.sum()))
           for hc in state.get(PREFILTER_KEY).constraints]
    assert got == [("node", 3, 1, 0), ("rack", 5, 1, 0)]


def test_prefilter_default_constraints_and_a_service_that_does_not_match():
    state, st, _ = prefilter(make_pod("p", labels={"foo": "bar"}),
                          {"defaultingType": "List", "defaultConstraints": [sc(3, "node", H, None)]},
                          [service("s", {"baz": "kep"})])
    assert st.is_success() and PTS in state.skip_filter


def test_prefilter_default_constraints_and_a_service_but_pod_has_constraints():
    p = make_pod("p", labels={"foo": "bar", "baz": "tar"}, topology_spread=[
        sc(1, "zone", H, {"matchLabels": {"baz": "tar"}}), sc(2, "planet", D, {"matchLabels": {"fot": "rok"}})])
    state, _, pl = prefilter(p, {"defaultingType": "List", "defaultConstraints": [sc(2, "node", H, None)]},
                             [service("s", {"foo": "bar"})])
    assert hard(pl, p) == [(1, "zone", eq(baz="tar"), 1)]
    assert [(hc.key, hc.max_skew) for hc in state.get(PREFILTER_KEY).constraints] == [("zone", 1)]


def test_prefilter_default_soft_constraints_and_a_service():
    state, st, _ = prefilter(make_pod("p", labels={"foo": "bar"}),
                          {"defaultingType": "List", "defaultConstraints": [sc(2, "node", D, None)]},
                          [service("s", {"foo": "bar"})])
    assert st.is_success() and PTS in state.skip_filter


def test_prefilter_system_defaults_are_soft_only():
    state, st, _ = prefilter(make_pod("p", labels={"foo": "bar"}), {}, [service("s", {"foo": "bar"})])
    assert st.is_success() and PTS in state.skip_filter


# ---- scoring_test.go ---------------------------------------------------------------------------------
def plugin_with(args, objs, nodes):
    s = make_scheduler(make_table(nodes, []), {"preScore": [PTS], "score": [PTS]}, args={PTS: args})
    s.workloads = workloads(*objs)
    return s, s.default_framework.plugin(PTS)


def test_prescore_skip_default_constraints_and_a_replicaset_that_does_not_match():
    s, pl = plugin_with({"defaultingType": "List", "defaultConstraints": [sc(2, "planet", D, None)]},
                        [rs("rs1", {"matchExpressions": [{"key": "tar", "operator": "Exists"}]})],
                        [N("node-a", planet="mars")])
    p = owned("rs2", "ReplicaSet", foo="bar", baz="sup")
    st = pl.pre_score(CycleState(), p, s.table, range(1))
    assert st is not None and st.is_skip()


def soft(pl, pod):
    return [(c.max_skew, c.key, as_set(c.selector)) for c in pl._constraints(pod, SCHEDULE_ANYWAY)]


def test_prescore_system_default_constraints_and_a_replicaset():
    nodes = [N("node-a", host="node-a", **{ZONE: "mars"}), N("node-b", host="node-b", **{ZONE: "mars"}),
             N("node-c", host="node-c"), N("node-d", host="node-d")]
    s, pl = plugin_with({}, [rs("rs1", FOO)], nodes)
    p = owned("rs1", "ReplicaSet", foo="tar", baz="sup")
    assert soft(pl, p) == [(3, HOST, {("foo", "Exists", ())}), (5, ZONE, {("foo", "Exists", ())})]
    assert pl._constraints(p, DO_NOT_SCHEDULE) == ()
    assert pl.pre_score(CycleState(), p, s.table, range(4)) is None


def test_prescore_list_default_constraints_and_a_replicaset():
    args = {"defaultingType": "List", "defaultConstraints": [
        sc(1, HOST, D, None), sc(2, "rack", H, None), sc(2, "planet", D, None)]}
    _, pl = plugin_with(args, [rs("rs1", FOO)], [N("node-a", rack="rack1", host="node-a", planet="mars")])
    p = owned("rs1", "ReplicaSet", foo="tar", baz="sup")
    assert soft(pl, p) == [(1, HOST, {("foo", "Exists", ())}), (2, "planet", {("foo", "Exists", ())})]


def test_prescore_list_default_constraints_and_a_replicaset_but_pod_has_constraints():
    args = {"defaultingType": "List", "defaultConstraints": [sc(2, "galaxy", D, None)]}
    _, pl = plugin_with(args, [rs("rs1", FOO)], [N("node-a", planet="mars", galaxy="andromeda")])
    p = owned("rs1", "ReplicaSet", foo="bar", baz="sup")
    bar = {"matchExpressions": [{"key": "bar", "operator": "Exists"}]}
    p.spec["topologySpreadConstraints"] = [sc(1, "zone", H, bar), sc(2, "planet", D, {"matchLabels": {"baz": "sup"}})]
    p.cache.clear()
    assert soft(pl, p) == [(2, "planet", eq(baz="sup"))]


def test_score_system_defaulting_nodes_without_zone_pods_match_service():
    nodes = HOST4()
    s = make_scheduler(make_table(nodes, P4321()), {"preScore": [PTS], "score": [PTS]})
    s.workloads = workloads(service("s", {"foo": ""}))
    got = run_score(s, make_pod("p", labels={"foo": ""}), [n.name for n in nodes])[PTS]
    assert [got[n.name] for n in nodes] == [44, 66, 77, 100]


def test_selector_is_recomputed_when_workloads_change():
    wl = workloads()
    p = make_pod("p", labels={"app": "a"})
    wl.add(service("x", {"app": "b"}))
    assert default_selector(p, wl).empty
    wl.add(service("s", {"app": "a"}))
    assert as_set(default_selector(p, wl)) == eq(app="a")
    wl.remove("Service", "default", "s")
    assert default_selector(p, wl).empty


def test_requirement_type_is_the_selector_type():
    assert isinstance(default_selector(make_pod("p", labels={"a": "b"}), workloads(service("s", {"a": "b"})))
                      .requirements[0], Requirement)
