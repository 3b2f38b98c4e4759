"""NodeResourcesFit scoring strategies and NodeResourcesBalancedAllocation, reproducing kube's
least_allocated_test.go, most_allocated_test.go, requested_to_capacity_ratio_test.go (incl.
TestBrokenLinearFunction and the extended-resource bin-packing tests), TestFitScore and
balanced_allocation_test.go (the v1.35 expectations). These plugins have no NormalizeScore, so the
profile's scores are the plugins' raw scores."""
from __future__ import annotations

import numpy as np
import pytest

from caldera.framework.interface import CycleState
from caldera.framework.status import Code
from caldera.plugins.noderesources.strategies import broken_linear

from ..builders import make_node, make_pod, make_scheduler, make_table, run_score

DEFAULT = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
EXT = "abc.com/xyz"
EXT_SET = DEFAULT + [{"name": EXT, "weight": 1}]
_n = [0]


def cap_node(name, **res):
    """st.MakeNode().Name(name).Capacity(res): allocatable == capacity, nothing else."""
    return make_node(name, cpu=res.pop("cpu", None), memory=res.pop("memory", None), pods=None, extra=res)


def req_pod(*reqs, node=None, sidecar=None):
    """st.MakePod().Req(r1).Req(r2)...: one container per Req (none without Req; a None Req is
    st's .Container(name), a container without requests); SidecarReq adds a restartable init."""
    _n[0] += 1
    inits = [{"name": "sc", "image": "pause", "restartPolicy": "Always", "resources": {"requests": sidecar}}] \
        if sidecar else None
    return make_pod(f"p{_n[0]}", node=node, init_containers=inits,
                    containers=[{"name": f"c{i}", "image": "pause", **({"resources": {"requests": r}} if r else {})}
                                for i, r in enumerate(reqs)])


def fit_scores(nodes, existing, pod, strategy, resources=DEFAULT, shape=None, prescore=True):
    ss = {"type": strategy, "resources": resources}
    if shape is not None:
        ss["requestedToCapacityRatio"] = {"shape": shape}
    table = make_table(nodes, existing)
    sched = make_scheduler(table, {"preScore": ["NodeResourcesFit"], "score": ["NodeResourcesFit"]},
                           {"NodeResourcesFit": {"scoringStrategy": ss}})
    if prescore:
        return run_score(sched, pod)["NodeResourcesFit"]
    plugin = sched.default_framework.plugin("NodeResourcesFit")   # Score without PreScore
    idx = np.arange(len(table), dtype=np.intp)
    return dict(zip(table.names, plugin.score(CycleState(), pod, table, idx).tolist()))


CM = lambda cpu, mem: {"cpu": cpu, "memory": mem}  # noqa: E731
N4_10 = lambda: [cap_node("node1", cpu="4000", memory="10000"), cap_node("node2", cpu="4000", memory="10000")]  # noqa
N4_6 = lambda: [cap_node("node1", cpu="4000", memory="10000"), cap_node("node2", cpu="6000", memory="10000")]  # noqa
N10_20 = lambda m2="20000": [cap_node("node1", cpu="10000", memory="20000"),  # noqa: E731
                             cap_node("node2", cpu="10000", memory=m2)]
TWO = lambda: req_pod(CM("1000", "2000"), CM("2000", "3000"))  # noqa: E731

