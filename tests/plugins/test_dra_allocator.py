"""The structured allocator (plugins/dynamicresources/allocator.py) against kube v1.35.4's
k8s.io/dynamic-resource-allocation structured/internal/allocatortesting/allocator_testing.go
(TestAllocator, run there for the "incubating" allocator kube-scheduler uses with v1.35's default
gates). Each case is the Go table entry of the same name: the same classes (`device.driver ==
"<driver>"`), slices, claims, already allocated devices and node (labels region and planet),
with the expected results (request, driver, pool, device, adminAccess), the allocation's node
selector, or the expected error text.
"""
from __future__ import annotations

import numpy as np
import pytest

from caldera.api.dra import DraObjects, ResourceClaim, add_object
from caldera.plugins.dynamicresources.allocator import AllocationError, DraState
from tests.builders import make_node, make_table

A, B = "driver-a", "driver-b"
NODE1_LOCAL = {"nodeSelectorTerms": [{"matchFields": [
    {"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}]}


def label_sel(key, *values):
    return {"nodeSelectorTerms": [{"matchExpressions": [{"key": key, "operator": "In", "values": list(values)}]}]}


def cls(name, driver):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]}}


def dev(name, capacity=None, attrs=None):
    d = {"name": name}
    if capacity:
        d["capacity"] = {k: {"value": v} for k, v in capacity.items()}
    if attrs:
        d["attributes"] = attrs
    return d


def rslice(name, where, pool, driver, *devices):
    spec = {"driver": driver, "pool": {"name": pool, "generation": 1, "resourceSliceCount": 1},
            "devices": list(devices) or [dev("device-1")]}
    if where == "all":
        spec["allNodes"] = True
    elif isinstance(where, dict):
        spec["nodeSelector"] = where
    else:
        spec["nodeName"] = where
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name}, "spec": spec}


def req(name, cls_name, count=1, mode="ExactCount", selectors=(), admin=None):
    ex = {"deviceClassName": cls_name, "allocationMode": mode}
    if mode == "ExactCount":
        ex["count"] = count
    if selectors:
        ex["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    if admin is not None:
        ex["adminAccess"] = admin
    return {"name": name, "exactly": ex}


def sub(name, cls_name, count=1, mode="ExactCount", selectors=()):
    r = req(name, cls_name, count, mode, selectors)["exactly"]
    return {"name": name, **r}


def first(name, *subs):
    return {"name": name, "firstAvailable": list(subs)}


def claim(name, *requests, constraints=()):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"devices": {"requests": list(requests), "constraints": list(constraints)}}}


def held(driver, pool, device):
    """A claim that holds a device already (allocatedDevices)."""
    c = claim(f"held-{pool}-{device}", req("r", "class-a"))
    c["status"] = {"allocation": {"devices": {"results": [
        {"request": "r", "driver": driver, "pool": pool, "device": device}]}}}
    return c


def allocate(docs, claims, node="node-1", region="region-1", nodes=None):
    objs = DraObjects()
    for d in docs:
        add_object(objs, d, "t.yaml")
    names = [(node, region)] + [n for n in nodes or () if n[0] != node]
    table = make_table([make_node(n, labels={"region": r, "planet": "earth"}) for n, r in names])
    st = DraState(objs)
    to_alloc: list[ResourceClaim] = []
    for c in claims:
        add_object(objs, c, "t.yaml")
        to_alloc.append(objs.claims[f"default/{c['metadata']['name']}"])
    res = st.allocate(table, to_alloc, table.index[node])
    if res is None:
        return None
    return [([(x.request, x.driver, x.pool, x.device, x.admin_access) for x in r], st.node_selector(r)[1])
            for r in res]


def one(*results, selector=NODE1_LOCAL):
    return ([tuple(r) + (False,) if len(r) == 4 else tuple(r) for r in results], selector)


CLASSES = [cls("class-a", A), cls("class-b", B)]
TWO = rslice("s1", "node-1", "pool-1", A, dev("device-1"), dev("device-2"))


def vs(v, s):
    return {"driverVersion": {"version": v}, "stringAttribute": {"string": s}}


