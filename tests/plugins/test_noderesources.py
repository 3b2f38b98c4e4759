"""NodeResourcesFit filter and args, reproducing kube's noderesources/fit_test.go (TestEnoughRequests,
TestNotEnoughRequests, TestStorageRequests, TestRestartableInitContainers) and
validation_pluginargs_test.go (TestValidateFitArgs, the scoring-strategy and shape cases,
NodeResourcesBalancedAllocationArgs). Scoring is in test_noderesources_score.py."""
from __future__ import annotations

import pytest

from caldera.errors import ConfigError
from caldera.framework.status import Code, Status
from caldera.plugins.noderesources.balanced import BalancedAllocation
from caldera.plugins.noderesources.fit import NodeResourcesFit

from ..builders import make_node, make_pod, make_scheduler, make_table, run_filter

EXT_A, EXT_B = "example.com/aaa", "example.com/bbb"
K8S_A, K8S_B = "kubernetes.io/something", "subdomain.kubernetes.io/something"
HUGE_A = "hugepages-2Mi"
EXT_DRA = "extended.resource.dra.io/something"
FIT = {"preFilter": ["NodeResourcesFit"], "filter": ["NodeResourcesFit"]}
_n = [0]


def U(cpu=0, mem=0, eph=0, **_):
    """framework.Resource{MilliCPU, Memory, EphemeralStorage}; scalars via S(...)."""
    return {"cpu": f"{cpu}m", "memory": str(mem), "pods": "0", "ephemeral-storage": str(eph)}


def S(base: dict, scalars: dict) -> dict:
    return {**base, **{k: str(v) for k, v in scalars.items()}}


def res_pod(*usages, inits=(), overhead=None, pod_level=None, node=None):
    """newResourcePod / newResourceInitPod / newResourceOverheadPod / newPodLevelResourcesPod."""
    _n[0] += 1
    spec = {"resources": {"requests": pod_level}} if pod_level else None
    return make_pod(f"p{_n[0]}", node=node, overhead=overhead, spec=spec,
                    containers=[{"name": f"c{i}", "image": "pause", "resources": {"requests": u}}
                                for i, u in enumerate(usages)],
                    init_containers=[{"name": f"i{i}", "image": "pause", "resources": {"requests": u}}
                                     for i, u in enumerate(inits)])


def fit_status(pod, existing, alloc, args=None):
    node = make_node("n", **alloc)
    table = make_table([node], [existing] if existing is not None else [])
    sched = make_scheduler(table, FIT, {"NodeResourcesFit": args} if args else None)
    return run_filter(sched, pod)["n"]


# makeAllocatableResources(10, 20, 32, 5, 20, 5)
ALLOC = dict(cpu="10m", memory="20", pods="32", extra={EXT_A: "5", "ephemeral-storage": "20", HUGE_A: "5"})
R = lambda r: f"Insufficient {r}"  # noqa: E731
US, UR = Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE

