"""DynamicResources (resource.k8s.io/v1 structured parameters) and the v1.35 PostFilter messages.

Ported from kube v1.35.4 pkg/scheduler/framework/plugins/dynamicresources/dynamicresources_test.go
(TestPlugin: "empty", "claim-reference", "claim-template", "missing-claim", "no-resources",
"with-resources", "missing-class", "wrong-topology", "good-topology") and from staging
dynamic-resource-allocation structured/internal/allocatortesting (TestAllocator: "simple",
"other-node", "small-and-large", "all-devices-single", "all-devices-of-the-incomplete-pool" is not
ported (pools are always complete here), "all-devices-some-allocated", "network-attached-device",
"several-different-drivers", "already-allocated-devices", "with-class-device-config" (selectors),
"too-many-devices-single-request"), as `caldera schedule` passes: each case's expected Filter
status is the FailedScheduling message's per-node reason, its PostFilter status the part before
"preemption: ", and its allocation the binding's `claims`.
"""
from __future__ import annotations

import textwrap

import pytest

from caldera.api.loader import load_cluster
from caldera.config.defaults import default_config
from caldera.engine.oneshot import run_pass
from caldera.errors import InputError
from caldera.plugins.registry import build_registry
from tests.fuzz.harness import invoke, schema_errors, strict_json

DRIVER = "some-driver"


def node(name):
    return (f"apiVersion: v1\nkind: Node\nmetadata: {{name: {name}, labels: {{kubernetes.io/hostname: {name}}}}}\n"
            "status: {allocatable: {cpu: '8', memory: 16Gi, pods: '110'}}\n")


def device_class(name="my-resource-class", selectors=()):
    sel = "".join(f"\n  - cel: {{expression: '{e}'}}" for e in selectors)
    return (f"apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {{name: {name}}}\n"
            f"spec:\n  selectors:{sel if sel else ' []'}\n")


def rslice(node_name, devices, driver=DRIVER, pool=None, all_nodes=False):
    devs = "".join(f"\n  - name: {d}" + (f"\n    attributes: {attrs}" if attrs else "")
                   for d, attrs in devices)
    where = "allNodes: true" if all_nodes else f"nodeName: {node_name}"
    return (f"apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {{name: {pool or node_name}-{driver}}}\n"
            f"spec:\n  driver: {driver}\n  pool: {{name: {pool or node_name}, generation: 1, resourceSliceCount: 1}}\n"
            f"  {where}\n  devices:{devs}\n")


def claim(name="my-pod-my-resource", requests=(("req-1", "my-resource-class", "ExactCount", 1, ()),),
          status=""):
    reqs = ""
    for rn, cls, mode, count, sels in requests:
        reqs += f"\n    - name: {rn}\n      exactly:\n        deviceClassName: {cls}\n        allocationMode: {mode}"
        if mode == "ExactCount":
            reqs += f"\n        count: {count}"
        if sels:
            reqs += "\n        selectors:" + "".join(f"\n        - cel: {{expression: '{e}'}}" for e in sels)
    return (f"apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {{name: {name}, namespace: default}}\n"
            f"spec:\n  devices:\n    requests:{reqs}\n{status}")


def pod(name="my-pod", claims=(("my-resource", "my-pod-my-resource", None),), extra=""):
    rc = "".join(f"\n  - name: {n}\n    " + (f"resourceClaimName: {c}" if c else f"resourceClaimTemplateName: {t}")
                 for n, c, t in claims)
    return (f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: default, uid: {name}-uid}}\n"
            f"spec:\n  resourceClaims:{rc if rc else ' []'}\n  containers:\n  - name: c\n    image: x\n"
            f"    resources: {{requests: {{cpu: 100m}}}}\n{extra}")


def run(tmp_path, *docs):
    f = tmp_path / "m.yaml"
    f.write_text("---\n".join(docs))
    reg = build_registry()
    return run_pass(load_cluster([str(f)]), default_config(reg), registry=reg)


