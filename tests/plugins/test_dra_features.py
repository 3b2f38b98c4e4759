"""DynamicResources' v1.35 features through `caldera schedule`: firstAvailable with Score and
NormalizeScore (kube v1.35.4 dynamicresources_test.go TestPlugin "single-claim-prioritized-list-scoring",
"multiple-claims-prioritized-list-scoring", "multiple-requests-prioritized-list-scoring",
Test_computesScore, TestNormalizeScore), matchAttribute constraints, admin access (and the
namespace label rule), ResourceSlice nodeSelector (the claim's status.allocation.nodeSelector),
CEL quantities, semvers and runtime errors, and the fields whose gate is off by default in v1.35.
"""
from __future__ import annotations

import json
import textwrap

import numpy as np
import pytest

from caldera.api.dra import DeviceResult, Request, ResourceClaim
from caldera.api.loader import load_cluster
from caldera.config.defaults import default_config
from caldera.engine.oneshot import run_pass
from caldera.errors import InputError
from caldera.framework.runtime import default_normalize
from caldera.plugins.dynamicresources.extras import compute_scores
from caldera.plugins.registry import build_registry
from tests.fuzz.harness import invoke, schema_errors, strict_json

DRIVER = "some-driver"
NS = "default"


def node(name, labels=None):
    lab = {"kubernetes.io/hostname": name, **(labels or {})}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": lab},
            "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}}}


def device_class(name="my-resource-class"):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name}, "spec": {}}


def rslice(where, *devices, driver=DRIVER, pool=None, name=None):
    spec = {"driver": driver, "pool": {"name": pool or str(where if isinstance(where, str) else "net"),
                                        "generation": 1, "resourceSliceCount": 1},
            "devices": [d if isinstance(d, dict) else {"name": d} for d in devices]}
    if where == "all":
        spec["allNodes"] = True
    elif isinstance(where, dict):
        spec["nodeSelector"] = where
    else:
        spec["nodeName"] = where
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": name or f"{spec['pool']['name']}-{driver}"}, "spec": spec}


def sub(name, count=1, selectors=(), cls="my-resource-class"):
    s = {"name": name, "deviceClassName": cls, "allocationMode": "ExactCount", "count": count}
    if selectors:
        s["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    return s


def exactly(name, count=1, selectors=(), admin=None, cls="my-resource-class", mode="ExactCount"):
    ex = {"deviceClassName": cls, "allocationMode": mode}
    if mode == "ExactCount":
        ex["count"] = count
    if selectors:
        ex["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    if admin is not None:
        ex["adminAccess"] = admin
    return {"name": name, "exactly": ex}


def claim(name, *requests, constraints=(), ns=NS):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name, "namespace": ns},
            "spec": {"devices": {"requests": list(requests), "constraints": list(constraints)}}}