LEAST = [
    ("nothing scheduled, nothing requested", N4_10(), [], req_pod(), DEFAULT, (100, 100)),
    ("nothing scheduled, resources requested, differently sized nodes", N4_6(), [], TWO(), DEFAULT, (37, 50)),
    ("no resources requested, pods scheduled", N4_10(),
     [req_pod(node="node1"), req_pod(node="node1"), req_pod(node="node2"), req_pod(node="node2")],
     req_pod(), DEFAULT, (100, 100)),
    ("no resources requested, pods scheduled with resources", N10_20(),
     [req_pod(CM("3000", "0"), node="node1"), req_pod(CM("3000", "0"), node="node1"),
      req_pod(CM("3000", "0"), node="node2"), req_pod(CM("3000", "5000"), node="node2")],
     req_pod(), DEFAULT, (70, 57)),
    ("resources requested, pods scheduled with resources", N10_20(),
     [req_pod(CM("3000", "0"), node="node1"), req_pod(CM("3000", "5000"), node="node2")], TWO(), DEFAULT, (57, 45)),
    ("resources requested, pods scheduled with resources, differently sized nodes", N10_20("50000"),
     [req_pod(CM("3000", "0"), node="node1"), req_pod(CM("3000", "5000"), node="node2")], TWO(), DEFAULT, (57, 60)),
    ("requested resources exceed node capacity", N4_10(),
     [req_pod(CM("3000", "0"), node="node1"), req_pod(CM("3000", "5000"), node="node2")],
     req_pod(CM("3000", "0")), DEFAULT, (50, 25)),
    ("zero node resources, pods scheduled with resources", [cap_node("node1"), cap_node("node2")],
     [req_pod(CM("3000", "0"), node="node1"), req_pod(CM("3000", "5000"), node="node2")], req_pod(), DEFAULT,
     (0, 0)),
    ("different weight on CPU and memory", N4_6(), [], TWO(),
     [{"name": "memory", "weight": 2}, {"name": "cpu", "weight": 1}], (41, 50)),
    ("bypass extended resource if the pod does not request",
     [cap_node("node1", cpu="6000", memory="10000"), cap_node("node2", cpu="6000", memory="10000", **{EXT: "4"})],
     [], TWO(), EXT_SET, (50, 50)),
    ("honor extended resource if the pod requests",
     [cap_node("node1", cpu="6000", memory="10000", **{EXT: "4"}),
      cap_node("node2", cpu="6000", memory="10000", **{EXT: "10"})],
     [], req_pod({"cpu": "3000", "memory": "5000", EXT: "2"}), EXT_SET, (50, 60)),
    ("if the node doesn't have a resource",
     [cap_node("node1", cpu="6000", memory="10000"), cap_node("node2", cpu="6000", memory="10000", **{EXT: "4"})],
     [], req_pod(CM("3000", "4000")), [{"name": EXT, "weight": 2}] + DEFAULT, (55, 55)),
]


@pytest.mark.parametrize("nodes,existing,pod,resources,want", [c[1:] for c in LEAST], ids=[c[0] for c in LEAST])
def test_least_allocated(nodes, existing, pod, resources, want):
    assert fit_scores(nodes, existing, pod, "LeastAllocated", resources) == {"node1": want[0], "node2": want[1]}


MOST = [
    ("nothing scheduled, nothing requested", N4_10(), [], req_pod(), DEFAULT, (0, 0)),
    ("nothing scheduled, resources requested, differently sized nodes", N4_6(), [], TWO(), DEFAULT, (62, 50)),
    ("no resources requested, pods scheduled with resources", N10_20(),
     [req_pod(CM("3000", "0"), node="node1"), req_pod(CM("3000", "0"), node="node1"),
      req_pod(CM("3000", "0"), node="node2"), req_pod(CM("3000", "5000"), node="node2")],
     req_pod(), DEFAULT, (30, 42)),
    ("resources requested, pods scheduled with resources", N10_20(),
     [req_pod(CM("3000", "0"), node="node1"), req_pod(CM("3000", "5000"), node="node2")], TWO(), DEFAULT, (42, 55)),
    ("resources requested equal node capacity",
     [cap_node("node1", cpu="5000", memory="10000"), cap_node("node2", cpu="10000", memory="9000")], [],
     req_pod(CM("2000", "4000"), CM("3000", "5000")), DEFAULT, (95, 75)),
    ("different weight on CPU and memory", N4_6(), [], TWO(),
     [{"name": "memory", "weight": 2}, {"name": "cpu", "weight": 1}], (58, 50)),
    ("no resources requested, pods scheduled, nonzero request for resource",
     [cap_node("node1", cpu="250m", memory="1000Mi"), cap_node("node2", cpu="250m", memory="1000Mi")],
     [req_pod(None, node="node1"), req_pod(None, node="node1")], req_pod(None), DEFAULT, (80, 30)),
    ("bypass extended resource if the pod does not request",
     [cap_node("node1", cpu="6000", memory="10000"), cap_node("node2", cpu="6000", memory="10000", **{EXT: "4"})],
     [], TWO(), EXT_SET, (50, 50)),
    ("honor extended resource if the pod request",
     [cap_node("node1", cpu="6000", memory="10000", **{EXT: "4"}),
      cap_node("node2", cpu="6000", memory="10000", **{EXT: "10"})],
     [], req_pod({"cpu": "3000", "memory": "5000", EXT: "2"}), EXT_SET, (50, 40)),
    ("if the node doesn't have a resource",
     [cap_node("node1", cpu="6000", memory="10000"), cap_node("node2", cpu="6000", memory="10000", **{EXT: "4"})],
     [], req_pod(CM("3000", "4000")), [{"name": EXT, "weight": 2}] + DEFAULT, (45, 45)),
]