def msg(res, key="default/my-pod"):
    return {u["pod"]: u["message"] for u in res.unschedulable}[key]


def claims_of(res, key="default/my-pod"):
    return {b["pod"]: b.get("claims") for b in res.bindings}[key]


# ---- TestPlugin (dynamicresources_test.go) -------------------------------------------------------
def test_empty_pod_skips_and_postfilter_says_no_new_claims(tmp_path):
    res = run(tmp_path, node("worker"), pod(claims=(), extra="  nodeSelector: {none: x}\n"))
    assert msg(res) == ("0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector. "
                        "no new claims to deallocate, preemption: 0/1 nodes are available: "
                        "1 Preemption is not helpful for scheduling.")


def test_prefilter_rejection_before_dynamicresources_is_not_found(tmp_path):
    # NodeAffinity's PreFilter rejects (UnschedulableAndUnresolvable) before DynamicResources'
    # PreFilter writes its state: its PostFilter fails with "not found" (an Error: no preemption)
    conflict = ("  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: "
                "[{matchFields: [{key: metadata.name, operator: In, values: [a]}, "
                "{key: metadata.name, operator: In, values: [b]}]}]}}}\n")
    res = run(tmp_path, node("worker"), pod(claims=(), extra=conflict))
    assert msg(res) == "0/1 nodes are available: pod affinity terms conflict. not found"


def test_claim_reference_allocates(tmp_path):   # "with-resources"
    res = run(tmp_path, node("worker"), device_class(), rslice("worker", [("instance-1", None)]), claim(), pod())
    assert claims_of(res) == [{"claim": "default/my-pod-my-resource", "devices": [
        {"driver": DRIVER, "pool": "worker", "device": "instance-1", "request": "req-1"}]}]


def test_claim_template_creates_the_pods_claim(tmp_path):   # "claim-template"
    tmpl = ("apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {name: tmpl, namespace: default}\n"
            "spec:\n  spec:\n    devices:\n      requests:\n      - name: req-1\n        exactly: "
            "{deviceClassName: my-resource-class}\n")
    res = run(tmp_path, node("worker"), device_class(), rslice("worker", [("instance-1", None)]), tmpl,
              pod(claims=(("my-resource", None, "tmpl"),)))
    [c] = claims_of(res)
    prefix = "default/my-pod-my-resource-"
    assert c["claim"].startswith(prefix) and len(c["claim"]) == len(prefix) + 5
    assert c["devices"] == [{"driver": DRIVER, "pool": "worker", "device": "instance-1", "request": "req-1"}]


def test_claim_template_with_status_uses_the_recorded_claim(tmp_path):
    tmpl = ("apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {name: tmpl, namespace: default}\n"
            "spec:\n  spec:\n    devices:\n      requests:\n      - name: req-1\n        exactly: "
            "{deviceClassName: my-resource-class}\n")
    status = "status:\n  resourceClaimStatuses: [{name: my-resource, resourceClaimName: my-pod-my-resource}]\n"
    res = run(tmp_path, node("worker"), device_class(), rslice("worker", [("instance-1", None)]), tmpl, claim(),
              pod(claims=(("my-resource", None, "tmpl"),), extra=status))
    assert claims_of(res)[0]["claim"] == "default/my-pod-my-resource"


def test_missing_template_claim_waits_at_pre_enqueue(tmp_path):   # "missing-claim"
    # kube's PreEnqueue keeps the pod out of the active queue: never attempted, no FitError
    res = run(tmp_path, node("worker"), device_class(), pod(claims=(("my-resource", None, "nope"),)))
    assert res.unschedulable == [{"pod": "default/my-pod", "reason": "Unschedulable",
                                  "message": 'pod "default/my-pod": ResourceClaim not created yet'}]
    assert res.attempts == []


def test_missing_claim_waits_at_pre_enqueue(tmp_path):
    res = run(tmp_path, node("worker"), device_class(), pod())
    assert res.unschedulable == [{"pod": "default/my-pod", "reason": "Unschedulable",
                                  "message": 'resourceclaim.resource.k8s.io "my-pod-my-resource" not found'}]


