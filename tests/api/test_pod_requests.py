"""A pod's requests (component-helpers resource.PodRequests / AggregateContainerRequests, kube's
helpers_test.go; the scheduler's NonMissingContainerRequests, resource_allocation_test.go
TestResourceAllocationScorerCalculateRequests), plus the API server defaulting Caldera applies
to manifests (requests from limits, pod-level requests from pod-level limits)."""
from __future__ import annotations

import pytest

from caldera.api.objects import DEFAULT_MEMORY_REQUEST, DEFAULT_MILLI_CPU_REQUEST, Pod
from caldera.errors import InputError

MI = 2**20
GI = 2**30


def c(req=None, lim=None, sidecar=False, name=None):
    res = {}
    if req is not None:
        res["requests"] = req
    if lim is not None:
        res["limits"] = lim
    out = {"name": name or "c", "image": "pause", "resources": res}
    if sidecar:
        out["restartPolicy"] = "Always"
    return out


def pod(containers=(), inits=(), overhead=None, pod_resources=None) -> Pod:
    spec = {"containers": list(containers)}
    if inits:
        spec["initContainers"] = list(inits)
    if overhead:
        spec["overhead"] = overhead
    if pod_resources is not None:
        spec["resources"] = pod_resources
    return Pod({"metadata": {"name": "p", "namespace": "default"}, "spec": spec})


# ---- TestPodRequestsAndLimits (getPod: one container and one init container with the same resources)
def get_pod(cpu_req=None, cpu_lim=None, mem_req=None, mem_lim=None, cpu_oh=None, mem_oh=None):
    req = {k: v for k, v in (("cpu", cpu_req), ("memory", mem_req)) if v is not None}
    lim = {k: v for k, v in (("cpu", cpu_lim), ("memory", mem_lim)) if v is not None}
    oh = {k: v for k, v in (("cpu", cpu_oh), ("memory", mem_oh)) if v is not None}
    return pod([c(req, lim)], [c(req, lim, name="init")], oh or None)


@pytest.mark.parametrize("p,want", [
    # kube's unit test builds the object without API defaulting and expects {}; a real pod (and
    # Caldera) gets requests defaulted from limits, so the request is 9
    (get_pod(cpu_lim="9"), {"cpu": 9000}),
    (get_pod(cpu_oh="5", mem_oh="5"), {"cpu": 5000, "memory": 5}),
    (get_pod(cpu_req="1", mem_req="10", cpu_oh="5", mem_oh="5"), {"cpu": 6000, "memory": 15}),
    (get_pod(cpu_req="1", cpu_lim="2", mem_req="10", mem_lim="12", cpu_oh="5", mem_oh="5"),
     {"cpu": 6000, "memory": 15}),
    (get_pod(cpu_req="1", cpu_lim="2", mem_req="10", cpu_oh="5", mem_oh="5"), {"cpu": 6000, "memory": 15}),
], ids=["just-limit-no-overhead", "just-overhead", "req-and-overhead", "all-req-lim-and-overhead",
        "req-some-lim-and-overhead"])
def test_pod_requests_and_limits(p, want):
    assert p.requests == want


R = lambda cpu: {"cpu": cpu}  # noqa: E731


@pytest.mark.parametrize("containers,inits,overhead,want", [
    # TestPodResourceRequests
    ([c(R("1"))], [c(R("4"))], None, 4000),                                        # larger init container
    ([c(R("2")), c(R("3"))], [c(R("2"))], None, 5000),                            # larger containers
    ([c(R("2")), c(R("3"))], [c(R("2"), R("2"))], {"cpu": "1", "memory": "1Gi"}, 6000),   # overhead included
    ([c(R("1"))], [c(R("1"), sidecar=True)], None, 2000),                          # restartable init container
    # multiple restartable init containers: max(5, 3+2+1 + 1) = 7
    ([c(R("1"))], [c(R("5")), c(R("1"), sidecar=True), c(R("2"), sidecar=True), c(R("3"), sidecar=True)],
     None, 7000),
    # multiple restartable and regular init: init-2 needs 5 + earlier sidecars 1+2 = 8
    ([c(R("1"))], [c(R("5")), c(R("1"), sidecar=True), c(R("2"), sidecar=True), c(R("5")),
                   c(R("3"), sidecar=True)], None, 8000),
    ([c(R("100"))], [c(R("10"), sidecar=True), c(R("200"))], None, 210000),       # restartable-init, init, regular
    # TestPodRequestsAndLimitsWithoutOverhead ("massive init": largest init wins) / TestAggregateContainerRequests
    ([c({"cpu": "1", "memory": "5"}), c({"cpu": "4", "memory": "12"})],
     [c({"cpu": "1", "memory": "5"}), c({"cpu": "40", "memory": "120"})], None, 40000),
    ([c(R("9")), c(R("9"))], [], None, 18000),
    ([c(R("9"))], [c(R("9"))], None, 9000),
    ([c(R("9"))], [c(R("8"), sidecar=True), c(R("6"))], None, 17000),
])
def test_pod_resource_requests(containers, inits, overhead, want):
    p = pod(containers, inits, overhead)
    assert p.requests["cpu"] == want
    if overhead and "memory" in overhead:
        assert p.requests["memory"] == GI