@pytest.mark.parametrize("nodes,existing,pod,resources,want", [c[1:] for c in MOST], ids=[c[0] for c in MOST])
def test_most_allocated(nodes, existing, pod, resources, want):
    assert fit_scores(nodes, existing, pod, "MostAllocated", resources) == {"node1": want[0], "node2": want[1]}


SHAPE_LEAST = [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]
SHAPE_MOST = [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
BIN_SHAPE = [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 1}]


@pytest.mark.parametrize("nodes,existing,pod,want", [
    (N4_10(), [req_pod(node="node1"), req_pod(node="node1")], req_pod(), (100, 100)),
    (N4_6(), [req_pod(node="node1"), req_pod(node="node1")], TWO(), (38, 50)),
    (N4_6(), [req_pod(CM("3000", "5000"), node="node1"), req_pod(CM("3000", "5000"), node="node2")], req_pod(),
     (38, 50)),
], ids=["nothing scheduled, nothing requested", "resources requested, differently sized nodes",
        "no resources requested, pods scheduled with resources"])
def test_requested_to_capacity_ratio(nodes, existing, pod, want):
    got = fit_scores(nodes, existing, pod, "RequestedToCapacityRatio", DEFAULT, SHAPE_LEAST)
    assert got == {"node1": want[0], "node2": want[1]}


def gpu_node(name, **ext):
    """makeNode(name, 4000, 10000*1024*1024, ext): cpu in millicores."""
    return make_node(name, cpu="4000m", memory=str(10000 * 1024 * 1024), pods=None,
                     extra={k: str(v) for k, v in ext.items()})


@pytest.mark.parametrize("pod,existing,want", [
    (req_pod(), [req_pod()], (0, 0)),
    (req_pod({"intel.com/foo": "2"}), [req_pod()], (2, 5)),
    (req_pod({"intel.com/foo": "2"}), [req_pod({"intel.com/foo": "2"}, node="node2")], (2, 10)),
    (req_pod({"intel.com/foo": "4"}), [req_pod()], (5, 10)),
], ids=["nothing scheduled, nothing requested", "pods scheduled with less resources",
        "on node with existing pod running", "pods scheduled with more resources"])
def test_bin_packing_single_extended(pod, existing, want):
    nodes = [gpu_node("node1", **{"intel.com/foo": 8}), gpu_node("node2", **{"intel.com/foo": 4})]
    existing = [p for p in existing if p.node_name]
    got = fit_scores(nodes, existing, pod, "RequestedToCapacityRatio", [{"name": "intel.com/foo", "weight": 1}],
                     BIN_SHAPE)
    assert got == {"node1": want[0], "node2": want[1]}


@pytest.mark.parametrize("pod,existing,want", [
    (req_pod(), [], (0, 0)),
    (req_pod({"intel.com/foo": "2", "intel.com/bar": "2"}), [], (4, 3)),
    (req_pod({"intel.com/foo": "2", "intel.com/bar": "2"}),
     [req_pod({"intel.com/foo": "4", "intel.com/bar": "2"}, node="node2")], (4, 7)),
    (req_pod({"intel.com/foo": "4", "intel.com/bar": "2"}), [], (5, 5)),
], ids=["nothing scheduled, nothing requested", "pods scheduled with less resources",
        "on node with existing pod running", "pods scheduled with more resources"])
def test_bin_packing_multiple_extended(pod, existing, want):
    nodes = [gpu_node("node1", **{"intel.com/foo": 8, "intel.com/bar": 4}),
             gpu_node("node2", **{"intel.com/foo": 4, "intel.com/bar": 8})]
    got = fit_scores(nodes, existing, pod, "RequestedToCapacityRatio",
                     [{"name": "intel.com/foo", "weight": 3}, {"name": "intel.com/bar", "weight": 5}], BIN_SHAPE)
    assert got == {"node1": want[0], "node2": want[1]}