def test_no_resources(tmp_path):   # "no-resources"
    res = run(tmp_path, node("worker"), device_class(), claim(), pod())
    assert msg(res) == ("0/1 nodes are available: 1 cannot allocate all claims. still not schedulable, "
                        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.")


def test_missing_class(tmp_path):   # "missing-class"
    res = run(tmp_path, node("worker"), claim(), pod())
    assert msg(res) == ("0/1 nodes are available: request req-1: device class my-resource-class does not exist. "
                        "no new claims to deallocate, preemption: 0/1 nodes are available: "
                        "1 Preemption is not helpful for scheduling.")


ALLOCATED = """status:
  allocation:
    devices:
      results: [{request: req-1, driver: some-driver, pool: {node}, device: instance-1}]
    nodeSelector:
      nodeSelectorTerms: [{{matchFields: [{{key: metadata.name, operator: In, values: [{node}]}}]}}]
"""


def test_wrong_topology_deallocates(tmp_path):   # "wrong-topology"
    st = ALLOCATED.replace("{node}", "other").replace("{{", "{").replace("}}", "}")
    res = run(tmp_path, node("worker"), device_class(), claim(status=st), pod())
    assert msg(res) == ("0/1 nodes are available: 1 resourceclaim not available on the node. deallocation of "
                        "ResourceClaim completed, preemption: 0/1 nodes are available: "
                        "1 Preemption is not helpful for scheduling.")


def test_good_topology(tmp_path):   # "good-topology"
    st = ALLOCATED.replace("{node}", "worker").replace("{{", "{").replace("}}", "}")
    res = run(tmp_path, node("worker"), device_class(), rslice("worker", [("instance-1", None)]),
              claim(status=st), pod())
    assert claims_of(res)[0]["devices"] == [
        {"driver": DRIVER, "pool": "worker", "device": "instance-1", "request": "req-1"}]


# ---- TestAllocator (structured allocator) -------------------------------------------------------
def test_simple_and_other_node(tmp_path):
    res = run(tmp_path, node("node-1"), node("node-2"), device_class(),
              rslice("node-2", [("device-1", None)]), claim(), pod())
    assert [(b["node"], b["claims"][0]["devices"][0]["device"]) for b in res.bindings] == [("node-2", "device-1")]


def test_small_and_large_with_selectors(tmp_path):
    small = "{memory: {int: 1}}"
    large = "{memory: {int: 2}}"
    res = run(tmp_path, node("node-1"), device_class(),
              rslice("node-1", [("small", small), ("large", large)]),
              claim(requests=(("req-0", "my-resource-class", "ExactCount", 1,
                               (f'device.attributes["{DRIVER}"].memory >= 2',)),
                              ("req-1", "my-resource-class", "ExactCount", 1, ()))), pod())
    # req-0 needs the large device; req-1 takes what is left (backtracking is not even needed)
    assert [(d["request"], d["device"]) for d in claims_of(res)[0]["devices"]] == [("req-0", "large"),
                                                                                   ("req-1", "small")]


def test_backtracking_when_first_fit_blocks(tmp_path):
    a = "{kind: {string: a}}"
    res = run(tmp_path, node("node-1"), device_class(),
              rslice("node-1", [("d1", a), ("d2", "{kind: {string: b}}")]),
              claim(requests=(("any", "my-resource-class", "ExactCount", 1, ()),
                              ("only-a", "my-resource-class", "ExactCount", 1,
                               (f'device.attributes["{DRIVER}"].kind == "a"',)))), pod())
    assert [(d["request"], d["device"]) for d in claims_of(res)[0]["devices"]] == [("any", "d2"), ("only-a", "d1")]


def test_all_devices_single(tmp_path):
    res = run(tmp_path, node("node-1"), device_class(), rslice("node-1", [("d1", None), ("d2", None)]),
              claim(requests=(("req-0", "my-resource-class", "All", 0, ()),)), pod())
    assert [d["device"] for d in claims_of(res)[0]["devices"]] == ["d1", "d2"]


def test_all_devices_some_allocated(tmp_path):
    st = ALLOCATED.replace("{node}", "node-1").replace("{{", "{").replace("}}", "}").replace("instance-1", "d1")
    res = run(tmp_path, node("node-1"), device_class(), rslice("node-1", [("d1", None), ("d2", None)]),
              claim("held", status=st), claim(requests=(("req-0", "my-resource-class", "All", 0, ()),)), pod())
    assert "1 cannot allocate all claims" in msg(res)


def test_already_allocated_devices_are_skipped(tmp_path):
    st = ALLOCATED.replace("{node}", "node-1").replace("{{", "{").replace("}}", "}").replace("instance-1", "d1")
    res = run(tmp_path, node("node-1"), device_class(), rslice("node-1", [("d1", None), ("d2", None)]),
              claim("held", status=st), claim(), pod())
    assert claims_of(res)[0]["devices"][0]["device"] == "d2"


def test_network_attached_device(tmp_path):
    res = run(tmp_path, node("node-1"), device_class(),
              rslice("", [("net-1", None)], pool="network", all_nodes=True), claim(), pod())
    assert res.bindings[0]["node"] == "node-1"
    assert claims_of(res)[0]["devices"][0] == {"driver": DRIVER, "pool": "network", "device": "net-1",
                                               "request": "req-1"}


def test_several_different_drivers_class_selector(tmp_path):
    res = run(tmp_path, node("node-1"), device_class(selectors=('device.driver == "other-driver"',)),
              rslice("node-1", [("d1", None)]), rslice("node-1", [("o1", None)], driver="other-driver"),
              claim(), pod())
    assert claims_of(res)[0]["devices"][0]["driver"] == "other-driver"


def test_too_many_devices_single_request(tmp_path):
    res = run(tmp_path, node("node-1"), device_class(), rslice("node-1", [("d1", None)]),
              claim(requests=(("req-0", "my-resource-class", "ExactCount", 2, ()),)), pod())
    assert "1 cannot allocate all claims" in msg(res)


def test_shared_claim_second_pod_follows_the_allocation(tmp_path):
    res = run(tmp_path, node("node-1"), node("node-2"), device_class(), rslice("node-2", [("d1", None)]),
              claim(), pod("a"), pod("b"))
    assert [(b["pod"], b["node"]) for b in res.bindings] == [("default/a", "node-2"), ("default/b", "node-2")]


def test_later_pods_see_allocated_devices(tmp_path):
    res = run(tmp_path, node("node-1"), device_class(), rslice("node-1", [("d1", None)]),
              claim("c1"), claim("c2"), pod("a", (("r", "c1", None),)), pod("b", (("r", "c2", None),)))
    assert [b["pod"] for b in res.bindings] == ["default/a"]
    assert "1 cannot allocate all claims. still not schedulable" in msg(res, "default/b")


# ---- input errors --------------------------------------------------------------------------------
@pytest.mark.parametrize("doc,needle", [
    (device_class(selectors=("device.driver ==",)), "spec.selectors[0].cel.expression: CEL expression"),
    (claim(requests=(("r", "c", "Some", 1, ()),)), "allocationMode: must be ExactCount or All"),
    (rslice("n", [("d", "{x: {float: 1}}")]), "spec.devices[0].attributes[x]: expected one of"),
    ("apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: s}\nspec: {driver: d, pool: {name: p}}\n",
     "spec: one of nodeName, nodeSelector or allNodes: true is required"),
    ("apiVersion: resource.k8s.io/v1beta1\nkind: DeviceClass\nmetadata: {name: c}\n", "use resource.k8s.io/v1"),
    ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  resourceClaims: [{name: x}]\n"
     "  containers: [{name: c, image: x}]\n", "exactly one of resourceClaimName or resourceClaimTemplateName"),
])
def test_bad_objects_are_one_line_input_errors(tmp_path, doc, needle):
    f = tmp_path / "bad.yaml"
    f.write_text(doc)
    with pytest.raises(InputError) as e:
        load_cluster([str(f)])
    assert needle in str(e.value) and "\n" not in str(e.value) and str(f) in str(e.value)
    r = invoke(["schedule", "-f", str(f), "-o", "json"], timeout=60)
    assert r.exit_code == 2 and "Traceback" not in r.stderr and needle in r.stderr


