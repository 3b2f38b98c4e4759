"""InterPodAffinity against real Namespace objects (api/workloads.py), kube v1.35.4 semantics:
the incoming pod's non-empty namespaceSelector is unrolled into the namespaces the lister finds
(mergeAffinityTermNamespacesIfNotEmpty), existing pods' selectors see the incoming pod's namespace
labels or an empty set when it is not found (GetNamespaceLabelsSnapshot). The Go tests' own
namespaceSelector cases run in test_interpodaffinity.py with the same four-namespace lister."""
from __future__ import annotations

from caldera.api.loader import load_cluster
from caldera.api.workloads import NS_NAME_LABEL, Namespace
from caldera.errors import InputError

from .test_interpodaffinity import (
    ANTI,
    EXIST,
    SKIP,
    affinity,
    dne,
    in_,
    node,
    notin,
    pod,
    prefilter_filter,
    prescore_score,
    sel,
    setup,
    term,
    wterm,
)

DB = sel(in_("app", "db"))


def test_incoming_selector_does_not_match_a_namespace_the_lister_does_not_know():
    # "team NotIn (team2)" would match an empty label set; kube's lister never lists "ghost"
    table, pl = setup([node("n1", {"zone": "a"}), node("n2", {"zone": "b"})],
                      [pod({"app": "db"}, "n1", ns="ghost"), pod({"app": "db"}, "n2", ns="subteam1.team1")])
    p = pod(ns="subteam1.team1", aff=affinity(None, [term(DB, "zone", ns_selector=sel(notin("team", "team2")))]))
    assert prefilter_filter(pl, table, p)[1] == [None, ANTI]
    # the empty selector matches every namespace, known or not
    p = pod(ns="subteam1.team1", aff=affinity(None, [term(DB, "zone", ns_selector={})]))
    assert prefilter_filter(pl, table, p)[1] == [ANTI, ANTI]


def test_existing_pods_selector_sees_empty_labels_for_an_unknown_incoming_namespace():
    anti = affinity(None, [term(DB, "zone", ns_selector=sel(dne("team")))])
    table, pl = setup([node("n1", {"zone": "a"}), node("n2", {"zone": "b"})],
                      [pod({"app": "x"}, "n1", ns="subteam1.team1", aff=anti)])
    assert prefilter_filter(pl, table, pod({"app": "db"}, ns="ghost"))[1] == [EXIST, None]
    assert prefilter_filter(pl, table, pod({"app": "db"}, ns="subteam1.team1"))[0] == SKIP


def test_namespace_label_changes_apply_to_the_next_cycle():
    table, pl = setup([node("n1", {"zone": "a"})], [pod({"app": "db"}, "n1", ns="subteam1.team2")])
    p = pod(ns="subteam1.team1", aff=affinity(None, [term(DB, "zone", ns_selector=sel(in_("team", "team1")))]))
    assert prefilter_filter(pl, table, p)[1] == [None]
    wl = pl.handle.scheduler.workloads
    wl.add(Namespace({"metadata": {"name": "subteam1.team2", "labels": {"team": "team1"}}}))
    assert prefilter_filter(pl, table, p)[1] == [ANTI]


def test_preferred_terms_use_the_lister_too():
    table, pl = setup([node("n1", {"zone": "a"}), node("n2", {"zone": "b"})],
                      [pod({"app": "db"}, "n1", ns="ghost"), pod({"app": "db"}, "n2", ns="subteam2.team1")])
    p = pod(ns="subteam1.team1", aff=affinity(pref_aff=[wterm(5, DB, "zone", ns_selector=sel(notin("team", "x")))]))
    assert prescore_score(pl, table, p) == (None, [0, 100])


# ---- manifests -------------------------------------------------------------------------------------
def write(tmp_path, text):
    f = tmp_path / "m.yaml"
    f.write_text(text)
    return str(f)


POD = "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: %s}\nspec: {containers: [{name: c}]}\n"


def test_loader_reads_namespaces_with_the_automatic_label(tmp_path):
    c = load_cluster([write(tmp_path, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: shop\n"
                                      "  labels: {tier: gold, kubernetes.io/metadata.name: other}\n" + POD % "shop")])
    assert c.workloads.namespace_labels("shop") == {"tier": "gold", NS_NAME_LABEL: "shop"}
    assert c.warnings == []


def test_pod_namespaces_without_objects_are_assumed(tmp_path):
    c = load_cluster([write(tmp_path, POD % "dev")])
    assert c.workloads.namespace_labels("dev") == {NS_NAME_LABEL: "dev"}
    assert c.warnings == []          # no Namespace objects at all: nothing to warn about
    c = load_cluster([write(tmp_path, "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n" + POD % "dev")])
    assert c.workloads.namespace_labels("dev") == {NS_NAME_LABEL: "dev"}
    assert len(c.warnings) == 1 and "dev" in c.warnings[0] and "no Namespace object" in c.warnings[0]


def test_bad_workload_objects_are_input_errors(tmp_path):
    import pytest
    cases = [
        ("apiVersion: v1\nkind: Namespace\nmetadata: {name: a, labels: [x]}\n", "metadata.labels"),
        ("apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {selector: [a]}\n", "spec.selector"),
        ("apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: r}\nspec: {}\n", "spec.selector"),
        ("apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: r}\nspec: {selector: {matchExpressions: "
         "[{key: a, operator: Bad}]}}\n", "spec.selector"),
        ("apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\napiVersion: v1\nkind: Namespace\n"
         "metadata: {name: a}\n", 'namespaces "a" already exists'),
    ]
    for text, needle in cases:
        f = write(tmp_path, text)
        with pytest.raises(InputError) as e:
            load_cluster([f])
        assert needle in str(e.value) and f in str(e.value)