@pytest.mark.parametrize("u,s,points", [
    ([10, 90], [1, 9], [(-10, 1), (0, 1), (9, 1), (10, 1), (15, 1), (19, 1), (20, 2), (89, 8), (90, 9), (99, 9),
                        (100, 9), (110, 9)]),
    ([0, 40, 100], [2, 10, 0], [(-10, 2), (0, 2), (20, 6), (30, 8), (40, 10), (70, 5), (100, 0), (110, 0)]),
    ([0, 40, 100], [2, 2, 2], [(-10, 2), (0, 2), (20, 2), (30, 2), (40, 2), (70, 2), (100, 2), (110, 2)]),
])
def test_broken_linear_function(u, s, points):
    got = broken_linear(np.array(u), np.array(s), np.array([p for p, _ in points]))
    assert got.tolist() == [want for _, want in points]


# ---- TestFitScore ------------------------------------------------------------------------------------
FIT_SCORE = [
    ("RequestedToCapacityRatio case1", "RequestedToCapacityRatio", SHAPE_LEAST, CM("3000", "5000"), (10, 32)),
    ("RequestedToCapacityRatio case2", "RequestedToCapacityRatio", SHAPE_MOST, CM("3000", "5000"), (95, 68)),
    ("MostAllocated", "MostAllocated", None, CM("1000", "2000"), (67, 36)),
    ("LeastAllocated", "LeastAllocated", None, CM("1000", "2000"), (32, 63)),
]


@pytest.mark.parametrize("prescore", [True, False], ids=["", "if PreScore is not called"])
@pytest.mark.parametrize("strategy,shape,req,want", [c[1:] for c in FIT_SCORE], ids=[c[0] for c in FIT_SCORE])
def test_fit_score(strategy, shape, req, want, prescore):
    existing = [req_pod(CM("2000", "4000"), node="node1"), req_pod(CM("1000", "2000"), node="node2")]
    got = fit_scores(N4_6(), existing, req_pod(req), strategy, DEFAULT, shape, prescore=prescore)
    assert got == {"node1": want[0], "node2": want[1]}


@pytest.mark.parametrize("strategy,want", [("MostAllocated", (67, 45)), ("LeastAllocated", (32, 55))])
def test_fit_score_with_sidecar_container(strategy, want):
    existing = [req_pod(CM("1000", "2000"), sidecar=CM("1000", "2000"), node="node1"),
                req_pod(CM("1000", "2000"), node="node2")]
    assert fit_scores(N4_10(), existing, req_pod(CM("1000", "2000")), strategy) == {"node1": want[0], "node2": want[1]}


def test_resources_kube_ignores_are_left_out_of_the_score():
    # "pods" and "storage" are not resources calculateResourceAllocatableRequest knows: (0, 0)
    nodes = N4_6()
    pod = req_pod({"cpu": "1000", "memory": "2000", "storage": "1"})
    plain = fit_scores(nodes, [], pod, "LeastAllocated", DEFAULT)
    odd = fit_scores(N4_6(), [], pod, "LeastAllocated", DEFAULT + [{"name": "pods", "weight": 5},
                                                                  {"name": "storage", "weight": 5}])
    assert plain == odd == {"node1": 77, "node2": 81}


# ---- NodeResourcesBalancedAllocation (balanced_allocation_test.go, v1.35) ---------------------------------
def bnode(name, cpu, mem, ext=None):
    return make_node(name, cpu=f"{cpu}m", memory=str(mem), pods=None, extra=ext)


def spec_pod(kind, node=None):
    """The test's PodSpecs: cpuOnly / cpuAndMemory / cpuAndMemoryAndGPU (memory "0" where cpu-only)."""
    c = {"cpuOnly": [CM("1000m", "0"), CM("2000m", "0")],
         "cpuAndMemory": [CM("1000m", "2000"), CM("2000m", "3000")],
         "cpuAndMemoryAndGPU": [CM("1000m", "2000"), {"cpu": "2000m", "memory": "3000", "nvidia.com/gpu": "3"}]}[kind]
    return req_pod(*c, node=node)