# ---- end to end ----------------------------------------------------------------------------------
E2E = textwrap.dedent("""\
    apiVersion: v1
    kind: Node
    metadata: {name: node-t4}
    status: {allocatable: {cpu: "8", memory: 16Gi, pods: "110"}}
    ---
    apiVersion: v1
    kind: Node
    metadata: {name: node-a100}
    status: {allocatable: {cpu: "8", memory: 16Gi, pods: "110"}}
    ---
    apiVersion: resource.k8s.io/v1
    kind: DeviceClass
    metadata: {name: gpu.example.com}
    spec:
      selectors:
      - cel: {expression: 'device.attributes["gpu.example.com"].model == "A100"'}
    ---
    apiVersion: resource.k8s.io/v1
    kind: ResourceSlice
    metadata: {name: node-t4-gpus}
    spec:
      driver: gpu.example.com
      pool: {name: node-t4, generation: 1, resourceSliceCount: 1}
      nodeName: node-t4
      devices:
      - {name: gpu-0, attributes: {model: {string: T4}}, capacity: {memory: {value: 16Gi}}}
    ---
    apiVersion: resource.k8s.io/v1
    kind: ResourceSlice
    metadata: {name: node-a100-gpus}
    spec:
      driver: gpu.example.com
      pool: {name: node-a100, generation: 1, resourceSliceCount: 1}
      nodeName: node-a100
      devices:
      - {name: gpu-0, attributes: {model: {string: A100}}, capacity: {memory: {value: 40Gi}}}
    ---
    apiVersion: resource.k8s.io/v1
    kind: ResourceClaimTemplate
    metadata: {name: one-gpu, namespace: default}
    spec:
      spec:
        devices:
          requests:
          - name: gpu
            exactly: {deviceClassName: gpu.example.com}
    ---
    apiVersion: v1
    kind: Pod
    metadata: {name: trainer, namespace: default}
    spec:
      resourceClaims:
      - {name: gpu, resourceClaimTemplateName: one-gpu}
      containers:
      - name: c
        image: x
        resources: {requests: {cpu: "1"}, claims: [{name: gpu}]}
    """)