def mv(mem, v):
    return {"memory": mem}, {"driverVersion": {"version": v}}
MEM = 'device.capacity["driver-a"].memory.compareTo(quantity("{}")) >= 0'
V = {"driverVersion": {"version": "1.0.0"}, "numa": {"int": 1}, "stringAttribute": {"string": "stringAttributeValue"},
     "boolAttribute": {"bool": True}}

CASES = {
    "simple": (CLASSES + [rslice("s1", "node-1", "pool-1", A)], [claim("claim-0", req("req-0", "class-a"))],
               [one(("req-0", A, "pool-1", "device-1"))]),
    "other-node": (CLASSES + [rslice("s1", "node-2", "pool-1", A), rslice("s2", "node-1", "pool-2", A)],
                   [claim("claim-0", req("req-0", "class-a"))], [one(("req-0", A, "pool-2", "device-1"))]),
    "all-devices-single": (CLASSES + [rslice("s1", "node-1", "pool-1", A)],
                           [claim("claim-0", req("req-0", "class-a", mode="All"))],
                           [one(("req-0", A, "pool-1", "device-1"))]),
    "all-devices-no-slices": (CLASSES, [claim("claim-0", req("req-0", "class-a", mode="All"))], None),
    "all-devices-some-allocated": (CLASSES + [rslice("s1", "node-1", "pool-1", A, dev("device-1"), dev("device-2")),
                                              held(A, "pool-1", "device-1")],
                                   [claim("claim-0", req("req-0", "class-a", mode="All"))], None),
    "all-devices-some-allocated-admin-access": (
        CLASSES + [TWO, held(A, "pool-1", "device-1")],
        [claim("claim-0", req("req-0", "class-a", mode="All", admin=True))],
        [one(("req-0", A, "pool-1", "device-1", True), ("req-0", A, "pool-1", "device-2", True))]),
    "count-devices-some-allocated-admin-access": (
        CLASSES + [TWO, held(A, "pool-1", "device-1")],
        [claim("claim-0", req("req-0", "class-a", count=2, admin=True))],
        [one(("req-0", A, "pool-1", "device-1", True), ("req-0", A, "pool-1", "device-2", True))]),
    "separate-claims-share-device-admin-access": (
        CLASSES + [rslice("s1", "node-1", "pool-1", A, dev("device-1"), dev("device-2"))],
        [claim("claim-0", req("req-0", "class-a", admin=True)), claim("claim-1", req("req-0", "class-a", admin=True))],
        [one(("req-0", A, "pool-1", "device-1", True)), one(("req-0", A, "pool-1", "device-1", True))]),
    "admin-access-claims-device-allocating-for-non-admin-access": (
        CLASSES + [rslice("s1", "node-1", "pool-1", A, dev("device-1"), dev("device-2"))],
        [claim("claim-0", req("req-0", "class-a")), claim("claim-1", req("req-0", "class-a", admin=True))],
        [one(("req-0", A, "pool-1", "device-1")), one(("req-0", A, "pool-1", "device-1", True))]),
    "network-attached-device": (CLASSES + [rslice("s1", label_sel("region", "region-1"), "pool-1", A)],
                                [claim("claim-0", req("req-0", "class-a"))],
                                [one(("req-0", A, "pool-1", "device-1"), selector=label_sel("region", "region-1"))]),
    "many-network-attached-devices": (
        CLASSES + [rslice("s1", label_sel("region", "region-1"), "pool-1", A), rslice("s2", "all", "pool-2", A),
                   rslice("s3", label_sel("planet", "earth"), "pool-3", A), rslice("s4", NODE1_LOCAL, "pool-4", A)],
        [claim("claim-0", req("req-0", "class-a", count=4))],
        [one(*[("req-0", A, f"pool-{k}", "device-1") for k in (1, 2, 3, 4)],
             selector={"nodeSelectorTerms": [{
                 "matchExpressions": [{"key": "region", "operator": "In", "values": ["region-1"]},
                                      {"key": "planet", "operator": "In", "values": ["earth"]}],
                 "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}]})]),
    "local-and-network-attached-devices": (
        CLASSES + [rslice("s1", label_sel("region", "region-1"), "pool-1", A), rslice("s2", "node-1", "pool-2", A)],
        [claim("claim-0", req("req-0", "class-a", count=2))],
        [one(("req-0", A, "pool-1", "device-1"), ("req-0", A, "pool-2", "device-1"))]),
    "several-different-drivers": (
        CLASSES + [rslice("s1", "node-1", "pool-1", A, dev("device-1"), dev("device-2")),
                   rslice("s2", "node-1", "pool-1", B, dev("device-1"), dev("device-2"))],
        [claim("claim-0", req("req-0", "class-a")), claim("claim-1", req("req-0", "class-b"))],
        [one(("req-0", A, "pool-1", "device-1")), one(("req-0", B, "pool-1", "device-1"))]),
    "with-constraint": (
        CLASSES + [rslice("s1", "node-1", "pool-1", A, dev("device-1", attrs=V), dev("device-2", attrs=V))],
        [claim("claim-0", req("req-0", "class-a"), req("req-1", "class-a"), constraints=[
            {"matchAttribute": f"{A}/{n}"} for n in ("numa", "driverVersion", "stringAttribute", "boolAttribute")])],
        [one(("req-0", A, "pool-1", "device-1"), ("req-1", A, "pool-1", "device-2"))]),
    "with-constraint-non-existent-attribute": (
        CLASSES + [rslice("s1", "node-1", "pool-1", A)],
        [claim("claim-0", req("req-0", "class-a"), constraints=[{"matchAttribute": f"{A}/NonExistentAttribute"}])],
        None),
    "with-constraint-not-matching-int-attribute": (
        CLASSES + [rslice("s1", "node-1", "pool-1", A, dev("device-1", attrs={"numa": {"int": 1}}),
                          dev("device-2", attrs={"numa": {"int": 2}}))],
        [claim("claim-0", req("req-0", "class-a", count=2), constraints=[{"matchAttribute": f"{A}/numa"}])], None),
    "with-constraint-not-matching-version-attribute": (
        CLASSES + [rslice("s1", "node-1", "pool-1", A, dev("device-1", attrs={"driverVersion": {"version": "1.0.0"}}),
                          dev("device-2", attrs={"driverVersion": {"version": "2.0.0"}}))],
        [claim("claim-0", req("req-0", "class-a", count=2), constraints=[{"matchAttribute": f"{A}/driverVersion"}])],
        None),
    "with-constraint-for-request": (
        CLASSES + [rslice("s1", "node-1", "pool-1", A, dev("device-1", attrs={"driverVersion": {"version": "1.0.0"}}),
                          dev("device-2", attrs={"driverVersion": {"version": "2.0.0"}}))],
        [claim("claim-0", req("req-0", "class-a"), req("req-1", "class-a"),
               constraints=[{"requests": ["req-0"], "matchAttribute": f"{A}/driverVersion"}])],
        [one(("req-0", A, "pool-1", "device-1"), ("req-1", A, "pool-1", "device-2"))]),
    "with-constraint-for-request-retry": (
        CLASSES + [rslice("s1", "node-1", "pool-1", A,
                          dev("device-1", attrs=vs("1.0.0", "a")),
                          dev("device-2", attrs=vs("2.0.0", "b")),
                          dev("device-3", attrs=vs("3.0.0", "b")))],
        [claim("claim-0", req("req-0", "class-a"), req("req-1", "class-a"),
               constraints=[{"requests": ["req-0"], "matchAttribute": f"{A}/driverVersion"},
                            {"matchAttribute": f"{A}/stringAttribute"}])],
        [one(("req-0", A, "pool-1", "device-2"), ("req-1", A, "pool-1", "device-3"))]),
    "prioritized-list-first-unavailable": (
        CLASSES + [rslice("s1", "node-1", "pool-1", A)],
        [claim("claim-0", first("req-0", sub("subReq-0", "class-b"), sub("subReq-1", "class-a")))],
        [one(("req-0/subReq-1", A, "pool-1", "device-1"))]),
    "prioritized-list-non-available": (
        CLASSES + [rslice("s1", "node-1", "pool-1", A), rslice("s2", "node-1", "pool-2", B)],
        [claim("claim-0", first("req-0", sub("subReq-0", "class-b", 2), sub("subReq-1", "class-a", 2)))], None),
    "prioritized-list-subrequests-with-expressions": (
        CLASSES + [rslice("s1", "node-1", "pool-1", A, dev("device-1", {"memory": "2Gi"}),
                          dev("device-2", {"memory": "2Gi"}), dev("device-3", {"memory": "1Gi"}))],
        [claim("claim-0", req("req-0", "class-a", selectors=[MEM.format("1Gi")]),
               first("req-1", sub("subReq-0", "class-a", 1, selectors=[MEM.format("4Gi")]),
                     sub("subReq-1", "class-a", 2, selectors=[MEM.format("2Gi")])))],
        [one(("req-0", A, "pool-1", "device-3"), ("req-1/subReq-1", A, "pool-1", "device-1"),
             ("req-1/subReq-1", A, "pool-1", "device-2"))]),
    "prioritized-list-subrequests-with-constraints-ref-parent-request": (
        CLASSES + [rslice("s1", "node-1", "pool-1", A, dev("device-1", *mv("8Gi", "1.0.0"))),
                   rslice("s2", "node-1", "pool-2", A, dev("device-2", *mv("2Gi", "2.0.0")),
                          dev("device-3", *mv("1Gi", "1.0.0")))],
        [claim("claim-0", req("req-0", "class-a", selectors=[MEM.format("8Gi")]),
               first("req-1", sub("subReq-0", "class-a", 1, selectors=[MEM.format("2Gi")]),
                     sub("subReq-1", "class-a", 1, selectors=[MEM.format("1Gi")])),
               constraints=[{"requests": ["req-0", "req-1"], "matchAttribute": f"{A}/driverVersion"}])],
        [one(("req-0", A, "pool-1", "device-1"), ("req-1/subReq-1", A, "pool-2", "device-3"))]),
    "prioritized-list-subrequests-with-constraints-ref-sub-request": (
        CLASSES + [rslice("s1", "node-1", "pool-1", A, dev("device-1", *mv("8Gi", "1.0.0"))),
                   rslice("s2", "node-1", "pool-2", A, dev("device-2", *mv("2Gi", "2.0.0")))],
        [claim("claim-0", req("req-0", "class-a", selectors=[MEM.format("8Gi")]),
               first("req-1", sub("subReq-0", "class-a", 1, selectors=[MEM.format("2Gi")]),
                     sub("subReq-1", "class-a", 1, selectors=[MEM.format("1Gi")])),
               constraints=[{"requests": ["req-0", "req-1/subReq-0"], "matchAttribute": f"{A}/driverVersion"}])],
        [one(("req-0", A, "pool-1", "device-1"), ("req-1/subReq-1", A, "pool-2", "device-2"))]),
    "prioritized-list-subrequests-with-allocation-mode-all": (
        CLASSES + [TWO, held(A, "pool-1", "device-1")],
        [claim("claim-0", first("req-0", sub("subReq-0", "class-a", mode="All"), sub("subReq-1", "class-a")))],
        [one(("req-0/subReq-1", A, "pool-1", "device-2"))]),
    "prioritized-list-multi-request": (
        CLASSES + [rslice("s1", "node-1", "pool-1", A, dev("device-1", {"memory": "8Gi"})),
                   rslice("s2", "node-1", "pool-2", A, dev("device-2", {"memory": "4Gi"}))],
        [claim("claim-0", req("req-1", "class-a", selectors=[MEM.format("8Gi")]),
               first("req-0", sub("subReq-0", "class-a", 1, selectors=[MEM.format("8Gi")]),
                     sub("subReq-1", "class-a", 1, selectors=[MEM.format("4Gi")])))],
        [one(("req-1", A, "pool-1", "device-1"), ("req-0/subReq-1", A, "pool-2", "device-2"))]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_allocator(name):
    docs, claims, want = CASES[name]
    assert allocate(docs, claims) == want


def test_unsuccessful_allocation_network_attached_device():
    docs = CLASSES + [rslice("s1", label_sel("region", "region-1"), "pool-1", A)]
    assert allocate(docs, [claim("claim-0", req("req-0", "class-a"))], node="node-2", region="region-2") is None


def test_with_constraint_not_matching_int_attribute_all_devices_is_an_error():
    docs = CLASSES + [rslice("s1", "node-1", "pool-1", A, dev("device-1", attrs={"numa": {"int": 1}}),
                             dev("device-2", attrs={"numa": {"int": 2}}))]
    c = claim("claim-0", req("req-0", "class-a", mode="All"), constraints=[{"matchAttribute": f"{A}/numa"}])
    with pytest.raises(AllocationError, match="claim default/claim-0, request req-0: cannot add device driver-a/"
                                              "pool-1/device-2 because a claim constraint would not be satisfied"):
        allocate(docs, [c])


def test_too_many_devices_total():
    # AllocationResultsMaxSize (32): a claim needing more is an error
    docs = CLASSES + [rslice("s1", "node-1", "pool-1", A, *[dev(f"device-{k}") for k in range(40)])]
    c = claim("claim-0", req("req-0", "class-a", count=20), req("req-1", "class-a", count=13))
    with pytest.raises(AllocationError, match="number of requested devices 33 exceeds the claim limit of 32"):
        allocate(docs, [c])


def test_selector_runtime_error_is_an_allocation_error():
    # kube: "claim <ns>/<name>: selector #0: CEL runtime error: no such key: ..."
    docs = CLASSES + [rslice("s1", "node-1", "pool-1", A)]
    c = claim("claim-0", req("req-0", "class-a", selectors=['device.attributes["driver-a"].model == "x"']))
    with pytest.raises(AllocationError, match=r"^claim default/claim-0: selector #0: CEL runtime error: "
                                              r"no such key: model$"):
        allocate(docs, [c])


def test_feasible_counts_node_selector_slices_per_node():
    # the vectorised Filter count agrees with the search on every node
    objs = DraObjects()
    for d in CLASSES + [rslice("s1", label_sel("region", "r1"), "pool-1", A, dev("d1"), dev("d2")),
                        rslice("s2", "n3", "pool-2", A, dev("d3")), rslice("s3", "all", "pool-3", A, dev("d4"))]:
        add_object(objs, d, "t.yaml")
    add_object(objs, claim("c", req("r", "class-a", count=3)), "t.yaml")
    table = make_table([make_node("n1", labels={"region": "r1"}), make_node("n2", labels={"region": "r2"}),
                        make_node("n3", labels={"region": "r1"})])
    st = DraState(objs)
    c = objs.claims["default/c"]
    idx = np.arange(3, dtype=np.intp)
    assert st.feasible(table, [c], idx).tolist() == [True, False, True]
    assert [st.allocate(table, [c], i) is not None for i in range(3)] == [True, False, True]


def test_first_choice_without_search_agrees_with_the_search():
    # Filter's vectorised choice of subrequest (one claim, one firstAvailable request) is the one
    # kube's search makes on every node: counts 3 / All / 1 over nodes with 0..4 devices, some held
    objs = DraObjects()
    docs = CLASSES + [rslice(f"s{n}", f"n{n}", f"pool-{n}", A, *[dev(f"d{k}") for k in range(n)]) for n in range(5)]
    docs += [held(A, "pool-3", "d0"), held(A, "pool-4", "d1")]
    for d in docs:
        add_object(objs, d, "t.yaml")
    add_object(objs, claim("c", first("r", sub("three", "class-a", 3), sub("all", "class-a", mode="All"),
                                      sub("one", "class-a", 1))), "t.yaml")
    table = make_table([make_node(f"n{n}") for n in range(5)])
    st = DraState(objs)
    c = objs.claims["default/c"]
    assert st.first_choice([c])
    got = st.choices(table, c.requests[0], np.arange(5, dtype=np.intp)).tolist()
    names = ["three", "all", "one"]
    want = []
    for i in range(5):
        res = st.allocate(table, [c], i)
        want.append(-1 if res is None else names.index(res[0][0].request.split("/")[1]))
    assert got == want == [1, 1, 1, 2, 0]     # (a slice without devices here gets one, device-1)
