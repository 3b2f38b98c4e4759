"""Pod QoS classes: port of kubernetes v1.35 pkg/apis/core/v1/helper/qos/qos_test.go
(TestComputePodQOS, every case, same names and order), plus GetPodQOS's status.qosClass, the
API server's defaulting (requests from limits) and the lazily cached Pod.qos accessor."""
from __future__ import annotations

import pytest

from caldera.api.objects import Pod
from caldera.api.qos import BEST_EFFORT, BURSTABLE, GUARANTEED, compute_pod_qos, get_pod_qos


def rl(cpu: str = "", memory: str = "", **extra: str) -> dict[str, str]:
    """getResourceList (+ addResource): empty strings leave the resource out."""
    out = {}
    if cpu:
        out["cpu"] = cpu
    if memory:
        out["memory"] = memory
    out.update({k.replace("_", "-"): v for k, v in extra.items()})
    return out


def container(name: str, requests: dict, limits: dict) -> dict:
    return {"name": name, "resources": {"requests": requests, "limits": limits}}


def pod(containers: list, inits: list | None = None, resources: tuple[dict, dict] | None = None) -> dict:
    spec: dict = {"containers": containers}
    if inits:
        spec["initContainers"] = inits
    if resources is not None:
        spec["resources"] = {"requests": resources[0], "limits": resources[1]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}


# (name, pod, expected, podLevelResourcesEnabled), as in qos_test.go
CASES = [
    ("guaranteed", pod([container("guaranteed", rl("100m", "100Mi"), rl("100m", "100Mi"))]), GUARANTEED, False),
    ("guaranteed-guaranteed", pod([container("guaranteed", rl("100m", "100Mi"), rl("100m", "100Mi")),
                                   container("guaranteed", rl("100m", "100Mi"), rl("100m", "100Mi"))]),
     GUARANTEED, False),
    ("best-effort-best-effort", pod([container("best-effort", rl(), rl()), container("best-effort", rl(), rl())]),
     BEST_EFFORT, False),
    ("best-effort", pod([container("best-effort", rl(), rl())]), BEST_EFFORT, False),
    ("best-effort-burstable", pod([container("best-effort", rl(), rl()), container("burstable", rl("1"), rl("2"))]),
     BURSTABLE, False),
    ("best-effort-guaranteed", pod([container("best-effort", rl(), rl()),
                                    container("guaranteed", rl("10m", "100Mi"), rl("10m", "100Mi"))]),
     BURSTABLE, False),
    ("burstable-cpu-guaranteed-memory", pod([container("burstable", rl("", "100Mi"), rl("", "100Mi"))]),
     BURSTABLE, False),
    ("burstable-no-limits", pod([container("burstable", rl("100m", "100Mi"), rl())]), BURSTABLE, False),
    ("burstable-guaranteed", pod([container("burstable", rl("1", "100Mi"), rl("2", "100Mi")),
                                  container("guaranteed", rl("100m", "100Mi"), rl("100m", "100Mi"))]),
     BURSTABLE, False),
    ("burstable-unbounded-but-requests-match-limits",
     pod([container("burstable", rl("100m", "100Mi"), rl("200m", "200Mi")),
          container("burstable-unbounded", rl("100m", "100Mi"), rl())]), BURSTABLE, False),
    ("burstable-1", pod([container("burstable", rl("10m", "100Mi"), rl("100m", "200Mi"))]), BURSTABLE, False),
    ("burstable-2", pod([container("burstable", rl("0", "0"), rl("100m", "200Mi"))]), BURSTABLE, False),
    ("best-effort-hugepages", pod([container("best-effort", rl("0", "0", hugepages_2Mi="1Gi"),
                                             rl("0", "0", hugepages_2Mi="1Gi"))]), BEST_EFFORT, False),
    ("init-container", pod([container("best-effort", rl(), rl())],
                           inits=[container("burstable", rl("10m", "100Mi"), rl("100m", "200Mi"))]), BURSTABLE, False),
    ("guaranteed-with-pod-level-resources",
     pod([container("best-effort", rl(), rl())], resources=(rl("10m", "100Mi"), rl("10m", "100Mi"))), GUARANTEED, True),
    ("guaranteed-with-pod-and-container-level-resources",
     pod([container("burstable", rl("3m", "10Mi"), rl("5m", "20Mi"))],
         resources=(rl("10m", "100Mi"), rl("10m", "100Mi"))),
     GUARANTEED, True),
    ("burstable-with-pod-level-resources",
     pod([container("best-effort", rl(), rl())], resources=(rl("10m", "10Mi"), rl("20m", "50Mi"))), BURSTABLE, True),
    ("burstable-with-pod-and-container-level-resources",
     pod([container("burstable", rl("5m", "10Mi"), rl("5m", "10Mi"))],
         resources=(rl("10m", "10Mi"), rl("20m", "50Mi"))),
     BURSTABLE, True),
    ("burstable-with-pod-and-container-level-requests",
     pod([container("burstable", rl("5m", "10Mi"), rl())], resources=(rl("10m", "10Mi"), rl())), BURSTABLE, True),
    ("burstable-with-pod-and-container-level-resources-2",
     pod([container("burstable", rl("5m", "10Mi"), rl()), container("guaranteed", rl("5m", "10Mi"), rl("5m", "10Mi"))],
         resources=(rl("10m", "10Mi"), rl("5m"))), BURSTABLE, True),
]