def test_end_to_end_template_lands_on_the_a100_node(tmp_path):
    f = tmp_path / "m.yaml"
    f.write_text(E2E)
    r = invoke(["schedule", "-f", str(f), "-o", "json"], timeout=120)
    assert r.exit_code == 0, r.stderr
    doc = strict_json(r.stdout)
    assert not schema_errors(doc, "kube")
    [b] = doc["bindings"]
    assert b["pod"] == "default/trainer" and b["node"] == "node-a100"
    [c] = b["claims"]
    assert c["claim"].startswith("default/trainer-gpu-")
    assert c["devices"] == [{"driver": "gpu.example.com", "pool": "node-a100", "device": "gpu-0", "request": "gpu"}]
    assert doc["ignored"] == []


def test_unknown_dynamicresources_arg_is_a_config_error(tmp_path):
    c = tmp_path / "c.yaml"
    c.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
                 "- pluginConfig:\n  - name: DynamicResources\n    args: {filterTimeout: 10s, nope: 1}\n")
    f = tmp_path / "m.yaml"
    f.write_text(node("n"))
    r = invoke(["schedule", "-f", str(f), "--config", str(c), "-o", "json"], timeout=60)
    assert r.exit_code == 2 and "DynamicResourcesArgs: unknown field(s) ['nope']" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