GPU = {"nvidia.com/gpu": "8"}
BAL3 = DEFAULT + [{"name": "nvidia.com/gpu", "weight": 1}]
BALANCED = [
    ("nothing scheduled, resources requested, differently sized nodes",
     [bnode("node1", 4000, 10000), bnode("node2", 6000, 10000)], [], spec_pod("cpuAndMemory"), DEFAULT, (87, 100)),
    ("resources requested, pods scheduled with resources",
     [bnode("node1", 10000, 20000), bnode("node2", 10000, 20000)],
     [spec_pod("cpuOnly", "node1"), spec_pod("cpuAndMemory", "node2")], spec_pod("cpuAndMemory"), DEFAULT, (82, 95)),
    ("resources requested, pods scheduled with resources, differently sized nodes",
     [bnode("node1", 10000, 20000), bnode("node2", 10000, 50000)],
     [spec_pod("cpuOnly", "node1"), spec_pod("cpuAndMemory", "node2")], spec_pod("cpuAndMemory"), DEFAULT, (82, 80)),
    ("requested resources at node capacity", [bnode("node1", 6000, 10000), bnode("node2", 6000, 10000)],
     [spec_pod("cpuOnly", "node1"), spec_pod("cpuAndMemory", "node2")], spec_pod("cpuOnly"), DEFAULT, (50, 75)),
    ("include scalar resource on a node for balanced resource allocation",
     [bnode("node1", 3500, 40000, GPU), bnode("node2", 3500, 40000, GPU)],
     [spec_pod("cpuAndMemory", "node2"), spec_pod("cpuAndMemoryAndGPU", "node1")],
     req_pod({"memory": "0", "nvidia.com/gpu": "1"}), BAL3, (70, 65)),
    ("node without the scalar resource should skip the scalar resource",
     [bnode("node1", 3500, 40000, GPU), bnode("node2", 3500, 40000)], [], spec_pod("cpuAndMemory"), BAL3, (63, 63)),
]


def balanced(nodes, existing, pod, resources):
    sched = make_scheduler(make_table(nodes, existing),
                           {"preScore": ["NodeResourcesBalancedAllocation"],
                            "score": ["NodeResourcesBalancedAllocation"]},
                           {"NodeResourcesBalancedAllocation": {"resources": resources}})
    return sched, run_score(sched, pod)


@pytest.mark.parametrize("nodes,existing,pod,resources,want", [c[1:] for c in BALANCED],
                         ids=[c[0] for c in BALANCED])
def test_balanced_allocation(nodes, existing, pod, resources, want):
    _, got = balanced(nodes, existing, pod, resources)
    assert got["NodeResourcesBalancedAllocation"] == {"node1": want[0], "node2": want[1]}


def test_balanced_allocation_without_prescore():
    nodes = [bnode("node1", 10000, 20000), bnode("node2", 10000, 20000)]
    sched, _ = balanced(nodes, [spec_pod("cpuOnly", "node1"), spec_pod("cpuAndMemory", "node2")], req_pod(), DEFAULT)
    table = sched.table
    plugin = sched.default_framework.plugin("NodeResourcesBalancedAllocation")
    got = plugin.score(CycleState(), spec_pod("cpuAndMemory"), table, np.arange(2, dtype=np.intp))
    assert got.tolist() == [82, 95]


def test_balanced_allocation_skips_best_effort_pods():
    nodes = [bnode("node1", 4000, 10000), bnode("node2", 4000, 10000)]
    sched, got = balanced(nodes, [], req_pod(), DEFAULT)
    assert "NodeResourcesBalancedAllocation" not in got
    plugin = sched.default_framework.plugin("NodeResourcesBalancedAllocation")
    assert plugin.pre_score(CycleState(), req_pod(), sched.table, np.arange(2)).code == Code.SKIP


def test_balanced_allocation_vectorised_matches_scalar_formula():
    # >2 resources with some missing per node: std over the present fractions, in resource order
    rng = np.random.default_rng(7)
    nodes, want = [], {}
    for i in range(40):
        cpu, mem, gpu = (int(x) for x in rng.integers(1, 9, 3))
        has_gpu = i % 3 != 0
        nodes.append(bnode(f"n{i}", cpu * 1000, mem * 1000, {"nvidia.com/gpu": str(gpu)} if has_gpu else None))
        fr = [min(1000 / (cpu * 1000), 1.0), min(1500 / (mem * 1000), 1.0)] + ([min(1 / gpu, 1.0)] if has_gpu else [])
        if len(fr) == 2:
            std = abs((fr[0] - fr[1]) / 2)
        else:
            mean = sum(fr) / len(fr)
            std = (sum((f - mean) * (f - mean) for f in fr) / len(fr)) ** 0.5
        want[f"n{i}"] = int((1 - std) * 100)
    _, got = balanced(nodes, [], req_pod({"cpu": "1", "memory": "1500", "nvidia.com/gpu": "1"}), BAL3)
    assert got["NodeResourcesBalancedAllocation"] == want