ENOUGH = [
    ("no resources requested always fits", res_pod(), U(10, 20), None, None),
    ("too many resources fails", res_pod(U(1, 1)), U(10, 20), None, (US, R("cpu"), R("memory"))),
    ("too many resources fails due to init container cpu", res_pod(U(1, 1), inits=[U(3, 1)]), U(8, 19), None,
     (US, R("cpu"))),
    ("too many resources fails due to highest init container cpu", res_pod(U(1, 1), inits=[U(3, 1), U(2, 1)]),
     U(8, 19), None, (US, R("cpu"))),
    ("too many resources fails due to init container memory", res_pod(U(1, 1), inits=[U(1, 3)]), U(9, 19), None,
     (US, R("memory"))),
    ("too many resources fails due to highest init container memory", res_pod(U(1, 1), inits=[U(1, 3), U(1, 2)]),
     U(9, 19), None, (US, R("memory"))),
    ("init container fits because it's the max, not sum", res_pod(U(1, 1), inits=[U(1, 1)]), U(9, 19), None, None),
    ("multiple init containers fit because it's the max", res_pod(U(1, 1), inits=[U(1, 1), U(1, 1)]), U(9, 19),
     None, None),
    ("both resources fit", res_pod(U(1, 1)), U(5, 5), None, None),
    ("one resource memory fits", res_pod(U(2, 1)), U(9, 5), None, (US, R("cpu"))),
    ("one resource cpu fits", res_pod(U(1, 2)), U(5, 19), None, (US, R("memory"))),
    ("equal edge case", res_pod(U(5, 1)), U(5, 19), None, None),
    ("equal edge case for init container", res_pod(U(4, 1), inits=[U(5, 1)]), U(5, 19), None, None),
    ("extended resource fits", res_pod(S(U(), {EXT_A: 1})), U(), None, None),
    ("extended resource fits for init container", res_pod(U(), inits=[S(U(), {EXT_A: 1})]), U(), None, None),
    ("extended resource capacity enforced", res_pod(S(U(1, 1), {EXT_A: 10})), S(U(), {EXT_A: 0}), None,
     (UR, R(EXT_A))),
    ("extended resource capacity enforced for init container", res_pod(U(), inits=[S(U(1, 1), {EXT_A: 10})]),
     S(U(), {EXT_A: 0}), None, (UR, R(EXT_A))),
    ("extended resource allocatable enforced", res_pod(S(U(1, 1), {EXT_A: 1})), S(U(), {EXT_A: 5}), None,
     (US, R(EXT_A))),
    ("extended resource allocatable enforced for init container", res_pod(U(), inits=[S(U(1, 1), {EXT_A: 1})]),
     S(U(), {EXT_A: 5}), None, (US, R(EXT_A))),
    ("extended resource allocatable enforced for multiple containers",
     res_pod(S(U(1, 1), {EXT_A: 3}), S(U(1, 1), {EXT_A: 3})), S(U(), {EXT_A: 2}), None, (UR, R(EXT_A))),
    ("extended resource allocatable admits multiple init containers",
     res_pod(U(), inits=[S(U(1, 1), {EXT_A: 3}), S(U(1, 1), {EXT_A: 3})]), S(U(), {EXT_A: 2}), None, None),
    ("extended resource allocatable enforced for multiple init containers",
     res_pod(U(), inits=[S(U(1, 1), {EXT_A: 6}), S(U(1, 1), {EXT_A: 3})]), S(U(), {EXT_A: 2}), None,
     (UR, R(EXT_A))),
    ("extended resource allocatable enforced for unknown resource", res_pod(S(U(1, 1), {EXT_B: 1})), U(), None,
     (UR, R(EXT_B))),
    ("extended resource allocatable enforced for unknown resource for init container",
     res_pod(U(), inits=[S(U(1, 1), {EXT_B: 1})]), U(), None, (UR, R(EXT_B))),
    ("kubernetes.io resource capacity enforced", res_pod(S(U(1, 1), {K8S_A: 10})), U(), None, (UR, R(K8S_A))),
    ("kubernetes.io resource capacity enforced for init container", res_pod(U(), inits=[S(U(1, 1), {K8S_B: 10})]),
     U(), None, (UR, R(K8S_B))),
    ("hugepages resource capacity enforced", res_pod(S(U(1, 1), {HUGE_A: 10})), S(U(), {HUGE_A: 0}), None,
     (UR, R(HUGE_A))),
    ("hugepages resource capacity enforced for init container", res_pod(U(), inits=[S(U(1, 1), {HUGE_A: 10})]),
     S(U(), {HUGE_A: 0}), None, (UR, R(HUGE_A))),
    ("hugepages resource allocatable enforced for multiple containers",
     res_pod(S(U(1, 1), {HUGE_A: 3}), S(U(1, 1), {HUGE_A: 3})), S(U(), {HUGE_A: 2}), None, (UR, R(HUGE_A))),
    ("skip checking ignored extended resource", res_pod(S(U(1, 1), {EXT_B: 1})), U(),
     {"ignoredResources": [EXT_B]}, None),
    ("resources + pod overhead fits", res_pod(U(1, 1), overhead={"cpu": "3m", "memory": "13"}), U(5, 5), None,
     None),
    ("requests + overhead does not fit for memory", res_pod(U(1, 1), overhead={"cpu": "1m", "memory": "15"}),
     U(5, 5), None, (US, R("memory"))),
    ("skip checking ignored extended resource via resource groups",
     res_pod(S(U(1, 1), {EXT_B: 1, K8S_A: 1})), U(), {"ignoredResourceGroups": ["example.com"]},
     (UR, R(K8S_A))),
    ("skip checking extended resource request with quantity zero", res_pod(S(U(1, 1), {EXT_A: 0})),
     S(U(), {EXT_A: 6}), None, None),
    ("skip checking resource request with quantity zero", res_pod(S(U(), {EXT_A: 1})),
     S(U(20, 30), {EXT_A: 1}), None, None),
    ("both pod-level and container-level resources fit",
     res_pod(U(1, 1), pod_level={"cpu": "1m", "memory": "2"}), U(5, 5), None, None),
    ("pod-level cpu resource not fit", res_pod(U(1, 1), pod_level={"cpu": "7m", "memory": "2"}), U(5, 5), None,
     (US, R("cpu"))),
    ("pod-level memory resource not fit", res_pod(U(1, 1), pod_level={"cpu": "3m", "memory": "2"}), U(5, 19),
     None, (US, R("memory"))),
    ("pod-level hugepages resource fit", res_pod(pod_level={"cpu": "3m", "memory": "2", HUGE_A: "5"}), None,
     None, None),
    ("both pod-level and container-level hugepages resource fit",
     res_pod(S(U(1, 1), {HUGE_A: 3}), pod_level={"cpu": "3m", "memory": "2", HUGE_A: "5"}), None, None, None),
    ("pod-level hugepages resource not fit", res_pod(pod_level={"cpu": "3m", "memory": "2", HUGE_A: "10"}), None,
     None, (UR, R(HUGE_A))),
    ("one pod-level cpu resource fits and all init and non-init containers resources fit",
     res_pod(U(1, 1), inits=[U(1, 1)], pod_level={"cpu": "3m", "memory": "2"}), U(5, 19), None,
     (US, R("memory"))),
    # DRAExtendedResource cases that do not depend on DRA objects
    ("extended resource backed by device plugin", res_pod(S(U(), {EXT_A: 1})), U(), None, None),
    ("extended resource backed by DRA not enabled", res_pod(S(U(1, 1), {EXT_DRA: 1})), U(), None,
     (UR, R(EXT_DRA))),
    ("extended resource NOT backed by DRA", res_pod(S(U(1, 1), {EXT_B: 1})), U(), None, (UR, R(EXT_B))),
    ("extended resource was backed by Device Plugin (Allocatable: 0), global cache", res_pod(S(U(), {EXT_A: 1})),
     S(U(), {EXT_A: 0}), None, None),
]