def pod(name, *claims, ns=NS):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns, "uid": f"{name}-uid"},
            "spec": {"resourceClaims": [{"name": c, "resourceClaimName": c} for c in claims],
                     "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "100m"}}}]}}


def write(tmp_path, docs):
    f = tmp_path / "m.yaml"
    f.write_text("\n---\n".join(json.dumps(d) for d in docs))
    return f


def run(tmp_path, docs, explain=False):
    reg = build_registry()
    return run_pass(load_cluster([str(write(tmp_path, docs))]), default_config(reg), registry=reg, explain=explain)


def cli(tmp_path, docs):
    r = invoke(["schedule", "-f", str(write(tmp_path, docs)), "-o", "json"], timeout=120)
    assert r.exit_code == 0, r.stderr
    doc = strict_json(r.stdout)
    assert not schema_errors(doc, "kube")
    return doc


def binding(doc, key):
    return {b["pod"]: b for b in doc["bindings"]}[key]


def unsched(res_or_doc, key):
    u = res_or_doc["unschedulable"] if isinstance(res_or_doc, dict) else res_or_doc.unschedulable
    return {x["pod"]: x["message"] for x in u}[key]


def dra_scores(res, key):
    return {n: row["DynamicResources"] for n, row in res.explain[key]["scores"].items()}


# ---- Score (dynamicresources_test.go) --------------------------------------------------------------
def test_single_claim_prioritized_list_scoring(tmp_path):
    healthy = f'device.attributes["{DRIVER}"].healthy'
    docs = [node("worker"), node("worker-2"), device_class(),
            rslice("worker", {"name": "instance-1", "attributes": {"healthy": {"bool": True}}}),
            rslice("worker-2", {"name": "instance-1", "attributes": {"healthy": {"bool": False}}}),
            claim("my-pod-my-resource", {"name": "req-1", "firstAvailable": [sub("subreq-1", selectors=[healthy]),
                                                                             sub("subreq-2")]}),
            pod("my-pod", "my-pod-my-resource")]
    res = run(tmp_path, docs, explain=True)
    # Score 8 and 7, NormalizeScore 100 and 87
    assert dra_scores(res, "default/my-pod") == {"worker": 100, "worker-2": 87}
    doc = cli(tmp_path, docs)
    b = binding(doc, "default/my-pod")
    assert b["node"] == "worker"
    assert b["claims"] == [{"claim": "default/my-pod-my-resource", "devices": [
        {"driver": DRIVER, "pool": "worker", "device": "instance-1", "request": "req-1/subreq-1"}]}]


def test_multiple_claims_prioritized_list_scoring(tmp_path):
    docs = [node("worker"), node("worker-2"), node("worker-3"), device_class(),
            rslice("worker", "instance-1", "instance-2", "instance-3", "instance-4"),
            rslice("worker-2", "instance-1", "instance-2"), rslice("worker-3", "instance-1"),
            claim("c1", {"name": "req-1", "firstAvailable": [sub("subreq-1")]}),
            claim("c2", {"name": "req-1", "firstAvailable": [sub("subreq-1", 4), sub("subreq-2", 3),
                                                             sub("subreq-3", 2), sub("subreq-4", 1)]}),
            pod("my-pod", "c1", "c2")]
    res = run(tmp_path, docs, explain=True)
    # worker-3 fails with "cannot allocate all claims"; Score 15 and 13, normalized 100 and 86
    assert dra_scores(res, "default/my-pod") == {"worker": 100, "worker-2": 86}
    assert res.explain["default/my-pod"]["filtered"]["worker-3"] == "cannot allocate all claims"


def test_multiple_requests_prioritized_list_scoring(tmp_path):
    reqs = [{"name": n, "firstAvailable": [sub("subreq-1", 2), sub("subreq-2", 1)]} for n in ("req-1", "req-2")]
    docs = [node("worker"), node("worker-2"), node("worker-3"), device_class(),
            rslice("worker", "instance-1", "instance-2", "instance-3", "instance-4"),
            rslice("worker-2", "instance-1", "instance-2", "instance-3"),
            rslice("worker-3", "instance-1", "instance-2"),
            claim("c1", *reqs), pod("my-pod", "c1")]
    res = run(tmp_path, docs, explain=True)
    # Score 16, 15, 14; normalized 100, 93, 87
    assert dra_scores(res, "default/my-pod") == {"worker": 100, "worker-2": 93, "worker-3": 87}


def _claim(*reqs):
    return ResourceClaim(NS, "c", list(reqs))


def _fa(name, n):
    return Request(name, "", subrequests=tuple(Request(f"subreq-{k}", "cls") for k in range(1, n + 1)))


def _res(*names):
    return [DeviceResult(n, DRIVER, "p", f"d{k}") for k, n in enumerate(names)]


# Test_computesScore, case by case
COMPUTE_SCORE = {
    "single-request-only-subrequest-allocated": ([_claim(_fa("req-1", 1))], [_res("req-1/subreq-1")], 8),
    "single-request-last-subrequest-allocated": ([_claim(_fa("req-1", 8))], [_res("req-1/subreq-8")], 1),
    "multiple-requests-with-middle-subrequests-allocated": (
        [_claim(_fa("req-1", 4), _fa("req-2", 5))], [_res("req-1/subreq-4", "req-2/subreq-5")], 9),
    "multiple-requests-with-top-subrequests-allocated": (
        [_claim(_fa("req-1", 8), _fa("req-2", 1))], [_res("req-1/subreq-8", "req-2/subreq-1")], 9),
    "multiple-claims-with-last-subrequests-allocated": (
        [_claim(_fa("req-1", 8)), _claim(_fa("req-2", 8))], [_res("req-1/subreq-8"), _res("req-2/subreq-8")], 2),
    "multiple-claims-with-top-subrequests-allocated": (
        [_claim(_fa("req-1", 1)), _claim(_fa("req-2", 1))], [_res("req-1/subreq-1"), _res("req-2/subreq-1")], 16),
}


@pytest.mark.parametrize("name", list(COMPUTE_SCORE))
def test_compute_score(name):
    claims, results, want = COMPUTE_SCORE[name]
    out, err = compute_scores(claims, claims, {0: results}, np.array([0]))
    assert err == "" and out.tolist() == [want]


def test_compute_score_more_claims_than_allocations():
    claims = [_claim(_fa("req-1", 1)), _claim(_fa("req-2", 1))]
    _, err = compute_scores(claims, claims, {0: []}, np.array([0]))
    assert err == "number of allocations 0 is smaller than number of claims"


def test_compute_score_allocated_claim_besides_one_to_allocate_is_kubes_error():
    # computeScore pairs claims.all()[i] with the results, which exist for the claims to allocate only
    a, b = _claim(Request("r", "cls")), _claim(_fa("r", 1))
    _, err = compute_scores([a, b], [b], {0: [_res("r/subreq-1")]}, np.array([0]))
    assert err == "number of allocations 1 is smaller than number of claims"


def test_score_error_reaches_the_pod(tmp_path):
    # a pod with an allocated (shared) claim and a new one, two feasible nodes: kube v1.35.4's Score
    # fails and the cycle with it
    held = claim("shared", exactly("r"))
    held["status"] = {"allocation": {"devices": {"results": [
        {"request": "r", "driver": DRIVER, "pool": "net", "device": "d0"}]}}}
    docs = [node("n1"), node("n2"), device_class(), rslice("all", "d0", "d1", pool="net"), held,
            claim("own", exactly("r")), pod("p", "shared", "own")]
    assert unsched(run(tmp_path, docs), "default/p") == (
        'running Score plugins: plugin "DynamicResources" failed with: '
        "number of allocations 1 is smaller than number of claims")


@pytest.mark.parametrize("scores,want", [([], []), ([42], [100]), ([8, 7], [100, 87]), ([15, 13], [100, 86]),
                                         ([16, 15, 14], [100, 93, 87]), ([0, 0], [0, 0])])
def test_normalize_score(scores, want):
    assert default_normalize(np.array(scores, dtype=np.int64)).tolist() == want


# ---- constraints, admin access, nodeSelector slices ------------------------------------------------
def test_match_attribute_constraint_picks_devices_on_one_numa_node(tmp_path):
    def d(name, numa):
        return {"name": name, "attributes": {"numa": {"int": numa}}}
    docs = [node("n1"), node("n2"), device_class(),
            rslice("n1", d("a", 0), d("b", 1)), rslice("n2", d("a", 0), d("b", 1), d("c", 1)),
            claim("c", exactly("r", count=2), constraints=[{"matchAttribute": f"{DRIVER}/numa"}]), pod("p", "c")]
    doc = cli(tmp_path, docs)
    b = binding(doc, "default/p")
    assert b["node"] == "n2" and [x["device"] for x in b["claims"][0]["devices"]] == ["b", "c"]


def test_admin_access_shares_in_use_devices_in_a_labelled_namespace(tmp_path):
    ns = {"apiVersion": "v1", "kind": "Namespace",
          "metadata": {"name": "admin", "labels": {"resource.kubernetes.io/admin-access": "true"}}}
    docs = [ns, node("n1"), device_class(), rslice("n1", "gpu-0"),
            claim("user", exactly("r")), pod("user", "user"),
            claim("monitor", exactly("r", admin=True), ns="admin"), pod("monitor", "monitor", ns="admin"),
            claim("late", exactly("r")), pod("late", "late")]
    doc = cli(tmp_path, docs)
    assert binding(doc, "admin/monitor")["claims"][0]["devices"] == [
        {"driver": DRIVER, "pool": "n1", "device": "gpu-0", "request": "r", "adminAccess": True}]
    assert binding(doc, "default/user")["node"] == "n1"
    # the admin claim does not consume the device, the user's claim does
    assert "1 cannot allocate all claims" in unsched(doc, "default/late")


def test_admin_access_needs_the_namespace_label(tmp_path):
    docs = [node("n1"), device_class(), rslice("n1", "gpu-0"), claim("monitor", exactly("r", admin=True)),
            pod("monitor", "monitor")]
    res = run(tmp_path, docs)
    assert unsched(res, "default/monitor") == (
        'ResourceClaim.resource.k8s.io "monitor" is invalid: spec.devices.requests[0].adminAccess: Forbidden: '
        "admin access to devices requires the `resource.kubernetes.io/admin-access: true` label on the "
        "containing namespace")
    assert res.attempts == []


def test_node_selector_slice_is_shared_by_the_nodes_it_selects(tmp_path):
    sel = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r1"]}]}]}
    docs = [node("a", {"rack": "r1"}), node("b", {"rack": "r2"}), node("c", {"rack": "r1"}), device_class(),
            rslice(sel, "nic-0", "nic-1", pool="fabric"),
            claim("c1", exactly("r")), claim("c2", exactly("r")), claim("c3", exactly("r")),
            pod("p1", "c1"), pod("p2", "c2"), pod("p3", "c3")]
    doc = cli(tmp_path, docs)
    b1 = binding(doc, "default/p1")
    assert b1["node"] in ("a", "c")
    assert b1["claims"][0]["nodeSelector"] == sel
    assert b1["claims"][0]["devices"][0]["device"] == "nic-0"
    assert binding(doc, "default/p2")["claims"][0]["devices"][0]["device"] == "nic-1"
    msg = unsched(doc, "default/p3")
    assert msg.startswith("0/3 nodes are available: 3 cannot allocate all claims. still not schedulable")


def test_allocated_claim_with_a_label_node_selector_is_available_where_it_matches(tmp_path):
    sel = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r2"]}]}]}
    c = claim("c", exactly("r"))
    c["status"] = {"allocation": {"devices": {"results": [{"request": "r", "driver": DRIVER, "pool": "fabric",
                                                            "device": "nic-0"}]}, "nodeSelector": sel}}
    docs = [node("a", {"rack": "r1"}), node("b", {"rack": "r2"}), device_class(),
            rslice(sel, "nic-0", pool="fabric"), c, pod("p", "c")]
    assert binding(cli(tmp_path, docs), "default/p")["node"] == "b"


# ---- CEL ---------------------------------------------------------------------------------------------
def test_quantity_selector_from_the_docs(tmp_path):
    sel = 'device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0'
    docs = [node("t4"), node("a100"), device_class(),
            rslice("t4", {"name": "gpu-0", "capacity": {"memory": {"value": "16Gi"}}}, driver="gpu.example.com"),
            rslice("a100", {"name": "gpu-0", "capacity": {"memory": {"value": "40Gi"}}}, driver="gpu.example.com"),
            claim("c", exactly("gpu", selectors=[sel])), pod("p", "c")]
    assert binding(cli(tmp_path, docs), "default/p")["node"] == "a100"


def test_semver_selector(tmp_path):
    sel = f'device.attributes["{DRIVER}"].driverVersion.isGreaterThan(semver("1.2.0"))'
    docs = [node("old"), node("new"), device_class(),
            rslice("old", {"name": "d", "attributes": {"driverVersion": {"version": "1.1.9"}}}),
            rslice("new", {"name": "d", "attributes": {"driverVersion": {"version": "1.10.0"}}}),
            claim("c", exactly("r", selectors=[sel])), pod("p", "c")]
    assert binding(cli(tmp_path, docs), "default/p")["node"] == "new"


def test_cel_runtime_error_fails_the_cycle_with_kubes_filter_error(tmp_path):
    sel = f'device.attributes["{DRIVER}"].model == "A100"'
    docs = [node("n1"), device_class(), rslice("n1", "d"), claim("c", exactly("r", selectors=[sel])), pod("p", "c")]
    res = run(tmp_path, docs)
    assert unsched(res, "default/p") == ('running "DynamicResources" filter plugin: claim default/c: selector #0: '
                                         "CEL runtime error: no such key: model")


@pytest.mark.parametrize("doc,needle", [
    (claim("c", exactly("r"), constraints=[{"distinctAttribute": f"{DRIVER}/numa"}]),
     "distinctAttribute: needs the DRAConsumableCapacity feature gate, which is off by default"),
    ({**rslice("n", "d"), "spec": {**rslice("n", "d")["spec"], "perDeviceNodeSelection": True, "nodeName": None}},
     "perDeviceNodeSelection: needs the DRAPartitionableDevices feature gate"),
    (rslice("n", {"name": "d", "taints": [{"key": "k", "effect": "NoSchedule"}]}),
     "spec.devices[0].taints: needs the DRADeviceTaints feature gate"),
    (claim("c", {"name": "r", "exactly": {"deviceClassName": "x", "tolerations": [{"operator": "Exists"}]}}),
     "tolerations: needs the DRADeviceTaints feature gate"),
    (claim("c", exactly("r"), constraints=[{"matchAttribute": "numa"}]),
     "matchAttribute: must be a fully qualified name"),
    (claim("c", exactly("r"), constraints=[{"requests": ["nope"], "matchAttribute": "d/numa"}]),
     "'nope' is not a request"),
    (claim("c", {"name": "r", "firstAvailable": [sub(f"s{k}") for k in range(9)]}), "must have at most 8 items"),
    (claim("c", {"name": "r", "firstAvailable": [{**sub("s"), "adminAccess": True}]}), "not a field of a subrequest"),
    (claim("c", {"name": "r", "exactly": {"deviceClassName": "x"}, "firstAvailable": [sub("s")]}),
     "exactly one of exactly or firstAvailable"),
    (rslice("n", {"name": "d", "attributes": {"v": {"version": "1.0"}}}), "must be a semantic version"),
    (claim("c", exactly("r", selectors=["device.allowMultipleAllocations"])),
     "undefined field 'allowMultipleAllocations'"),
])
def test_refused_fields_are_one_line_input_errors(tmp_path, doc, needle):
    f = write(tmp_path, [doc])
    with pytest.raises(InputError) as e:
        load_cluster([str(f)])
    assert needle in str(e.value) and "\n" not in str(e.value) and str(f) in str(e.value)
    r = invoke(["schedule", "-f", str(f), "-o", "json"], timeout=60)
    assert r.exit_code == 2 and "Traceback" not in r.stderr and needle in r.stderr


E2E_FIRST_AVAILABLE = textwrap.dedent("""\
    apiVersion: v1
    kind: Node
    metadata: {name: small}
    status: {allocatable: {cpu: "8", memory: 16Gi, pods: "110"}}
    ---
    apiVersion: v1
    kind: Node
    metadata: {name: big}
    status: {allocatable: {cpu: "8", memory: 16Gi, pods: "110"}}
    ---
    apiVersion: resource.k8s.io/v1
    kind: DeviceClass
    metadata: {name: gpu.example.com}
    spec:
      selectors:
      - cel: {expression: 'device.driver == "gpu.example.com"'}
    ---
    apiVersion: resource.k8s.io/v1
    kind: ResourceSlice
    metadata: {name: small}
    spec:
      driver: gpu.example.com
      pool: {name: small, generation: 1, resourceSliceCount: 1}
      nodeName: small
      devices:
      - {name: gpu-0, capacity: {memory: {value: 16Gi}}}
    ---
    apiVersion: resource.k8s.io/v1
    kind: ResourceSlice
    metadata: {name: big}
    spec:
      driver: gpu.example.com
      pool: {name: big, generation: 1, resourceSliceCount: 1}
      nodeName: big
      devices:
      - {name: gpu-0, capacity: {memory: {value: 80Gi}}}
    ---
    apiVersion: resource.k8s.io/v1
    kind: ResourceClaimTemplate
    metadata: {name: gpu, namespace: default}
    spec:
      spec:
        devices:
          requests:
          - name: gpu
            firstAvailable:
            - name: large
              deviceClassName: gpu.example.com
              selectors:
              - cel: {expression: 'device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0'}
            - name: any
              deviceClassName: gpu.example.com
    ---
    apiVersion: v1
    kind: Pod
    metadata: {name: trainer, namespace: default}
    spec:
      resourceClaims:
      - {name: gpu, resourceClaimTemplateName: gpu}
      containers:
      - {name: c, image: x, resources: {requests: {cpu: "1"}, claims: [{name: gpu}]}}
    ---
    apiVersion: v1
    kind: Pod
    metadata: {name: second, namespace: default}
    spec:
      resourceClaims:
      - {name: gpu, resourceClaimTemplateName: gpu}
      containers:
      - {name: c, image: x, resources: {requests: {cpu: "1"}, claims: [{name: gpu}]}}
    """)


def test_first_available_end_to_end(tmp_path):
    f = tmp_path / "m.yaml"
    f.write_text(E2E_FIRST_AVAILABLE)
    r = invoke(["schedule", "-f", str(f), "-o", "json"], timeout=120)
    assert r.exit_code == 0, r.stderr
    doc = strict_json(r.stdout)
    assert not schema_errors(doc, "kube")
    # the first pod prefers the node where its first subrequest fits; the second takes what is left
    t = binding(doc, "default/trainer")
    assert t["node"] == "big" and t["claims"][0]["devices"][0]["request"] == "gpu/large"
    s = binding(doc, "default/second")
    assert s["node"] == "small" and s["claims"][0]["devices"][0]["request"] == "gpu/any"