def test_overhead_is_added_once_after_the_aggregate():
    p = pod([c({"cpu": "1", "memory": "5"}, {"cpu": "2", "memory": "10"}),
             c({"cpu": "4", "memory": "12"}, {"cpu": "8", "memory": "24"})],
            overhead={"cpu": "3", "memory": "8"})
    assert p.requests == {"cpu": 8000, "memory": 25}


@pytest.mark.parametrize("containers,inits,overhead,want_cpu,want_mem", [
    # TestResourceAllocationScorerCalculateRequests (scoring's non-zero requests)
    ([], [], {"cpu": "1", "memory": "1Mi"}, 1000, MI),                                   # overhead only
    ([c()], [], None, DEFAULT_MILLI_CPU_REQUEST, DEFAULT_MEMORY_REQUEST),               # 1x requestless
    ([c(), c()], [], None, 2 * DEFAULT_MILLI_CPU_REQUEST, 2 * DEFAULT_MEMORY_REQUEST),  # counted per container
    ([c({"cpu": "1", "memory": "1Mi"}), c()], [], None, 1000 + DEFAULT_MILLI_CPU_REQUEST,
     MI + DEFAULT_MEMORY_REQUEST),
    ([c({"cpu": "1", "memory": "1Mi"}), c()], [], {"cpu": "1", "memory": "1Mi"},
     2000 + DEFAULT_MILLI_CPU_REQUEST, 2 * MI + DEFAULT_MEMORY_REQUEST),
    ([c({"cpu": "1", "memory": "1Mi"}), c()], [c({"cpu": "3"})], {"cpu": "1", "memory": "1Mi"},
     4000, 2 * MI + DEFAULT_MEMORY_REQUEST),
    # requestless init container counts the defaults too: max(100m, 1m) vs containers 3m
    ([c({"cpu": "3m", "memory": "3"})], [c(), c({"cpu": "1m", "memory": "1"})], None,
     DEFAULT_MILLI_CPU_REQUEST, DEFAULT_MEMORY_REQUEST),
    ([c({"cpu": "3m", "memory": "3"}), c()], [c(), c({"cpu": "1m", "memory": "1"})], None,
     3 + DEFAULT_MILLI_CPU_REQUEST, 3 + DEFAULT_MEMORY_REQUEST),
    # an explicit zero is kept (not replaced by the default)
    ([c({"cpu": "0", "memory": "0"})], [], None, 0, 0),
    ([c({"cpu": "1"})], [], None, 1000, DEFAULT_MEMORY_REQUEST),
])
def test_non_missing_requests(containers, inits, overhead, want_cpu, want_mem):
    p = pod(containers, inits, overhead)
    assert (p.nonzero_cpu, p.nonzero_mem) == (want_cpu, want_mem)


def test_quantities_are_summed_exactly_before_rounding():
    # kube adds Quantities, then takes MilliValue/Value once
    p = pod([c({"cpu": "0.5m", "memory": "0.5"}), c({"cpu": "0.5m", "memory": "0.5"})])
    assert p.requests == {"cpu": 1, "memory": 1}
    p = pod([c({"cpu": "0.4m"})])
    assert p.requests == {"cpu": 1}


def test_limits_default_requests_per_container():
    p = pod([c({"cpu": "1"}, {"cpu": "2", "memory": "1Gi", "example.com/gpu": "1"})],
            [c(None, {"cpu": "3"})])
    assert p.requests == {"cpu": 3000, "memory": GI, "example.com/gpu": 1}