@pytest.mark.parametrize("pod,existing,args,want", [c[1:] for c in ENOUGH], ids=[c[0] for c in ENOUGH])
def test_enough_requests(pod, existing, args, want):
    got = fit_status(pod, res_pod(existing, node="n") if existing is not None else None, ALLOC, args)
    if want is None:
        assert got is None
    else:
        assert got == Status(want[0], *want[1:])


# makeAllocatableResources(10, 20, 1, 0, 0, 0): room for one pod, which is already there
NOT_ENOUGH_ALLOC = dict(cpu="10m", memory="20", pods="1", extra={EXT_A: "0", "ephemeral-storage": "0", HUGE_A: "0"})


@pytest.mark.parametrize("pod,existing", [
    (res_pod(), U(10, 20)),
    (res_pod(U(1, 1)), U(5, 5)),
    (res_pod(U(5, 1)), U(5, 19)),
    (res_pod(U(5, 1), inits=[U(5, 1)]), U(5, 19)),
], ids=["even without specified resources", "even if both resources fit", "even for equal edge case",
        "even for equal edge case due to init container"])
def test_not_enough_requests(pod, existing):
    got = fit_status(pod, res_pod(existing, node="n"), NOT_ENOUGH_ALLOC)
    assert got == Status.unschedulable("Too many pods")


def test_too_many_pods_comes_first_and_stays_resolvable():
    got = fit_status(res_pod(S(U(11, 1), {EXT_A: 1})), res_pod(U(5, 5), node="n"), NOT_ENOUGH_ALLOC)
    assert got == Status.unresolvable("Too many pods", R("cpu"), R(EXT_A))


@pytest.mark.parametrize("pod,existing,want", [
    (res_pod(U(1, 1)), U(2, 10), None),
    (res_pod(U(eph=25)), U(2, 2), Status.unresolvable(R("ephemeral-storage"))),
    (res_pod(U(eph=5)), U(2, 2, 10), None),
    (res_pod(U(eph=10)), U(2, 2), None),
], ids=["empty storage requested, and pod fits", "storage ephemeral local storage request exceeds allocatable",
        "ephemeral local storage is sufficient", "pod fits"])
def test_storage_requests(pod, existing, want):
    assert fit_status(pod, res_pod(existing, node="n"), ALLOC) == want


