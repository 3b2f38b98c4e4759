"""Property tests: PodTopologySpread's and InterPodAffinity's vectorised filters agree with
straightforward per-node reference code (written from kube's semantics) on random clusters."""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from caldera.framework.status import Code

from .builders import make_node, make_pod, make_scheduler, make_table, run_filter

APPS = ["a", "b"]
ZONES = ["z1", "z2", "z3"]


@st.composite
def cluster(draw):
    nodes = []
    for i in range(draw(st.integers(1, 8))):
        labels = {"kubernetes.io/hostname": f"n{i}"}
        if draw(st.integers(0, 4)):
            labels["zone"] = draw(st.sampled_from(ZONES))
        if draw(st.booleans()):
            labels["disk"] = "ssd"
        nodes.append(make_node(f"n{i}", cpu="64", memory="64Gi", labels=labels))
    pods = []
    for j in range(draw(st.integers(0, 12))):
        n = draw(st.sampled_from(nodes))
        anti = None
        if draw(st.integers(0, 4)) == 0:
            anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
                "topologyKey": draw(st.sampled_from(["zone", "kubernetes.io/hostname"])),
                "labelSelector": {"matchLabels": {"app": draw(st.sampled_from(APPS))}}}]}}
        pods.append(make_pod(f"r{j}", namespace=draw(st.sampled_from(["default", "other"])),
                             labels={"app": draw(st.sampled_from(APPS))}, node=n.name, affinity=anti))
    return nodes, pods


@st.composite
def spread_pod(draw):
    cons = []
    for key in draw(st.lists(st.sampled_from(["zone", "kubernetes.io/hostname"]), min_size=1, max_size=2,
                             unique=True)):
        c = {"maxSkew": draw(st.integers(1, 2)), "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule",
             "labelSelector": {"matchLabels": {"app": draw(st.sampled_from(APPS))}}}
        if draw(st.booleans()):
            c["minDomains"] = draw(st.integers(1, 4))
        cons.append(c)
    sel = {"disk": "ssd"} if draw(st.integers(0, 3)) == 0 else None
    return make_pod("p", labels={"app": draw(st.sampled_from(APPS))}, topology_spread=cons, node_selector=sel)


def ref_spread(nodes, pods, pod):
    """PodTopologySpread Filter per node: {node: None | 'missing' | 'skew'} (Honor affinity, Ignore taints)."""
    cons = pod.spec["topologySpreadConstraints"]
    keys = [c["topologyKey"] for c in cons]

    def eligible(n):
        return all(k in n.labels for k in keys) and all(n.labels.get(k) == v for k, v in pod.node_selector.items())

    out = {}
    for n in nodes:
        verdict = None
        for c in cons:
            k = c["topologyKey"]
            if k not in n.labels:
                verdict = "missing"
                break
            want = c["labelSelector"]["matchLabels"]["app"]
            counts = {}
            for m in nodes:
                if eligible(m):
                    counts.setdefault(m.labels[k], 0)
                    counts[m.labels[k]] += sum(1 for p in pods if p.node_name == m.name and
                                               p.namespace == pod.namespace and p.labels.get("app") == want)
            gmin = min(counts.values()) if counts else 0
            if len(counts) < c.get("minDomains", 1):
                gmin = 0
            self_match = 1 if pod.labels.get("app") == want else 0
            if counts.get(n.labels[k], 0) + self_match - gmin > c["maxSkew"]:
                verdict = "skew"
                break
        out[n.name] = verdict
    return out


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster(), spread_pod())
def test_spread_filter_matches_reference(cl, pod):
    nodes, pods = cl
    sched = make_scheduler(make_table(nodes, pods), {"preFilter": ["PodTopologySpread"],
                                                    "filter": ["PodTopologySpread"]})
    got = run_filter(sched, pod)
    want = ref_spread(nodes, pods, pod)
    for n in nodes:
        s = got[n.name]
        if want[n.name] is None:
            assert s is None, (n.name, s)
        else:
            assert s is not None, (n.name, want[n.name])
            code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if want[n.name] == "missing" else Code.UNSCHEDULABLE
            assert s.code == code, (n.name, want[n.name], s)


@st.composite
def affinity_pod(draw):
    aff = {}
    if draw(st.booleans()):
        aff["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [{
            "topologyKey": draw(st.sampled_from(["zone", "kubernetes.io/hostname"])),
            "labelSelector": {"matchLabels": {"app": draw(st.sampled_from(APPS))}}}]}
    if draw(st.booleans()):
        aff["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [{
            "topologyKey": draw(st.sampled_from(["zone", "kubernetes.io/hostname"])),
            "labelSelector": {"matchLabels": {"app": draw(st.sampled_from(APPS))}}}]}
    return make_pod("p", labels={"app": draw(st.sampled_from(APPS))}, affinity=aff or None)


def _terms(p, kind):
    return ((p.spec.get("affinity") or {}).get(kind) or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or []


def _same_domain(nodes_by, a, b, key):
    la, lb = nodes_by[a].labels, nodes_by[b].labels
    return key in la and key in lb and la[key] == lb[key]


def ref_affinity(nodes, pods, pod):
    """InterPodAffinity Filter per node: None | 'affinity' | 'anti' | 'existing-anti' (kube's order)."""
    by = {n.name: n for n in nodes}
    aff, anti = _terms(pod, "podAffinity"), _terms(pod, "podAntiAffinity")

    def matches(term, owner, other):
        return other.namespace == owner.namespace and \
            other.labels.get("app") == term["labelSelector"]["matchLabels"]["app"]

    any_match = any(matches(t, pod, e) and e.node_name in by and t["topologyKey"] in by[e.node_name].labels
                    for t in aff for e in pods)
    self_ok = all(matches(t, pod, pod) for t in aff)
    out = {}
    for n in nodes:
        v = None
        if any(t["topologyKey"] not in n.labels for t in aff):
            v = "affinity"          # every topology key must be on the node, even for the first pod
        for t in aff:
            ok = any(matches(t, pod, e) and _same_domain(by, n.name, e.node_name, t["topologyKey"]) for e in pods)
            if not ok and not (not any_match and self_ok):
                v = "affinity"
        if v is None:
            for t in anti:
                if any(matches(t, pod, e) and _same_domain(by, n.name, e.node_name, t["topologyKey"]) for e in pods):
                    v = "anti"
        if v is None:
            for e in pods:
                for t in _terms(e, "podAntiAffinity"):
                    if matches(t, e, pod) and _same_domain(by, n.name, e.node_name, t["topologyKey"]):
                        v = "existing-anti"
        out[n.name] = v
    return out


REASONS = {"affinity": "node(s) didn't match pod affinity rules",
           "anti": "node(s) didn't match pod anti-affinity rules",
           "existing-anti": "node(s) didn't satisfy existing pods anti-affinity rules"}


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster(), affinity_pod())
def test_interpod_affinity_filter_matches_reference(cl, pod):
    nodes, pods = cl
    sched = make_scheduler(make_table(nodes, pods), {"preFilter": ["InterPodAffinity"],
                                                    "filter": ["InterPodAffinity"]})
    got = run_filter(sched, pod)
    want = ref_affinity(nodes, pods, pod)
    for n in nodes:
        s = got[n.name]
        if want[n.name] is None:
            assert s is None, (n.name, s)
        else:
            assert s is not None and s.reasons == (REASONS[want[n.name]],), (n.name, want[n.name], s)