@pytest.mark.parametrize(("name", "raw", "expected", "pod_level"), CASES, ids=[c[0] for c in CASES])
def test_compute_pod_qos(name, raw, expected, pod_level):
    assert compute_pod_qos(raw["spec"], pod_level_resources=pod_level) == expected
    # the Pod accessor (the gate on, as in v1.35) agrees: the cases without pod-level resources
    # do not depend on the gate
    assert Pod(raw).qos == expected


def test_pod_level_resources_gate_off_uses_containers():
    raw = pod([container("best-effort", rl(), rl())], resources=(rl("10m", "100Mi"), rl("10m", "100Mi")))
    assert compute_pod_qos(raw["spec"], pod_level_resources=False) == BEST_EFFORT
    raw = pod([container("g", rl("1", "1Gi"), rl("1", "1Gi"))], resources=(rl("1", "1Gi"), rl("2", "1Gi")))
    assert compute_pod_qos(raw["spec"], pod_level_resources=False) == GUARANTEED
    assert compute_pod_qos(raw["spec"]) == BURSTABLE


def test_empty_pod_level_resources_is_set():
    # a non-nil spec.resources, even empty, makes ComputePodQOS ignore the containers
    raw = pod([container("g", rl("1", "1Gi"), rl("1", "1Gi"))])
    raw["spec"]["resources"] = {}
    assert compute_pod_qos(raw["spec"]) == BEST_EFFORT
    raw["spec"]["resources"] = None       # null: not set
    assert compute_pod_qos(raw["spec"]) == GUARANTEED


def test_requests_default_from_limits():
    # SetDefaults_Pod: a limit without a request is the request, so limits alone are Guaranteed
    assert Pod(pod([{"name": "c", "resources": {"limits": rl("1", "1Gi")}}])).qos == GUARANTEED
    # a request of 0 is explicit: not defaulted, not counted
    assert Pod(pod([container("c", rl("0"), rl("1", "1Gi"))])).qos == BURSTABLE
    # and so do pod-level requests (defaultPodRequests), from the pod-level limits
    assert compute_pod_qos(pod([container("c", rl(), rl())], resources=(rl(), rl("1", "1Gi")))["spec"]) == GUARANTEED


def test_pod_level_requests_default_from_container_requests():
    # defaultPodRequests: a missing pod-level cpu/memory request is the containers' aggregate first
    raw = pod([container("c", rl("500m", "1Gi"), rl())], resources=(rl(), rl("1", "1Gi")))
    assert compute_pod_qos(raw["spec"]) == BURSTABLE      # requests 500m/1Gi, limits 1/1Gi


def test_only_cpu_and_memory_count():
    raw = pod([container("c", rl("1", "1Gi", ephemeral_storage="1Gi", **{"nvidia.com/gpu": "1"}),
                         rl("1", "1Gi", ephemeral_storage="2Gi", **{"nvidia.com/gpu": "1"}))])
    assert Pod(raw).qos == GUARANTEED
    assert Pod(pod([container("c", rl(ephemeral_storage="1Gi"), rl(ephemeral_storage="1Gi"))])).qos == BEST_EFFORT


def test_sums_across_containers_and_init_containers():
    # both containers have cpu+memory limits and the sums match: Guaranteed
    raw = pod([container("a", rl("1", "1Gi"), rl("1", "1Gi"))],
              inits=[container("init", rl("500m", "512Mi"), rl("500m", "512Mi"))])
    assert Pod(raw).qos == GUARANTEED
    # an init container without limits makes the pod Burstable
    raw = pod([container("a", rl("1", "1Gi"), rl("1", "1Gi"))], inits=[container("init", rl("1"), rl())])
    assert Pod(raw).qos == BURSTABLE
    # ephemeral containers do not count
    raw = pod([container("a", rl("1", "1Gi"), rl("1", "1Gi"))])
    raw["spec"]["ephemeralContainers"] = [{"name": "debug"}]
    assert Pod(raw).qos == GUARANTEED


def test_quantities_compare_exactly():
    assert Pod(pod([container("c", rl("1000m", "1024Mi"), rl("1", "1Gi"))])).qos == GUARANTEED
    assert Pod(pod([container("c", rl("999m", "1Gi"), rl("1", "1Gi"))])).qos == BURSTABLE


def test_status_qos_class_first():
    raw = pod([container("c", rl("1"), rl("2"))])
    raw["status"] = {"qosClass": "Guaranteed"}
    assert get_pod_qos(raw) == GUARANTEED          # GetPodQOS trusts the stored class
    assert compute_pod_qos(raw["spec"]) == BURSTABLE
    assert Pod(raw).qos == GUARANTEED
    raw["status"] = {"qosClass": ""}
    assert get_pod_qos(raw) == BURSTABLE


def test_accessor_is_lazy_and_cached():
    p = Pod(pod([container("c", rl("1", "1Gi"), rl("1", "1Gi"))]))
    assert ("qos",) not in p.cache
    assert p.qos == GUARANTEED
    assert p.cache[("qos",)] == GUARANTEED