def _sidecar_pod(req=None, sidecar_req=None):
    res = {"requests": req} if req else {}
    sres = {"requests": sidecar_req} if sidecar_req else {}
    return make_pod(f"sc{len(str(req))}{len(str(sidecar_req))}",
                    containers=[{"name": "regular", "image": "pause", "resources": res}],
                    init_containers=[{"name": "restartable-init", "image": "pause", "restartPolicy": "Always",
                                      "resources": sres}])


@pytest.mark.parametrize("pod,want", [
    (make_pod("plain", containers=[{"name": "regular", "image": "pause"}]), None),
    (_sidecar_pod(), None),
    (_sidecar_pod({"cpu": "1m"}, {"cpu": "1m"}), None),
    (_sidecar_pod({"cpu": "1m"}, {"cpu": "2m"}), Status.unresolvable(R("cpu"))),
], ids=["pod without restartable init containers", "pod with restartable init containers",
        "total requests do not exceed allocatable", "total requests exceed allocatable"])
def test_restartable_init_containers(pod, want):
    # makeAllocatableResources(2, 0, 1, 0, 0, 0), SidecarContainers enabled (GA)
    assert fit_status(pod, None, dict(cpu="2m", memory="0", pods="1")) == want


def test_resources_kube_does_not_track_are_not_checked():
    # framework.Resource keeps cpu, memory, ephemeral-storage, pods and scalar resources only
    pod = res_pod({"cpu": "1m", "storage": "1Ti", "foo": "3", "pods": "5"})
    assert fit_status(pod, None, dict(cpu="10m", memory="20", pods="32")) is None


def test_filter_is_vectorised_over_many_nodes():
    nodes = [make_node(f"n{i}", cpu=f"{i}m", memory="1Gi", pods="2") for i in range(50)]
    sched = make_scheduler(make_table(nodes), FIT)
    got = run_filter(sched, res_pod(U(25, 1)))
    assert [n for n, s in got.items() if s is None] == [f"n{i}" for i in range(25, 50)]
    assert got["n0"] == Status.unresolvable(R("cpu"))


# ---- args: validation_pluginargs.go with v1 defaulting ---------------------------------------------
def fit_plugin(args):
    return NodeResourcesFit(args)


@pytest.mark.parametrize("args,msg", [
    ({"ignoredResources": ["longvalue" + "a" * 64]},
     "ignoredResources[0]: 'longvalue" + "a" * 64 + "' is not a valid resource name: name part must be no more than "
     "63 bytes"),
    ({"ignoredResources": ["example.com/"]}, "ignoredResources[0]: 'example.com/' is not a valid resource name: "
                                             "name part must be non-empty; name part must consist of"),
    ({"ignoredResources": ["example.com/aaa/bbb"]}, "ignoredResources[0]: 'example.com/aaa/bbb' is not a valid "
                                                    "resource name: a valid label key must consist of"),
    ({"ignoredResourceGroups": ["a" * 64]}, "ignoredResourceGroups[0]"),
    ({"ignoredResourceGroups": ["example.com/aa"]}, "resource group name can't contain '/'"),
    ({"scoringStrategy": {"type": "Invalid"}}, "scoringStrategy.type: 'Invalid' is not supported"),
    ({"scoringStrategy": {"resources": [{"name": "cpu"}]}}, "scoringStrategy.type: None is not supported"),
    ({"scoringStrategy": {"type": "LeastAllocated", "resources": [{"name": "cpu", "weight": -1}]}},
     "scoringStrategy.resources[0].weight"),
    ({"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 101}]}},
     "scoringStrategy.resources[0].weight"),
    ({"scoringStrategy": {"type": "MostAllocated",
                          "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 101}]}},
     "scoringStrategy.resources[1].weight"),
    ({"scoringStrategy": {"type": "RequestedToCapacityRatio"}}, "requestedToCapacityRatio: required"),
    ({"scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": []}}},
     "shape: at least one point must be specified"),
    ({"scoringStrategy": {"type": "RequestedToCapacityRatio", "resources": [{"name": "cpu", "weight": 101}],
                          "requestedToCapacityRatio": {"shape": [{"utilization": 30, "score": 3}]}}},
     "resources[0].weight"),
    ({"scoringStrategy": {"type": "RequestedToCapacityRatio",
                          "requestedToCapacityRatio": {"shape": [{"utilization": -1, "score": 3}]}}},
     "shape[0].utilization"),
    ({"scoringStrategy": {"type": "RequestedToCapacityRatio",
                          "requestedToCapacityRatio": {"shape": [{"utilization": 101, "score": 3}]}}},
     "shape[0].utilization"),
    ({"scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {
        "shape": [{"utilization": 10, "score": 3}, {"utilization": 10, "score": 3}]}}},
     "shape[1].utilization: values must be sorted in increasing order"),
    ({"scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {
        "shape": [{"utilization": 10, "score": 3}, {"utilization": 20, "score": 3}, {"utilization": 15, "score": 3}]}}},
     "shape[2].utilization"),
    ({"scoringStrategy": {"type": "RequestedToCapacityRatio",
                          "requestedToCapacityRatio": {"shape": [{"utilization": 10, "score": -1}]}}},
     "shape[0].score"),
    ({"scoringStrategy": {"type": "RequestedToCapacityRatio",
                          "requestedToCapacityRatio": {"shape": [{"utilization": 10, "score": 11}]}}},
     "shape[0].score"),
    # a shape is validated whatever the type
    ({"scoringStrategy": {"type": "LeastAllocated",
                          "requestedToCapacityRatio": {"shape": [{"utilization": 10, "score": 11}]}}},
     "shape[0].score"),
    ({"scoringStrategyy": {}}, "unknown field"),
])
def test_fit_args_invalid(args, msg):
    with pytest.raises(ConfigError) as e:
        fit_plugin(args)
    assert msg in str(e.value)