# ---- pod-level resources (TestPodLevelResourceRequests; PodLevelResources on by default) ----------
@pytest.mark.parametrize("pod_res,containers,inits,want", [
    ({"requests": {"memory": "2Mi"}}, [], [], {"memory": 2 * MI}),
    ({"requests": {"memory": "2Mi"}}, [c({"cpu": "2m"})], [], {"memory": 2 * MI, "cpu": 2}),
    # unsupported pod-level resources are ignored
    ({"requests": {"storage": "2Mi"}}, [c({"storage": "3Mi"})], [], {"storage": 3 * MI}),
    ({"requests": {"storage": "2Mi"}}, [c({"memory": "3Mi"})], [], {"memory": 3 * MI}),
    ({"requests": {"memory": "6Mi", "cpu": "8m"}}, [c({"memory": "3Mi", "cpu": "2m"})], [],
     {"memory": 6 * MI, "cpu": 8}),
    (None, [c({"memory": "3Mi", "cpu": "2m"})], [c({"memory": "5Mi", "cpu": "4m"})], {"memory": 5 * MI, "cpu": 4}),
    (None, [c({"memory": "3Mi", "cpu": "2m"})], [c({"memory": "5Mi", "cpu": "4m"}, sidecar=True)],
     {"memory": 8 * MI, "cpu": 6}),
    (None, [c({"memory": "3Mi", "cpu": "2m"})],
     [c({"memory": "5Mi", "cpu": "4m"}, sidecar=True), c({"memory": "6Mi", "cpu": "8m"})],
     {"memory": 11 * MI, "cpu": 12}),
    ({"requests": {"memory": "15Mi", "cpu": "18m"}}, [c({"memory": "3Mi", "cpu": "2m"})],
     [c({"memory": "5Mi", "cpu": "4m"}, sidecar=True), c({"memory": "6Mi", "cpu": "8m"})],
     {"memory": 15 * MI, "cpu": 18}),
    # hugepages are a pod-level resource too
    ({"requests": {"cpu": "3m", "memory": "2", "hugepages-2Mi": "5"}},
     [c({"cpu": "1m", "memory": "1", "hugepages-2Mi": "3"})], [], {"cpu": 3, "memory": 2, "hugepages-2Mi": 5}),
])
def test_pod_level_requests(pod_res, containers, inits, want):
    assert pod(containers, inits, pod_resources=pod_res).requests == want


@pytest.mark.parametrize("pod_res,containers,want", [
    # defaultPodRequests: with pod-level limits, cpu/memory requests default to the containers' aggregate,
    ({"limits": {"cpu": "2", "memory": "1Gi"}}, [c({"cpu": "500m"})], {"cpu": 500, "memory": GI}),
    # and otherwise to the pod-level limit
    ({"limits": {"cpu": "2", "memory": "1Gi"}}, [c()], {"cpu": 2000, "memory": GI}),
    ({"limits": {"cpu": "2"}, "requests": {"memory": "1Mi"}}, [c({"cpu": "100m", "memory": "3Mi"})],
     {"cpu": 100, "memory": MI}),
    # hugepage limits default from the containers' limits, then the request from that limit
    ({"limits": {"cpu": "1"}}, [c(None, {"hugepages-2Mi": "4Mi"})], {"cpu": 1000, "hugepages-2Mi": 4 * MI}),
])
def test_pod_level_defaulting(pod_res, containers, want):
    assert pod(containers, pod_resources=pod_res).requests == want


def test_pod_level_requests_replace_scoring_defaults():
    p = pod([c(), c()], pod_resources={"requests": {"cpu": "1"}})
    assert (p.nonzero_cpu, p.nonzero_mem) == (1000, 2 * DEFAULT_MEMORY_REQUEST)


@pytest.mark.parametrize("spec,field", [
    ({"containers": [c({"cpu": "-1"})]}, "spec.containers[0].resources.requests.cpu"),
    ({"containers": [c(None, {"memory": "-1Gi"})]}, "spec.containers[0].resources.limits.memory"),
    ({"containers": [c({"cpu": "1x"})]}, "spec.containers[0].resources.requests.cpu"),
    ({"containers": [], "overhead": {"cpu": "abc"}}, "spec.overhead.cpu"),
    ({"containers": [], "resources": {"requests": {"cpu": "1 2"}}}, "spec.resources.requests.cpu"),
    ({"containers": [], "resources": []}, "spec.resources"),
])
def test_invalid_resources_name_the_field(spec, field):
    with pytest.raises(InputError) as e:
        Pod({"metadata": {"name": "p"}, "spec": spec})
    assert field in str(e.value)
