"""Property tests: the vectorised plugins agree with straightforward per-node reference code on
random clusters, and a scheduling pass never puts a node over its allocatable."""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from caldera.api.objects import tolerates_all

from .builders import make_node, make_pod, make_scheduler, make_table, run_filter, run_score

RES = ("cpu", "memory", "example.com/gpu")
TAINTS = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
          {"key": "maint", "value": "", "effect": "NoExecute"},
          {"key": "spot", "value": "true", "effect": "PreferNoSchedule"}]
TOLS = [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"},
        {"key": "maint", "operator": "Exists"},
        {"key": "spot", "operator": "Exists", "effect": "PreferNoSchedule"},
        {"operator": "Exists"}]


@st.composite
def clusters(draw):
    n = draw(st.integers(1, 12))
    nodes = []
    for i in range(n):
        nodes.append(make_node(
            f"n{i}", cpu=f"{draw(st.integers(0, 8000))}m", memory=str(draw(st.integers(0, 16)) * 2**30),
            pods=str(draw(st.integers(0, 6))),
            extra={"example.com/gpu": str(draw(st.integers(0, 4)))} if draw(st.booleans()) else None,
            taints=[t for t in TAINTS if draw(st.booleans())], unschedulable=draw(st.integers(0, 5)) == 0,
            labels={"zone": draw(st.sampled_from(["a", "b"]))}))
    running = []
    for j in range(draw(st.integers(0, 15))):
        i = draw(st.integers(0, n - 1))
        running.append(make_pod(f"r{j}", cpu=f"{draw(st.integers(0, 3000))}m",
                                memory=str(draw(st.integers(0, 4)) * 2**30), node=f"n{i}"))
    return nodes, running


@st.composite
def pods(draw, name="p"):
    req = {}
    if draw(st.booleans()):
        req["cpu"] = f"{draw(st.integers(0, 4000))}m"
    if draw(st.booleans()):
        req["memory"] = str(draw(st.integers(0, 8)) * 2**30)
    if draw(st.booleans()):
        req["example.com/gpu"] = str(draw(st.integers(0, 2)))
    tols = [t for t in TOLS if draw(st.integers(0, 3)) == 0]
    sel = {"zone": draw(st.sampled_from(["a", "b"]))} if draw(st.booleans()) else None
    return make_pod(name, requests=req, tolerations=tols, node_selector=sel)


def reference_filter(node, running, pod):
    """Per-node reference: NodeUnschedulable, NodeAffinity(nodeSelector), TaintToleration, Fit."""
    if node.unschedulable and not any(t.get("operator") == "Exists" and not t.get("key")
                                      for t in pod.spec.get("tolerations") or []):
        return "unschedulable"
    for k, v in pod.node_selector.items():
        if node.labels.get(k) != v:
            return "selector"
    for t in node.taints:
        if t.effect in ("NoSchedule", "NoExecute") and not tolerates_all(pod.tolerations, t):
            return "taint"
    used = {r: sum(p.requests.get(r, 0) for p in running) for r in RES}
    if len(running) + 1 > node.allocatable.get("pods", 0):
        return "fit"
    for r in RES:
        want = pod.requests.get(r, 0)
        if want > 0 and want > node.allocatable.get(r, 0) - used[r]:
            return "fit"
    return None


FILTERS = ["NodeUnschedulable", "NodeAffinity", "TaintToleration", "NodeResourcesFit"]
PLUGINS = {"preFilter": ["NodeAffinity", "NodeResourcesFit"], "filter": FILTERS,
           "preScore": ["NodeResourcesFit", "NodeResourcesBalancedAllocation"],
           "score": ["NodeResourcesFit", "NodeResourcesBalancedAllocation"]}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), pods())
def test_vectorised_filters_match_reference(cluster, pod):
    nodes, running = cluster
    sched = make_scheduler(make_table(nodes, running), PLUGINS)
    got = run_filter(sched, pod)
    for n in nodes:
        on = [p for p in running if p.node_name == n.name]
        want = reference_filter(n, on, pod)
        assert (got[n.name] is None) == (want is None), (n.name, want, got[n.name])


def ref_least_allocated(node, running, pod):
    score, wsum = 0, 0
    for r, nz in (("cpu", "nonzero_cpu"), ("memory", "nonzero_mem")):
        cap = node.allocatable.get(r, 0)
        if cap == 0:
            continue
        req = sum(getattr(p, nz) for p in running) + getattr(pod, nz)
        score += 0 if req > cap else (cap - req) * 100 // cap
        wsum += 1
    return score // wsum if wsum else 0


def ref_balanced(node, running, pod):
    fr = []
    for r in ("cpu", "memory"):
        cap = node.allocatable.get(r, 0)
        if cap == 0:
            continue
        fr.append(min((sum(p.requests.get(r, 0) for p in running) + pod.requests.get(r, 0)) / cap, 1.0))
    std = abs(fr[0] - fr[1]) / 2 if len(fr) == 2 else 0.0
    return int((1 - std) * 100)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), pods())
def test_vectorised_scores_match_reference(cluster, pod):
    nodes, running = cluster
    sched = make_scheduler(make_table(nodes, running), PLUGINS)
    got = run_score(sched, pod)
    for n in nodes:
        on = [p for p in running if p.node_name == n.name]
        assert got["NodeResourcesFit"][n.name] == ref_least_allocated(n, on, pod)
        if "NodeResourcesBalancedAllocation" in got:
            assert got["NodeResourcesBalancedAllocation"][n.name] == ref_balanced(n, on, pod)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), st.lists(pods(), min_size=1, max_size=20))
def test_pass_never_overcommits(cluster, pending):
    """Invariant: a node that was within allocatable stays within it after any pass."""
    nodes, running = cluster
    table = make_table(nodes, running)
    sched = make_scheduler(table, default=True)

    def within(i, n):
        on = list(table.pods[i].values())
        if len(on) > n.allocatable.get("pods", 0):
            return False
        return all(sum(p.requests.get(r, 0) for p in on) <= n.allocatable.get(r, 0) for r in RES)

    ok_before = {i for i, n in enumerate(nodes) if within(i, n)}
    for j, p in enumerate(pending):
        q = make_pod(f"p{j}", requests=p.spec["containers"][0].get("resources", {}).get("requests"),
                     tolerations=p.spec.get("tolerations"), node_selector=p.node_selector or None)
        sched.schedule_one(q)
    for i in ok_before:
        assert within(i, nodes[i]), nodes[i].name