@pytest.mark.parametrize("args,strategy,resources", [
    ({}, "LeastAllocated", (("cpu", 1), ("memory", 1))),
    ({"scoringStrategy": {"type": "MostAllocated"}}, "MostAllocated", (("cpu", 1), ("memory", 1))),
    ({"scoringStrategy": {"type": "LeastAllocated", "resources": []}}, "LeastAllocated",
     (("cpu", 1), ("memory", 1))),
    # v1 defaulting: an unset or zero weight is 1
    ({"scoringStrategy": {"type": "LeastAllocated", "resources": [{"name": "cpu", "weight": 0},
                                                                  {"name": "memory", "weight": 10}]}},
     "LeastAllocated", (("cpu", 1), ("memory", 10))),
    ({"scoringStrategy": {"type": "RequestedToCapacityRatio", "resources": [{"name": "cpu"}],
                          "requestedToCapacityRatio": {"shape": [{"utilization": 30, "score": 3}]}}},
     "RequestedToCapacityRatio", (("cpu", 1),)),
    ({"scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {
        "shape": [{"utilization": 10, "score": 3}, {"utilization": 20, "score": 3}, {"utilization": 30, "score": 3}]}}},
     "RequestedToCapacityRatio", (("cpu", 1), ("memory", 1))),
    ({"ignoredResources": [EXT_B], "ignoredResourceGroups": ["example.com"]}, "LeastAllocated",
     (("cpu", 1), ("memory", 1))),
])
def test_fit_args_valid(args, strategy, resources):
    p = fit_plugin(args)
    assert p.strategy == strategy and p.resources == resources


@pytest.mark.parametrize("args,msg", [
    ({"resources": [{"name": "cpu", "weight": 2}]}, "resources[0].weight: must be 1"),
    ({"resources": [{"name": "cpu"}, {"name": "cpu"}]}, "resources[1].name: duplicate value 'cpu'"),
    ({"resources": [{"name": "cpu", "weight": -1}]}, "resources[0].weight: must be 1"),
    ({"resourcez": []}, "unknown field"),
])
def test_balanced_args_invalid(args, msg):
    with pytest.raises(ConfigError) as e:
        BalancedAllocation(args)
    assert msg in str(e.value)


@pytest.mark.parametrize("args,resources", [
    ({}, (("cpu", 1), ("memory", 1))),
    ({"resources": []}, (("cpu", 1), ("memory", 1))),
    ({"resources": [{"name": "cpu", "weight": 0}, {"name": "nvidia.com/gpu"}]}, (("cpu", 1), ("nvidia.com/gpu", 1))),
])
def test_balanced_args_valid(args, resources):
    assert BalancedAllocation(args).resources == resources


def test_invalid_args_fail_the_profile():
    with pytest.raises(ConfigError, match=r"NodeResourcesFitArgs\.scoringStrategy\.type"):
        make_scheduler(make_table([make_node("n")]), FIT, {"NodeResourcesFit": {"scoringStrategy": {"type": "X"}}})
